"""Elementwise fusion (ge.compiler.fuse): what is grouped, what is not, and that a fused graph
computes what the unfused one does (``eval_graph`` is the oracle)."""

from __future__ import annotations

import os
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.compiler.executable import CompiledGraph
from ge.compiler.fuse import fuse_elementwise
from ge.compiler.kernels._codegen import compiled_kernel_count
from ge.compiler.kernels.elementwise import FUSIBLE_OPS
from ge.compiler.pipeline import copy_graph, optimize_graph
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.graph._air import model_from_bytes, model_to_bytes
from ge.ops import eval_graph

from .._tiers import default_pairs
from ..ops._cases import build, cases
from ..ops.test_ops_table import assert_close

F32 = DataType.DT_FLOAT


def graph_of(
    fn: Callable[..., Any], *shapes: list[int], dtype: DataType = F32, name: str = "g"
) -> Graph:
    b = GraphBuilder(name)
    xs = [b.create_input(i, shape=s, data_type=dtype) for i, s in enumerate(shapes)]
    out = fn(*xs)
    return b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])


def types(graph: Graph) -> Counter[str]:
    return Counter(n.type for n in graph.get_direct_nodes())


def fused_nodes(graph: Graph) -> list[Any]:
    return [n for n in graph.get_direct_nodes() if n.type == "FusedElementwise"]


def check_same(graph: Graph, feeds: list[np.ndarray], rtol: float = 1e-6) -> CompiledGraph:
    compiled = CompiledGraph(graph)
    expected = eval_graph(graph, feeds)
    actual = compiled.run_arrays(feeds)
    assert len(actual) == len(expected)
    for a, value in zip(actual, expected, strict=True):
        e = np.asarray(value)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a.astype(float), e.astype(float), rtol=rtol, atol=rtol)
    return compiled


