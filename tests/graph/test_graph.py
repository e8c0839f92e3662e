"""``ge.graph.Graph``: every public method, its GE-PY error behaviour, and atomic failure.

Expectations come from GE_REFERENCE.md §4.3 and §10 (items 1, 6, 7, 8). Every failing call is
followed by a check that the graph is exactly as it was before the call.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from ge.graph import DataType, DumpFormat, Graph, Node, TensorDesc

# --- helpers -------------------------------------------------------------------------------------


def _in_edges(node: Node) -> list[tuple[str, int] | None]:
    out: list[tuple[str, int] | None] = []
    for i in range(node.get_inputs_size()):
        try:
            src, port = node.get_in_data_nodes_and_port_indexes(i)
        except RuntimeError:
            out.append(None)
        else:
            out.append((src.name, port))
    return out


def _out_edges(node: Node) -> list[list[tuple[str, int]]]:
    return [
        [(dst.name, port) for dst, port in node.get_out_data_nodes_and_port_indexes(i)]
        for i in range(node.get_outputs_size())
    ]


def _node_state(node: Node) -> tuple[Any, ...]:
    return (
        node.name,
        node.type,
        _in_edges(node),
        _out_edges(node),
        [n.name for n in node.get_in_control_nodes()],
        [n.name for n in node.get_out_control_nodes()],
        node.get_subgraph_names(),
        node.graph,
    )


def snapshot(graph: Graph) -> tuple[Any, ...]:
    """Everything observable about a graph: its text, every link seen from both ends, the
    subgraph registry and the outputs."""
    return (
        graph.name,
        graph.as_text(),
        [_node_state(n) for n in graph.get_all_nodes()],
        [id(n) for n in graph.get_all_nodes()],
        [(s.name, id(s)) for s in graph.get_all_subgraphs()],
        [(n.name, i) for n, i in graph.get_outputs()],
    )


def chain() -> tuple[Graph, Node, Node, Node]:
    """``a -> b -> c``, each with one input (except ``a``) and one output."""
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    c = g.add_node("Relu", "c", num_inputs=1, num_outputs=1)
    g.add_data_edge(a, 0, b, 0)
    g.add_data_edge(b, 0, c, 0)
    return g, a, b, c


# --- name ----------------------------------------------------------------------------------------


def test_default_name_is_graph() -> None:
    assert Graph().name == "graph"
    assert Graph(None).name == "graph"


def test_name_is_kept() -> None:
    assert Graph("my_graph").name == "my_graph"
    assert Graph(name="kw").name == "kw"


@pytest.mark.parametrize("bad", [1, 1.5, b"g", ["g"], True])
def test_non_str_name_is_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        Graph(bad)  # type: ignore[arg-type]


def test_name_is_read_only() -> None:
    g = Graph("g")
    with pytest.raises(AttributeError):
        g.name = "h"  # type: ignore[misc]
    assert g.name == "g"


# --- add_node and naming -------------------------------------------------------------------------


def test_add_node_auto_names_type_underscore_counter() -> None:
    g = Graph("g")
    a = g.add_node("Const", num_outputs=1)
    b = g.add_node("Const", num_outputs=1)
    assert (a.name, b.name) == ("Const_0", "Const_1")
    assert a.type == "Const"


def test_auto_names_share_one_graph_wide_counter() -> None:
    # GE-PY's builder: one counter for all op types; named nodes do not consume it.
    g = Graph("g")
    g.add_node("Data", "x", num_outputs=1)
    first = g.add_node("Const", num_outputs=1)
    second = g.add_node("Relu", num_inputs=1, num_outputs=1)
    assert first.name == "Const_0"
    assert second.name == "Relu_1"


def test_auto_name_skips_a_name_already_taken() -> None:
    g = Graph("g")
    g.add_node("Relu", "Relu_0")
    auto = g.add_node("Relu")
    assert auto.name != "Relu_0"
    assert re.fullmatch(r"Relu_\d+", auto.name)
    assert len({n.name for n in g.get_direct_nodes()}) == 2


def test_add_node_ports() -> None:
    g = Graph("g")
    n = g.add_node(
        "Split",
        "s",
        num_inputs=2,
        num_outputs=3,
        input_names=["x", "axis"],
        output_names=["y0", "y1", "y2"],
    )
    assert (n.get_inputs_size(), n.get_outputs_size()) == (2, 3)
    assert n.get_input_names() == ["x", "axis"]
    assert n.get_output_names() == ["y0", "y1", "y2"]
    assert n.graph is g


def test_duplicate_node_name_is_runtime_error_and_graph_unchanged() -> None:
    g, a, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(RuntimeError, match="a"):
        g.add_node("Relu", "a", num_inputs=1, num_outputs=1)
    assert snapshot(g) == before
    assert g.find_node_by_name("a") is a


@pytest.mark.parametrize(
    ("args", "kwargs", "exc"),
    [
        ((1,), {}, TypeError),
        (("",), {}, TypeError),
        (("Relu", 5), {}, TypeError),
        (("Relu",), {"num_inputs": -1}, ValueError),
        (("Relu",), {"num_inputs": "1"}, TypeError),
        (("Relu",), {"num_inputs": 2, "input_names": ["x"]}, ValueError),
        (("Relu",), {"num_outputs": 1, "output_names": [1]}, TypeError),
    ],
)
def test_add_node_bad_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], exc: type) -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(exc):
        g.add_node(*args, **kwargs)
    assert snapshot(g) == before


# --- listing and finding nodes -------------------------------------------------------------------


def _graph_with_subgraphs() -> tuple[Graph, Graph, Graph, Graph]:
    """root: x, If_0 (then_g, else_g), y; then_g: t0, While_0 (body_g); body_g: b0."""
    root = Graph("root")
    root.add_node("Data", "x", num_outputs=1)
    if_node = root.add_node("If", "If_0", num_inputs=1, num_outputs=1)
    root.add_node("Relu", "y", num_inputs=1, num_outputs=1)
    then_g = Graph("then_g")
    then_g.add_node("Data", "t0", num_outputs=1)
    while_node = then_g.add_node("While", "While_0", num_inputs=1, num_outputs=1)
    then_g.add_node("Relu", "t1", num_inputs=1, num_outputs=1)
    else_g = Graph("else_g")
    else_g.add_node("Data", "e0", num_outputs=1)
    body_g = Graph("body_g")
    body_g.add_node("Data", "b0", num_outputs=1)
    root.set_node_subgraph(if_node, 0, then_g)
    root.set_node_subgraph(if_node, 1, else_g)
    then_g.set_node_subgraph(while_node, 0, body_g)
    return root, then_g, else_g, body_g


def test_get_direct_nodes_in_creation_order() -> None:
    g = Graph("g")
    names = ["z", "a", "m"]
    for n in names:
        g.add_node("Data", n, num_outputs=1)
    assert [n.name for n in g.get_direct_nodes()] == names
    root, then_g, _, _ = _graph_with_subgraphs()
    assert [n.name for n in root.get_direct_nodes()] == ["x", "If_0", "y"]
    assert [n.name for n in then_g.get_direct_nodes()] == ["t0", "While_0", "t1"]


def test_get_all_nodes_recurses_after_parent_node() -> None:
    root, then_g, _, _ = _graph_with_subgraphs()
    assert [n.name for n in root.get_all_nodes()] == [
        "x",
        "If_0",
        "t0",
        "While_0",
        "b0",
        "t1",
        "e0",
        "y",
    ]
    assert [n.name for n in then_g.get_all_nodes()] == ["t0", "While_0", "b0", "t1"]


def test_get_nodes_returns_fresh_lists() -> None:
    g, _, _, _ = chain()
    g.get_direct_nodes().clear()
    g.get_all_nodes().clear()
    assert [n.name for n in g.get_direct_nodes()] == ["a", "b", "c"]


def test_find_node_by_name() -> None:
    g, _, b, _ = chain()
    assert g.find_node_by_name("b") is b


def test_find_node_by_name_missing_is_runtime_error() -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(RuntimeError, match="Failed to find Node name invalid"):
        g.find_node_by_name("invalid")
    assert snapshot(g) == before


def test_find_node_by_name_searches_subgraphs() -> None:
    root, _, _, body_g = _graph_with_subgraphs()
    assert root.find_node_by_name("e0").name == "e0"
    b0 = root.find_node_by_name("b0")
    assert b0.graph is body_g


def test_find_node_by_name_non_str_is_type_error() -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(TypeError):
        g.find_node_by_name(1)  # type: ignore[arg-type]
    assert snapshot(g) == before


# --- add_data_edge -------------------------------------------------------------------------------


def test_add_data_edge_links_both_ends() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=2)
    b = g.add_node("Add", "b", num_inputs=2, num_outputs=1)
    c = g.add_node("Relu", "c", num_inputs=1, num_outputs=1)
    g.add_data_edge(a, 1, b, 0)
    g.add_data_edge(a, 1, b, 1)
    g.add_data_edge(a, 0, c, 0)
    src, port = b.get_in_data_nodes_and_port_indexes(1)
    assert (src, port) == (a, 1)
    assert [(n.name, p) for n, p in a.get_out_data_nodes_and_port_indexes(1)] == [
        ("b", 0),
        ("b", 1),
    ]
    assert [(n.name, p) for n, p in a.get_out_data_nodes_and_port_indexes(0)] == [("c", 0)]


def test_add_data_edge_failure_message_names_nodes_and_ports() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    other = g.add_node("Data", "other", num_outputs=1)
    g.add_data_edge(other, 0, b, 0)
    before = snapshot(g)
    with pytest.raises(
        RuntimeError,
        match="Failed to add DataEdge from Node a, Port Index 0 to Node b, Port Index 0",
    ):
        g.add_data_edge(a, 0, b, 0)  # input 0 of b is already fed by `other`
    assert snapshot(g) == before
    assert b.get_in_data_nodes_and_port_indexes(0) == (other, 0)


@pytest.mark.parametrize(("src_port", "dst_port"), [(1, 0), (-1, 0), (0, 1), (0, -1), (7, 7)])
def test_add_data_edge_port_out_of_range(src_port: int, dst_port: int) -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    before = snapshot(g)
    with pytest.raises(
        RuntimeError,
        match=f"Failed to add DataEdge from Node a, Port Index {src_port} to Node b, "
        f"Port Index {dst_port}",
    ):
        g.add_data_edge(a, src_port, b, dst_port)
    assert snapshot(g) == before


def test_add_data_edge_node_of_another_graph() -> None:
    """GE_ERRORS.md §13.2: the nodes need an owner graph, not this one. Edges inside another
    graph, and across two graphs, are accepted (verify reports a cross-graph edge); a
    removed node (no graph) is refused."""
    g, a, b, c = chain()
    h = Graph("h")
    f = h.add_node("Relu", "f", num_inputs=1, num_outputs=1)
    f2 = h.add_node("Relu", "f2", num_inputs=1, num_outputs=1)
    g.add_data_edge(f, 0, f2, 0)  # an edge inside h, added through g
    assert f2.get_in_data_nodes_and_port_indexes(0) == (f, 0)
    h.add_data_edge(c, 0, f, 0)  # across the two graphs
    assert f.get_in_data_nodes_and_port_indexes(0) == (c, 0)
    with pytest.raises(RuntimeError, match="fed by c, which is not in graph 'h'"):
        h.verify(ops=False)
    g.remove_node(a)
    before = snapshot(g)
    with pytest.raises(RuntimeError, match=r"^Failed to add DataEdge from Node a, Port Index 0"):
        g.add_data_edge(a, 0, b, 0)
    assert snapshot(g) == before



def test_add_data_edge_removed_node() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    g.remove_node(a)
    before = snapshot(g)
    with pytest.raises(RuntimeError):
        g.add_data_edge(a, 0, b, 0)
    assert snapshot(g) == before


@pytest.mark.parametrize(
    "args",
    [
        ("a", 0, None, 0),
        (None, 0, "b", 0),
        ("a", "0", "b", 0),
        ("a", 0, "b", "0"),
        ("a", 0.0, "b", 0),
        ("a", 0, "b", None),
    ],
)
def test_add_data_edge_wrong_argument_types(args: tuple[Any, ...]) -> None:
    g = Graph("g")
    nodes = {
        "a": g.add_node("Data", "a", num_outputs=1),
        "b": g.add_node("Relu", "b", num_inputs=1, num_outputs=1),
    }
    real = [nodes.get(x, x) if isinstance(x, str) and x in nodes else x for x in args]
    before = snapshot(g)
    with pytest.raises(TypeError):
        g.add_data_edge(*real)
    assert snapshot(g) == before


# --- add_control_edge ----------------------------------------------------------------------------


def test_add_control_edge_links_both_ends() -> None:
    g, a, b, c = chain()
    g.add_control_edge(a, c)
    g.add_control_edge(b, c)
    assert c.get_in_control_nodes() == [a, b]
    assert a.get_out_control_nodes() == [c]
    assert b.get_out_control_nodes() == [c]
    assert "^a" in g.as_text()


def test_add_control_edge_is_idempotent() -> None:
    g, a, _, c = chain()
    g.add_control_edge(a, c)
    before = snapshot(g)
    g.add_control_edge(a, c)
    assert snapshot(g) == before
    assert c.get_in_control_nodes() == [a]
    assert a.get_out_control_nodes() == [c]


def test_add_control_edge_node_of_another_graph() -> None:
    g, a, b, _ = chain()
    h = Graph("h")
    f = h.add_node("Data", "f", num_outputs=1)
    g.add_control_edge(a, f)  # accepted, as GE does
    assert f.get_in_control_nodes() == [a]
    g.remove_edge(a, -1, f, -1)
    assert f.get_in_control_nodes() == []
    g.remove_node(b)
    before = snapshot(g)
    with pytest.raises(RuntimeError, match=r"^Failed to add Control from Node a to Node b"):
        g.add_control_edge(a, b)
    assert snapshot(g) == before



@pytest.mark.parametrize("which", ["src", "dst"])
def test_add_control_edge_wrong_types(which: str) -> None:
    g, a, b, _ = chain()
    before = snapshot(g)
    with pytest.raises(TypeError):
        if which == "src":
            g.add_control_edge("a", b)  # type: ignore[arg-type]
        else:
            g.add_control_edge(a, 1)  # type: ignore[arg-type]
    assert snapshot(g) == before


# --- remove_edge ---------------------------------------------------------------------------------


def test_remove_data_edge() -> None:
    g, a, b, c = chain()
    g.remove_edge(a, 0, b, 0)
    with pytest.raises(RuntimeError):
        b.get_in_data_nodes_and_port_indexes(0)
    assert a.get_out_data_nodes_and_port_indexes(0) == []
    assert c.get_in_data_nodes_and_port_indexes(0) == (b, 0)
    assert "b = Relu(_)" in g.as_text()
    g.add_data_edge(a, 0, b, 0)  # the input is free again
    assert b.get_in_data_nodes_and_port_indexes(0) == (a, 0)


def test_remove_data_edge_keeps_other_consumers() -> None:
    g, a, b, _ = chain()
    d = g.add_node("Relu", "d", num_inputs=1, num_outputs=1)
    g.add_data_edge(a, 0, d, 0)
    g.remove_edge(a, 0, b, 0)
    assert a.get_out_data_nodes_and_port_indexes(0) == [(d, 0)]
    assert d.get_in_data_nodes_and_port_indexes(0) == (a, 0)


def test_remove_control_edge_with_ports_minus_one() -> None:
    g, a, b, c = chain()
    g.add_control_edge(a, c)
    g.add_control_edge(b, c)
    g.remove_edge(a, -1, c, -1)
    assert c.get_in_control_nodes() == [b]
    assert a.get_out_control_nodes() == []
    assert b.get_out_data_nodes_and_port_indexes(0) == [(c, 0)]  # data edge untouched


@pytest.mark.parametrize(
    "edge",
    [
        ("a", 0, "c", 0),  # no such data edge
        ("b", 0, "b", 0),
        ("a", -1, "c", -1),  # no such control edge
        ("a", -1, "b", -1),  # a data edge exists there, not a control edge
        ("a", 1, "b", 0),  # port past range
        ("a", 0, "b", 5),
        ("a", -1, "b", 0),
    ],
)
def test_remove_absent_edge_is_runtime_error(edge: tuple[str, int, str, int]) -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    src, sp, dst, dp = edge
    with pytest.raises(RuntimeError):
        g.remove_edge(g.find_node_by_name(src), sp, g.find_node_by_name(dst), dp)
    assert snapshot(g) == before


def test_remove_edge_node_of_another_graph() -> None:
    g, a, _, _ = chain()
    h = Graph("h")
    f = h.add_node("Relu", "f", num_inputs=1, num_outputs=1)
    before_g, before_h = snapshot(g), snapshot(h)
    with pytest.raises(RuntimeError):
        g.remove_edge(a, 0, f, 0)
    assert snapshot(g) == before_g
    assert snapshot(h) == before_h


@pytest.mark.parametrize("bad_pos", [0, 1, 2, 3])
def test_remove_edge_wrong_types(bad_pos: int) -> None:
    g, a, b, _ = chain()
    args: list[Any] = [a, 0, b, 0]
    args[bad_pos] = "x"
    before = snapshot(g)
    with pytest.raises(TypeError):
        g.remove_edge(*args)
    assert snapshot(g) == before


# --- remove_node ---------------------------------------------------------------------------------


def test_remove_node_cleans_every_link() -> None:
    g, a, b, c = chain()
    x = g.add_node("NoOp", "x")
    y = g.add_node("NoOp", "y")
    d = g.add_node("Relu", "d", num_inputs=1, num_outputs=1)
    g.add_data_edge(b, 0, d, 0)
    g.add_control_edge(x, b)
    g.add_control_edge(b, y)
    g.add_control_edge(x, y)
    g.set_outputs([(b, 0), (c, 0)])

    g.remove_node(b)

    assert [n.name for n in g.get_direct_nodes()] == ["a", "c", "x", "y", "d"]
    assert a.get_out_data_nodes_and_port_indexes(0) == []
    for consumer in (c, d):
        with pytest.raises(RuntimeError):
            consumer.get_in_data_nodes_and_port_indexes(0)
    assert x.get_out_control_nodes() == [y]
    assert y.get_in_control_nodes() == [x]
    assert g.get_outputs() == [(c, 0)]
    with pytest.raises(RuntimeError, match="Failed to find Node name b"):
        g.find_node_by_name("b")
    assert b.graph is None
    text = g.as_text()
    assert "  b = " not in text and "b:0" not in text and "^b" not in text
    g.verify(ops=False)


def test_remove_nodes_filters_a_shared_producer_once() -> None:
    g = Graph("g")
    x = g.add_node("Data", "x", num_outputs=1)
    readers = [g.add_node("Relu", f"r{i}", num_inputs=1, num_outputs=1) for i in range(10)]
    for r in readers:
        g.add_data_edge(x, 0, r, 0)
    tail = g.add_node("Relu", "tail", num_inputs=1, num_outputs=1)
    g.add_data_edge(readers[3], 0, tail, 0)
    g.set_outputs([(readers[3], 0), (readers[4], 0)])

    g.remove_nodes(r for i, r in enumerate(readers) if i % 2 == 1)  # a generator is fine

    kept = [readers[i] for i in range(0, 10, 2)]
    assert [n for n, _ in x.get_out_data_nodes_and_port_indexes(0)] == kept  # order kept
    assert [n.name for n in g.get_direct_nodes()] == ["x", *(r.name for r in kept), "tail"]
    with pytest.raises(RuntimeError):
        tail.get_in_data_nodes_and_port_indexes(0)  # its producer r3 is gone
    assert g.get_outputs() == [(readers[4], 0)]
    assert all(readers[i].graph is None for i in range(1, 10, 2))
    g.verify(ops=False)


def test_remove_nodes_of_a_connected_group_and_control_edges() -> None:
    g, a, b, c = chain()
    x = g.add_node("NoOp", "x")
    g.add_control_edge(b, x)
    g.add_control_edge(x, c)
    g.remove_nodes([c, b, c])  # duplicates and any order
    assert [n.name for n in g.get_direct_nodes()] == ["a", "x"]
    assert a.get_out_data_nodes_and_port_indexes(0) == []
    assert x.get_in_control_nodes() == [] and x.get_out_control_nodes() == []
    g.verify(ops=False)


def test_remove_nodes_checks_all_before_removing_any() -> None:
    g, _, b, c = chain()
    _, _, foreign, _ = chain()
    before = snapshot(g)
    with pytest.raises(RuntimeError, match="Failed to remove Node"):
        g.remove_nodes([b, foreign, c])
    assert snapshot(g) == before


def test_removed_name_can_be_reused() -> None:
    g, _, b, _ = chain()
    g.remove_node(b)
    again = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    assert g.find_node_by_name("b") is again


def test_remove_node_twice_is_runtime_error() -> None:
    g, _, b, _ = chain()
    g.remove_node(b)
    before = snapshot(g)
    with pytest.raises(RuntimeError):
        g.remove_node(b)
    assert snapshot(g) == before


def test_remove_node_of_another_graph_is_runtime_error() -> None:
    g, _, _, _ = chain()
    h, _, hb, _ = chain()
    before_g, before_h = snapshot(g), snapshot(h)
    with pytest.raises(RuntimeError):
        g.remove_node(hb)  # same name "b" exists in g, but it is a different node
    assert snapshot(g) == before_g
    assert snapshot(h) == before_h


def test_remove_node_wrong_type() -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(TypeError):
        g.remove_node("b")  # type: ignore[arg-type]
    assert snapshot(g) == before


# --- graph outputs (ours) ------------------------------------------------------------------------


def test_set_outputs() -> None:
    g, a, _, c = chain()
    g.set_outputs([(c, 0), (a, 0)])
    assert g.get_outputs() == [(c, 0), (a, 0)]
    assert g.as_text().splitlines()[-2] == "  return c:0, a:0"


@pytest.mark.parametrize(
    ("make", "exc"),
    [
        (lambda g, h: [(g.find_node_by_name("c"), 1)], RuntimeError),
        (lambda g, h: [(h.find_node_by_name("c"), 0)], RuntimeError),
        (lambda g, h: [(g.find_node_by_name("c"), "0")], TypeError),
        (lambda g, h: [g.find_node_by_name("c")], TypeError),
        (lambda g, h: "c", TypeError),
        (lambda g, h: [("c", 0)], TypeError),
    ],
)
def test_set_outputs_errors_leave_outputs(make: Any, exc: type) -> None:
    g, a, _, _ = chain()
    h, _, _, _ = chain()
    g.set_outputs([(a, 0)])
    before = snapshot(g)
    with pytest.raises(exc):
        g.set_outputs(make(g, h))
    assert snapshot(g) == before


# --- graph attributes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [1, -(2**63), 2**63 - 1, "text", "", [1, 2, 3], [True, False], ["a", "b"], DataType.DT_INT32],
)
def test_graph_attr_round_trip_exact(value: Any) -> None:
    g = Graph("g")
    g.set_attr("k", value)
    got = g.get_attr("k")
    assert got == value
    assert type(got) is type(value)


def test_graph_attr_bool_is_bool() -> None:
    g = Graph("g")
    g.set_attr("t", True)
    g.set_attr("f", False)
    assert g.get_attr("t") is True
    assert g.get_attr("f") is False


def test_graph_attr_float_and_float_list() -> None:
    g = Graph("g")
    g.set_attr("f", 0.5)
    g.set_attr("fl", [0.25, 1.5])
    g.set_attr("pi", 3.14159)
    assert g.get_attr("f") == 0.5
    assert isinstance(g.get_attr("f"), float)
    assert g.get_attr("fl") == [0.25, 1.5]
    assert g.get_attr("pi") == pytest.approx(3.14159, rel=1e-6)


def test_graph_attr_overwrite_and_has_attr() -> None:
    g = Graph("g")
    assert not g.has_attr("k")
    g.set_attr("k", 1)
    g.set_attr("k", "now a string")
    assert g.has_attr("k")
    assert g.get_attr("k") == "now a string"


def test_graph_attr_missing_is_runtime_error() -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(RuntimeError):
        g.get_attr("missing")
    assert snapshot(g) == before


@pytest.mark.parametrize("key", [1, None, b"k", ("k",)])
def test_graph_attr_key_must_be_str(key: Any) -> None:
    g, _, _, _ = chain()
    g.set_attr("k", 1)
    before = snapshot(g)
    with pytest.raises(TypeError, match="Attribute key must be a string"):
        g.set_attr(key, 1)
    with pytest.raises(TypeError, match="Attribute key must be a string"):
        g.get_attr(key)
    assert snapshot(g) == before


@pytest.mark.parametrize("value", [{"key": "value"}, [1, "a"], [], None, object()])
def test_graph_attr_unsupported_value_keeps_old_value(value: Any) -> None:
    g = Graph("g")
    g.set_attr("k", 7)
    before = snapshot(g)
    with pytest.raises(ValueError):
        g.set_attr("k", value)
    with pytest.raises(ValueError):
        g.set_attr("new", value)
    assert snapshot(g) == before
    assert g.get_attr("k") == 7
    assert not g.has_attr("new")


# --- subgraphs -----------------------------------------------------------------------------------


def test_add_get_and_list_subgraphs() -> None:
    g = Graph("test_graph")
    then_g, else_g = Graph("then_graph"), Graph("else_graph")
    g.register_subgraph(then_g)
    g.register_subgraph(else_g)
    assert g.get_subgraph("then_graph") is then_g
    assert g.get_subgraph("else_graph") is else_g
    assert g.get_all_subgraphs() == [then_g, else_g]


def test_get_unknown_subgraph_is_none() -> None:
    g = Graph("test_graph")
    assert g.get_subgraph("nope") is None
    g.register_subgraph(Graph("then_graph"))
    assert g.get_subgraph("nope") is None
    assert g.get_subgraph("test_graph") is None  # the root is not its own subgraph


def test_get_all_subgraphs_empty_and_fresh() -> None:
    g = Graph("g")
    assert g.get_all_subgraphs() == []
    g.register_subgraph(Graph("s"))
    g.get_all_subgraphs().clear()
    assert [s.name for s in g.get_all_subgraphs()] == ["s"]


def test_duplicate_subgraph_name_fails() -> None:
    g = Graph("test_graph")
    first = Graph("then_graph")
    g.register_subgraph(first)
    before = snapshot(g)
    second = Graph("then_graph")
    with pytest.raises(
        RuntimeError, match="Failed to register subgraph 'then_graph' on graph 'test_graph'"
    ):
        g.register_subgraph(second)
    assert snapshot(g) == before
    assert g.get_subgraph("then_graph") is first
    with pytest.raises(RuntimeError, match="Failed to register subgraph 'then_graph'"):
        g.register_subgraph(first)  # the very same graph again
    assert snapshot(g) == before


def test_add_subgraph_wrong_type() -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(TypeError):
        g.register_subgraph("s")  # type: ignore[arg-type]
    assert snapshot(g) == before
    assert g.get_all_subgraphs() == []


def test_graph_cannot_be_its_own_subgraph() -> None:
    g = Graph("g")
    n = g.add_node("If", "If_0", num_inputs=1, num_outputs=1)
    before = snapshot(g)
    with pytest.raises(RuntimeError):
        g.register_subgraph(g)
    with pytest.raises(RuntimeError):
        g.set_node_subgraph(n, 0, g)
    assert snapshot(g) == before


def test_ancestor_cannot_become_subgraph_of_descendant() -> None:
    root, then_g, _, body_g = _graph_with_subgraphs()
    before = snapshot(root)
    t1 = then_g.find_node_by_name("t1")
    with pytest.raises(RuntimeError):
        then_g.set_node_subgraph(t1, 0, root)
    with pytest.raises(RuntimeError):
        body_g.register_subgraph(root)
    with pytest.raises(RuntimeError):
        then_g.set_node_subgraph(t1, 0, then_g)
    assert snapshot(root) == before


def test_nested_subgraphs_move_up_to_the_root() -> None:
    root = Graph("root")
    a, b = Graph("A"), Graph("B")
    a.register_subgraph(b)
    assert a.get_all_subgraphs() == [b]
    root.register_subgraph(a)
    assert root.get_all_subgraphs() == [a, b]
    assert root.get_subgraph("B") is b
    # every graph of the family sees the root's registry
    assert a.get_all_subgraphs() == [a, b]
    assert b.get_subgraph("A") is a
    assert a.get_subgraph("B") is b


def test_nested_node_subgraphs_registered_on_root() -> None:
    root, then_g, else_g, body_g = _graph_with_subgraphs()
    assert root.get_all_subgraphs() == [then_g, else_g, body_g]
    assert then_g.get_subgraph("body_g") is body_g
    assert body_g.parent_node is then_g.find_node_by_name("While_0")
    assert then_g.parent_node is root.find_node_by_name("If_0")
    assert root.find_node_by_name("If_0").get_subgraph_names() == ["then_g", "else_g"]


def test_add_subgraph_with_clashing_nested_name_registers_nothing() -> None:
    root = Graph("root")
    root.register_subgraph(Graph("B"))
    a, b = Graph("A"), Graph("B")
    a.register_subgraph(b)
    before = snapshot(root)
    with pytest.raises(RuntimeError, match="Failed to register subgraph 'A' on graph 'root'"):
        root.register_subgraph(a)
    assert snapshot(root) == before
    assert root.get_subgraph("A") is None
    assert a.get_subgraph("B") is b  # a still holds its own subgraph


def test_subgraph_named_like_the_root_fails() -> None:
    root = Graph("root")
    before = snapshot(root)
    with pytest.raises(RuntimeError, match="Failed to register subgraph 'root' on graph 'root'"):
        root.register_subgraph(Graph("root"))
    assert snapshot(root) == before


def test_standalone_graph_of_another_root_cannot_be_registered() -> None:
    r1, r2 = Graph("r1"), Graph("r2")
    s = Graph("s")
    r1.register_subgraph(s)
    before1, before2 = snapshot(r1), snapshot(r2)
    with pytest.raises(RuntimeError, match="Failed to register subgraph 's' on graph 'r2'"):
        r2.register_subgraph(s)
    with pytest.raises(RuntimeError, match=r"^Failed to add subgraph 's' to graph 'r2'"):
        r2.add_subgraph(s)  # GE: no parent node
    assert snapshot(r1) == before1
    assert snapshot(r2) == before2


def test_add_subgraph_of_a_subgraph_attached_to_another_graph() -> None:
    """GE_ERRORS.md §13.2: GE checks only that the subgraph has a parent graph and a parent
    node of that graph; the same object is then registered in both graphs, not copied."""
    r1, r2 = Graph("r1"), Graph("r2")
    node = r1.add_node("If", "if", num_inputs=1, num_outputs=1)
    s = Graph("s")
    r1.set_node_subgraph(node, 0, s)
    r2.add_subgraph(s)
    assert r2.get_subgraph("s") is s
    assert r1.get_subgraph("s") is s
    assert s.parent_node is node
    assert r2.get_all_subgraphs() == [s]
    with pytest.raises(RuntimeError, match=r"^Failed to add subgraph 's' to graph 'r2'"):
        r2.add_subgraph(s)  # the same name again
    r2.remove_subgraph("s")  # r1 keeps it attached
    assert r2.get_subgraph("s") is None
    assert r1.get_subgraph("s") is s and node.get_subgraph_names() == ["s"]
    with pytest.raises(RuntimeError, match=r"^Failed to add subgraph 'fresh' to graph 'r1'"):
        r1.add_subgraph(Graph("fresh"))  # GE: a standalone graph has no parent node
    assert r1.get_subgraph("fresh") is None



def test_remove_subgraph() -> None:
    g = Graph("g")
    s, t = Graph("s"), Graph("t")
    g.register_subgraph(s)
    g.register_subgraph(t)
    g.remove_subgraph("s")
    assert g.get_subgraph("s") is None
    assert g.get_all_subgraphs() == [t]
    g.register_subgraph(s)  # s is free again
    assert g.get_all_subgraphs() == [t, s]


def test_remove_subgraph_clears_the_parent_node_reference() -> None:
    root, _, else_g, _ = _graph_with_subgraphs()
    if_node = root.find_node_by_name("If_0")
    root.remove_subgraph("then_g")
    assert if_node.get_subgraph_names() == ["", "else_g"]
    assert root.get_subgraph("then_g") is None
    assert [n.name for n in root.get_all_nodes()][:3] == ["x", "If_0", "e0"]
    assert root.get_subgraph("else_g") is else_g


def test_remove_unknown_subgraph_does_nothing() -> None:
    """GE_ERRORS.md §13.2: removing an unknown name succeeds silently."""
    root, _, _, _ = _graph_with_subgraphs()
    before = snapshot(root)
    root.remove_subgraph("nope")
    with pytest.raises(TypeError, match=r"^name must be a string"):
        root.remove_subgraph(1)  # type: ignore[arg-type]
    assert snapshot(root) == before



def test_set_node_subgraph_errors_leave_graph_unchanged() -> None:
    root, then_g, _, _ = _graph_with_subgraphs()
    y = root.find_node_by_name("y")
    before = snapshot(root)
    with pytest.raises(ValueError):
        root.set_node_subgraph(y, 1, Graph("gap"))  # index 0 must come first
    with pytest.raises(RuntimeError):
        root.set_node_subgraph(y, 0, then_g)  # then_g already belongs to If_0
    with pytest.raises(TypeError):
        root.set_node_subgraph(y, 0, "then_g")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        root.set_node_subgraph(Graph("h").add_node("If", "i"), 0, Graph("z"))
    assert snapshot(root) == before


def test_same_subgraph_cannot_fill_two_slots_of_a_node() -> None:
    # A subgraph has one parent node and one parent index; attaching it again would make
    # get_all_nodes() list its nodes twice.
    root, then_g, _, _ = _graph_with_subgraphs()
    if_node = root.find_node_by_name("If_0")
    before = snapshot(root)
    with pytest.raises(RuntimeError):
        root.set_node_subgraph(if_node, 2, then_g)
    assert snapshot(root) == before
    names = [n.name for n in root.get_all_nodes()]
    assert len(names) == len(set(names))


# --- copy ----------------------------------------------------------------------------------------


def test_copy_and_deepcopy_are_refused() -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(RuntimeError, match="Graph does not support copy"):
        copy.copy(g)
    with pytest.raises(RuntimeError, match="Graph does not support deepcopy"):
        copy.deepcopy(g)
    assert snapshot(g) == before


# --- dumps ---------------------------------------------------------------------------------------


def test_dump_to_stream_readable_default() -> None:
    g, _, _, _ = chain()
    text = g.dump_to_stream()
    assert text == g.dump_to_stream(DumpFormat.kReadable)
    assert text == str(g)  # GE's readable dump, ending with a newline


def test_dump_to_stream_onnx() -> None:
    g, _, _, _ = chain()
    text = g.dump_to_stream(DumpFormat.kOnnx)
    assert "node" in text and "graph" in text
    for name in ("a", "b", "c"):
        assert f'"{name}"' in text


def test_dump_to_stream_txt_is_protobuf_text() -> None:
    g, _, _, _ = chain()
    text = g.dump_to_stream(DumpFormat.kTxt)
    assert 'name: "g"' in text
    assert 'name: "b"' in text


@pytest.mark.parametrize("bad", [0, 1, "kOnnx", None])
def test_dump_to_stream_format_must_be_dump_format(bad: Any) -> None:
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(TypeError):
        g.dump_to_stream(bad)
    assert snapshot(g) == before


def test_dump_to_file_onnx_in_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    g, _, _, _ = chain()
    g.dump_to_file(DumpFormat.kOnnx, "test")
    files = list(tmp_path.iterdir())
    assert len(files) == 1
    assert re.fullmatch(r"ge_onnx_\d+_graph_\d+_test\.pbtxt", files[0].name), files[0].name
    text = files[0].read_text()
    assert text.strip()
    assert "node" in text or "graph" in text


def test_dump_to_file_twice_writes_two_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    g, _, _, _ = chain()
    g.dump_to_file(DumpFormat.kOnnx, "x")
    g.dump_to_file(DumpFormat.kOnnx, "x")
    assert len(list(tmp_path.glob("ge_onnx_*_graph_*_x.pbtxt"))) == 2


def test_dump_to_file_default_format_writes_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    g, _, _, _ = chain()
    g.dump_to_file()
    files = list(tmp_path.iterdir())
    assert len(files) == 1
    assert files[0].read_text() == str(g)


@pytest.mark.parametrize("bad", [0, 2, "kOnnx"])
def test_dump_to_file_format_must_be_dump_format(
    bad: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    g, _, _, _ = chain()
    before = snapshot(g)
    with pytest.raises(TypeError):
        g.dump_to_file(bad, "s")
    assert list(tmp_path.iterdir()) == []
    assert snapshot(g) == before


# --- misc ----------------------------------------------------------------------------------------


def test_node_descs_are_independent_per_graph() -> None:
    g, _, b, _ = chain()
    b.update_output_desc(0, TensorDesc([4], data_type=DataType.DT_INT32))
    h, _, hb, _ = chain()
    assert hb.get_output_desc(0).shape == []
    assert b.get_output_desc(0).shape == [4]
    assert g.as_text() != h.as_text()


def test_repr_mentions_name() -> None:
    g, _, _, _ = chain()
    assert "g" in repr(g)
