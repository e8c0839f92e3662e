"""Shape and dtype inference over nodes and whole graphs, driven by each op's ``infer`` rule.

``infer_node`` runs one node's rule on the descs its producers currently declare and returns
the output descs; ``infer_graph`` walks a graph in topological order (subgraphs included),
writing the results into every node's input and output descs. Errors read like
``Add(x1: f32[2,3], x2: f32[4]) at model.py:12: shapes [2, 3] and [4] cannot broadcast``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

from ge.error import GeError, GraphError, InferError
from ge.graph._attr import AttrValue
from ge.graph._dtypes import numpy_dtype
from ge.graph._printer import format_desc
from ge.graph._verify import current_verify_pass, describe_cycle, topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.ops.layout import FixedLayout, fixed_layout, input_groups, output_groups
from ge.ops.registry import get_op
from ge.ops.schema import InferContext, OpDef

__all__ = [
    "const_array",
    "const_value",
    "graph_output_descs",
    "graph_outputs",
    "infer_fixed",
    "infer_graph",
    "infer_node",
    "infer_on_values",
    "node_attrs",
    "producer_desc",
]

_CONST_TYPES = ("Const", "Constant")


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def node_attrs(op: OpDef, node: Node) -> dict[str, Any]:
    """The node's values for ``op``'s attributes, defaults filled in (``InferError`` if a
    required one is missing). Tensors are shared, not copied: callers must not mutate them."""
    attrs: dict[str, Any] = {}
    for spec in op.attrs:
        stored: AttrValue | None = node._attrs.get(spec.name)
        if stored is not None:
            attrs[spec.name] = _plain(stored.value)
        elif spec.required:
            raise InferError(f"required attribute '{spec.name}' is missing")
        else:
            attrs[spec.name] = _plain(spec.default)
    return attrs


def producer_desc(node: Node, port: int) -> TensorDesc:
    """Desc of what feeds input ``port``: the producer's output desc, or the node's own input
    desc when the port is unconnected."""
    edge = node._in_edges[port]
    return node._input_descs[port] if edge is None else edge[0]._output_descs[edge[1]]


def const_array(node: Node) -> np.ndarray | None:
    """The value of a Const node, or ``None`` for any other node (or an unreadable value)."""
    if node._type not in _CONST_TYPES:
        return None
    stored = node._attrs.get("value")
    if stored is None or not isinstance(stored.value, Tensor):
        return None
    try:
        return stored.value.numpy()
    except GeError:
        return None


def const_value(node: Node, port: int) -> np.ndarray | None:
    """The value feeding ``port`` when it comes straight from a Const node."""
    edge = node._in_edges[port]
    return None if edge is None else const_array(edge[0])


def _grouped(op: OpDef, node: Node, groups: list[list[int]], fetch: Any) -> list[Any]:
    values: list[Any] = []
    for spec, ports in zip(op.inputs, groups, strict=True):
        if spec.dynamic:
            values.append([fetch(p) for p in ports])
        elif spec.optional and node._in_edges[ports[0]] is None:
            values.append(None)
        else:
            values.append(fetch(ports[0]))
    return values


def describe_call(op: OpDef, inputs: Sequence[Any]) -> str:
    """``Add(x1: f32[2,3], x2: f32[4])`` for error messages."""
    parts = []
    for spec, value in zip(op.inputs, inputs, strict=False):
        if value is None:
            parts.append(f"{spec.name}: None")
        elif isinstance(value, list):
            parts.append(f"{spec.name}: [{', '.join(format_desc(d) for d in value)}]")
        else:
            parts.append(f"{spec.name}: {format_desc(value)}")
    return f"{op.type}({', '.join(parts)})"


def _check_dtypes(op: OpDef, inputs: Sequence[Any]) -> None:
    for spec, value in zip(op.inputs, inputs, strict=True):
        allowed = spec.dtypes
        if allowed is None or value is None:
            continue
        if type(value) is TensorDesc:  # one port (no list made per input)
            if value._data_type not in allowed:
                _refuse_dtype(op, spec.name, value, allowed)
            continue
        for d in value:
            if d._data_type not in allowed:
                _refuse_dtype(op, spec.name, d, allowed)


def _refuse_dtype(op: OpDef, name: str, d: TensorDesc, allowed: frozenset[Any]) -> NoReturn:
    names = ", ".join(sorted(t.name for t in allowed))
    raise InferError(f"input '{name}' has type {d._data_type.name}; {op.type} accepts {names}")


def _fixed_outputs(op: OpDef, results: Sequence[Any], counts: list[int]) -> list[TensorDesc]:
    """``_flatten_outputs`` for an op without dynamic outputs, whose rule returns one desc per
    output (checked without building groups; anything else gets the full check's message).
    ``counts`` are ones (``_ones``) unless the rule replaced them; a list the rule returned
    is kept, not copied (rules return fresh lists)."""
    if len(results) == len(op.outputs) and (counts is _ONES.get(len(counts)) or _all_one(counts)):
        for d in results:
            if type(d) is not TensorDesc:
                break
        else:
            return results if type(results) is list else list(results)
    return _flatten_outputs(op, results, counts)


def _all_one(counts: list[int]) -> bool:
    return all(c == 1 for c in counts)


_ONES: dict[int, list[int]] = {}
"""Output counts of fixed-layout ops, one shared list per output count (read only)."""


def _ones(count: int) -> list[int]:
    ones = _ONES.get(count)
    if ones is None:
        ones = _ONES[count] = [1] * count
    return ones


def _flatten_outputs(op: OpDef, results: Sequence[Any], counts: list[int]) -> list[TensorDesc]:
    if len(results) != len(op.outputs):
        raise InferError(
            f"the infer rule returned {len(results)} outputs for {len(op.outputs)} IR outputs"
        )
    flat: list[TensorDesc] = []
    for spec, result, count in zip(op.outputs, results, counts, strict=True):
        items = result if spec.dynamic else [result]
        if not isinstance(items, list) or len(items) != count:
            raise InferError(f"output '{spec.name}' needs {count} descs from the infer rule")
        for d in items:
            if not isinstance(d, TensorDesc):
                raise InferError(
                    f"output '{spec.name}': the infer rule returned "
                    f"{type(d).__name__}, not a TensorDesc"
                )
        flat += items
    return flat


def _subgraphs_of(node: Node) -> list[Graph]:
    graph = node._graph
    if graph is None:
        return []
    root = graph._root()
    return [root._subgraphs[name] for name in node._subgraph_names if name in root._subgraphs]


def infer_node(node: Node, op: OpDef | None = None) -> list[TensorDesc]:
    """Output descs of ``node`` from its producers' current descs (the node is not changed)."""
    op = op or get_op(node._type)
    layout = fixed_layout(op)
    if (
        layout is not None
        and len(node._input_names) == len(layout.input_names)
        and len(node._output_names) == len(layout.output_names)
    ):
        return infer_fixed(node, op, layout)
    groups = input_groups(op, node)
    inputs = _grouped(op, node, groups, lambda p: producer_desc(node, p))
    try:
        _check_dtypes(op, inputs)
        ctx = InferContext(
            op,
            inputs,
            node_attrs(op, node) if op.attrs else {},
            lambda: _grouped(op, node, groups, lambda p: const_value(node, p)),
            [len(g) for g in output_groups(op, node)],
            current_outputs=list(node._output_descs),
            subgraphs=_subgraphs_of(node) if node._subgraph_names else [],
            infer_subgraph=infer_subgraph,
        )
        assert op.infer is not None
        return _flatten_outputs(op, op.infer(ctx), ctx.output_counts)
    except InferError as e:
        raise _located(e, op, inputs, node) from None


def infer_fixed(node: Node, op: OpDef, layout: FixedLayout) -> list[TensorDesc]:
    """``infer_node`` for a node of ``op`` with one port per IR entry (``layout`` is
    ``fixed_layout(op)``): what the port groups would give, without building them (most nodes
    of a graph take this path; the builder calls it directly, as it has the layout)."""
    edges = node._in_edges
    inputs: list[Any] = []
    for port, optional in enumerate(layout.optional):
        edge = edges[port]
        if edge is not None:
            inputs.append(edge[0]._output_descs[edge[1]])
        elif optional:
            inputs.append(None)
        else:
            inputs.append(node._input_descs[port])
    try:
        if layout.checks_dtypes:
            _check_dtypes(op, inputs)
        ones = _ONES.get(len(layout.output_names)) or _ones(len(layout.output_names))
        ctx = InferContext(
            op,
            inputs,
            node_attrs(op, node) if op.attrs else {},
            lambda: [None if e is None else const_array(e[0]) for e in edges],
            ones,
            current_outputs=list(node._output_descs),
            subgraphs=_subgraphs_of(node) if node._subgraph_names else None,
            infer_subgraph=infer_subgraph,
        )
        assert op.infer is not None
        results = op.infer(ctx)
        # the common answer, a list of one desc per output: _fixed_outputs' checks, inline
        if type(results) is list and ctx.output_counts is ones and len(results) == len(ones):
            for d in results:
                if type(d) is not TensorDesc:
                    break
            else:
                return results
        return _fixed_outputs(op, results, ctx.output_counts)
    except InferError as e:
        raise _located(e, op, inputs, node) from None


def _located(e: InferError, op: OpDef, inputs: Sequence[Any], node: Node) -> InferError:
    where = f" at {node._source}" if node._source else ""
    return InferError(f"{describe_call(op, inputs)}{where}: {e}")


def infer_on_values(node: Node, op: OpDef, values: Sequence[Any]) -> list[TensorDesc]:
    """Output descs of ``node`` for the arrays that reach it at run time (``values``: one
    entry per IR input, as ``eval_graph`` gathers them), so that inputs declared with ``-1``
    dims or computed axes are held to the op's rule once they are known: a bad one is an
    ``InferError`` naming the node, not whatever the numpy reference trips over."""
    groups = input_groups(op, node)

    def concrete(port: int) -> TensorDesc:
        recorded = producer_desc(node, port)
        return TensorDesc(list(values_by_port[port].shape), recorded._format, recorded._data_type)

    values_by_port: dict[int, np.ndarray] = {}
    for spec, ports, value in zip(op.inputs, groups, values, strict=True):
        items = value if spec.dynamic else [value]
        for port, item in zip(ports, items, strict=True):
            if item is not None:
                values_by_port[port] = item
    inputs = _grouped(op, node, groups, concrete)
    try:
        _check_dtypes(op, inputs)
        ctx = InferContext(
            op,
            inputs,
            node_attrs(op, node),
            _grouped(op, node, groups, lambda p: values_by_port[p]),
            [len(g) for g in output_groups(op, node)],
            current_outputs=list(node._output_descs),
        )
        assert op.infer is not None
        return _flatten_outputs(op, op.infer(ctx), ctx.output_counts)
    except InferError as e:
        raise _located(e, op, inputs, node) from None


def _feed_subgraph_inputs(graph: Graph, descs: Sequence[TensorDesc], offset: int) -> None:
    for node in graph._nodes.values():
        op = get_op(node._type)
        if op.io != "input":
            continue
        slot = _subgraph_slot(node, offset)
        if not 0 <= slot < len(descs):
            raise InferError(
                f"subgraph '{graph._name}' input {node._name} maps to parent "
                f"input {slot}, but the parent passes {len(descs)}"
            )
        node._output_descs[0] = descs[slot]._clone()


def _subgraph_slot(node: Node, offset: int) -> int:
    parent = node._attrs.get("_parent_node_index")
    if parent is not None:
        return int(parent.value) - offset
    index = node._attrs.get("index")
    return int(index.value) if index is not None else 0


# Subgraphs inferred whole during the running Graph.verify call: id -> (pass, graph).
_INFERRED: dict[int, tuple[int, weakref.ref[Graph]]] = {}


def inferred_in_this_verify(graph: Graph) -> bool:
    """Whether ``graph`` was inferred whole (``infer_subgraph`` ran to its end on it) earlier in
    the ``Graph.verify`` call running now: its nodes then hold what inference gives."""
    entry = _INFERRED.get(id(graph))
    return entry is not None and entry[0] == current_verify_pass() != 0 and entry[1]() is graph


def infer_subgraph(graph: Graph, descs: Sequence[TensorDesc], offset: int) -> list[TensorDesc]:
    """Infer ``graph`` with its inputs described by ``descs``; returns its output descs."""
    _INFERRED.pop(id(graph), None)
    _feed_subgraph_inputs(graph, descs, offset)
    infer_graph(graph)
    outputs = graph_output_descs(graph)
    verify_pass = current_verify_pass()
    if verify_pass:
        if _INFERRED and next(iter(_INFERRED.values()))[0] != verify_pass:
            _INFERRED.clear()  # entries of an earlier verify call
        _INFERRED[id(graph)] = (verify_pass, weakref.ref(graph))
    return outputs


def graph_outputs(graph: Graph) -> list[tuple[Node, int]]:
    """Producers of the graph's results: what feeds its NetOutput, else ``set_outputs``."""
    for node in graph._nodes.values():
        if get_op(node._type).io == "output":
            edges = node._in_edges
            if any(e is None for e in edges):
                raise GraphError(
                    f"graph '{graph._name}': NetOutput input "
                    f"{[e is None for e in edges].index(True)} is not connected"
                )
            return [e for e in edges if e is not None]
    return list(graph._outputs)


def graph_output_descs(graph: Graph) -> list[TensorDesc]:
    return [node._output_descs[port]._clone() for node, port in graph_outputs(graph)]


def infer_graph(graph: Graph, input_shapes: Sequence[Sequence[int]] | None = None) -> None:
    """Infer every node of ``graph`` in topological order and store the descs on the nodes.

    ``input_shapes[i]`` replaces the shape of the Data node whose ``index`` is ``i``.
    """
    order, cyclic = topological_order(graph)
    if cyclic:
        raise GraphError(describe_cycle(graph, cyclic))
    if input_shapes is not None:
        _set_input_shapes(graph, input_shapes)
    for node in order:
        descs = node._input_descs
        if descs:  # (no inputs: the shared empty tuple)
            for port, edge in enumerate(node._in_edges):
                if edge is not None:
                    descs[port] = edge[0]._output_descs[edge[1]]  # shared: never edited
        node._output_descs = infer_node(node)


def _set_input_shapes(graph: Graph, input_shapes: Sequence[Sequence[int]]) -> None:
    for node in graph._nodes.values():
        if get_op(node._type).io != "input":
            continue
        index = _subgraph_slot(node, 0)
        if not 0 <= index < len(input_shapes):
            raise GraphError(
                f"input_shapes has {len(input_shapes)} entries but Data node "
                f"{node._name} has index {index}"
            )
        # a new desc, not an edit: the old one may be shared (see ge.graph.node)
        node._output_descs[0] = node._output_descs[0]._clone().set_shape(list(input_shapes[index]))


def numpy_type_of(desc: TensorDesc) -> np.dtype[Any]:
    return numpy_dtype(desc._data_type)
