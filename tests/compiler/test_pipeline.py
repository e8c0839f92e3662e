"""The compile pipeline (ge/compiler/pipeline.py): constant folding, CSE, dead-node elimination
and algebraic simplification each do their job, never change results (checked against
``eval_graph`` of the original graph on random inputs), leave the input graph alone; the
``GE_DUMP_GRAPH`` dumps and the ``register_stage_hook`` stages."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.compiler.cse import eliminate_common_subexpressions
from ge.compiler.dce import eliminate_dead_nodes
from ge.compiler.fold import MAX_FOLD_ELEMENTS, fold_constants
from ge.compiler.pipeline import (
    PIPELINE,
    HookHandle,
    copy_graph,
    optimize_graph,
    register_stage_hook,
)
from ge.compiler.simplify import simplify
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.ops import eval_graph, infer_graph
from ge.passes.stage import PassStage

# --- helpers ------------------------------------------------------------------------------------


def types(graph: Graph) -> Counter[str]:
    return Counter(n.type for n in graph.get_direct_nodes())


def random_feeds(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    """Random inputs fitting the graph's Data nodes (``-1`` dims become 3)."""
    rng = np.random.default_rng(seed)
    data = sorted(
        (n for n in graph.get_direct_nodes() if n.type == "Data"),
        key=lambda n: n.get_attr("index"),
    )
    feeds = []
    for node in data:
        desc = node.get_output_desc(0)
        shape = [3 if d < 0 else d for d in desc.shape]
        dtype = desc.data_type
        if dtype == DataType.DT_BOOL:
            feeds.append(rng.random(shape) > 0.5)
        elif dtype == DataType.DT_INT32:
            feeds.append(rng.integers(-5, 6, size=shape).astype(np.int32))
        else:
            feeds.append(rng.uniform(-2, 2, size=shape).astype(np.float32))
    return feeds


def assert_same_results(original: Graph, optimized: Graph, seeds: int = 3) -> None:
    for seed in range(seeds):
        feeds = random_feeds(original, seed)
        expected = eval_graph(original, feeds)
        actual = eval_graph(optimized, feeds)
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected, strict=True):
            a, e = np.asarray(got), np.asarray(want)
            assert a.shape == e.shape and a.dtype == e.dtype
            np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-7)


def build(name: str, fn: Callable[..., Any], *shapes: list[int], dtype: Any = None) -> Graph:
    b = GraphBuilder(name)
    xs = [
        b.create_input(i, name=f"x{i}", shape=s, data_type=dtype or DataType.DT_FLOAT)
        for i, s in enumerate(shapes)
    ]
    out = fn(*xs)
    return b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])


def output_sources(graph: Graph) -> list[tuple[str, int]]:
    return [(n.name, p) for n, p in graph.get_outputs()]


# --- constant folding ---------------------------------------------------------------------------
def _const_subgraph(x: Any) -> Any:
    b = x.get_owner_builder()
    k = np.exp(b.create_vector_int64([1, 2, 3]).astype(np.float32)) * 2.0 + 1.0
    return x + k


def test_constant_subgraph_becomes_one_const() -> None:
    graph = build("fold", _const_subgraph, [3])
    assert types(graph)["Const"] >= 3 and types(graph)["Exp"] == 1
    optimized = optimize_graph(graph)
    assert types(optimized) == Counter({"Data": 1, "Const": 1, "Add": 1, "NetOutput": 1})
    const = next(n for n in optimized.get_direct_nodes() if n.type == "Const")
    value = const.get_attr("value").numpy()
    np.testing.assert_allclose(value, np.exp(np.float32([1, 2, 3])) * 2.0 + 1.0, rtol=1e-6)
    assert const.get_output_desc(0).data_type == DataType.DT_FLOAT
    assert_same_results(graph, optimized)