def rand(rng: np.random.Generator, shape: list[int], dtype: Any = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# --- what is fused -----------------------------------------------------------------------
def test_arithmetic_chain_becomes_one_node_and_one_kernel() -> None:
    graph = graph_of(lambda x, y: x * y + x * 0.5 - y * y, [1000], [1000])
    compiled = check_same(graph, [rand(np.random.default_rng(0), [1000]) for _ in range(2)])
    assert types(compiled.graph) == Counter({"Data": 2, "FusedElementwise": 1, "NetOutput": 1})
    (node,) = fused_nodes(compiled.graph)
    assert node.get_attr("_fused_ops") == "Mul,Mul,Add,Mul,Sub"  # as written (creation order)
    plan = compiled.plan_for([[1000], [1000]])
    assert plan is not None and len(plan.tasks) == 1
    assert plan.arena_size == 0  # intermediates live in registers


def test_scalar_constants_go_into_the_body() -> None:
    graph = graph_of(lambda x: np.exp(x) * 0.5 + 2.0, [8])
    compiled = CompiledGraph(graph)
    (node,) = fused_nodes(compiled.graph)
    assert [e[0].type for e in node._in_edges] == ["Data"]
    body = compiled.graph.get_subgraph(node.get_subgraph_names()[0])
    assert body is not None and types(body)["Const"] == 2


def test_value_used_outside_is_an_extra_output() -> None:
    def fn(x: Any, y: Any) -> Any:
        t = np.exp(x) * y
        return [t + 1.0, t.sum(axis=1)]

    graph = graph_of(fn, [4, 6], [4, 6])
    rng = np.random.default_rng(1)
    compiled = check_same(graph, [rand(rng, [4, 6]), rand(rng, [4, 6])])
    (node,) = fused_nodes(compiled.graph)
    assert node.get_outputs_size() == 2  # t (for the sum) and t + 1 (a graph output)


def test_intermediate_that_is_a_graph_output_is_kept() -> None:
    graph = graph_of(lambda x: [x * 2.0, x * 2.0 + 1.0], [5])
    compiled = check_same(graph, [np.arange(5, dtype=np.float32)])
    (node,) = fused_nodes(compiled.graph)
    assert node.get_outputs_size() == 2


def test_a_reduction_between_two_groups_is_not_swallowed() -> None:
    # a = exp(x); r = sum(a); b = a * r: a and b have one shape, but b depends on a through
    # the reduction, so fusing them would need the reduction inside the loop (a cycle).
    def fn(x: Any) -> Any:
        a = np.exp(x) + 1.0
        r = a.sum(axis=1, keepdims=True)
        return (a * r) - a

    graph = graph_of(fn, [3, 7])
    compiled = check_same(graph, [rand(np.random.default_rng(2), [3, 7])], rtol=1e-5)
    compiled.graph.verify()
    assert types(compiled.graph)["ReduceSum"] == 1


def test_different_shapes_make_different_groups() -> None:
    def fn(x: Any, v: Any) -> Any:
        w = np.exp(v) * 2.0  # [7]
        return (x + w) * x  # [3, 7]

    graph = graph_of(fn, [3, 7], [7])
    rng = np.random.default_rng(3)
    compiled = check_same(graph, [rand(rng, [3, 7]), rand(rng, [7])])
    shapes = sorted(tuple(n.get_output_desc(0).shape) for n in fused_nodes(compiled.graph))
    assert shapes == [(3, 7), (7,)]


def test_fuse_false_and_env_switch_keep_every_op(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = graph_of(lambda x: np.exp(x) * 2.0 + 1.0, [4])
    assert "FusedElementwise" not in types(optimize_graph(graph, fuse=False))
    monkeypatch.setenv("GE_FUSION", "0")
    assert "FusedElementwise" not in types(optimize_graph(graph))
    monkeypatch.delenv("GE_FUSION")
    assert "FusedElementwise" in types(optimize_graph(graph))


def test_fusion_shows_in_graph_dumps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GE_DUMP_GRAPH", str(tmp_path))
    optimize_graph(graph_of(lambda x: np.exp(x) * 2.0 + 1.0, [4], name="dumped"))
    fuse_dumps = [p for p in os.listdir(tmp_path) if "fuse" in p]
    assert fuse_dumps, os.listdir(tmp_path)
    text = (tmp_path / fuse_dumps[0]).read_text()
    assert "FusedElementwise" in text and "Exp" in text


def test_fused_graph_round_trips_through_air() -> None:
    optimized = optimize_graph(graph_of(lambda x, y: np.sin(x) * y - 3.0, [2, 3], [2, 3]))
    again = model_from_bytes(model_to_bytes(optimized))
    assert str(again) == str(optimized)
    rng = np.random.default_rng(4)
    feeds = [rand(rng, [2, 3]), rand(rng, [2, 3])]
    np.testing.assert_array_equal(
        CompiledGraph(again, optimize=False).run_arrays(feeds)[0],
        np.asarray(eval_graph(optimized, feeds)[0]),
    )


def test_already_fused_bodies_are_not_fused_again() -> None:
    once = optimize_graph(graph_of(lambda x: np.exp(x) * 2.0 + 1.0, [4]))
    twice = optimize_graph(once)
    assert str(twice) == str(once)


def test_fusion_leaves_the_input_graph_alone() -> None:
    graph = graph_of(lambda x: np.exp(x) * 2.0 + 1.0, [4])
    before = graph.as_text()
    CompiledGraph(graph)
    assert graph.as_text() == before


# --- broadcasting and layouts -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape_x", "shape_y"),
    [
        ([4, 5], [5]),  # a row broadcast along dim 0
        ([4, 5], [4, 1]),  # a column, constant along the last axis
        ([2, 3, 4, 5], [1, 3, 1, 1]),  # NCHW + per-channel
        ([2, 3, 4, 5], [3, 4, 1]),
        ([6, 1, 5], [1, 4, 1]),  # both broadcast: output [6, 4, 5]
        ([7], [1]),  # a one-element input
        ([], [3]),  # a scalar input
        ([0, 5], [5]),  # empty
        ([3, 1], [1]),  # trailing size-1 axis
    ],
)
def test_broadcast_inputs(shape_x: list[int], shape_y: list[int]) -> None:
    graph = graph_of(lambda x, y: np.exp(x) * y + y * 2.0 - x, shape_x, shape_y)
    rng = np.random.default_rng(zlib.crc32(repr((shape_x, shape_y)).encode()))
    check_same(graph, [rand(rng, shape_x), rand(rng, shape_y)], rtol=2e-6)


@pytest.mark.parametrize(
    ("dtype", "np_dtype"),
    [
        (DataType.DT_FLOAT, np.float32),
        (DataType.DT_DOUBLE, np.float64),
        (DataType.DT_FLOAT16, np.float16),
        (DataType.DT_BF16, "bfloat16"),
        (DataType.DT_INT32, np.int32),
        (DataType.DT_INT64, np.int64),
        (DataType.DT_UINT8, np.uint8),
    ],
)
def test_dtypes_round_like_the_reference(dtype: DataType, np_dtype: Any) -> None:
    import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy)

    graph = graph_of(lambda x, y: (x * y + x) * y - x, [64], [64], dtype=dtype)
    rng = np.random.default_rng(5)
    feeds = [
        (rng.uniform(-4, 4, 64) if dtype != DataType.DT_UINT8 else rng.integers(0, 5, 64)).astype(
            np_dtype
        )
        for _ in range(2)
    ]
    compiled = CompiledGraph(graph)
    assert fused_nodes(compiled.graph)
    expected = np.asarray(eval_graph(graph, feeds)[0])
    np.testing.assert_array_equal(compiled.run_arrays(feeds)[0], expected)  # bit-exact


