"""``GeUtils``: whole-graph shape inference and the "has a compiled kernel" query.

Checks, texts and their order follow GE_ERRORS.md §6; GE's text starts each message and ours
(what was given, which node) follows after ``": "``:

- ``infer_shape(graph, input_shapes)``: ``input_shapes`` first (``TypeError`` "input_shapes
  must be a list of shape lists", then "each shape dim must be an integer"; ``bool`` dims are
  accepted and read as ints), then ``graph`` (GE-PY reads ``graph._handle``, so a non-``Graph``
  is an ``AttributeError`` "'<type>' object has no attribute '_handle'"; ours,
  :class:`NoHandleError`, is a :class:`~ge.error.GeAttributeError` and a ``TypeError`` too),
  then GE's conditions, each a ``RuntimeError`` "Failed to infer shape": an invalid (moved)
  graph; a root Data-like node (Data, RefData, AippData, AnyData) whose ``index`` attr is
  outside ``input_shapes``; a count of distinct root Data indexes other than
  ``len(input_shapes)``; a failing node inference.
  Data-like nodes without an int ``index`` attr are skipped, Variables are not graph inputs
  here, subgraph Data nodes follow their parent's inputs.
- ``check_node_support_on_aicore(node)``: a non-``Node`` is :class:`NoHandleError` (GE reads
  ``node._handle``); a node no longer in a graph is ``RuntimeError`` "Failed to check node
  support on AICore" (decision: GE's C call cannot resolve a node whose graph is gone).

Decision (ours, beyond GE): a failed ``infer_shape`` leaves every desc as it was
(``Graph.save_descs``/``restore_descs``), where GE leaves the graph half updated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ge.error import GeAttributeError, GeError, GeTypeError, GraphError
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.types import AttrValueType
from ge.ops.infer import infer_graph
from ge.ops.registry import find_op

__all__ = ["GeUtils", "NoHandleError"]

# GE's OpTypeUtils::IsDataNode types: the root nodes ``input_shapes`` feeds (by ``index``).
DATA_TYPES = frozenset({"Data", "RefData", "AippData", "AnyData"})

_INFER_FAILED = "Failed to infer shape"
_AICORE_FAILED = "Failed to check node support on AICore"


class NoHandleError(GeAttributeError, TypeError):
    """A ``graph``/``node`` argument of the wrong type (GE-PY: Python's ``AttributeError``
    from reading ``._handle``); a ``GeError`` and a ``TypeError`` too (what ``ge`` raised
    before)."""


def _no_handle(what: str, expected: str, given: object) -> NoHandleError:
    kind = type(given).__name__
    error = NoHandleError(
        f"'{kind}' object has no attribute '_handle': {what} must be a {expected}, got {kind}"
    )
    error.name, error.obj = "_handle", given
    return error


def _checked_shapes(input_shapes: object) -> list[list[int]]:
    """``input_shapes`` as lists of ints, GE's two type checks in GE's order (every element
    a list before any dim is looked at)."""
    if not isinstance(input_shapes, list) or not all(isinstance(s, list) for s in input_shapes):
        given = type(input_shapes).__name__
        if isinstance(input_shapes, list):
            bad = next(s for s in input_shapes if not isinstance(s, list))
            given = f"a list holding {type(bad).__name__} {bad!r}"
        raise GeTypeError(f"input_shapes must be a list of shape lists, got {given}")
    for i, shape in enumerate(input_shapes):
        for dim in shape:
            if not isinstance(dim, int):
                raise GeTypeError(
                    f"each shape dim must be an integer, got {type(dim).__name__} {dim!r} "
                    f"in input_shapes[{i}]"
                )
    return [[int(d) for d in shape] for shape in input_shapes]


def _data_index(node: Node) -> int | None:
    """The ``index`` of a Data-like node, ``None`` if it has no int one (GE's ``GetInt``
    fails then and the node is skipped) or is not Data-like."""
    if node.type not in DATA_TYPES:
        return None
    index = node.attr_value("index")
    if index is None or index.type is not AttrValueType.VT_INT:
        return None
    return int(index.value)


def _entries(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def _fed_inputs(graph: Graph, count: int) -> list[tuple[Node, int]]:
    """The root Data-like nodes with their ``index``, after GE's conditions 2 and 3."""
    fed: list[tuple[Node, int]] = []
    for node in graph.get_direct_nodes():
        index = _data_index(node)
        if index is None:
            continue
        if not 0 <= index < count:
            raise GeError(
                f"{_INFER_FAILED}: {node.type} node '{node.name}' has index {index}, "
                f"outside input_shapes' {_entries(count)}"
            )
        fed.append((node, index))
    indexes = sorted({i for _, i in fed})
    if len(indexes) != count:
        raise GeError(
            f"{_INFER_FAILED}: input_shapes has {_entries(count)}, but the graph's Data "
            f"nodes have {len(indexes)} distinct indexes {indexes}"
        )
    return fed