def test_fold_pass_reports_change_then_reaches_a_fixed_point() -> None:
    graph = copy_graph(build("fold_pass", _const_subgraph, [3]))
    infer_graph(graph)
    assert fold_constants(graph) is True
    for _ in range(5):
        if not fold_constants(graph):
            break
    assert fold_constants(graph) is False
    computed = [n for n in graph.get_direct_nodes() if n.type in ("Cast", "Exp", "Mul")]
    assert computed == []


def test_folding_keeps_huge_results_computed_at_run_time() -> None:
    side = int(np.sqrt(MAX_FOLD_ELEMENTS)) + 16

    def fn(x: Any) -> Any:
        b = x.get_owner_builder()
        return x + ge.es.BroadcastTo(b.create_const_float(1.0), [side, side]) * 2.0

    graph = build("big", fn, [side, side])
    optimized = optimize_graph(graph)
    consts = [n for n in optimized.get_direct_nodes() if n.type == "Const"]
    assert all(n.get_attr("value").numpy().size <= MAX_FOLD_ELEMENTS for n in consts)
    assert_same_results(graph, optimized, seeds=1)


def test_fold_does_not_touch_nodes_fed_by_graph_inputs() -> None:
    graph = build("nofold", lambda x: np.exp(x) * 2.0, [4])
    optimized = optimize_graph(graph, fuse=False)
    assert types(optimized)["Exp"] == 1 and types(optimized)["Mul"] == 1


# --- common-subexpression elimination -----------------------------------------------------------
def test_cse_computes_a_repeated_product_once() -> None:
    graph = build("cse", lambda x, y: [(x * y) + (x * y), (x * y) * 3.0], [3], [3])
    assert types(graph)["Mul"] == 4
    optimized = optimize_graph(graph, fuse=False)
    assert types(optimized)["Mul"] == 2  # one x*y, one (x*y)*3
    assert_same_results(graph, optimized)


def test_cse_merges_duplicate_consts() -> None:
    graph = build("cse_const", lambda x, y: [x + 3.0, y * 3.0, x - 3.0], [3], [3])
    assert types(graph)["Const"] == 3
    optimized = optimize_graph(graph)
    assert types(optimized)["Const"] == 1
    assert_same_results(graph, optimized)


def test_cse_keeps_different_consts_attrs_and_dtypes_apart() -> None:
    def fn(x: Any, y: Any) -> Any:
        b = x.get_owner_builder()
        return [
            x + 3.0,
            x + 2.0,  # different value
            x.sum(axis=1, keepdims=True),
            x.sum(axis=1, keepdims=False),  # different attribute
            y + b.create_scalar_int32(3).astype(np.float32),
        ]

    graph = build("cse_apart", fn, [2, 3], [2, 3])
    optimized = optimize_graph(graph)
    assert types(optimized)["ReduceSum"] == 2
    assert types(optimized)["Add"] == 3
    assert_same_results(graph, optimized)


def test_cse_pass_alone() -> None:
    graph = copy_graph(build("cse_alone", lambda x: [np.exp(x), np.exp(x), np.exp(x) + 1.0], [3]))
    infer_graph(graph)
    assert eliminate_common_subexpressions(graph) is True
    assert types(graph)["Exp"] == 1
    assert eliminate_common_subexpressions(graph) is False
    exp = next(n for n in graph.get_direct_nodes() if n.type == "Exp")
    assert output_sources(graph)[:2] == [(exp.name, 0), (exp.name, 0)]


# --- dead-node elimination ----------------------------------------------------------------------
def test_dce_removes_an_unused_branch_and_keeps_inputs_and_netoutput() -> None:
    def fn(x: Any, y: Any) -> Any:
        _unused = np.exp(x) * y + np.abs(y)
        return x + 1.0

    graph = build("dce", fn, [3], [3])
    optimized = optimize_graph(graph)
    assert types(optimized) == Counter({"Data": 2, "Const": 1, "Add": 1, "NetOutput": 1})
    assert {n.name for n in optimized.get_direct_nodes() if n.type == "Data"} == {"x0", "x1"}
    assert_same_results(graph, optimized)