def test_mixed_dtypes_compare_select_and_cast() -> None:
    def fn(x: Any, y: Any) -> Any:
        big = x > y
        z = ge.es.SelectV2(big, x * 2.0, y - 1.0)
        return [z.astype(np.int32) + 1, ge.es.LogicalNot(big)]

    graph = graph_of(fn, [3, 4], [4])
    rng = np.random.default_rng(6)
    feeds = [rand(rng, [3, 4]) * 3, rand(rng, [4]) * 3]
    compiled = CompiledGraph(graph)
    for a, e in zip(compiled.run_arrays(feeds), eval_graph(graph, feeds), strict=True):
        np.testing.assert_array_equal(a, np.asarray(e))


def test_nan_inf_and_integer_division_by_zero_as_unfused() -> None:
    fx = graph_of(lambda x, y: np.maximum(x, y) * 2.0 - np.minimum(x, y), [4], [4])
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    feeds = [np.array([nan, 1, -inf, 0], np.float32), np.array([1, nan, 2, -0.0], np.float32)]
    np.testing.assert_array_equal(
        CompiledGraph(fx).run_arrays(feeds)[0], np.asarray(eval_graph(fx, feeds)[0])
    )
    fi = graph_of(lambda x, y: (x / y) * 3 + x, [4], [4], dtype=DataType.DT_INT32)
    ints = [np.array([7, -7, 5, 1], np.int32), np.array([2, 2, 0, -1], np.int32)]
    np.testing.assert_array_equal(
        CompiledGraph(fi).run_arrays(ints)[0], np.asarray(eval_graph(fi, ints)[0])
    )


# --- shape-generic kernels ---------------------------------------------------------------
def test_new_sizes_with_the_same_pattern_compile_no_kernel() -> None:
    def fn(x: Any, y: Any) -> Any:
        return x * y + x * 0.5 - y * y

    rng = np.random.default_rng(7)
    check_same(graph_of(fn, [300], [300]), [rand(rng, [300]), rand(rng, [300])])
    before = compiled_kernel_count()
    for n in (17, 4096, 100_001):
        check_same(graph_of(fn, [n], [n]), [rand(rng, [n]), rand(rng, [n])])
    assert compiled_kernel_count() == before


def test_dynamic_dims_fuse_and_fall_back_when_run_shapes_broadcast_inside() -> None:
    graph = graph_of(lambda x, y: (x * x + y) * y, [-1], [-1])  # x*x is [1] when x is
    compiled = CompiledGraph(graph)
    assert fused_nodes(compiled.graph)
    rng = np.random.default_rng(8)
    for shape_x, shape_y in [([5], [5]), ([1], [5]), ([5], [1]), ([0], [0])]:
        feeds = [rand(rng, shape_x), rand(rng, shape_y)]
        expected = np.asarray(eval_graph(graph, feeds)[0])
        np.testing.assert_allclose(compiled.run_arrays(feeds)[0], expected, rtol=1e-6)


