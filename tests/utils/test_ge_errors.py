"""GE_ERRORS.md §6 (``ge.utils.GeUtils``) row by row: the condition → GE-PY's exception type and
its text, which must START the message (ours may add what was given after it); rows named
``order:`` set two conditions at once and expect the check GE runs first. Every failing
``infer_shape`` row also checks the graph was left as it was; then GE's acceptance rules
(what GE's six conditions do not refuse) and what a success writes on the Data nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.es import GraphBuilder
from ge.graph import DataType, Graph, Node
from ge.ops import infer_graph
from ge.passes import Pattern
from ge.utils import GeUtils
from tests._python_errors import assert_like_python_attribute_error

DT = DataType

INFER = "Failed to infer shape"
AICORE = "Failed to check node support on AICore"
LIST = "input_shapes must be a list of shape lists"
DIM = "each shape dim must be an integer"


def no_handle(kind: str) -> str:
    return re.escape(f"'{kind}' object has no attribute '_handle'")


# ------------------------------------------------------------------------------- graphs ----


def two_inputs() -> Graph:
    """Data 0: f32[2, 3], Data 1: f32[3] → Relu(x + v)."""
    b = GraphBuilder("two")
    x = b.create_input(0, shape=[2, 3])
    v = b.create_input(1, shape=[3])
    return b.build_and_reset([ge.es.Relu(x + v)])


def hand_graph(*datas: tuple[str, Any]) -> Graph:
    """A hand-made graph: one Data-like node per ``(type, index)`` (``index=None``: no
    ``index`` attr), each feeding a Relu."""
    g = Graph("hand")
    for k, (op_type, index) in enumerate(datas):
        d = g.add_node(op_type, f"d{k}", num_inputs=1, num_outputs=1)
        if index is not None:
            d.set_attr("index", index)
        r = g.add_node("Relu", f"r{k}", num_inputs=1, num_outputs=1)
        g.add_data_edge(d, 0, r, 0)
    return g


def cyclic() -> Graph:
    g = hand_graph(("Data", 0))
    a = g.add_node("Add", "a", num_inputs=2, num_outputs=1)
    g.add_data_edge(g.find_node_by_name("d0"), 0, a, 0)
    g.add_data_edge(g.find_node_by_name("r0"), 0, a, 1)
    g.remove_edge(g.find_node_by_name("d0"), 0, g.find_node_by_name("r0"), 0)
    g.add_data_edge(a, 0, g.find_node_by_name("r0"), 0)
    return g


def unknown_op() -> Graph:
    g = hand_graph(("Data", 0))
    n = g.add_node("NoSuchOp", "n", num_inputs=1, num_outputs=1)
    g.add_data_edge(g.find_node_by_name("r0"), 0, n, 0)
    return g


def moved() -> Graph:
    g = two_inputs()
    Pattern(g)  # moves the graph's contents out; ``g`` has no compute graph left
    return g


def snapshot(graph: Graph) -> list[Any]:
    """Every desc (shape, origin shape, dtype, format) of every node, subgraphs included."""

    def one(d: Any) -> tuple[Any, ...]:
        return (list(d.get_shape()), list(d.get_origin_shape()), d.get_data_type(), d.get_format())

    return [
        (g.name, n.name, [one(d) for d in n.input_descs], [one(d) for d in n.output_descs])
        for g in [graph, *graph.get_all_subgraphs()]
        for n in g.get_direct_nodes()
    ]


# ------------------------------------------------------------------ infer_shape: the rows ----


@dataclass(frozen=True)
class Row:
    name: str
    graph: Callable[[], Any]  # a Graph, or any object for the graph-type rows
    shapes: Any
    error: type[BaseException]
    pattern: str  # a regex matched at the START of str(error)


INFER_ROWS = [
    # type checks, input_shapes before graph
    Row("input_shapes a tuple", two_inputs, ([2, 3], [3]), TypeError, LIST),
    Row("input_shapes a str", two_inputs, "2,3", TypeError, LIST),
    Row("input_shapes None", two_inputs, None, TypeError, LIST),
    Row("input_shapes a dict", two_inputs, {0: [2, 3]}, TypeError, LIST),
    Row("an element a tuple", two_inputs, [(2, 3), [3]], TypeError, LIST),
    Row("an element an int", two_inputs, [[2, 3], 3], TypeError, LIST),
    Row("an element None", two_inputs, [None, [3]], TypeError, LIST),
    Row("a float dim", two_inputs, [[2.0, 3], [3]], TypeError, DIM),
    Row("a str dim", two_inputs, [[2, "3"], [3]], TypeError, DIM),
    Row("a None dim", two_inputs, [[2, 3], [None]], TypeError, DIM),
    Row("a numpy int dim", two_inputs, [[np.int64(2), 3], [3]], TypeError, DIM),
    Row("a nested list dim", two_inputs, [[[2], 3], [3]], TypeError, DIM),
    Row("graph a str", lambda: "g", [[2, 3]], AttributeError, no_handle("str")),
    Row("graph None", lambda: None, [[2, 3]], AttributeError, no_handle("NoneType")),
    Row(
        "graph a Node",
        lambda: two_inputs().get_direct_nodes()[0],
        [[2]],
        AttributeError,
        no_handle("Node"),
    ),
    Row("order: input_shapes before graph", lambda: None, (2, 3), TypeError, LIST),
    Row("order: dims before graph", lambda: "g", [[2.5]], TypeError, DIM),
    # 1. no compute graph
    Row("1. a graph moved out by Pattern", moved, [[2, 3], [3]], RuntimeError, INFER),
    # 2. a root Data-like index outside input_shapes
    Row("2. index == len(input_shapes)", two_inputs, [[2, 3]], RuntimeError, INFER),
    Row("2. [] for a graph with Data", two_inputs, [], RuntimeError, INFER),
    Row("2. a negative index", lambda: hand_graph(("Data", -1)), [[2]], RuntimeError, INFER),
    Row("2. RefData", lambda: hand_graph(("Data", 0), ("RefData", 1)), [[2]], RuntimeError, INFER),
    Row("2. AippData", lambda: hand_graph(("AippData", 3)), [[2]], RuntimeError, INFER),
    Row("2. AnyData", lambda: hand_graph(("AnyData", 1)), [[2]], RuntimeError, INFER),
    # 3. distinct root Data indexes != len(input_shapes)
    Row("3. more shapes than Data nodes", two_inputs, [[2, 3], [3], [4]], RuntimeError, INFER),
    Row(
        "3. a repeated index",
        lambda: hand_graph(("Data", 0), ("Data", 0)),
        [[2], [3]],
        RuntimeError,
        INFER,
    ),
    Row(
        "3. a gap in the indexes",
        lambda: hand_graph(("Data", 0), ("Data", 2)),
        [[2], [3], [4]],
        RuntimeError,
        INFER,
    ),
    Row(
        "3. shapes for a graph without Data",
        lambda: hand_graph(("Data", None)),
        [[2]],
        RuntimeError,
        INFER,
    ),
    # 4. IR-definition recovery
    Row("4. an unregistered op type", unknown_op, [[2]], RuntimeError, INFER),
    # 5. a node's inference fails
    Row("5. shapes that do not broadcast", two_inputs, [[2, 3], [4]], RuntimeError, INFER),
    Row("5. a cycle", cyclic, [[2]], RuntimeError, INFER),
    # 6. (flattened dim count != sum of ranks) cannot happen from Python
]


@pytest.mark.parametrize("row", INFER_ROWS, ids=lambda r: r.name)
def test_infer_shape_rows(row: Row) -> None:
    graph = row.graph()
    before = snapshot(graph) if isinstance(graph, Graph) and row.name[0] != "1" else None
    with pytest.raises(row.error) as info:
        GeUtils.infer_shape(graph, row.shapes)
    assert re.match(row.pattern, str(info.value)), str(info.value)
    if row.error is AttributeError:
        assert_like_python_attribute_error(info.value)
    if before is not None:
        assert snapshot(graph) == before  # ours: a failure changes no desc


def test_infer_shape_failure_is_a_runtime_error_only() -> None:
    """GE raises ``RuntimeError``: an inner ``InferError`` (also a ``ValueError``) does not
    leak its type; it stays reachable as the cause."""
    with pytest.raises(RuntimeError) as info:
        GeUtils.infer_shape(two_inputs(), [[2, 3], [4]])
    assert not isinstance(info.value, ValueError)
    assert info.value.__cause__ is not None


def test_the_messages_say_what_was_given() -> None:
    with pytest.raises(TypeError, match=re.escape(f"{LIST}, got tuple")):
        GeUtils.infer_shape(two_inputs(), ([2, 3], [3]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=re.escape(f"{DIM}, got float 2.0 in input_shapes[0]")):
        GeUtils.infer_shape(two_inputs(), [[2.0, 3], [3]])  # type: ignore[list-item]
    with pytest.raises(AttributeError, match="graph must be a Graph, got str") as info:
        GeUtils.infer_shape("g", [[2, 3]])  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)  # ours: also what `ge` raised before
    with pytest.raises(RuntimeError, match="Data node 'input_1' has index 1"):
        GeUtils.infer_shape(two_inputs(), [[2, 3]])
    with pytest.raises(RuntimeError, match=r"has 3 entries, .* 2 distinct indexes \[0, 1\]"):
        GeUtils.infer_shape(two_inputs(), [[2, 3], [3], [4]])


# --------------------------------------------------------- infer_shape: what GE accepts ----


def out_shape(graph: Graph, name: str) -> list[int]:
    return list(graph.find_node_by_name(name).get_output_desc(0).get_shape())


def test_an_empty_list_for_a_graph_without_data() -> None:
    b = GraphBuilder("k")
    c = b.create_const_float([1.0, 2.0])
    g = b.build_and_reset([ge.es.Relu(c)])
    infer_graph(g)  # NetOutput's input descs start at GE's default, not the producers'
    before = snapshot(g)
    assert GeUtils.infer_shape(g, []) is None
    assert snapshot(g) == before


def test_data_without_an_int_index_is_skipped() -> None:
    g = hand_graph(("Data", None), ("Data", "0"), ("Data", True), ("Data", 0))
    GeUtils.infer_shape(g, [[7]])
    assert out_shape(g, "d3") == [7] and out_shape(g, "r3") == [7]
    for k in range(3):
        assert out_shape(g, f"d{k}") == []  # untouched: not fed


def test_only_data_without_index_takes_an_empty_list() -> None:
    GeUtils.infer_shape(hand_graph(("Data", None), ("RefData", None)), [])


def test_variables_are_not_counted() -> None:
    b = GraphBuilder("v")
    x = b.create_input(0, shape=[2])
    var = b.create_variable(1, "var")
    y = x * 2.0
    g = b.build_and_reset([y, var])
    GeUtils.infer_shape(g, [[5]])  # one shape: the Variable's index is no graph input here
    assert out_shape(g, y.name) == [5]
    assert out_shape(g, "var") == []
    with pytest.raises(RuntimeError, match=INFER):
        GeUtils.infer_shape(g, [[5], [5]])


def test_a_repeated_index_feeds_both_nodes() -> None:
    g = hand_graph(("Data", 0), ("Data", 0), ("RefData", 1))
    GeUtils.infer_shape(g, [[4], [2, 2]])
    assert [out_shape(g, f"r{k}") for k in range(3)] == [[4], [4], [2, 2]]


def test_bool_dims_are_read_as_ints() -> None:
    g = two_inputs()
    GeUtils.infer_shape(g, [[True, 3], [3]])
    assert out_shape(g, "input_0") == [1, 3]


def test_data_input_and_output_descs_get_shape_and_origin_shape() -> None:
    g = two_inputs()
    GeUtils.infer_shape(g, [[4, 3], [3]])
    d = g.find_node_by_name("input_0")
    for desc in (d.get_input_desc(0), d.get_output_desc(0)):
        assert list(desc.get_shape()) == [4, 3]
        assert list(desc.get_origin_shape()) == [4, 3]
        assert desc.get_data_type() == DT.DT_FLOAT


def test_subgraph_data_nodes_follow_their_parent() -> None:
    def branch(name: str) -> Graph:
        bb = GraphBuilder(name)
        return bb.build_and_reset([ge.es.Relu(bb.create_input(0, shape=[3]))])

    b = GraphBuilder("root")
    c = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1, shape=[3])
    (y,) = ge.es.If(c, [x], 1, branch("then_g"), branch("else_g"))
    g = b.build_and_reset([y])
    GeUtils.infer_shape(g, [[], [6]])  # two shapes: the branches' Data nodes are not counted
    assert out_shape(g, y.name) == [6]
    sub = g.get_subgraph("then_g")
    assert sub is not None and out_shape(sub, "input_0") == [6]


# ------------------------------------------------------------- check_node_support_on_aicore ----


def removed_node() -> Node:
    g = hand_graph(("Data", 0))
    node = g.find_node_by_name("r0")
    g.remove_node(node)
    return node


AICORE_ROWS = [
    Row("node a str", lambda: "Relu", None, AttributeError, no_handle("str")),
    Row("node None", lambda: None, None, AttributeError, no_handle("NoneType")),
    Row("node an int", lambda: 1, None, AttributeError, no_handle("int")),
    Row("node a Graph", lambda: Graph("g"), None, AttributeError, no_handle("Graph")),
    Row("a removed node", removed_node, None, RuntimeError, AICORE),
]


@pytest.mark.parametrize("row", AICORE_ROWS, ids=lambda r: r.name)
def test_check_node_support_on_aicore_rows(row: Row) -> None:
    with pytest.raises(row.error) as info:
        GeUtils.check_node_support_on_aicore(row.graph())
    assert re.match(row.pattern, str(info.value)), str(info.value)
    if row.error is AttributeError:
        assert_like_python_attribute_error(info.value)


def test_check_node_support_on_aicore_returns_a_bool_and_a_str() -> None:
    g = two_inputs()
    for node in g.get_direct_nodes():
        supported, reason = GeUtils.check_node_support_on_aicore(node)
        assert type(supported) is bool and type(reason) is str
        assert (reason == "") is supported
