"""Graph boundary ops: ``Data`` (and its kin) feed inputs, ``Const`` holds a tensor,
``NetOutput`` collects results, ``Identity`` forwards its input.

Data-like ops declare their own output desc (set by the builder, or by
``GeUtils.infer_shape``); their infer rule keeps it. Decision: ``Variable`` is fed from the
inputs list by its ``index`` like ``Data`` (ge has no resource variables yet).

``Graph.verify`` (and ``Session.add_graph``) check what running needs of these ops: the
graph's input nodes have distinct indexes ``0..n-1`` (a node without an ``index`` attribute
reads as index 0, the default), a subgraph's input nodes distinct slots, and every ``Const``
holds a ``value`` with the bytes its desc needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ge.error import GeError, InferError
from ge.graph._dtypes import dtype_info
from ge.graph._verify import register_graph_check, register_node_check
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.types import AttrValueType
from ge.ops import _rules as rules
from ge.ops._define import attr, dyn, inp, opt, out, same_infer
from ge.ops.registry import find_op, register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef, ScalarBody

__all__: list[str] = []

VT = AttrValueType


def _declared(ctx: InferContext) -> list[Any]:
    return [ctx.current_outputs[0]._clone()]


for _type in ("Data", "RefData", "AippData", "AnyData"):
    register_op_def(
        OpDef(
            _type,
            inputs=(inp("x"),),
            outputs=(out("y"),),
            attrs=(attr("index", VT.VT_INT, 0),),
            infer=_declared,
            group="array",
            io="input",
            pure=False,
            doc="Graph input number `index`; its output desc is what the graph declares.",
        )
    )

register_op_def(
    OpDef(
        "Variable",
        inputs=(opt("x"),),
        outputs=(out("y"),),
        attrs=(
            attr("index", VT.VT_INT, 0),
            attr("container", VT.VT_STRING, ""),
            attr("shared_name", VT.VT_STRING, ""),
        ),
        infer=_declared,
        group="array",
        io="input",
        pure=False,
        doc="A variable, fed from the graph inputs by `index`.",
    )
)


def _const_infer(ctx: InferContext) -> list[Any]:
    value = ctx.attrs["value"]
    if not isinstance(value, Tensor):
        raise InferError("attribute 'value' must be a Tensor")
    return [value.get_tensor_desc()]


def _const_reference(ctx: ExecContext) -> list[np.ndarray]:
    return [ctx.attrs["value"].numpy()]


register_op_def(
    OpDef(
        "Const",
        outputs=(out("y"),),
        attrs=(attr("value", VT.VT_TENSOR, Tensor()),),
        infer=_const_infer,
        reference=_const_reference,
        group="array",
        doc="The tensor in attribute `value`.",
    )
)

register_op_def(
    OpDef(
        "NetOutput",
        inputs=(dyn("x"),),
        infer=lambda ctx: [],
        group="array",
        io="output",
        pure=False,
        doc="Collects the graph's results, in input order.",
    )
)

register_op_def(
    OpDef(
        "Identity",
        inputs=(inp("x", rules.ALL),),
        outputs=(out("y", rules.ALL),),
        infer=same_infer,
        reference=lambda ctx: [np.array(ctx.inputs[0], copy=True)],
        group="array",
        elementwise=True,
        scalar=ScalarBody("a"),
        doc="y = x.",
    )
)


def _input_slot(node: Node, subgraph: bool) -> int | None:
    """The inputs-list position ``node`` reads (``None`` if its index is not an int: the
    attribute-kind check reports that)."""
    attr = node._attrs.get("_parent_node_index") if subgraph else None
    if attr is None:
        attr = node._attrs.get("index")
    if attr is None:
        return 0
    return attr.value if attr.type == VT.VT_INT else None


def check_graph_inputs(graph: Graph) -> Iterator[str]:
    """Input nodes with the same index would both read one input (and the other's buffer
    never be bound); a gap leaves an input that nothing feeds."""
    subgraph = graph._parent_graph is not None
    slots: dict[int, list[str]] = {}
    for node in graph._nodes.values():
        op = find_op(node._type)
        if op is not None and op.io == "input":
            slot = _input_slot(node, subgraph)
            if slot is not None:
                slots.setdefault(slot, []).append(f"{node._name} ({node._type})")
    for slot, names in sorted(slots.items()):
        if len(names) > 1:
            yield (
                f"input nodes {', '.join(names)} all have index {slot}; give each input node "
                f"its own index (node.set_attr('index', i))"
            )
    if subgraph:  # slots are relative to the parent op's inputs, which verify cannot see
        return
    indexes = sorted(slots)
    if indexes != list(range(len(indexes))):
        missing = sorted(set(range(len(indexes))) - set(indexes))[:8]
        negative = [i for i in indexes if i < 0]
        detail = f"no input node has index {', '.join(map(str, missing))}" if missing else ""
        if negative:
            detail += f"{'; ' if detail else ''}{', '.join(map(str, negative))} < 0"
        yield (
            f"graph input indexes are {indexes}, but must be 0..{len(indexes) - 1} without "
            f"gaps (inputs[i] feeds the input node with index i): {detail}"
        )


def check_const_value(node: Node) -> Iterator[str]:
    """A Const must hold its value: without one (or with too few bytes) there is nothing to
    run. (A value of the wrong kind is reported by the op-level attribute check.)"""
    if node._type != "Const":
        return
    attr = node._attrs.get("value")
    if attr is None:
        yield (
            f"node {node._name} (Const) has no 'value' attribute; set it to the Tensor the "
            f"node holds (node.set_attr('value', tensor))"
        )
        return
    value = attr.value
    if not isinstance(value, Tensor):
        return
    shape = value._desc._shape
    if any(d < 0 for d in shape):
        yield (
            f"node {node._name} (Const): its value has unknown dims {list(shape)}; a constant "
            f"needs a known shape"
        )
        return
    try:
        itemsize = dtype_info(value._desc._data_type).size
    except GeError:
        return  # a data type with no size: the attribute-kind and infer checks report it
    count = 1
    for d in shape:
        count *= d
    need = count * itemsize if itemsize > 0 else 0
    if value.nbytes < need:
        yield (
            f"node {node._name} (Const): its value holds {value.nbytes} bytes, but shape "
            f"{list(shape)} of {value._desc._data_type.name} needs {need}; set 'value' to a "
            f"Tensor with its data"
        )


register_node_check(check_const_value)
register_graph_check(check_graph_inputs)