def test_dce_pass_alone_removes_unused_consts() -> None:
    def fn(x: Any) -> Any:
        b = x.get_owner_builder()
        b.create_const_float(7.0)
        b.create_vector_int64([1, 2])
        return x * 2.0

    graph = copy_graph(build("dce_alone", fn, [3]))
    infer_graph(graph)
    assert eliminate_dead_nodes(graph) is True
    assert types(graph) == Counter({"Data": 1, "Const": 1, "Mul": 1, "NetOutput": 1})
    assert eliminate_dead_nodes(graph) is False


# --- algebraic simplification -------------------------------------------------------------------
SIMPLIFIED: dict[str, tuple[Callable[[Any], Any], str]] = {
    "x+0": (lambda x: x + 0.0, "Add"),
    "0+x": (lambda x: 0.0 + x, "Add"),
    "x+zeros_same_shape": (lambda x: x + np.zeros((2, 3), np.float32), "Add"),
    "x+zeros_row": (lambda x: ge.es.Add(x, [0.0, 0.0, 0.0]), "Add"),
    "x*1": (lambda x: x * 1.0, "Mul"),
    "1*x": (lambda x: 1.0 * x, "Mul"),
    "x/1": (lambda x: x / 1.0, "Div"),
    "x-0": (lambda x: x - 0.0, "Sub"),
    "identity": (ge.es.Identity, "Identity"),
    "neg_neg": (lambda x: ge.es.Neg(ge.es.Neg(x)), "Neg"),
    "cast_same": (lambda x: ge.es.Cast(x, dst_type=int(DataType.DT_FLOAT)), "Cast"),
    "reshape_same": (lambda x: x.reshape(2, 3), "Reshape"),
    "transpose_identity": (lambda x: ge.es.Transpose(x, [0, 1]), "Transpose"),
}


@pytest.mark.parametrize("case", list(SIMPLIFIED))
def test_simplification_rule_fires(case: str) -> None:
    fn, op = SIMPLIFIED[case]
    graph = build(f"simp_{case.replace('+', 'p').replace('*', 'm')}", fn, [2, 3])
    assert types(graph)[op] >= 1
    optimized = optimize_graph(graph)
    assert types(optimized)[op] == 0, str(optimized)
    assert types(optimized) == Counter({"Data": 1, "NetOutput": 1})
    assert output_sources(optimized) == [("x0", 0)]
    assert_same_results(graph, optimized)


NOT_SIMPLIFIED: dict[str, tuple[Callable[..., Any], list[list[int]], Any, str]] = {
    # x[3] + zeros[2,3] broadcasts: the result is [2,3], not x
    "x3+zeros23": (lambda x: x + np.zeros((2, 3), np.float32), [[3]], None, "Add"),
    "zeros23+x3": (lambda x: np.zeros((2, 3), np.float32) + x, [[3]], None, "Add"),
    "x23*ones423": (lambda x: x * np.ones((4, 2, 3), np.float32), [[2, 3]], None, "Mul"),
    "x3/ones23": (lambda x: x / np.ones((2, 3), np.float32), [[3]], None, "Div"),
    "x3-zeros13": (lambda x: x - np.zeros((1, 3), np.float32), [[3]], None, "Sub"),
    # int32 + 0.0 is float32: the dtype changes
    "int+0.0": (lambda x: x + 0.0, [[3]], DataType.DT_INT32, "Add"),
    "int*1.0": (lambda x: x * 1.0, [[3]], DataType.DT_INT32, "Mul"),
    # not neutral
    "0-x": (lambda x: 0.0 - x, [[2, 3]], None, "Sub"),
    "1/x": (lambda x: 1.0 / x, [[2, 3]], None, "Div"),
    "x+partly_zero": (lambda x: ge.es.Add(x, [0.0, 1.0, 0.0]), [[2, 3]], None, "Add"),
    "x*2": (lambda x: x * 2.0, [[2, 3]], None, "Mul"),
    "single_neg": (ge.es.Neg, [[2, 3]], None, "Neg"),
    "reshape_other": (lambda x: x.reshape(3, 2), [[2, 3]], None, "Reshape"),
    "reshape_rank": (lambda x: x.reshape(1, 2, 3), [[2, 3]], None, "Reshape"),
    "transpose_swap": (lambda x: ge.es.Transpose(x, [1, 0]), [[2, 3]], None, "Transpose"),
    "transpose_square": (lambda x: ge.es.Transpose(x, [1, 0]), [[3, 3]], None, "Transpose"),
    "cast_other": (
        lambda x: ge.es.Cast(x, dst_type=int(DataType.DT_INT32)),
        [[2, 3]],
        None,
        "Cast",
    ),
}