# --- every fusible op through the fused path ----------------------------------------------------
def _fusible_cases() -> list[Any]:
    """Each fusible op in each claimed dtype (its first variant); the default tier runs the
    representative dtypes of tests/_tiers.py, -m slow every dtype."""
    seen: set[tuple[str, str]] = set()
    table = []
    for record, variant, dtype in cases():
        if record.op not in FUSIBLE_OPS or (record.op, dtype) in seen:
            continue
        seen.add((record.op, dtype))
        table.append((record, variant, dtype))
    default = default_pairs((record.op, dtype) for record, _, dtype in table)
    return [
        pytest.param(
            record,
            variant,
            dtype,
            marks=() if (record.op, dtype) in default else (pytest.mark.slow,),
            id=f"{record.op}-{dtype}",
        )
        for record, variant, dtype in table
    ]


@pytest.mark.parametrize(("record", "variant", "dtype"), _fusible_cases())
def test_every_fusible_op_alone_in_a_body(record: Any, variant: Any, dtype: str) -> None:
    built = build(
        record.op,
        variant.inputs,
        variant.attrs,
        dtype,
        np.random.default_rng(zlib.crc32(f"fused-{record.op}-{dtype}".encode())),
        variant.output_counts,
    )
    graph = copy_graph(built.graph)
    fuse_elementwise(graph, min_ops=1)
    if not fused_nodes(graph):
        pytest.skip(f"{record.op} {variant.label} is not fusible (shape or dtype)")
    expected = eval_graph(built.graph, built.feeds)
    actual = CompiledGraph(graph, optimize=False).run_arrays(built.feeds)
    rtol, atol = record.tolerance(dtype)
    for a, e in zip(actual, expected, strict=True):
        assert_close(a, np.asarray(e), dtype, rtol, atol)


# --- reductions with an elementwise epilogue --------------------------------------------------
@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("rms", lambda x, y: np.sqrt((x * 1.0).sum(axis=1, keepdims=True) / 7.0 + 1e-5) * y),
        ("mean-shift", lambda x, y: x.mean(axis=-1) * 2.0 - 1.0),
        ("max-gate", lambda x, y: np.maximum(x.max(axis=1, keepdims=True), y) + y),
        ("min", lambda x, y: -x.min(axis=1, keepdims=True) + 3.0),
    ],
)
def test_reduction_takes_up_its_elementwise_epilogue(name: str, fn: Any) -> None:
    graph = graph_of(fn, [5, 7], [5, 1], name=name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    feeds = [rand(rng, [5, 7]), rand(rng, [5, 1])]
    feeds[0][2, 3] = np.nan if name == "max-gate" else feeds[0][2, 3]  # NaN stays per row
    compiled = CompiledGraph(graph)
    fused = [n for n in compiled.graph.get_direct_nodes() if n.type == "FusedReduce"]
    assert len(fused) == 1, str(compiled.graph)
    plan = compiled.plan_for([[5, 7], [5, 1]])
    assert plan is not None and sum(1 for _ in plan.tasks) == 1
    expected = np.asarray(eval_graph(graph, feeds)[0])
    np.testing.assert_allclose(compiled.run_arrays(feeds)[0], expected, rtol=1e-6, atol=1e-6)


def test_a_reduction_used_twice_or_over_leading_axes_is_not_a_head() -> None:
    twice = graph_of(lambda x: [x.sum(axis=1) * 2.0, x.sum(axis=1)], [4, 6])
    assert "FusedReduce" not in types(optimize_graph(twice))
    leading = graph_of(lambda x: x.sum(axis=0) * 2.0 + 1.0, [4, 6])
    assert "FusedReduce" not in types(optimize_graph(leading))
    rng = np.random.default_rng(9)
    check_same(twice, [rand(rng, [4, 6])], rtol=1e-5)
    check_same(leading, [rand(rng, [4, 6])], rtol=1e-5)


def test_epilogue_with_a_dynamic_batch_runs_every_size() -> None:
    graph = graph_of(lambda x: np.exp(x.sum(axis=1, keepdims=True) * 0.1), [-1, 8])
    compiled = CompiledGraph(graph)
    rng = np.random.default_rng(10)
    for rows in (1, 3, 40_000):
        feeds = [rand(rng, [rows, 8])]
        expected = np.asarray(eval_graph(graph, feeds)[0])
        np.testing.assert_allclose(compiled.run_arrays(feeds)[0], expected, rtol=2e-6)
