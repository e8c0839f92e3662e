"""ge.passes.replacement: SubgraphInput/Output/Boundary, SubgraphRewriter.replace (statuses,
copies, rewiring, no half-done state), create_replacement and infer_shape (GE_ERRORS.md §9.3,
§9.4)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from ge import es
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import DataType, Format
from ge.ops.interpreter import eval_graph
from ge.passes.base import PassContext
from ge.passes.replacement import (
    RewriteStatus,
    SubgraphBoundary,
    SubgraphInput,
    SubgraphOutput,
    SubgraphRewriter,
    boundary_from_match,
    create_replacement,
    infer_shape,
    rewrite,
)

S = RewriteStatus
SHAPE = [2, 3]
RNG = np.random.default_rng(0)


def build(name: str, n_inputs: int, body: Callable[..., Any], shape: list[int] = SHAPE) -> Graph:
    """A graph of ``n_inputs`` f32 inputs and the outputs ``body(*inputs)`` returns."""
    b = es.GraphBuilder(name)
    inputs = [b.create_input(i, shape=shape) for i in range(n_inputs)]
    out = body(*inputs)
    graph: Graph = b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])
    return graph


def node(g: Graph, name: str) -> Node:
    return g.find_node_by_name(name)


def of_type(g: Graph, op_type: str) -> list[Node]:
    return [n for n in g.get_direct_nodes() if n.type == op_type]


def boundary(inputs: Sequence[Sequence[tuple[Node, int]]], outputs: Sequence[tuple[Node, int]]):
    b = SubgraphBoundary()
    for i, anchors in enumerate(inputs):
        assert b.add_input(i, SubgraphInput(list(anchors))) == 0
    for j, (n, port) in enumerate(outputs):
        assert b.add_output(j, SubgraphOutput(n, port)) == 0
    return b


def snapshot(g: Graph) -> tuple[str, list[Any]]:
    """Everything a rewrite could change: the listing plus control edges and descs."""
    extra = [
        (n.name, [c.name for c in n.get_in_control_nodes()], str(n.get_output_desc(0)))
        if n.get_outputs_size()
        else (n.name, [c.name for c in n.get_in_control_nodes()])
        for n in g.get_direct_nodes()
    ]
    return g.as_text(), extra


def arrays(n: int) -> list[np.ndarray]:
    return [RNG.standard_normal(SHAPE).astype(np.float32) for _ in range(n)]


def ctx(name: str = "MyPass") -> PassContext:
    return PassContext._create(name, {})


# --- one input, one output -----------------------------------------------------------------


def neg_neg() -> Graph:
    return build("g", 1, lambda x: es.Relu(es.Neg(es.Neg(x))))


def abs_replacement(name: str = "r") -> Graph:
    return build(name, 1, es.Abs)


def test_replace_one_input_one_output() -> None:
    g = neg_neg()
    n0, n1 = of_type(g, "Neg")
    status = SubgraphRewriter.replace(boundary([[(n0, 0)]], [(n1, 0)]), abs_replacement())
    assert status == 0 and type(status) is int
    assert g.as_text() == (
        "graph g {\n"
        "  input_0 = Data(_) {index=0} -> f32[2,3]\n"
        "  Relu_2 = Relu(Abs_0:0) -> f32[2,3]\n"
        "  NetOutput_g = NetOutput(Relu_2:0)\n"
        "  Abs_0 = Abs(input_0:0) -> f32[2,3]\n"
        "  return Relu_2:0\n"
        "}"
    )
    g.verify()
    x = arrays(1)[0]
    np.testing.assert_allclose(eval_graph(g, [x])[0], np.maximum(np.abs(x), 0))


def test_replacement_is_copied_and_reusable() -> None:
    g = build("g", 1, lambda x: [es.Neg(x), es.Neg(es.Exp(x))])
    rep = abs_replacement()
    before = snapshot(rep)
    first, second = of_type(g, "Neg")
    assert SubgraphRewriter.replace(boundary([[(first, 0)]], [(first, 0)]), rep) == 0
    assert SubgraphRewriter.replace(boundary([[(second, 0)]], [(second, 0)]), rep) == 0
    assert snapshot(rep) == before
    assert all(n.graph is rep for n in rep.get_direct_nodes())
    assert [n.name for n in of_type(g, "Abs")] == ["Abs_0", "Abs_0_1"]  # the second one suffixed
    g.verify()
    x = arrays(1)[0]
    out = eval_graph(g, [x])
    np.testing.assert_allclose(out[0], np.abs(x))
    np.testing.assert_allclose(out[1], np.abs(np.exp(x)), rtol=1e-6)


def test_name_collisions_suffix_and_free_names_kept() -> None:
    g = build("g", 1, es.Neg)
    g.add_node("Abs", "Abs_0", num_inputs=1, num_outputs=1)
    g.add_node("Abs", "Abs_0_1", num_inputs=1, num_outputs=1)
    rep = build("r", 1, lambda x: es.Exp(es.Abs(x)))
    neg = of_type(g, "Neg")[0]
    assert SubgraphRewriter.replace(boundary([[(neg, 0)]], [(neg, 0)]), rep) == 0
    names = [n.name for n in g.get_direct_nodes()]
    assert "Abs_0_2" in names and "Exp_1" in names  # Abs_0, Abs_0_1 taken; Exp_1 free
    assert len(set(names)) == len(names)


def test_graph_output_rewired() -> None:
    g = build("g", 1, lambda x: [es.Neg(x), es.Exp(es.Neg(x))])
    negs = of_type(g, "Neg")
    assert g.get_outputs()[0] == (negs[0], 0)
    assert (
        SubgraphRewriter.replace(boundary([[(negs[0], 0)]], [(negs[0], 0)]), abs_replacement()) == 0
    )
    abs_node = of_type(g, "Abs")[0]
    assert g.get_outputs()[0] == (abs_node, 0)
    net = of_type(g, "NetOutput")[0]
    assert net.get_in_data_nodes_and_port_indexes(0) == (abs_node, 0)
    g.verify()


def test_fan_out_of_an_output_reaches_every_reader() -> None:
    def body(x: Any) -> Any:
        n = es.Neg(x)
        return [es.Exp(n), es.Relu(n), n + n]

    g = build("g", 1, body)
    neg = of_type(g, "Neg")[0]
    readers = neg.get_out_data_nodes_and_port_indexes(0)
    assert len(readers) == 4
    assert SubgraphRewriter.replace(boundary([[(neg, 0)]], [(neg, 0)]), abs_replacement()) == 0
    abs_node = of_type(g, "Abs")[0]
    assert sorted(
        (d.name, p) for d, p in abs_node.get_out_data_nodes_and_port_indexes(0)
    ) == sorted((d.name, p) for d, p in readers)
    x = arrays(1)[0]
    a = np.abs(x)
    for got, want in zip(eval_graph(g, [x]), [np.exp(a), a, a + a], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


# --- several inputs and outputs ------------------------------------------------------------


def mul_add_graph() -> Graph:
    def body(a: Any, b: Any) -> Any:
        m = es.Mul(a, b)
        return [es.Relu(es.Add(m, b)), m]

    return build("g", 2, body)


def test_replace_several_inputs_and_outputs() -> None:
    g = mul_add_graph()
    mul, add = of_type(g, "Mul")[0], of_type(g, "Add")[0]
    # input 1 (b) is read twice inside the region; both outputs leave it
    bnd = boundary([[(mul, 0)], [(mul, 1), (add, 1)]], [(add, 0), (mul, 0)])

    def rep_body(a: Any, b: Any) -> Any:
        m = es.Mul(a, b)
        return [es.Mul(es.Add(a, 1.0), b), m]  # (a + 1) * b == a * b + b

    rep = build("r", 2, rep_body)
    assert SubgraphRewriter.replace(bnd, rep) == 0
    assert add.graph is None and mul.graph is None
    g.verify()
    a, b = arrays(2)
    out = eval_graph(g, [a, b])
    np.testing.assert_allclose(out[0], np.maximum((a + 1) * b, 0), rtol=1e-5)
    np.testing.assert_allclose(out[1], a * b, rtol=1e-6)


def test_replacement_data_as_output_is_a_pass_through() -> None:
    g = build("g", 1, lambda x: es.Exp(es.Neg(es.Neg(x))))
    n0, n1 = of_type(g, "Neg")
    rep = build("r", 1, lambda x: x)  # Data -> output
    assert SubgraphRewriter.replace(boundary([[(n0, 0)]], [(n1, 0)]), rep) == 0
    exp = of_type(g, "Exp")[0]
    assert exp.get_in_data_nodes_and_port_indexes(0)[0].name == "input_0"
    assert of_type(g, "Neg") == []
    g.verify()


def test_data_index_order_maps_to_slots() -> None:
    g = build("g", 2, lambda a, b: es.Exp(es.Sub(a, b)))
    sub = of_type(g, "Sub")[0]
    bnd = boundary([[(sub, 0)], [(sub, 1)]], [(sub, 0)])
    rb = es.GraphBuilder("r")
    y = rb.create_input(1, shape=SHAPE)  # created first, index 1
    x = rb.create_input(0, shape=SHAPE)
    rep = rb.build_and_reset([es.Sub(x, y)])
    assert SubgraphRewriter.replace(bnd, rep) == 0
    a, b = arrays(2)
    np.testing.assert_allclose(eval_graph(g, [a, b])[0], np.exp(a - b), rtol=1e-6)


def test_region_is_backwards_from_outputs_and_keeps_other_nodes() -> None:
    g = build("g", 1, lambda x: [es.Exp(es.Neg(es.Abs(x))), es.Relu(x)])
    abs_node, neg = of_type(g, "Abs")[0], of_type(g, "Neg")[0]
    rep = build("r", 1, es.Neg)
    assert SubgraphRewriter.replace(boundary([[(abs_node, 0)]], [(neg, 0)]), rep) == 0
    assert abs_node.graph is None and neg.graph is None
    assert [n.type for n in g.get_direct_nodes()] == ["Data", "Exp", "Relu", "NetOutput", "Neg"]


def test_control_edges_are_inherited() -> None:
    g = build("g", 1, lambda x: [es.Neg(x), es.Exp(x), es.Relu(x)])
    neg, exp, relu = of_type(g, "Neg")[0], of_type(g, "Exp")[0], of_type(g, "Relu")[0]
    g.add_control_edge(exp, neg)
    g.add_control_edge(neg, relu)
    rep = build("r", 1, lambda x: es.Exp(es.Abs(x)))
    assert SubgraphRewriter.replace(boundary([[(neg, 0)]], [(neg, 0)]), rep) == 0
    new_abs, new_exp = of_type(g, "Abs")[0], of_type(g, "Exp")[-1]
    assert new_abs.get_in_control_nodes() == [exp]  # the copy without producer among copies
    assert relu.get_in_control_nodes() == [new_exp]  # the copy without consumer among copies
    g.verify()


def test_control_edges_pass_through_a_data_only_replacement() -> None:
    g = build("g", 1, lambda x: [es.Neg(x), es.Exp(x), es.Relu(x)])
    neg, exp, relu = of_type(g, "Neg")[0], of_type(g, "Exp")[0], of_type(g, "Relu")[0]
    g.add_control_edge(exp, neg)
    g.add_control_edge(neg, relu)
    assert (
        SubgraphRewriter.replace(boundary([[(neg, 0)]], [(neg, 0)]), build("r", 1, lambda x: x))
        == 0
    )
    assert relu.get_in_control_nodes() == [exp]


def test_rewrite_reports_removed_and_added_names() -> None:
    g = neg_neg()
    n0, n1 = of_type(g, "Neg")
    outcome = rewrite(boundary([[(n0, 0)]], [(n1, 0)]), abs_replacement())
    assert outcome.status == S.SUCCESS and outcome.reason == ""
    assert outcome.removed == ("Neg_0", "Neg_1") and outcome.added == ("Abs_0",)


def test_replace_in_a_subgraph() -> None:
    root = build("root", 1, es.Exp)
    body = build("body", 1, es.Neg)
    root.register_subgraph(body)
    neg = of_type(body, "Neg")[0]
    assert SubgraphRewriter.replace(boundary([[(neg, 0)]], [(neg, 0)]), abs_replacement()) == 0
    assert [n.type for n in body.get_direct_nodes()] == ["Data", "NetOutput", "Abs"]
    assert [n.type for n in root.get_direct_nodes()] == ["Data", "Exp", "NetOutput"]


# --- failures: each status, the graph unchanged --------------------------------------------


def _case_empty(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    return SubgraphBoundary(), abs_replacement()


def _case_gap(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    b = SubgraphBoundary()
    b.add_input(1, SubgraphInput([(n0, 0)]))
    b.add_output(0, SubgraphOutput(n1, 0))
    return b, abs_replacement()


def _case_output_gap(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    b = SubgraphBoundary()
    b.add_input(0, SubgraphInput([(n0, 0)]))
    b.add_output(2, SubgraphOutput(n1, 0))
    return b, abs_replacement()


def _neg_boundary(g: Graph) -> SubgraphBoundary:
    n0, n1 = of_type(g, "Neg")
    return boundary([[(n0, 0)]], [(n1, 0)])


def _case_too_many_inputs(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    return _neg_boundary(g), build("r", 2, lambda a, b: a + b)


def _case_too_many_outputs(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    return _neg_boundary(g), build("r", 1, lambda x: [es.Abs(x), es.Exp(x)])


def _case_data_index(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    rep = abs_replacement()
    of_type(rep, "Data")[0].set_attr("index", 3)
    return _neg_boundary(g), rep


def _case_duplicate_data_index(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    b = boundary([[(n0, 0)], [(n0, 0)]], [(n1, 0)])  # (BAD_ANCHOR too, but checked later)
    rep = build("r", 2, lambda x, y: x + y)
    of_type(rep, "Data")[1].set_attr("index", 0)
    return b, rep


def _case_removed_anchor(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    b = _neg_boundary(g)
    extra = g.add_node("Abs", "extra", num_inputs=1, num_outputs=1)
    b.add_output(1, SubgraphOutput(extra, 0))
    g.remove_node(extra)
    return b, build("r", 1, lambda x: [es.Abs(x), es.Abs(x)])


def _case_other_graph(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    other = neg_neg()
    n0 = of_type(g, "Neg")[0]
    o1 = of_type(other, "Neg")[1]
    return boundary([[(n0, 0)]], [(o1, 0)]), abs_replacement()


def _case_output_index(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    return boundary([[(n0, 0)]], [(n1, 5)]), abs_replacement()


def _case_input_index(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    return boundary([[(n0, 3)]], [(n1, 0)]), abs_replacement()


def _case_unset_output(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0 = of_type(g, "Neg")[0]
    b = SubgraphBoundary()
    b.add_input(0, SubgraphInput([(n0, 0)]))
    b.add_output(0, SubgraphOutput())
    return b, abs_replacement()


def _case_empty_input(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n1 = of_type(g, "Neg")[1]
    b = SubgraphBoundary()
    b.add_input(0, SubgraphInput())
    b.add_output(0, SubgraphOutput(n1, 0))
    return b, abs_replacement()


def _case_unconnected_input(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    loose = g.add_node("Neg", "loose", num_inputs=1, num_outputs=1)
    return boundary([[(loose, 0)]], [(loose, 0)]), abs_replacement()


def _case_anchor_outside_region(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n1 = of_type(g, "Neg")[1]
    relu = of_type(g, "Relu")[0]
    return boundary([[(n1, 0)], [(relu, 0)]], [(n1, 0)]), build("r", 2, lambda a, b: es.Abs(a))


def _case_same_output_twice(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    return boundary([[(n0, 0)]], [(n1, 0), (n1, 0)]), build("r", 1, lambda x: [es.Abs(x), x])


def _case_mixed_input(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    return boundary([[(n0, 0), (n1, 0)]], [(n1, 0)]), abs_replacement()


def _case_leak(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    g.add_data_edge(n0, 0, g.add_node("Exp", "reader", num_inputs=1, num_outputs=1), 0)
    return boundary([[(n0, 0)]], [(n1, 0)]), abs_replacement()


def _case_leak_graph_output(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    g.set_outputs([*g.get_outputs(), (n0, 0)])
    return boundary([[(n0, 0)]], [(n1, 0)]), abs_replacement()


def _case_cycle(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    # region {Neg_0, inner_add}: Neg_0 -> Neg_1 -> Relu (outside) -> inner_add closes a loop
    n0 = of_type(g, "Neg")[0]
    relu = of_type(g, "Relu")[0]
    add = g.add_node("Add", "inner_add", num_inputs=2, num_outputs=1)
    g.add_data_edge(n0, 0, add, 0)
    g.add_data_edge(relu, 0, add, 1)
    bnd = boundary([[(n0, 0)], [(add, 1)]], [(add, 0), (n0, 0)])
    return bnd, build("r", 2, lambda a, b: [a + b, es.Neg(a)])


def _case_feeds_own_input(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    n0, n1 = of_type(g, "Neg")
    return boundary([[(n0, 0)], [(n1, 0)]], [(n1, 0), (n0, 0)]), build("r", 2, lambda a, b: [a, b])


def _case_replacement_is_target(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    return _neg_boundary(g), g


def _case_replacement_cycle(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    rep = abs_replacement()
    a = rep.add_node("Add", "p", num_inputs=2, num_outputs=1)
    q = rep.add_node("Add", "q", num_inputs=2, num_outputs=1)
    rep.add_data_edge(a, 0, q, 0)
    rep.add_data_edge(q, 0, a, 0)
    return _neg_boundary(g), rep


def _case_replacement_subgraph(g: Graph) -> tuple[SubgraphBoundary, Graph]:
    rep = abs_replacement()
    rep.set_node_subgraph(of_type(rep, "Abs")[0], 0, Graph("inner"))
    return _neg_boundary(g), rep


FAILURES = [
    (_case_empty, S.EMPTY_BOUNDARY, "no output slot"),
    (_case_gap, S.NOT_CONTIGUOUS, r"input slots are \[1\]"),
    (_case_output_gap, S.NOT_CONTIGUOUS, r"output slots are \[2\]"),
    (_case_replacement_is_target, S.BAD_REPLACEMENT, "is the target graph"),
    (_case_replacement_cycle, S.BAD_REPLACEMENT, "cycle"),
    (_case_replacement_subgraph, S.BAD_REPLACEMENT, "subgraphs"),
    (_case_too_many_inputs, S.COUNT_MISMATCH, "has 2 inputs and 1 outputs"),
    (_case_too_many_outputs, S.COUNT_MISMATCH, "has 1 inputs and 2 outputs"),
    (_case_data_index, S.DATA_INDEX, r"Data indexes are \[3\]"),
    (_case_duplicate_data_index, S.DATA_INDEX, r"\[0, 0\]"),
    (_case_removed_anchor, S.FOREIGN_ANCHOR, "extra was removed"),
    (_case_other_graph, S.FOREIGN_ANCHOR, "different graphs"),
    (_case_output_index, S.BAD_ANCHOR, "has 1 outputs, not 5"),
    (_case_input_index, S.BAD_ANCHOR, "has 1 inputs, not 3"),
    (_case_unset_output, S.BAD_ANCHOR, "never set"),
    (_case_empty_input, S.BAD_ANCHOR, "no anchors"),
    (_case_unconnected_input, S.BAD_ANCHOR, "not connected"),
    (_case_anchor_outside_region, S.BAD_ANCHOR, "outside the region"),
    (_case_same_output_twice, S.BAD_ANCHOR, "given twice"),
    (_case_mixed_input, S.MIXED_INPUT, "reads several tensors"),
    (_case_leak, S.LEAKED_TENSOR, "read by reader"),
    (_case_leak_graph_output, S.LEAKED_TENSOR, "the graph outputs"),
    (_case_cycle, S.CYCLE, "would create a cycle"),
    (_case_feeds_own_input, S.CYCLE, "feeds its own input"),
]


@pytest.mark.parametrize(
    ("make", "status", "reason"), FAILURES, ids=[f[0].__name__[6:] for f in FAILURES]
)
def test_failure_status_leaves_graph_unchanged(
    make: Callable[[Graph], tuple[SubgraphBoundary, Graph]], status: S, reason: str
) -> None:
    g = neg_neg()
    bnd, rep = make(g)
    before, rep_before = snapshot(g), snapshot(rep) if rep is not g else None
    outcome = rewrite(bnd, rep)
    assert outcome.status == status
    assert re.search(reason, outcome.reason), outcome.reason
    assert SubgraphRewriter.replace(bnd, rep) == int(status)
    assert snapshot(g) == before
    if rep_before is not None:
        assert snapshot(rep) == rep_before


def test_graph_input_in_region() -> None:
    g = neg_neg()
    n1 = of_type(g, "Neg")[1]
    rb = es.GraphBuilder("r")
    rep = rb.build_and_reset([es.Abs(rb.create_const_float(1.0))])
    before = snapshot(g)
    outcome = rewrite(boundary([], [(n1, 0)]), rep)
    assert outcome.status == S.GRAPH_INPUT_IN_REGION and "input_0" in outcome.reason
    assert snapshot(g) == before


def test_statuses_are_distinct_ints() -> None:
    values = [int(s) for s in S]
    assert len(set(values)) == len(values) and values[0] == 0


def test_an_error_while_copying_removes_the_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    import ge.passes.replacement as rp

    g = neg_neg()
    before = snapshot(g)
    rep = build("r", 1, lambda x: es.Exp(es.Abs(x)))
    calls = []
    real = rp._copy_node

    def failing(graph: Graph, n: Node, name: str) -> Node:
        calls.append(name)
        if len(calls) == 2:
            raise MemoryError("boom")
        return real(graph, n, name)

    monkeypatch.setattr(rp, "_copy_node", failing)
    with pytest.raises(MemoryError):
        SubgraphRewriter.replace(_neg_boundary(g), rep)
    assert snapshot(g) == before


# --- the context form ----------------------------------------------------------------------


def test_replace_with_context_records_and_returns_none() -> None:
    g = neg_neg()
    c = ctx()
    assert SubgraphRewriter.replace(_neg_boundary(g), abs_replacement(), context=c) is None
    assert [tuple(map(list, r)) for r in c._fuse_records] == [(["Neg_0", "Neg_1"], ["Abs_0"])]
    assert c.get_error_message() == ""


def test_replace_with_context_failure_raises_and_sets_message() -> None:
    g = neg_neg()
    c = ctx("P")
    before = snapshot(g)
    with pytest.raises(
        RuntimeError,
        match=r"^SubgraphRewriter::Replace with context failed, pass_name=P, status=4: ",
    ) as info:
        SubgraphRewriter.replace(_neg_boundary(g), build("r", 2, lambda a, b: a), context=c)
    assert c.get_error_message() == str(info.value)
    assert snapshot(g) == before and c._fuse_records == []


def test_replace_with_context_refused_by_can_fuse() -> None:
    g = neg_neg()
    n0, _n1 = of_type(g, "Neg")
    n0.set_attr("_user_stream_label", "s1")
    c = ctx()
    before = snapshot(g)
    with pytest.raises(RuntimeError, match=rf"status={int(S.FUSE_REFUSED)}: can_fuse: .*multiple "):
        SubgraphRewriter.replace(_neg_boundary(g), abs_replacement(), context=c)
    assert snapshot(g) == before
    assert SubgraphRewriter.replace(_neg_boundary(g), abs_replacement()) == 0  # no check without


def test_replace_with_context_needs_a_pass_name() -> None:
    g = neg_neg()
    before = snapshot(g)
    with pytest.raises(
        RuntimeError, match=rf"pass_name=, status={int(S.REPORT_FAILED)}: the context's pass name"
    ):
        SubgraphRewriter.replace(_neg_boundary(g), abs_replacement(), context=ctx(""))
    assert snapshot(g) == before


def test_replace_with_a_non_context() -> None:
    g = neg_neg()
    with pytest.raises(TypeError, match=r"^replace\(\): incompatible function arguments"):
        SubgraphRewriter.replace(_neg_boundary(g), abs_replacement(), context=object())


# --- argument errors -----------------------------------------------------------------------


def test_subgraph_input_errors() -> None:
    g = neg_neg()
    n0 = of_type(g, "Neg")[0]
    for bad in ([(n0,)], [n0], [(n0, 0, 1)], [(n0, "0")]):
        with pytest.raises(
            RuntimeError, match=r"^SubgraphInput expects iterable of \(node, index\)$"
        ):
            SubgraphInput(bad)
    with pytest.raises(RuntimeError, match=r"^Node object must carry _handle$"):
        SubgraphInput([("n", 0)])
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        SubgraphInput(5)  # type: ignore[arg-type]
    si = SubgraphInput()
    assert si.add_input(n0, 0) == 0 and si.anchors == [(n0, 0)]
    assert SubgraphInput([[n0, 0]]).anchors == [(n0, 0)]
    with pytest.raises(RuntimeError, match=r"^Node object must carry _handle$"):
        si.add_input("n", 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^add_input\(\): incompatible function arguments"):
        si.add_input(n0, "0")  # type: ignore[arg-type]
    g.remove_node(n0)
    with pytest.raises(RuntimeError, match=r"^Node handle is empty$"):
        si.add_input(n0, 0)
    with pytest.raises(RuntimeError, match=r"^Node handle is empty$"):
        SubgraphInput([(n0, 0)])


def test_subgraph_output_errors() -> None:
    g = neg_neg()
    n0 = of_type(g, "Neg")[0]
    assert SubgraphOutput().anchor is None
    out = SubgraphOutput(n0, 0)
    assert out.anchor == (n0, 0) and out.set_output(n0, 0) == 0
    with pytest.raises(RuntimeError, match=r"^Node object must carry _handle$"):
        SubgraphOutput("n", 0)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match=r"^Node object must carry _handle$"):
        out.set_output(None, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        SubgraphOutput(n0)
    with pytest.raises(TypeError, match=r"^set_output\(\): incompatible function arguments"):
        out.set_output(n0, 1.5)  # type: ignore[arg-type]
    g.remove_node(n0)
    with pytest.raises(RuntimeError, match=r"^Node handle is empty$"):
        SubgraphOutput(n0, 0)
    with pytest.raises(RuntimeError, match=r"^Node handle is empty$"):
        out.set_output(n0, 0)


def test_boundary_slots() -> None:
    g = neg_neg()
    n0 = of_type(g, "Neg")[0]
    b = SubgraphBoundary()
    si = SubgraphInput([(n0, 0)])
    assert b.add_input(0, si) == 0
    assert b.add_input(0, si) == S.BAD_SLOT
    assert b.add_input(-1, si) == S.BAD_SLOT
    assert b.add_output(0, SubgraphOutput(n0, 0)) == 0
    assert b.add_output(0, SubgraphOutput(n0, 0)) == S.BAD_SLOT
    si.add_input(n0, 0)  # bound slots are copies
    assert b.inputs == {0: [(n0, 0)]} and b.outputs == {0: (n0, 0)}
    with pytest.raises(TypeError, match=r"^add_input\(\): incompatible function arguments"):
        b.add_input(1, [(n0, 0)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^add_output\(\): incompatible function arguments"):
        b.add_output("1", SubgraphOutput(n0, 0))  # type: ignore[arg-type]
    assert "Neg_0:0" in repr(b) and repr(SubgraphOutput()) == "SubgraphOutput()"


def moved(g: Graph) -> Graph:
    if hasattr(g, "_move_out"):
        g._move_out()
    else:  # how the Pattern move leaves a Graph: its slots gone
        del g._nodes
    return g


def test_replace_argument_errors() -> None:
    g = neg_neg()
    bnd = _neg_boundary(g)
    with pytest.raises(RuntimeError, match=r"^Graph object must carry _handle$"):
        SubgraphRewriter.replace(bnd, "graph")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match=r"^Graph handle is empty$"):
        SubgraphRewriter.replace(bnd, moved(abs_replacement()))
    with pytest.raises(TypeError, match=r"^replace\(\): incompatible function arguments"):
        SubgraphRewriter.replace("b", abs_replacement())  # type: ignore[arg-type]
    assert SubgraphRewriter().replace(bnd, abs_replacement()) == 0  # instance call too


def test_create_replacement() -> None:
    g = Graph("r")
    assert create_replacement(g) is g
    with pytest.raises(TypeError, match=r"^replacement graph must be a ge.graph.Graph$"):
        create_replacement("g")  # type: ignore[arg-type]


class FakeMatch:
    """A stand-in MatchResult: what infer_shape and boundary_from_match read."""

    def __init__(self, inputs: list[list[tuple[Node, int]]], outputs: list[tuple[Node, int]]):
        self.inputs, self.outputs = inputs, outputs

    def _inputs(self) -> list[list[tuple[Node, int]]]:
        return self.inputs

    def _outputs(self) -> list[tuple[Node, int]]:
        return self.outputs

    def _input_ports(self) -> list[tuple[Node, int]]:
        return [a[0][0].get_in_data_nodes_and_port_indexes(a[0][1]) for a in self.inputs]

    def get_pattern_graph_name(self) -> str:
        return "P_add_pattern"


def test_boundary_from_match() -> None:
    g = mul_add_graph()
    mul, add = of_type(g, "Mul")[0], of_type(g, "Add")[0]
    match = FakeMatch([[(mul, 0)], [(mul, 1), (add, 1)]], [(add, 0), (mul, 0)])
    bnd = boundary_from_match(match)
    assert bnd.inputs == {0: [(mul, 0)], 1: [(mul, 1), (add, 1)]}
    assert bnd.outputs == {0: (add, 0), 1: (mul, 0)}


# --- infer_shape ---------------------------------------------------------------------------


def unshaped_add() -> Graph:
    """A replacement built without knowing shapes: inputs f32[1]."""
    return build("rep", 2, lambda a, b: es.Relu(es.Add(a, b)), shape=[1])


def wide_graph() -> Graph:
    return build("g", 2, es.Add, shape=[4, 5])


def relu_desc(rep: Graph) -> TensorDesc:
    return of_type(rep, "Relu")[0].get_output_desc(0)


def test_infer_shape_from_node() -> None:
    g = wide_graph()
    rep = unshaped_add()
    assert infer_shape(rep, of_type(g, "Add")[0]) is None
    assert relu_desc(rep).get_shape() == [4, 5]
    assert of_type(rep, "Data")[1].get_output_desc(0).get_shape() == [4, 5]


def test_infer_shape_from_boundary() -> None:
    g = wide_graph()
    add = of_type(g, "Add")[0]
    rep = unshaped_add()
    infer_shape(rep, boundary([[(add, 0)], [(add, 1)]], [(add, 0)]))
    assert relu_desc(rep).get_shape() == [4, 5]


def test_infer_shape_from_match_result() -> None:
    g = wide_graph()
    add = of_type(g, "Add")[0]
    rep = unshaped_add()
    infer_shape(rep, FakeMatch([[(add, 0)], [(add, 1)]], [(add, 0)]))
    assert relu_desc(rep).get_shape() == [4, 5]


def test_infer_shape_then_replace_keeps_the_graph_valid() -> None:
    g = build("g", 2, lambda a, b: es.Exp(es.Add(a, b)), shape=[4, 5])
    add = of_type(g, "Add")[0]
    rep = unshaped_add()
    infer_shape(rep, add)
    bnd = boundary([[(add, 0)], [(add, 1)]], [(add, 0)])
    assert SubgraphRewriter.replace(bnd, rep) == 0
    g.verify()
    a, b = (RNG.standard_normal([4, 5]).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(eval_graph(g, [a, b])[0], np.exp(np.maximum(a + b, 0)), rtol=1e-6)


def test_infer_shape_argument_errors() -> None:
    g = wide_graph()
    add = of_type(g, "Add")[0]
    with pytest.raises(TypeError, match=r"^replacement must be a ge.graph.Graph$"):
        infer_shape("r", 5)  # type: ignore[arg-type]  # checked first
    with pytest.raises(TypeError, match=r"^source must be MatchResult, Node, or SubgraphBoundary$"):
        infer_shape(unshaped_add(), "node")
    with pytest.raises(RuntimeError, match=r"^replacement graph is empty$"):
        infer_shape(Graph("empty"), add)
    with pytest.raises(RuntimeError, match=r"^replacement Graph handle is empty$"):
        infer_shape(moved(unshaped_add()), add)
    g.remove_node(add)
    with pytest.raises(RuntimeError, match=r"^source Node handle is empty$"):
        infer_shape(unshaped_add(), add)


def test_infer_shape_failure_texts() -> None:
    g = build("g", 2, es.Add, shape=[4, 5])
    add = of_type(g, "Add")[0]
    bad = build("rep", 2, es.Add, shape=[1])
    data0 = of_type(g, "Data")[0]
    data0.update_output_desc(0, TensorDesc([3, 7], Format.FORMAT_ND, DataType.DT_FLOAT))
    with pytest.raises(
        RuntimeError,
        match=r"^infer_shape failed, replacement_graph=rep, source_type=Node, source_name=Add_0: ",
    ) as info:
        infer_shape(bad, add)
    assert info.value.__cause__ is not None
    bnd = boundary([[(add, 0)], [(add, 1)]], [(add, 0)])
    with pytest.raises(
        RuntimeError,
        match=r"^infer_shape failed, replacement_graph=rep, source_type=SubgraphBoundary: ",
    ):
        infer_shape(bad, bnd)
    match = FakeMatch([[(add, 0)], [(add, 1)]], [(add, 0)])
    with pytest.raises(
        RuntimeError,
        match=r"^infer_shape failed, replacement_graph=rep, source_type=MatchResult, "
        r"source_name=P_add_pattern: ",
    ):
        infer_shape(bad, match)


def test_infer_shape_data_index_out_of_range() -> None:
    g = build("g", 1, es.Neg)
    rep = build("rep", 2, lambda a, b: a + b, shape=[1])
    with pytest.raises(
        RuntimeError, match=r"source_name=Neg_0: Data node input_1 has index 1, but"
    ):
        infer_shape(rep, of_type(g, "Neg")[0])


def test_rewritten_graph_runs_in_a_session() -> None:
    from ge.ge_global import GeApi
    from ge.graph import Tensor
    from ge.session import Session

    g = mul_add_graph()
    mul, add = of_type(g, "Mul")[0], of_type(g, "Add")[0]
    bnd = boundary([[(mul, 0)], [(mul, 1), (add, 1)]], [(add, 0), (mul, 0)])
    rep = build("r", 2, lambda a, b: [es.Mul(es.Add(a, 1.0), b), es.Mul(a, b)])
    assert SubgraphRewriter.replace(bnd, rep) == 0
    config = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
    GeApi.ge_initialize(config)
    try:
        session = Session(config)
        session.add_graph(1, g)
        a, b = arrays(2)
        out = session.run_graph(1, [Tensor.from_numpy(a), Tensor.from_numpy(b)])
    finally:
        GeApi.ge_finalize()
    np.testing.assert_allclose(out[0].numpy(), np.maximum((a + 1) * b, 0), rtol=1e-5)
    np.testing.assert_allclose(out[1].numpy(), a * b, rtol=1e-6)


def test_infer_shape_from_a_node_uses_its_connected_inputs() -> None:
    g = build("g", 1, es.Neg, shape=[4, 5])
    add = g.add_node("Add", "half", num_inputs=2, num_outputs=1)
    g.add_data_edge(of_type(g, "Neg")[0], 0, add, 1)  # input 0 left unconnected
    rep = build("rep", 1, es.Exp, shape=[1])
    infer_shape(rep, add)
    assert of_type(rep, "Exp")[0].get_output_desc(0).get_shape() == [4, 5]