@pytest.mark.parametrize("case", list(NOT_SIMPLIFIED))
def test_simplification_does_not_fire_when_shape_dtype_or_value_differ(case: str) -> None:
    fn, shapes, dtype, op = NOT_SIMPLIFIED[case]
    graph = build("nosimp", fn, *shapes, dtype=dtype)
    optimized = optimize_graph(graph)
    assert types(optimized)[op] == types(graph)[op], str(optimized)
    assert output_sources(optimized) != [("x0", 0)]
    assert_same_results(graph, optimized)


def test_broadcasting_add_of_zeros_keeps_the_broadcast_shape() -> None:
    graph = build("bcast", lambda x: x + np.zeros((2, 3), np.float32), [3])
    optimized = optimize_graph(graph)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    (out,) = eval_graph(optimized, [x])
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out, np.broadcast_to(x, (2, 3)))


def test_neg_neg_keeps_the_inner_neg_when_it_is_used_elsewhere() -> None:
    def fn(x: Any) -> Any:
        inner = ge.es.Neg(x)
        return [ge.es.Neg(inner) * 3.0, inner]

    graph = build("negneg_shared", fn, [2, 3])
    optimized = optimize_graph(graph)
    assert types(optimized)["Neg"] == 1
    assert_same_results(graph, optimized)


def test_simplify_pass_alone_and_chained_rules() -> None:
    fn = lambda x: ge.es.Identity(((x + 0.0) * 1.0 - 0.0) / 1.0).reshape(2, 3)  # noqa: E731
    graph = copy_graph(build("chain_rules", fn, [2, 3]))
    infer_graph(graph)
    assert simplify(graph) is True
    assert simplify(graph) is False
    computed = {"Add", "Mul", "Sub", "Div", "Identity", "Reshape"} & set(types(graph))
    assert computed == set()
    assert output_sources(graph) == [("x0", 0)]


def test_subgraphs_are_optimized_too() -> None:
    def branch(name: str, fn: Callable[[Any], Any]) -> Graph:
        b = GraphBuilder(name)
        return b.build_and_reset([fn(b.create_input(0, shape=[3]))])

    b = GraphBuilder("if_opt")
    cond = b.create_input(0, data_type=DataType.DT_BOOL)
    x = b.create_input(1, shape=[3])
    then_g = branch("then_opt", lambda a: (a * 1.0 + 0.0) * (2.0 * 3.0))
    else_g = branch("else_opt", lambda a: ge.es.Neg(ge.es.Neg(a)))
    (y,) = ge.es.If(cond, [x], 1, then_g, else_g)
    graph = b.build_and_reset([y])
    optimized = optimize_graph(graph)
    subs = {g.name: g for g in optimized.get_all_subgraphs()}
    assert types(subs["then_opt"]) == Counter({"Data": 1, "Const": 1, "Mul": 1, "NetOutput": 1})
    assert types(subs["else_opt"]) == Counter({"Data": 1, "NetOutput": 1})
    for flag in (True, False):
        feeds = [np.array(flag), np.array([1.0, -2.0, 3.0], np.float32)]
        for a, e in zip(eval_graph(optimized, feeds), eval_graph(graph, feeds), strict=True):
            np.testing.assert_allclose(a, e, rtol=1e-6)


