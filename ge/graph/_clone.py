"""A root graph copied node by node: what an AIR round trip gives, in one linear pass.

The compiler works on a copy of the user's graph (and the session snapshots graphs it is given).
Encoding and decoding AIR bytes does that losslessly but slowly (about 500 µs a node: protobuf
messages, then every node re-made and re-described). ``clone_graph`` makes the same graph
directly — same names, node order, descs, attributes, port names, edges, subgraphs and
outputs, with the edge lists ordered as the AIR reader makes them — at about 15 µs a node.

What the copy shares with the original: attribute values that are values (numbers, strings,
tuples, data types). Tensors and descs are copied, as the AIR reader makes new ones. A graph
this pass does not model (a graph- or function-valued attribute, a link to a node outside its
graph, a cycle, a subgraph passed as the root) gives ``None``, and callers use the AIR path,
which decides those cases (its errors included).

    >>> from ge.graph.graph import Graph
    >>> g = Graph("g"); x = g.add_node("Data", "x", num_outputs=1)
    >>> y = g.add_node("Relu", "y", num_inputs=1, num_outputs=1); g.add_data_edge(x, 0, y, 0)
    >>> twin = clone_graph(g)
    >>> [n.name for n in twin.get_direct_nodes()], twin.find_node_by_name("y") is y
    (['x', 'y'], False)
"""

from __future__ import annotations

import math
from typing import Any

from ge.graph._attr import AttrValue
from ge.graph._verify import topological_order
from ge.graph.graph import Graph, link_control
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, Placement

__all__ = ["clone_graph"]

VT = AttrValueType
_NOT_MODELLED = frozenset(
    {VT.VT_GRAPH, VT.VT_LIST_GRAPH, VT.VT_NAMED_ATTRS, VT.VT_LIST_NAMED_ATTRS}
)


class _UnsupportedError(Exception):
    """Something only the AIR path handles."""


def _tensor(tensor: Tensor) -> Tensor:
    """A host copy, as the AIR reader makes it (a ``Tensor()`` without data stays one)."""
    if tensor._placement is Placement.PLACEMENT_HOST and tensor._bytes is not None:
        return tensor._clone()  # shares the (never written) bytes
    data = tensor._host_bytes()
    twin = Tensor._from_parts(tensor._desc._clone(), data)
    if not data and math.prod(tensor._desc._shape) != 0:
        twin._bytes = None
    return twin


def _value(value: Any) -> Any:
    if isinstance(value, Tensor):
        return _tensor(value)
    if isinstance(value, TensorDesc):
        return _desc(value)
    if isinstance(value, tuple) and any(isinstance(v, (Tensor, TensorDesc)) for v in value):
        return tuple(_value(v) for v in value)
    return value


def _attrs(attrs: dict[str, AttrValue]) -> dict[str, AttrValue]:
    out = {}
    for key, attr in attrs.items():
        if attr.type in _NOT_MODELLED:
            raise _UnsupportedError
        value = attr.value
        out[key] = (
            attr
            if isinstance(value, (int, float, str, bytes))
            else AttrValue(attr.type, _value(value))
        )
    return out


def _desc(desc: TensorDesc) -> TensorDesc:
    twin = desc._clone()
    if twin._attrs:
        twin._attrs = _attrs(twin._attrs)
    return twin


def _nodes(graph: Graph, twin: Graph) -> dict[int, Node]:
    """Copy the nodes of ``graph`` into ``twin`` (no edges yet); original id -> copy."""
    copies: dict[int, Node] = {}
    for name, node in graph._nodes.items():
        copy = Node._create(twin, name, node._type, 0, 0)
        copy._attrs = _attrs(node._attrs)
        if node._input_descs:  # (else the shared empty tuple Node._create gave)
            copy._input_descs = [_desc(d) for d in node._input_descs]
        copy._output_descs = [_desc(d) for d in node._output_descs]
        copy._input_names = node._input_names  # never changed in place: shared
        copy._output_names = node._output_names
        if node._in_edges:
            copy._in_edges = [None] * len(node._in_edges)
        copy._out_edges = [[] for _ in node._out_edges]
        copy._subgraph_names = list(node._subgraph_names) if node._subgraph_names else ()
        copy._op = node._op
        twin._nodes[name] = copy
        copies[id(node)] = copy
    return copies


def _edges(graph: Graph, copies: dict[int, Node]) -> None:
    """Data and control edges, consumers listed in node order as the AIR reader adds them."""
    for node in graph._nodes.values():
        copy = copies[id(node)]
        copy_edges = copy._in_edges
        for port, edge in enumerate(node._in_edges):
            if edge is None or not copy_edges:  # (no inputs: the shared empty tuple)
                continue
            src = copies.get(id(edge[0]))
            if src is None or edge[0]._graph is not graph or edge[1] >= len(src._out_edges):
                raise _UnsupportedError
            copy_edges[port] = (src, edge[1])
            src._out_edges[edge[1]].append((copy, port))
        for pred in node._in_ctrl:
            src = copies.get(id(pred))
            if src is None or pred._graph is not graph:
                raise _UnsupportedError
            link_control(src, copy)


def _body(graph: Graph) -> tuple[Graph, dict[int, Node]]:
    twin = Graph(graph._name)
    copies = _nodes(graph, twin)
    _edges(graph, copies)
    outputs = []
    for node, port in graph._outputs:
        copy = copies.get(id(node))
        if copy is None or not 0 <= port < len(copy._out_edges):
            raise _UnsupportedError
        outputs.append((copy, port))
    twin._outputs = outputs
    twin._attrs = _attrs(graph._attrs)
    if topological_order(twin)[1]:
        raise _UnsupportedError  # a cycle: the AIR reader refuses it, with its message
    return twin, copies


def clone_graph(graph: Graph) -> Graph | None:
    """An independent copy of the root ``graph`` and all its subgraphs, equal to what
    ``model_from_bytes(model_to_bytes(graph))`` gives; ``None`` where only that path applies."""
    if graph._parent_graph is not None or graph._name in graph._subgraphs:
        return None
    try:
        bodies = [_body(g) for g in (graph, *graph._subgraphs.values())]
    except _UnsupportedError:
        return None
    root = bodies[0][0]
    subs = {sub._name: sub for sub, _ in bodies[1:]}
    for sub in subs.values():
        sub._parent_graph = root
    root._subgraphs = subs
    # as the AIR reader: a subgraph's parent is the node naming it (each named by one node)
    for owner, copies in bodies:
        for node in copies.values():
            for name in node._subgraph_names:
                named = subs.get(name) if name else None
                if name and (named is None or named is owner or named._parent_node is not None):
                    return None
                if named is not None:
                    named._parent_node, named._parent_graph = node, owner
    return root
