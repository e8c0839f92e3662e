"""``Graph.verify(ops=False)``: valid graph passes; each broken structure is reported, with the
nodes involved named, and several problems are reported together.

Broken links cannot be made through ``Graph`` methods, so these tests poke private fields on
purpose: that is exactly the damage ``verify`` exists to catch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from ge.graph import Graph, Node
from ge.graph._verify import describe_cycle, find_cycle, topological_order


def chain() -> tuple[Graph, Node, Node, Node]:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    c = g.add_node("Relu", "c", num_inputs=1, num_outputs=1)
    g.add_data_edge(a, 0, b, 0)
    g.add_data_edge(b, 0, c, 0)
    return g, a, b, c


def problems(graph: Graph) -> list[str]:
    """Problem lines of ``graph.verify(ops=False)``'s error (fails the test if verify passes)."""
    before = graph.as_text()
    with pytest.raises(RuntimeError) as info:
        graph.verify(ops=False)
    assert graph.as_text() == before, "verify must not edit the graph"
    lines = [ln.strip() for ln in str(info.value).splitlines()]
    found = [ln.removeprefix("- ") for ln in lines if ln.startswith("- ")]
    assert found, str(info.value)
    return found


def only(graph: Graph) -> str:
    found = problems(graph)
    assert len(found) == 1, found
    return found[0]