def test_mixed_graph_optimizes_to_the_same_results() -> None:
    def fn(x: Any, y: Any) -> Any:
        b = x.get_owner_builder()
        k = b.create_vector_int64([4, 5, 6]).astype(np.float32) / 2.0
        p = x * y
        q = x * y
        _dead = np.exp(p) - q
        z = ge.es.Neg(ge.es.Neg(p + 0.0)) * 1.0 + k
        return [z, q - 0.0, z / (np.abs(y) + 1.0)]

    graph = build("mixed", fn, [4, 3], [3])
    optimized = optimize_graph(graph, fuse=False)
    assert types(optimized)["Neg"] == 0 and types(optimized)["Exp"] == 0
    assert types(optimized)["Mul"] == 1
    assert_same_results(graph, optimized, seeds=5)


def test_optimize_graph_leaves_its_input_unchanged() -> None:
    graph = build("untouched", _const_subgraph, [3])
    graph2 = build(
        "untouched2", lambda x, y: [(x * y) + (x * y) * 1.0, ge.es.Identity(y)], [3], [3]
    )
    for g in (graph, graph2):
        text = g.as_text()
        names = [n.name for n in g.get_all_nodes()]
        descs = [str(n.get_output_desc(0)) for n in g.get_all_nodes() if n.get_outputs_size()]
        optimized = optimize_graph(g)
        assert optimized is not g
        assert g.as_text() == text
        assert [n.name for n in g.get_all_nodes()] == names
        assert [
            str(n.get_output_desc(0)) for n in g.get_all_nodes() if n.get_outputs_size()
        ] == descs
        assert str(optimized) != text


def test_optimize_graph_needs_a_graph() -> None:
    with pytest.raises(TypeError):
        optimize_graph("graph")  # type: ignore[arg-type]


# --- GE_DUMP_GRAPH ------------------------------------------------------------------------------
def test_dump_writes_one_readable_file_per_step_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump_dir = tmp_path / "dumps"
    monkeypatch.setenv("GE_DUMP_GRAPH", str(dump_dir))
    graph = build("dumped", _const_subgraph, [3])
    optimize_graph(graph)
    files = sorted(p.name for p in dump_dir.iterdir())
    expected = ["ge_dumped_00_input.txt"] + [
        f"ge_dumped_{i:02d}_{step.name}.txt" for i, step in enumerate(PIPELINE, start=1)
    ]
    assert files == expected
    assert [s.name for s in PIPELINE][:2] == ["before_infer_shape", "infer_shape"]
    assert "optimize" in [s.name for s in PIPELINE]
    texts = [(dump_dir / name).read_text(encoding="utf-8") for name in files]
    for text in texts:
        assert text.startswith("graph dumped {")
        assert "Data" in text and "NetOutput" in text
    assert "Exp" in texts[0]  # before folding
    optimize_index = next(i for i, s in enumerate(PIPELINE, start=1) if s.name == "optimize")
    assert "Exp" not in texts[optimize_index]  # after folding
    assert texts[-1] == texts[optimize_index]


def test_dump_is_off_when_unset_or_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GE_DUMP_GRAPH", raising=False)
    monkeypatch.chdir(tmp_path)
    optimize_graph(build("nodump", lambda x: x * 2.0, [3]))
    monkeypatch.setenv("GE_DUMP_GRAPH", "")
    optimize_graph(build("nodump", lambda x: x * 2.0, [3]))
    assert list(tmp_path.iterdir()) == []