def _feed(fed: Sequence[tuple[Node, int]], shapes: Sequence[list[int]]) -> None:
    """Give each fed Data node's input and output descs ``shape`` and ``origin_shape``."""
    for node, index in fed:
        shape = shapes[index]
        for size, get, update in (
            (node.get_inputs_size(), node.get_input_desc, node.update_input_desc),
            (node.get_outputs_size(), node.get_output_desc, node.update_output_desc),
        ):
            for port in range(size):
                desc = get(port)
                desc.set_shape(shape)
                desc.set_origin_shape(shape)
                update(port, desc)


class GeUtils:
    """GE-PY's ``ge.utils.GeUtils`` (static methods)."""

    @staticmethod
    def infer_shape(graph: Graph, input_shapes: list[list[int]]) -> None:
        """Infer every node's output shape and dtype (subgraphs included) from the given input
        shapes (``input_shapes[i]`` for the root Data node with ``index`` i). Only the descs
        change; no other optimisation runs. On failure (``RuntimeError`` "Failed to infer
        shape") the graph is left as it was.

        >>> from ge.es import GraphBuilder
        >>> b = GraphBuilder("g")
        >>> y = b.create_input(0, shape=[2]) * 2.0
        >>> g = b.build_and_reset([y])
        >>> GeUtils.infer_shape(g, [[3, 4]])
        >>> list(g.find_node_by_name(y.name).get_output_desc(0).get_shape())
        [3, 4]
        """
        shapes = _checked_shapes(input_shapes)
        if not isinstance(graph, Graph):
            raise _no_handle("graph", "Graph", graph)
        try:
            saved = graph.save_descs()
        except GraphError as e:  # moved out by ``Pattern(graph)``: no compute graph left
            raise GeError(
                f"{_INFER_FAILED}: the graph is invalid, moved out by Pattern(graph) ({e})"
            ) from e
        fed = _fed_inputs(graph, len(shapes))
        try:
            _feed(fed, shapes)
            infer_graph(graph)
        except Exception as e:
            graph.restore_descs(saved)
            detail = str(e) if isinstance(e, GeError) else f"{type(e).__name__}: {e}"
            raise GeError(f"{_INFER_FAILED}: {detail}") from e

    @staticmethod
    def check_node_support_on_aicore(node: Node) -> tuple[bool, str]:
        """Whether ``node`` has a compiled kernel path (ge's stand-in for AICore support),
        and if not, why. Nodes without one still run, on their op's numpy reference.

        >>> from ge.es import GraphBuilder
        >>> b = GraphBuilder("g")
        >>> g = b.build_and_reset([b.create_input(0, shape=[2])])
        >>> GeUtils.check_node_support_on_aicore(g.find_node_by_name("input_0"))
        (True, '')
        """
        if not isinstance(node, Node):
            raise _no_handle("node", "Node", node)
        if node.graph is None:
            raise GeError(f"{_AICORE_FAILED}: node '{node.name}' was removed from its graph")
        from ge.compiler.kernels import LOWERINGS  # noqa: PLC0415  (compiler sits above utils)

        op: Any = find_op(node.type)
        if op is None:
            return False, f"op type {node.type!r} is not registered"
        if op.io or node.type == "Const":
            return True, ""
        if node.type in LOWERINGS:
            return True, ""
        return False, (
            f"{node.type} has no compiled kernel yet; it runs on its numpy reference implementation"
        )
