"""``add_op_node``: create a node of a registered op, wired, attributed and inferred, at once.

This is the one way builders (``ge.es``, the jit tracer, passes, tests) make op nodes. It names
ports as GE does (``x``, or ``x0, x1, ...`` for a dynamic input), writes every optional
attribute's default onto the node (as GE's ``REG_OP`` does), attaches subgraphs, then runs the
op's infer rule so the node's output descs are known immediately. If anything fails the node
and everything attached for it are removed again, so the graph is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ge.error import GeTypeError, GeValueError
from ge.graph._attr import AttrValue, make_attr_value
from ge.graph.graph import MAX_PORTS, Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType
from ge.ops.infer import infer_fixed, infer_node, producer_desc
from ge.ops.layout import _FIXED_LAYOUTS, FixedLayout, fixed_layout, port_names
from ge.ops.registry import _OPS, get_op
from ge.ops.schema import OpDef

__all__ = ["add_op_node", "add_plain_node"]

Port = tuple[Node, int]


def _input_ports(op: OpDef, inputs: Sequence[Any]) -> tuple[list[Port | None], list[int]]:
    if len(inputs) != len(op.inputs):
        names = [s.name for s in op.inputs]
        raise GeValueError(f"{op.type} takes {len(op.inputs)} inputs {names}, got {len(inputs)}")
    flat: list[Port | None] = []
    counts: list[int] = []
    for spec, value in zip(op.inputs, inputs, strict=True):
        if spec.dynamic:
            pair = isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Node)
            if not isinstance(value, (list, tuple)) or pair:
                raise GeTypeError(
                    f"{op.type} input '{spec.name}' is dynamic: pass a list of (node, port) pairs"
                )
            flat += list(value)
            counts.append(len(value))
        else:
            if value is None and not spec.optional and op.io != "input":
                raise GeValueError(f"{op.type} input '{spec.name}' is required")
            flat.append(value)
            counts.append(1)
    return flat, counts


def _output_counts(op: OpDef, given: Sequence[int] | None) -> list[int]:
    if given is None:
        if any(s.dynamic for s in op.outputs):
            dyn = [s.name for s in op.outputs if s.dynamic]
            raise GeValueError(f"{op.type} has dynamic outputs {dyn}: give output_counts")
        return [1] * len(op.outputs)
    if len(given) != len(op.outputs):
        raise GeValueError(
            f"output_counts has {len(given)} entries for {len(op.outputs)} outputs of {op.type}"
        )
    for spec, count in zip(op.outputs, given, strict=True):
        if isinstance(count, bool) or not isinstance(count, int):
            raise GeTypeError(
                f"{op.type} output '{spec.name}': its count must be an int, "
                f"got {type(count).__name__}"
            )
        if not spec.dynamic and count != 1:
            raise GeValueError(f"{op.type} output '{spec.name}' is not dynamic: count must be 1")
        if not 0 <= count <= MAX_PORTS:
            raise GeValueError(
                f"{op.type} output '{spec.name}': its count must be in 0..{MAX_PORTS}, got {count}"
            )
    return list(given)


def _set_attrs(op: OpDef, node: Node, attrs: dict[str, Any]) -> None:
    layout = fixed_layout(op)
    known = layout.attr_names if layout is not None else {a.name for a in op.attrs}
    for spec in op.attrs:
        if spec.name in attrs:
            node._attrs[spec.name] = make_attr_value(attrs[spec.name], spec.type)
        elif spec.required:
            raise GeValueError(
                f"{op.type} needs attribute '{spec.name}' "
                f"({spec.type.name.removeprefix('VT_').lower()})"
            )
        else:
            node._attrs[spec.name] = make_attr_value(spec.default, spec.type)
    if len(attrs) > len(op.attrs) or not all(key in known for key in attrs):
        for key, value in attrs.items():
            if key not in known:
                node.set_attr(key, value)


def _flat_subgraphs(op: OpDef, subgraphs: Sequence[Any] | None) -> list[Graph]:
    if not subgraphs and not op.subgraphs:
        return []
    given = list(subgraphs or [])
    if len(given) != len(op.subgraphs):
        names = [s.name for s in op.subgraphs]
        raise GeValueError(f"{op.type} takes subgraphs {names}, got {len(given)}")
    flat: list[Graph] = []
    for spec, value in zip(op.subgraphs, given, strict=True):
        items = list(value) if spec.dynamic else [value]
        for g in items:
            if not isinstance(g, Graph):
                raise GeTypeError(
                    f"{op.type} subgraph '{spec.name}' must be a Graph, got {type(g).__name__}"
                )
        flat += items
    return flat


def _new_node(
    graph: Graph, op: OpDef, name: str | None, in_counts: list[int], out_counts: list[int]
) -> Node:
    layout = fixed_layout(op)
    if layout is not None and (name is None or isinstance(name, str)):
        # Port names made here from the IR, so Graph.add_node's checks of them are skipped.
        return graph._add_node_named(op.type, name, layout.input_names, layout.output_names)
    return graph.add_node(
        op.type,
        name,
        num_inputs=sum(in_counts),
        num_outputs=sum(out_counts),
        input_names=port_names(op.inputs, in_counts),
        output_names=port_names(op.outputs, out_counts),
    )


def add_op_node(
    graph: Graph,
    op_type: str,
    inputs: Sequence[Any],
    attrs: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    output_counts: Sequence[int] | None = None,
    subgraphs: Sequence[Any] | None = None,
    declared: Sequence[TensorDesc] | None = None,
    source: str | None = None,
    infer: bool = True,
) -> Node:
    """Add an ``op_type`` node to ``graph``; returns it with its output descs inferred.

    ``inputs`` has one entry per IR input: a ``(node, port)`` pair, ``None`` for an absent
    optional input, or a list of pairs for a dynamic input. ``declared`` gives the output descs
    of graph-input ops (Data). ``infer=False`` leaves the output descs unset, for a caller that
    infers the node later (fusion infers a body whole when it makes the fused node). Raises
    ``GeValueError``/``GeTypeError``/``InferError`` with the graph unchanged.
    """
    op = get_op(op_type)
    if (
        (output_counts is None or _ones(output_counts, len(op.outputs)))
        and not subgraphs
        and declared is None
        and (name is None or isinstance(name, str))
    ):
        node = _add_fixed_node(graph, op, inputs, attrs, name, source, infer)
        if node is not None:
            return node
    return _add_any_node(
        graph, op, inputs, attrs, name, output_counts, subgraphs, declared, source, infer
    )


def add_plain_node(
    graph: Graph,
    op_type: str,
    inputs: Sequence[Any],
    attrs: dict[str, Any] | None,
    name: str | None,
    source: str | None,
) -> Node:
    """``add_op_node(graph, op_type, inputs, attrs, name=name, source=source)``: the call a
    builder makes for almost every node (no output counts, subgraphs or declared descs),
    without the keyword plumbing and the checks of those."""
    op = _OPS.get(op_type) or get_op(op_type)  # (the registry's hit path without a call)
    node = _add_fixed_node(graph, op, inputs, attrs, name, source, True)
    if node is not None:
        return node
    return _add_any_node(graph, op, inputs, attrs, name, None, None, None, source, True)


def _add_fixed_node(
    graph: Graph,
    op: OpDef,
    inputs: Sequence[Any],
    attrs: dict[str, Any] | None,
    name: str | None,
    source: str | None,
    infer: bool,
) -> Node | None:
    """The node of a fixed-layout op without subgraphs whose ``inputs`` are all valid; ``None``
    (nothing added) for anything else, which the fully checked path then builds or refuses.

    It runs once per node of a built graph, so it is one function: the attributes, edges
    and inferred outputs of the new node are filled in here (on any failure the node is
    removed again), and where the infer rule gives the output descs at once the node is made
    with ``_PENDING`` ones instead of fresh descs to throw away."""
    layout = _FIXED_LAYOUTS.get(op) or fixed_layout(op)  # (the hit path without a call)
    if layout is None or op.subgraphs:
        return None
    if infer and not inputs and attrs is not None and len(attrs) == 1 and op.type == "Const":
        tensor = attrs.get("value")
        if type(tensor) is Tensor:  # a plain builder constant (half the nodes of a graph)
            return _add_const(graph, op, layout, tensor, name, source)
    input_descs = _checked_fixed_inputs(graph, layout, inputs)
    if input_descs is None:
        return None
    pending = infer and op.io != "input"  # (a graph input's rule reads its current desc)
    node = graph._add_node_named(
        op.type,
        name,
        layout.input_names,
        layout.output_names,
        input_descs,
        [_PENDING] * len(layout.output_names) if pending else None,
    )
    node._source = source
    node._op = op
    try:
        if attrs or op.attrs:
            _set_attrs(op, node, attrs or {})
        edges = node._in_edges
        if edges:  # (no inputs: the shared empty tuple)
            for port, src in enumerate(inputs):
                if src is not None:
                    src[0]._out_edges[src[1]].append((node, port))
                    edges[port] = src
        if infer:
            node._output_descs = infer_fixed(node, op, layout)
    except BaseException:  # any failure, even a bug's or an interrupt, leaves no half node
        graph.remove_node(node)
        raise
    return node


_PENDING = TensorDesc._scalar()
"""The output desc of a node whose infer rule is about to run, read by nothing: the rule's
descs replace it, or the node is removed when the rule fails. One shared object, never
changed."""


def _add_const(
    graph: Graph,
    op: OpDef,
    layout: FixedLayout,
    tensor: Tensor,
    name: str | None,
    source: str | None,
) -> Node:
    """A Const node holding a private copy of ``tensor``, made directly: what the generic path
    makes (``make_attr_value(tensor, VT_TENSOR)`` stores ``tensor._clone()``; Const's infer
    rule gives ``tensor.get_tensor_desc()``), without its attribute conversion and infer
    context (half the nodes of a typical graph are constants). ``test_construct`` holds the
    two paths to the same node."""
    stored = tensor._clone()  # what can fail comes before the node is added
    output_descs = [stored._desc]  # shared with the tensor: neither changes it in place
    node = graph._add_node_named(op.type, name, (), layout.output_names, None, output_descs)
    node._source = source
    node._op = op
    node._attrs["value"] = AttrValue(AttrValueType.VT_TENSOR, stored)
    return node


def _add_any_node(
    graph: Graph,
    op: OpDef,
    inputs: Sequence[Any],
    attrs: dict[str, Any] | None,
    name: str | None,
    output_counts: Sequence[int] | None,
    subgraphs: Sequence[Any] | None,
    declared: Sequence[TensorDesc] | None,
    source: str | None,
    infer: bool,
) -> Node:
    """``add_op_node`` for any op and inputs, every argument checked."""
    flat_inputs, in_counts = _input_ports(op, inputs)
    out_counts = _output_counts(op, output_counts)
    graphs = _flat_subgraphs(op, subgraphs)
    node = _new_node(graph, op, name, in_counts, out_counts)
    registered: list[Graph] = []
    try:
        _annotate(node, op, attrs, source)
        _connect(graph, node, flat_inputs, declared)
        for index, sub in enumerate(graphs):
            if graph.get_subgraph(sub.name) is not sub:
                registered.append(sub)
            graph.set_node_subgraph(node, index, sub)
        if infer:
            node._output_descs = infer_node(node, op)
    except BaseException:  # any failure, even a bug's or an interrupt, leaves no half node
        for sub in registered:
            if graph.get_subgraph(sub.name) is sub:
                graph.remove_subgraph(sub.name)
        graph.remove_node(node)
        raise
    return node


def _connect(
    graph: Graph,
    node: Node,
    flat_inputs: Sequence[Port | None],
    declared: Sequence[TensorDesc] | None,
) -> None:
    """Edges from ``flat_inputs`` (one per port) into the new ``node``, input descs copied from
    the producers, and the ``declared`` descs: the outputs, and the unconnected inputs."""
    input_descs = node._input_descs
    if input_descs:  # (no inputs: the shared empty tuple)
        for port, src in enumerate(flat_inputs):
            if src is not None:
                graph.add_data_edge(src[0], src[1], node, port)
                input_descs[port] = producer_desc(node, port)  # shared: see _checked_fixed_inputs
    if declared is not None:
        node._output_descs = [d._clone() for d in declared]
        if input_descs:
            for port in range(min(len(input_descs), len(declared))):
                if node._in_edges[port] is None:
                    input_descs[port] = declared[port]._clone()


def _annotate(node: Node, op: OpDef, attrs: dict[str, Any] | None, source: str | None) -> None:
    """The new node's op record, user ``file:line`` and attributes (defaults filled in)."""
    node._source = source
    node._op = op
    if attrs or op.attrs:
        _set_attrs(op, node, attrs or {})