def test_unwritable_dump_dir_only_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("GE_DUMP_GRAPH", str(blocker / "dumps"))
    graph = build("warned", lambda x: x * 2.0, [3])
    with pytest.warns(RuntimeWarning, match="GE_DUMP_GRAPH"):
        optimized = optimize_graph(graph)
    assert_same_results(graph, optimized, seeds=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once, not on every step or compile
        optimize_graph(graph)


# --- stage hooks --------------------------------------------------------------------------------
@pytest.fixture
def hooks() -> Iterator[list[HookHandle]]:
    """Handles of the hooks a test registers; each removed afterwards (hermetic tests)."""
    registered: list[HookHandle] = []
    yield registered
    for handle in registered:
        handle.remove()


def test_stage_hooks_run_at_their_stage_in_order(
    hooks: list[HookHandle],
) -> None:
    calls: list[tuple[str, str, Counter[str], Graph]] = []
    target = "hooked_graph"

    def make(label: str) -> Callable[[Graph], None]:
        def hook(graph: Graph) -> None:
            if graph.name == target:
                calls.append((label, graph.name, types(graph), graph))

        return hook

    order = [
        (PassStage.AFTER_ORIGIN_GRAPH_OPTIMIZE, "after_optimize"),
        (PassStage.BEFORE_INFER_SHAPE, "before_infer_1"),
        (PassStage.AFTER_BUILTIN_FUSION_PASS, "after_fusion"),
        (PassStage.AFTER_INFER_SHAPE, "after_infer"),
        (PassStage.BEFORE_INFER_SHAPE, "before_infer_2"),
    ]
    for stage, label in order:
        hook = make(label)
        hooks.append(register_stage_hook(stage, hook))
    graph = build(target, _const_subgraph, [3])
    optimize_graph(graph)
    labels = [c[0] for c in calls]
    assert labels == [
        "before_infer_1",
        "before_infer_2",
        "after_infer",
        "after_fusion",
        "after_optimize",
    ]
    assert all(c[3] is not graph for c in calls)  # hooks see the working copy
    assert calls[0][2]["Exp"] == 1  # not optimized yet
    assert calls[-1][2]["Exp"] == 0  # optimized
    assert graph.as_text().count("Exp") >= 1


def test_a_stage_hook_can_rewrite_the_graph(
    hooks: list[HookHandle],
) -> None:
    def set_consts_to_ten(graph: Graph) -> None:
        if graph.name != "rewritten":
            return
        for node in graph.get_direct_nodes():
            if node.type == "Const":
                from ge.graph import Tensor

                node.set_attr("value", Tensor.from_numpy(np.float32(10.0)))

    hooks.append(register_stage_hook(PassStage.BEFORE_INFER_SHAPE, set_consts_to_ten))
    graph = build("rewritten", lambda x: x * 2.0, [3])
    optimized = optimize_graph(graph)
    (out,) = eval_graph(optimized, [np.ones(3, np.float32)])
    np.testing.assert_array_equal(out, np.full(3, 10.0, np.float32))
    (orig,) = eval_graph(graph, [np.ones(3, np.float32)])
    np.testing.assert_array_equal(orig, np.full(3, 2.0, np.float32))


def test_register_stage_hook_checks_its_arguments() -> None:
    with pytest.raises(TypeError):
        register_stage_hook("AfterInferShape", lambda g: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        register_stage_hook(PassStage.AFTER_INFER_SHAPE, "not callable")  # type: ignore[arg-type]


def test_a_hook_handle_removes_its_hook_once() -> None:
    seen: list[str] = []
    handle = register_stage_hook(PassStage.BEFORE_INFER_SHAPE, lambda g: seen.append(g.name))
    optimize_graph(build("once", lambda x: x * 2.0, [3]))
    assert handle.remove() is True
    assert handle.remove() is False
    optimize_graph(build("twice", lambda x: x * 2.0, [3]))
    assert seen == ["once"]
