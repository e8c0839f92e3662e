"""Registered passes run at their stage for every compile: Session, ge.jit and build_model;
a failing pass changes nothing and fails the compile with its name (ge.passes._run)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge
import ge.es
from ge.error import PassError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import Graph, Node, Tensor
from ge.ops import eval_graph
from ge.passes import (
    FusionBasePass,
    PassContext,
    PassStage,
    clear_registered_passes,
    register_fusion_pass,
)
from ge.passes._run import run_stage
from ge.session import Session


@pytest.fixture(autouse=True)
def no_passes() -> Iterator[None]:
    clear_registered_passes()
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    yield
    GeApi.ge_finalize()
    clear_registered_passes()


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


def add_graph(name: str = "g") -> Graph:
    """out = x + y, then * 2."""
    b = GraphBuilder(name)
    x = b.create_input(0, name="x", shape=[2, 3])
    y = b.create_input(1, name="y", shape=[2, 3])
    return b.build_and_reset([(x + y) * 2.0])


def session_run(graph: Graph, *arrays: np.ndarray) -> list[np.ndarray]:
    session = Session({})
    session.add_graph(0, graph)
    outputs = session.run_graph(0, [Tensor.from_numpy(a) for a in arrays])
    return [np.asarray(o.numpy()) for o in outputs]


def retype(graph: Graph, node: Node, op_type: str) -> Node:
    """Replace ``node`` by a node of ``op_type`` on the same inputs (public Graph API only)."""
    twin = graph.add_node(
        op_type, num_inputs=node.get_inputs_size(), num_outputs=node.get_outputs_size()
    )
    for port in range(node.get_inputs_size()):
        src, src_port = node.get_in_data_nodes_and_port_indexes(port)
        graph.add_data_edge(src, src_port, twin, port)
    for port in range(node.get_outputs_size()):
        twin.update_output_desc(port, node.get_output_desc(port))
        graph.replace_all_uses(node, port, twin, port)
    graph.remove_node(node)
    return twin


def adds_to_subs(graph: Graph) -> None:
    for node in graph.get_direct_nodes():
        if node.type == "Add":
            retype(graph, node, "Sub")


def register(
    body: Callable[[Graph, PassContext], Any],
    *,
    name: str = "AddToSub",
    stage: PassStage = PassStage.BEFORE_INFER_SHAPE,
) -> type:
    cls = type(name, (FusionBasePass,), {"run": lambda self, graph, context: body(graph, context)})
    return register_fusion_pass(name=name, stage=stage)(cls)


def test_a_fusion_base_pass_applies_to_session_runs() -> None:
    register(lambda g, ctx: adds_to_subs(g))
    x, y = f32(2, 3), f32(2, 3, seed=1)
    (out,) = session_run(add_graph(), x, y)
    np.testing.assert_allclose(out, (x - y) * 2.0, rtol=1e-6)


@pytest.mark.parametrize("stage", list(PassStage))
def test_passes_run_at_every_stage(stage: PassStage) -> None:
    seen: list[str] = []
    register(lambda g, ctx: seen.append(g.name), stage=stage)
    session_run(add_graph("staged"), f32(2, 3), f32(2, 3))
    assert seen == ["staged"]


def test_stages_run_in_pipeline_order_and_passes_in_registration_order() -> None:
    seen: list[str] = []
    for i, stage in enumerate(reversed(list(PassStage))):
        for k in range(2):
            register(lambda g, ctx, n=f"{stage.name}{k}": seen.append(n), name=f"P{i}{k}", stage=stage)
    session_run(add_graph(), f32(2, 3), f32(2, 3))
    assert seen == [f"{s.name}{k}" for s in PassStage for k in range(2)]


def test_the_context_names_the_pass_and_reads_session_options() -> None:
    got: list[Any] = []

    def body(graph: Graph, ctx: PassContext) -> None:
        got.append(ctx.get_pass_name())
        got.append(ctx.get_option_value("ge.graphRunMode"))
        with pytest.raises(RuntimeError, match="Failed to get option value for key: nope"):
            ctx.get_option_value("nope")

    register(body, name="Reader")
    session = Session({"ge.graphRunMode": "0"})
    session.add_graph(0, add_graph())
    session.run_graph(0, [Tensor.from_numpy(f32(2, 3)), Tensor.from_numpy(f32(2, 3))])
    assert got == ["Reader", "0"]


@pytest.mark.parametrize("result", [None, True, 0])
def test_success_results(result: Any) -> None:
    register(lambda g, ctx: (adds_to_subs(g), result)[1])
    x, y = f32(2, 3), f32(2, 3, seed=1)
    np.testing.assert_allclose(session_run(add_graph(), x, y)[0], (x - y) * 2.0, rtol=1e-6)


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (False, "run\\(\\) returned False"),
        (3, "status 3"),
        ("done", "returned str"),
    ],
)
def test_failure_results_fail_the_compile_with_the_pass_name(result: Any, text: str) -> None:
    register(lambda g, ctx: (adds_to_subs(g), result)[1], name="Failing")
    graph = add_graph()
    before = graph.as_text()
    with pytest.raises(ge.error.GeError, match=f"python pass Failing .*{text}"):
        session_run(graph, f32(2, 3), f32(2, 3))
    assert graph.as_text() == before


def test_an_exception_fails_with_its_message_and_the_context_message_wins() -> None:
    def body(graph: Graph, ctx: PassContext) -> None:
        adds_to_subs(graph)
        ctx.set_error_message("could not fuse x")
        raise ValueError("boom")

    register(body, name="Raiser")
    with pytest.raises(ge.error.GeError, match="python pass Raiser .*could not fuse x"):
        session_run(add_graph(), f32(2, 3), f32(2, 3))


def test_a_failing_pass_leaves_the_graph_exactly_as_before_it_ran() -> None:
    graph = add_graph()
    register(lambda g, ctx: adds_to_subs(g), name="First")

    def half_done(g: Graph, ctx: PassContext) -> None:
        for node in g.get_direct_nodes():
            if node.type == "Mul":
                retype(g, node, "Div")
        raise RuntimeError("second thoughts")

    register(half_done, name="Second")
    with pytest.raises(PassError, match="python pass Second .*second thoughts") as info:
        run_stage(graph, PassStage.BEFORE_INFER_SHAPE, {})
    assert isinstance(info.value, RuntimeError)
    types = sorted(n.type for n in graph.get_direct_nodes())
    assert "Sub" in types and "Mul" in types and "Div" not in types  # First kept, Second undone
    graph.verify()
    x, y = f32(2, 3), f32(2, 3, seed=1)
    np.testing.assert_allclose(eval_graph(graph, [x, y])[0], (x - y) * 2.0, rtol=1e-6)


def test_no_passes_means_no_snapshot_and_no_change() -> None:
    graph = add_graph()
    before = graph.as_text()
    report = run_stage(graph, PassStage.BEFORE_INFER_SHAPE, {})
    assert report.records == [] and graph.as_text() == before


def test_jit_traces_see_passes_and_a_changed_pass_set_recompiles() -> None:
    @ge.jit
    def f(x: np.ndarray, y: np.ndarray) -> Any:
        return (x + y) * 2.0

    x, y = f32(2, 3), f32(2, 3, seed=1)
    np.testing.assert_allclose(f(x, y), (x + y) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(f(x, y), (x + y) * 2.0, rtol=1e-6)
    handle = register(lambda g, ctx: adds_to_subs(g))
    np.testing.assert_allclose(f(x, y), (x - y) * 2.0, rtol=1e-6)
    assert f.cache_info().misses == 2
    np.testing.assert_allclose(f(x, y), (x - y) * 2.0, rtol=1e-6)
    assert f.cache_info().misses == 2
    clear_registered_passes()
    del handle
    np.testing.assert_allclose(f(x, y), (x + y) * 2.0, rtol=1e-6)


def test_build_model_runs_the_passes(tmp_path: Path) -> None:
    from ge import offline_compile as oc
    from ge import runtime

    register(lambda g, ctx: adds_to_subs(g))
    oc.build_initialize({})
    try:
        buffer = oc.build_model(add_graph(), {})
    finally:
        oc.build_finalize()
    model = runtime.load_model(buffer.get_bytes())
    x, y = f32(2, 3), f32(2, 3, seed=1)
    (out,) = model.execute([x, y])
    np.testing.assert_allclose(np.asarray(out), (x - y) * 2.0, rtol=1e-6)


def test_dump_graph_writes_before_and_after_of_a_pass_that_changed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GE_DUMP_GRAPH", str(tmp_path))
    register(lambda g, ctx: adds_to_subs(g), name="AddToSub")
    register(lambda g, ctx: None, name="Idle")
    session_run(add_graph("dumped"), f32(2, 3), f32(2, 3))
    names = sorted(p.name for p in tmp_path.iterdir())
    before = [n for n in names if "AddToSub_before" in n]
    after = [n for n in names if "AddToSub_after" in n]
    assert len(before) == len(after) == 1 and not [n for n in names if "Idle" in n]
    assert "Add" in (tmp_path / before[0]).read_text()
    assert "Sub" in (tmp_path / after[0]).read_text()
    assert "Sub" not in (tmp_path / before[0]).read_text()


# --- pattern and decompose passes ---------------------------------------------------------------
def mm_add_graph(name: str = "mm") -> Graph:
    b = GraphBuilder(name)
    a = b.create_input(0, name="a", shape=[4, 3])
    w = b.create_input(1, name="w", shape=[3, 5])
    c = b.create_input(2, name="c", shape=[4, 5])
    return b.build_and_reset([ge.es.Relu(ge.es.MatMulV2(a, w) + c)])


def register_gemm_pass(stage: PassStage = PassStage.BEFORE_INFER_SHAPE) -> type:
    from ge.passes import PatternFusionPass, pattern

    class FuseMatMulAdd(PatternFusionPass):
        @pattern
        def matmul_add(self, inputs: Any) -> Any:
            a, b, c = inputs[:3]
            return ge.es.MatMulV2(a, b) + c

        def replacement(self, inputs: Any) -> Any:
            a, b, c = inputs[:3]
            return ge.es.GEMM(a, b, c, 1.0, 1.0)

    return register_fusion_pass(name="FuseMatMulAdd", stage=stage)(FuseMatMulAdd)


@pytest.mark.parametrize("stage", list(PassStage))
def test_a_pattern_pass_fuses_matmul_add_into_gemm_at_every_stage(stage: PassStage) -> None:
    register_gemm_pass(stage)
    graph = mm_add_graph()
    optimized = ge.compiler.optimize_graph(graph, fuse=False)
    types = sorted(n.type for n in optimized.get_direct_nodes())
    assert "GEMM" in types and "MatMulV2" not in types and "Add" not in types
    a, w, c = f32(4, 3), f32(3, 5, seed=1), f32(4, 5, seed=2)
    (out,) = session_run(graph, a, w, c)
    np.testing.assert_allclose(out, np.maximum(a @ w + c, 0), rtol=1e-5, atol=1e-6)


def test_a_pattern_pass_leaves_matches_with_outside_uses_alone() -> None:
    register_gemm_pass()
    b = GraphBuilder("shared")
    a = b.create_input(0, name="a", shape=[4, 3])
    w = b.create_input(1, name="w", shape=[3, 5])
    c = b.create_input(2, name="c", shape=[4, 5])
    mm = ge.es.MatMulV2(a, w)
    graph = b.build_and_reset([mm + c, mm])  # the MatMul is an output too
    optimized = ge.compiler.optimize_graph(graph, fuse=False)
    assert "GEMM" not in {n.type for n in optimized.get_direct_nodes()}


def test_a_decompose_pass_splits_an_op_into_primitives() -> None:
    from ge.passes import DecomposePass, register_decompose_pass

    @register_decompose_pass(name="SquareToMul", stage=PassStage.BEFORE_INFER_SHAPE, op_types=["Square"])
    class SquareToMul(DecomposePass):
        def replacement(self, node: Node) -> Graph:
            b = GraphBuilder("square")
            x = b.create_input(0)
            return b.build_and_reset([x * x])

    bld = GraphBuilder("sq")
    x = bld.create_input(0, name="x", shape=[5])
    graph = bld.build_and_reset([ge.es.Square(x) + 1.0])
    optimized = ge.compiler.optimize_graph(graph, fuse=False)
    types = {n.type for n in optimized.get_direct_nodes()}
    assert "Square" not in types and "Mul" in types
    v = f32(5)
    np.testing.assert_allclose(session_run(graph, v)[0], v * v + 1.0, rtol=1e-6)


# --- explain ------------------------------------------------------------------------------------
def test_explain_reports_fusions_and_why_a_pattern_did_not_match() -> None:
    from ge.passes import explain

    register_gemm_pass()
    report = explain(mm_add_graph())
    text = str(report)
    assert "FuseMatMulAdd: changed the graph" in text
    assert "1 match(es), 1 replaced" in text
    assert "GEMM" in {n.type for n in report.graph.get_direct_nodes()}

    b = GraphBuilder("nomatch")
    a = b.create_input(0, name="a", shape=[4, 3])
    w = b.create_input(1, name="w", shape=[3, 5])
    c = b.create_input(2, name="c", shape=[4, 5])
    graph = b.build_and_reset([ge.es.MatMulV2(a, w) - c])  # Sub, not Add
    text = str(explain(graph))
    assert "0 match(es)" in text and "FuseMatMulAdd: changed nothing" in text
    assert "does not match graph 'nomatch'" in text
    assert "Sub" in text or "Add" in text  # the first mismatch names the op types


def test_explain_needs_a_graph() -> None:
    from ge.passes import explain

    with pytest.raises(TypeError, match="graph must be a ge.graph.Graph, got str"):
        explain("g")  # type: ignore[arg-type]


def test_a_registration_leaves_a_handle_that_removes_it() -> None:
    from ge.passes import get_registered_passes

    cls = register(lambda g, ctx: adds_to_subs(g), name="Removable")
    handle = cls.__ge_pass_descriptor__
    assert [d.pass_name for d in get_registered_passes()] == ["Removable"]
    assert handle.remove() is True and handle.remove() is False
    assert get_registered_passes() == []
    x, y = f32(2, 3), f32(2, 3, seed=1)
    np.testing.assert_allclose(session_run(add_graph(), x, y)[0], (x + y) * 2.0, rtol=1e-6)


def test_a_rewritten_graph_computes_what_the_unrewritten_graph_computes() -> None:
    register_gemm_pass()
    graph = mm_add_graph()
    a, w, c = f32(4, 3), f32(3, 5, seed=1), f32(4, 5, seed=2)
    reference = eval_graph(graph, [a, w, c])[0]  # the reference interpreter runs no passes
    np.testing.assert_allclose(session_run(graph, a, w, c)[0], reference, rtol=1e-5, atol=1e-6)
    rewritten = ge.compiler.optimize_graph(graph, fuse=False)
    assert "GEMM" in {n.type for n in rewritten.get_direct_nodes()}
    np.testing.assert_allclose(eval_graph(rewritten, [a, w, c])[0], reference, rtol=1e-5, atol=1e-6)