def _ones(counts: Sequence[int], size: int) -> bool:
    """Whether ``counts`` is ``size`` ones: the output counts a fixed-layout op always has."""
    return len(counts) == size and all(type(c) is int and c == 1 for c in counts)


def _checked_fixed_inputs(
    graph: Graph, layout: FixedLayout, inputs: Sequence[Any]
) -> list[TensorDesc] | None:
    """The input descs of a new node of a fixed-layout op when every input is ``None`` at an
    optional port or a valid ``(node, port)`` of ``graph``: the producers' descs themselves,
    shared, not copied (a node's descs are never changed in place, see ``ge.graph.node``: a
    copy per edge was two GC-tracked objects per binary op for every collection to walk).
    ``None`` for anything else; the caller then takes the fully checked path, which raises
    the precise error (this one only decides that nothing is wrong, quickly)."""
    if len(inputs) != len(layout.optional):
        return None
    descs: list[TensorDesc] = []
    for src, optional in zip(inputs, layout.optional, strict=False):  # lengths equal
        if src is None:
            if not optional:
                return None
            descs.append(TensorDesc._scalar())
            continue
        if type(src) is not tuple or len(src) != 2:
            return None
        producer, port = src
        if (
            type(producer) is not Node
            or producer._graph is not graph
            or type(port) is not int
            or not 0 <= port < len(producer._output_descs)
        ):
            return None
        descs.append(producer._output_descs[port])
    return descs