def names_in(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


# --- valid graphs --------------------------------------------------------------------------------


def test_empty_graph_passes() -> None:
    Graph("empty").verify(ops=False)


def test_valid_graph_passes() -> None:
    g, a, b, c = chain()
    d = g.add_node("Add", "d", num_inputs=2, num_outputs=2)
    g.add_data_edge(a, 0, d, 0)
    g.add_data_edge(c, 0, d, 1)
    g.add_control_edge(a, c)
    g.add_control_edge(b, d)
    g.set_outputs([(d, 1), (c, 0)])
    g.set_attr("k", 1)
    assert g.verify(ops=False) is None


def test_valid_graph_with_nested_subgraphs_passes() -> None:
    root = Graph("root")
    x = root.add_node("Data", "x", num_outputs=1)
    if_node = root.add_node("If", "If_0", num_inputs=1, num_outputs=1)
    root.add_data_edge(x, 0, if_node, 0)
    then_g, else_g, body_g = Graph("then_g"), Graph("else_g"), Graph("body_g")
    t = then_g.add_node("Data", "t", num_outputs=1)
    w = then_g.add_node("While", "w", num_inputs=1, num_outputs=1)
    then_g.add_data_edge(t, 0, w, 0)
    then_g.set_outputs([(w, 0)])
    else_g.add_node("Data", "e", num_outputs=1)
    body_g.add_node("Data", "bd", num_outputs=1)
    root.set_node_subgraph(if_node, 0, then_g)
    root.set_node_subgraph(if_node, 1, else_g)
    then_g.set_node_subgraph(w, 0, body_g)
    root.verify(ops=False)
    then_g.verify(ops=False)


def test_graph_stays_valid_after_edits() -> None:
    g, a, b, c = chain()
    g.add_control_edge(a, c)
    g.set_outputs([(b, 0), (c, 0)])
    g.remove_edge(a, -1, c, -1)
    g.remove_edge(b, 0, c, 0)
    g.verify(ops=False)
    g.remove_node(b)
    g.verify(ops=False)
    g.remove_node(a)
    g.verify(ops=False)


def test_verify_error_is_runtime_error_naming_the_graph() -> None:
    g, _, b, _ = chain()
    b._in_edges[0] = None  # producer a still lists b:0
    with pytest.raises(RuntimeError, match="'g'"):
        g.verify(ops=False)


# --- broken data links ---------------------------------------------------------------------------


def test_edge_recorded_only_at_consumer() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    b._in_edges[0] = (a, 0)
    msg = only(g)
    assert {"a", "b"} <= names_in(msg)
    assert "edge" in msg


def test_edge_recorded_only_at_producer() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    a._out_edges[0].append((b, 0))
    msg = only(g)
    assert {"a", "b"} <= names_in(msg)
    assert "edge" in msg


def test_edge_to_consumer_in_another_graph() -> None:
    g, a, _, _ = chain()
    h = Graph("h")
    foreign = h.add_node("Relu", "foreign", num_inputs=1, num_outputs=1)
    a._out_edges[0].append((foreign, 0))
    foreign._in_edges[0] = (a, 0)
    msg = only(g)
    assert {"a", "foreign"} <= names_in(msg)
    assert "graph" in msg


def test_edge_from_producer_in_another_graph() -> None:
    g, _, _, _ = chain()
    h = Graph("h")
    foreign = h.add_node("Data", "foreign", num_outputs=1)
    orphan = g.add_node("Relu", "orphan", num_inputs=1, num_outputs=1)
    foreign._out_edges[0].append((orphan, 0))
    orphan._in_edges[0] = (foreign, 0)
    msg = only(g)
    assert {"orphan", "foreign"} <= names_in(msg)
    assert not {"a", "b", "c"} & names_in(msg)


def test_edge_from_removed_node() -> None:
    g, a, b, _ = chain()
    g.remove_node(a)
    b._in_edges[0] = (a, 0)  # a stale link to a node that left the graph
    msg = only(g)
    assert {"a", "b"} <= names_in(msg)


def test_edge_reads_port_past_producer_outputs() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    b._in_edges[0] = (a, 5)
    msg = only(g)
    assert {"a", "b"} <= names_in(msg)
    assert "5" in msg


def test_edge_feeds_port_past_consumer_inputs() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    a._out_edges[0].append((b, 3))
    msg = only(g)
    assert {"a", "b"} <= names_in(msg)
    assert "3" in msg


def test_port_lists_disagree_in_count() -> None:
    g, _, b, _ = chain()
    b._input_descs.append(b._input_descs[0])
    msg = only(g)
    assert "b" in names_in(msg)
    assert "input" in msg


# --- control edges -------------------------------------------------------------------------------


def test_dangling_out_control_edge() -> None:
    g, a, _, c = chain()
    a._out_ctrl = [*a._out_ctrl, c]
    msg = only(g)
    assert {"a", "c"} <= names_in(msg)
    assert "control" in msg


def test_dangling_in_control_edge() -> None:
    g, a, _, c = chain()
    c._in_ctrl = [*c._in_ctrl, a]
    msg = only(g)
    assert {"a", "c"} <= names_in(msg)
    assert "control" in msg


def test_control_edge_to_node_of_another_graph() -> None:
    g, a, _, _ = chain()
    h = Graph("h")
    foreign = h.add_node("NoOp", "foreign")
    a._out_ctrl = [*a._out_ctrl, foreign]
    foreign._in_ctrl = [*foreign._in_ctrl, a]
    msg = only(g)
    assert {"a", "foreign"} <= names_in(msg)


# --- ownership and names -------------------------------------------------------------------------


def test_node_listed_under_the_wrong_name() -> None:
    g, a, _, _ = chain()
    g._nodes["zz"] = g._nodes.pop("a")
    found = problems(g)
    assert any({"a", "zz"} <= names_in(p) for p in found), found
    assert a.name == "a"


def test_node_of_another_graph_listed_here() -> None:
    g, _, _, _ = chain()
    h = Graph("h")
    g._nodes["foreign"] = h.add_node("NoOp", "foreign")
    assert any("foreign" in names_in(p) for p in problems(g))


# --- graph outputs -------------------------------------------------------------------------------


def test_graph_output_not_in_graph() -> None:
    g, _, _, c = chain()
    h = Graph("h")
    foreign = h.add_node("Data", "foreign", num_outputs=1)
    g.set_outputs([(c, 0)])
    g._outputs.append((foreign, 0))
    msg = only(g)
    assert "foreign" in names_in(msg)
    assert "output" in msg


def test_graph_output_of_removed_node_poked_back() -> None:
    g, _, b, c = chain()
    g.remove_node(b)
    g._outputs.append((b, 0))
    msg = only(g)
    assert "b" in names_in(msg)
    assert c.name not in names_in(msg)


def test_graph_output_port_past_range() -> None:
    g, _, _, c = chain()
    g._outputs.append((c, 2))
    msg = only(g)
    assert "c" in names_in(msg)
    assert "2" in msg


# --- subgraph references -------------------------------------------------------------------------


def _if_graph() -> tuple[Graph, Node, Graph, Graph]:
    root = Graph("root")
    if_node = root.add_node("If", "If_0", num_inputs=1, num_outputs=1)
    then_g, else_g = Graph("then_g"), Graph("else_g")
    then_g.add_node("Data", "t", num_outputs=1)
    else_g.add_node("Data", "e", num_outputs=1)
    root.set_node_subgraph(if_node, 0, then_g)
    root.set_node_subgraph(if_node, 1, else_g)
    return root, if_node, then_g, else_g


def test_removed_subgraph_leaves_an_empty_slot() -> None:
    # Structurally an empty slot is sound; whether the op needs the subgraph is an op-level
    # check (tests/ops/test_checks.py).
    root, if_node, _, _ = _if_graph()
    root.verify(ops=False)
    root.remove_subgraph("then_g")
    assert if_node.get_subgraph_names()[0] == ""
    root.verify(ops=False)


def test_subgraph_reference_to_unregistered_name() -> None:
    root, if_node, _, _ = _if_graph()
    if_node._subgraph_names.append("ghost")
    msg = only(root)
    assert {"If_0", "ghost"} <= names_in(msg)


def test_subgraph_used_by_a_node_that_is_not_its_parent() -> None:
    root, _, _, _ = _if_graph()
    other = root.add_node("If", "If_1", num_inputs=1, num_outputs=1)
    other._subgraph_names = ["then_g"]  # then_g belongs to If_0
    msg = only(root)
    assert {"If_1", "then_g"} <= names_in(msg)


def test_problem_inside_a_subgraph_is_reported_from_the_root() -> None:
    root, _, then_g, _ = _if_graph()
    t = then_g.find_node_by_name("t")
    r = then_g.add_node("Relu", "r", num_inputs=1, num_outputs=1)
    r._in_edges[0] = (t, 0)
    msg = only(root)
    assert {"then_g", "t", "r"} <= names_in(msg)


# --- cycles --------------------------------------------------------------------------------------


def _cycle_line(graph: Graph) -> str:
    lines = [p for p in problems(graph) if "cycle" in p]
    assert len(lines) == 1, problems(graph)
    return lines[0]


def test_data_cycle_lists_its_nodes() -> None:
    g = Graph("g")
    src = g.add_node("Data", "src", num_outputs=1)
    a = g.add_node("Add", "a", num_inputs=2, num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    g.add_data_edge(src, 0, a, 0)
    g.add_data_edge(a, 0, b, 0)
    g.add_data_edge(b, 0, a, 1)  # the API accepts it; verify must not
    line = only(g)
    assert "cycle" in line
    assert {"a", "b"} <= names_in(line)
    assert "src" not in names_in(line)


def test_control_cycle_lists_its_nodes() -> None:
    g, a, _, c = chain()
    g.add_control_edge(c, a)  # a -> b -> c by data, c -> a by control
    line = _cycle_line(g)
    assert {"a", "b", "c"} <= names_in(line)


def test_pure_control_cycle() -> None:
    g = Graph("g")
    x = g.add_node("NoOp", "x")
    y = g.add_node("NoOp", "y")
    z = g.add_node("NoOp", "z")
    g.add_control_edge(x, y)
    g.add_control_edge(y, x)
    line = _cycle_line(g)
    assert {"x", "y"} <= names_in(line)
    assert "z" not in names_in(line)
    assert z.get_in_control_nodes() == []


def test_control_self_loop_is_a_cycle() -> None:
    g, a, _, _ = chain()
    g.add_control_edge(a, a)
    line = _cycle_line(g)
    assert "a" in names_in(line)


def test_one_sided_links_do_not_hide_or_invent_a_cycle() -> None:
    # a -> b -> c by data, c -> b by control: a real cycle {b, c}. A dangling control edge
    # a -> c must not make c look ready, and a consumer-only edge is not a cycle.
    g, a, b, c = chain()
    g.add_control_edge(c, b)
    a._out_ctrl = [*a._out_ctrl, c]
    found = problems(g)
    cycle = [p for p in found if "cycle" in p]
    assert len(cycle) == 1, found
    assert {"b", "c"} <= names_in(cycle[0])
    assert "a" not in names_in(cycle[0].split(":", 1)[-1])


def test_cycle_in_a_subgraph() -> None:
    root, _, _, else_g = _if_graph()
    p = else_g.add_node("NoOp", "p")
    q = else_g.add_node("NoOp", "q")
    else_g.add_control_edge(p, q)
    else_g.add_control_edge(q, p)
    line = _cycle_line(root)
    assert {"else_g", "p", "q"} <= names_in(line)


def test_cycle_message_walks_the_cycle_in_edge_order_and_counts_what_waits_on_it() -> None:
    g, _, b, c = chain()
    d = g.add_node("Relu", "d", num_inputs=1, num_outputs=1)
    g.add_data_edge(c, 0, d, 0)  # d waits on the cycle but is not on it
    g.add_control_edge(c, b)  # a -> b -> c by data, c -> b by control
    line = _cycle_line(g)
    assert re.search(r"has a cycle: (b -> c -\(control\)-> b|c -\(control\)-> b -> c) ", line)
    assert "(1 more node waits on it); remove one of its edges" in line
    assert "d" not in names_in(line.split(":", 1)[-1])


def _random_graph(rng: np.random.Generator, n: int) -> Graph:
    g = Graph("random")
    nodes = [g.add_node("Relu", f"n{k}", num_inputs=2, num_outputs=1) for k in range(n)]
    for dst in nodes:
        for port in range(2):
            if rng.random() < 0.6:
                g.add_data_edge(nodes[int(rng.integers(n))], 0, dst, port)
        if rng.random() < 0.3:
            src = nodes[int(rng.integers(n))]
            if src is not dst and dst not in src.get_out_control_nodes():
                g.add_control_edge(src, dst)
    return g


def test_find_cycle_gives_a_real_cycle_of_each_cyclic_random_graph() -> None:
    rng = np.random.default_rng(12)
    found = 0
    for _ in range(300):
        g = _random_graph(rng, int(rng.integers(1, 9)))
        _, stuck = topological_order(g)
        cycle = find_cycle(stuck)
        assert bool(cycle) == bool(stuck)
        if not cycle:
            continue
        found += 1
        members = [id(n) for n, _ in cycle]
        assert len(set(members)) == len(members)  # a simple cycle
        assert set(members) <= {id(n) for n in stuck}
        for k, (node, data) in enumerate(cycle):
            before = cycle[k - 1][0]  # the last entry feeds the first
            if data:
                assert any(e is not None and e[0] is before for e in node._in_edges)
            else:
                assert before in node._in_ctrl
        assert describe_cycle(g, stuck).startswith(
            f"graph 'random' has a cycle: {cycle[-1][0].name} "
        )
    assert found > 50  # the sample holds enough cycles to mean something


# --- several problems at once --------------------------------------------------------------------


def test_several_problems_reported_together() -> None:
    g, a, b, c = chain()
    h = Graph("h")
    foreign = h.add_node("Data", "foreign", num_outputs=1)
    one_sided = g.add_node("Relu", "one_sided", num_inputs=1, num_outputs=1)
    one_sided._in_edges[0] = (a, 0)  # 1. consumer-only edge
    a._out_ctrl = [*a._out_ctrl, c]  # 2. dangling control edge
    g._outputs.append((foreign, 0))  # 3. output not in graph
    g.add_control_edge(c, b)  # 4. cycle b -> c -> b
    found = problems(g)
    assert len(found) == 4, found
    assert any({"one_sided", "a"} <= names_in(p) for p in found)
    assert any("control" in p and {"a", "c"} <= names_in(p) for p in found)
    assert any("foreign" in names_in(p) for p in found)
    assert any("cycle" in p and {"b", "c"} <= names_in(p) for p in found)
