"""Row kernels (``ge.compiler.kernels.rows``): reductions and softmax over trailing, contiguous
axes, one launch per node, blocks sharing the rows.

Checked against ``eval_graph`` (the op references), against numpy in float64 and against exact
sums (``math.fsum``); the general strided kernels (``ge.compiler.kernels.reduction``) must still
take every other axis choice. The default tier is float32 plus a few integer cases (each new
kernel costs a compile); the other dtypes run under ``-m slow``.
"""

from __future__ import annotations

import math
import threading
import zlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import ge.es
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import rows
from ge.compiler.kernels._codegen import kernel_from_source
from ge.error import GeValueError
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.ops import eval_graph
from ge.runtime.plan import KernelTask

NP: dict[str, np.dtype[Any]] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
}
GE: dict[str, DataType] = {
    "float16": DataType.DT_FLOAT16,
    "bfloat16": DataType.DT_BF16,
    "float32": DataType.DT_FLOAT,
    "float64": DataType.DT_DOUBLE,
    "int8": DataType.DT_INT8,
    "int16": DataType.DT_INT16,
    "int32": DataType.DT_INT32,
    "int64": DataType.DT_INT64,
    "uint8": DataType.DT_UINT8,
    "uint16": DataType.DT_UINT16,
    "uint32": DataType.DT_UINT32,
    "uint64": DataType.DT_UINT64,
}
FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int32", "int64", "uint8", "int8", "int16", "uint16", "uint32", "uint64")
QUICK_INTS = frozenset({"int32", "int64", "uint8"})

REDUCE_KIND = {
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceProd": "prod",
}
SOFTMAX = ("SoftmaxV2", "LogSoftmaxV2")
OPS = (*REDUCE_KIND, *SOFTMAX)

# (rtol, atol) of a result against a float64 reference or eval_graph, per dtype.
TOL: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-13),
    "float16": (1e-3, 1e-6),
    "bfloat16": (8e-3, 1e-5),
}
# How far a softmax row may sum from 1 (each output carries its own rounding).
ROW_SUM_TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1e-2}


# --- helpers ---------------------------------------------------------------------------------
def rng_for(*key: Any) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def apply(op: str, x: Any, axes: list[int], keep_dims: bool = False) -> Any:
    if op in SOFTMAX:
        return getattr(ge.es, op)(x, axes=axes)
    return getattr(ge.es, op)(x, axes, keep_dims=keep_dims)


def graph_of(fn: Callable[[Any], Any], shape: list[int], dtype: str) -> Graph:
    b = GraphBuilder("rows")
    out = fn(b.create_input(0, shape=shape, data_type=GE[dtype]))
    return b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])


def op_graph(op: str, shape: list[int], dtype: str, axes: list[int], keep: bool = False) -> Graph:
    return graph_of(lambda x: apply(op, x, axes, keep), shape, dtype)


def run_both(graph: Graph, feeds: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(compiled results, eval_graph results), same count, dtypes and shapes."""
    actual = CompiledGraph(graph).run_arrays(feeds)
    expected = [np.asarray(e) for e in eval_graph(graph, feeds)]
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, a.shape, e.dtype, e.shape)
    return actual, expected


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str) -> None:
    if dtype in TOL:
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol
        )
    else:
        np.testing.assert_array_equal(actual, expected)


def random_feed(
    shape: list[int], dtype: str, *key: Any, lo: float = -3.0, hi: float = 3.0
) -> np.ndarray:
    rng = rng_for(shape, dtype, *key)
    dt = NP[dtype]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def node_tasks(compiled: CompiledGraph, shapes: list[list[int]], op: str) -> list[KernelTask]:
    """The plan's kernel tasks for the (single) node of type ``op``, and checks the text form
    lists exactly one launch for it."""
    (name,) = [n.name for n in compiled.graph.get_direct_nodes() if n.type == op]
    plan = compiled.plan_for(shapes)
    assert plan is not None
    launches = [line for line in plan.as_text().splitlines() if line.strip().startswith("launch")]
    assert len([line for line in launches if f" for {name} (" in line]) == 1, plan.as_text()
    tasks = [t for t in plan.tasks if t.name == name]
    assert tasks and all(isinstance(t, KernelTask) for t in tasks)  # no host fallback
    return [t for t in tasks if isinstance(t, KernelTask)]


def row_kernel(op: str, dtype: str, out: str | None = None) -> Any:
    """The loaded row kernel for ``op`` (kernels are cached by source, so this is the very
    function object a plan using the row kernel holds)."""
    x, y = NP[dtype], NP[out or dtype]
    if op in SOFTMAX:
        return kernel_from_source(rows._softmax_source(x, y, log=op == "LogSoftmaxV2"))
    return kernel_from_source(rows._reduce_source(REDUCE_KIND[op], x, y))


def ulp_distance(a: float, b: float) -> int:
    def ordered(v: float) -> int:
        bits = int(np.asarray(v, np.float32).view(np.int32))
        return bits if bits >= 0 else -(bits & 0x7FFFFFFF)

    return abs(ordered(a) - ordered(b))


def softmax64(x: np.ndarray, axes: tuple[int, ...], log: bool) -> np.ndarray:
    v = x.astype(np.float64)
    shifted = v - v.max(axis=axes, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=axes, keepdims=True))
    return np.asarray(shifted - lse if log else np.exp(shifted - lse))


def reference64(op: str, x: np.ndarray, axes: list[int]) -> np.ndarray:
    """``op`` over ``axes`` in float64 (more accurate than eval_graph's float32 sums)."""
    red = tuple(sorted(a % x.ndim for a in axes))
    if op in SOFTMAX:
        return softmax64(x, red, op == "LogSoftmaxV2")
    fns: dict[str, Callable[..., Any]] = {
        "ReduceSum": np.sum,
        "ReduceMean": np.mean,
        "ReduceProd": np.prod,
        "ReduceMax": np.max,
        "ReduceMin": np.min,
    }
    return np.asarray(fns[op](x.astype(np.float64), axis=red))


def quick_if(condition: bool) -> tuple[Any, ...]:
    return () if condition else (pytest.mark.slow,)


# --- which kernel runs -----------------------------------------------------------------------
TRAILING = [  # (shape, axes, rows, cols)
    ([5, 7], [-1], 5, 7),
    ([2, 3, 40], [-2, -1], 2, 120),
    ([2, 3, 40], [1, 2], 2, 120),
    ([2, 3, 40], [-1, -2], 2, 120),
    ([5, 7], [0, 1], 1, 35),
    ([6], [0], 1, 6),
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("shape", "axes", "n_rows", "n_cols"), TRAILING)
def test_trailing_axes_take_the_row_kernel(
    op: str, shape: list[int], axes: list[int], n_rows: int, n_cols: int
) -> None:
    graph = op_graph(op, shape, "float32", axes)
    compiled = CompiledGraph(graph)
    (task,) = node_tasks(compiled, [shape], op)
    assert task.function is row_kernel(op, "float32")
    assert list(task.template[:2]) == [n_rows, n_cols]
    feed = random_feed(shape, "float32", op, lo=0.5, hi=1.5)
    actual = compiled.run_arrays([feed])
    expected = eval_graph(graph, [feed])
    assert actual[0].shape == np.asarray(expected[0]).shape
    assert_close(actual[0], np.asarray(expected[0]), "float32")


OTHER_AXES = [
    ([5, 7], [0], True),
    ([2, 3, 40], [0, 2], False),
    ([2, 3, 40], [1], False),
    ([2, 3, 40], [0, 1], False),
]


@pytest.mark.parametrize(
    ("op", "shape", "axes"),
    [
        pytest.param(
            op,
            shape,
            axes,
            marks=quick_if(quick and op in ("ReduceSum", "ReduceMax", "SoftmaxV2")),
            id=f"{op}-{shape}-{axes}",
        )
        for op in OPS
        for shape, axes, quick in OTHER_AXES
    ],
)
def test_other_axes_take_the_strided_kernel(op: str, shape: list[int], axes: list[int]) -> None:
    graph = op_graph(op, shape, "float32", axes)
    compiled = CompiledGraph(graph)
    (task,) = node_tasks(compiled, [shape], op)
    assert task.function is not row_kernel(op, "float32")
    feed = random_feed(shape, "float32", op, lo=0.5, hi=1.5)
    actual = compiled.run_arrays([feed])
    expected = np.asarray(eval_graph(graph, [feed])[0])
    assert actual[0].shape == expected.shape
    assert_close(actual[0], expected, "float32")


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax"])
def test_keep_dims_shapes(op: str, keep: bool) -> None:
    graph = op_graph(op, [2, 3, 40], "float32", [-2, -1], keep)
    feed = random_feed([2, 3, 40], "float32", op, keep)
    (actual,), (expected,) = run_both(graph, [feed])
    assert actual.shape == ((2, 1, 1) if keep else (2,))
    assert_close(actual, expected, "float32")


# --- sums: accuracy --------------------------------------------------------------------------
def sum_pattern(pattern: str, n: int, dtype: str) -> np.ndarray:
    """A [1, n] row that float32 (resp. float64) left-to-right summation gets wrong."""
    tiny = 2.0**-24 if dtype == "float32" else 2.0**-53
    if pattern == "one_and_tiny":  # 1 + tiny == 1 in the dtype; the tiny tail adds up
        x = np.full(n, tiny)
        x[0] = 1.0
    elif pattern == "cancelling":  # big, 1, -big, 0.75, ...: big + 1 == big in float32
        big = 1e8 if dtype == "float32" else 2.0**30  # lane sums stay exact in float64
        x = np.resize(np.asarray([big, 1.0, -big, 0.75]), n)
    elif pattern == "alternating":  # large and small, all positive
        x = np.where(np.arange(n) % 2 == 0, 1e4, 1e-4) * (1 + rng_for(n).random(n))
    else:  # "wide": magnitudes over twelve decades, all positive
        rng = rng_for(pattern, n)
        x = np.abs(rng.standard_normal(n)) * 10.0 ** rng.uniform(-6, 6, n)
    return x.astype(NP[dtype]).reshape(1, n)


SUM_LENGTHS = [1, 7, 8, 9, 1000, 1_000_003]
SUM_PATTERNS = ["one_and_tiny", "cancelling", "alternating", "wide"]


@pytest.mark.parametrize("pattern", SUM_PATTERNS)
@pytest.mark.parametrize("n", SUM_LENGTHS)
def test_float32_sum_is_the_exact_sum_rounded(n: int, pattern: str) -> None:
    x = sum_pattern(pattern, n, "float32")
    graph = op_graph("ReduceSum", [1, n], "float32", [-1])
    (actual,) = CompiledGraph(graph).run_arrays([x])
    exact = math.fsum(x.astype(np.float64).ravel().tolist())
    rounded = np.float32(exact)
    assert actual.dtype == np.float32 and actual.shape == (1,)
    assert ulp_distance(actual[0], rounded) <= 1, (actual[0], rounded, exact)
    if n >= 1000 and pattern in ("one_and_tiny", "cancelling"):  # the data does bite
        naive = np.cumsum(x.ravel(), dtype=np.float32)[-1]
        assert ulp_distance(naive, rounded) > 100


@pytest.mark.parametrize(
    ("n", "pattern"),
    [
        pytest.param(
            n,
            p,
            marks=(),
            id=f"{n}-{p}",
        )
        for n in SUM_LENGTHS
        for p in SUM_PATTERNS
    ],
)
def test_float64_sum_is_close_to_the_exact_sum(n: int, pattern: str) -> None:
    x = sum_pattern(pattern, n, "float64")
    graph = op_graph("ReduceSum", [1, n], "float64", [-1])
    (actual,) = CompiledGraph(graph).run_arrays([x])
    exact = math.fsum(x.ravel().tolist())
    assert actual.dtype == np.float64
    assert abs(actual[0] - exact) <= 1e-12 * abs(exact), (actual[0], exact)


@pytest.mark.parametrize("shape", [[4, 1000], [3, 9], [2, 3, 17]])
@pytest.mark.parametrize("dtype", [pytest.param(d, marks=quick_if(d in QUICK_INTS)) for d in INTS])
def test_integer_sums_wrap_like_eval_graph(dtype: str, shape: list[int]) -> None:
    # Values over the whole range of the type, so every row sum overflows and wraps.
    graph = op_graph("ReduceSum", shape, dtype, [-1])
    feed = random_feed(shape, dtype, "sum")
    (actual,), (expected,) = run_both(graph, [feed])
    (task,) = node_tasks(CompiledGraph(graph), [shape], "ReduceSum")
    assert task.function is row_kernel("ReduceSum", dtype)
    np.testing.assert_array_equal(actual, expected)


def test_int64_sum_of_large_values_is_exact() -> None:
    x = np.array([[2**62, 2**62 - 1, -(2**62), 5, -7, 2**40, 3, 1, 1]], np.int64)
    graph = op_graph("ReduceSum", [1, 9], "int64", [-1])
    (actual,), (expected,) = run_both(graph, [x])
    assert int(actual[0]) == int(expected[0]) == 2**62 - 1 - 2 + 2**40 + 5


# --- mean, prod, max, min --------------------------------------------------------------------
def _other_cases() -> list[Any]:
    params = []
    for op in ("ReduceMean", "ReduceProd", "ReduceMax", "ReduceMin"):
        for dtype in (*FLOATS, *INTS):
            quick = dtype == "float32" or (dtype == "int32" and op in ("ReduceMax", "ReduceMin"))
            marks = quick_if(quick)
            params.append(pytest.param(op, dtype, marks=marks, id=f"{op}-{dtype}"))
    return params


@pytest.mark.parametrize(("shape", "axes"), [([4, 19], [-1]), ([2, 3, 40], [-2, -1])])
@pytest.mark.parametrize(("op", "dtype"), _other_cases())
def test_reductions_match_eval_graph(
    op: str, dtype: str, shape: list[int], axes: list[int]
) -> None:
    # Prod of floats over values near 1 stays in range; ints span their range (prod wraps).
    lo, hi = (0.8, 1.25) if op == "ReduceProd" else (-3.0, 3.0)
    feed = random_feed(shape, dtype, op, lo=lo, hi=hi)
    graph = op_graph(op, shape, dtype, axes)
    (actual,), (expected,) = run_both(graph, [feed])
    if op in ("ReduceMax", "ReduceMin"):
        np.testing.assert_array_equal(actual, expected)  # picks an element: exact
    elif op == "ReduceMean" and dtype in ("int64", "uint64"):
        # float64 sums of 64-bit values round; numpy adds pairwise, the kernel in order
        np.testing.assert_allclose(actual.astype(float), expected.astype(float), rtol=1e-12)
    else:
        assert_close(actual, expected, dtype)


def test_int64_mean_does_not_wrap() -> None:
    x = np.full((2, 4), 2**62, np.int64)
    x[1] = [1, 2, 3, 4]
    graph = op_graph("ReduceMean", [2, 4], "int64", [-1])
    (actual,), (expected,) = run_both(graph, [x])
    assert expected.tolist() == [2**62, 2]
    np.testing.assert_array_equal(actual, expected)  # it wrapped to [0, 2] once


# --- NaN and inf -----------------------------------------------------------------------------
def special_rows(dtype: str) -> np.ndarray:
    """[6, 17]: 17 columns = two passes of the eight accumulators and a one-element tail."""
    x = random_feed([6, 17], dtype, "special", lo=0.5, hi=1.5).astype(np.float64)
    x[1, 0] = np.nan  # first element (every accumulator starts from it for max/min)
    x[2, 16] = np.nan  # the tail loop
    x[3, 9] = np.nan  # an accumulator lane past the first pass
    x[3, 3] = np.inf
    x[4, 2], x[4, 11] = np.inf, -np.inf  # inf - inf in sums
    x[5, :] = -np.inf
    return x.astype(NP[dtype])


NAN_ROWS = [1, 2, 3]


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=quick_if(d == "float32")) for d in FLOATS])
@pytest.mark.parametrize("op", list(REDUCE_KIND))
def test_reductions_propagate_nan_per_row(op: str, dtype: str) -> None:
    x = special_rows(dtype)
    graph = op_graph(op, [6, 17], dtype, [-1])
    (actual,), (expected,) = run_both(graph, [x])
    values = actual.astype(np.float64)
    assert np.isnan(values[NAN_ROWS]).all(), values
    assert np.isfinite(values[0])  # a clean row is left alone
    if op in ("ReduceMax", "ReduceMin"):
        assert values[4] == (np.inf if op == "ReduceMax" else -np.inf)
        np.testing.assert_array_equal(values, expected.astype(np.float64))
    else:
        if op == "ReduceProd":
            assert values[4] == -np.inf  # inf * -inf
        else:
            assert np.isnan(values[4])  # inf + -inf
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(
            values, expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
        )


def softmax_special_rows(dtype: str) -> np.ndarray:
    x = random_feed([8, 9], dtype, "softmax-special").astype(np.float64)
    x[1, 4] = np.nan
    x[2, 8] = np.inf  # in the tail
    x[3, [0, 5]] = -np.inf
    x[4, :] = -np.inf
    x[5, 1], x[5, 2] = np.inf, -np.inf
    x[6, 8] = np.nan  # in the tail
    x[7, 0] = np.inf  # the first element, where max starts
    return x.astype(NP[dtype])


ALL_NAN_ROWS = [1, 2, 4, 5, 6, 7]  # NaN in, +inf in (inf - inf), all -inf (-inf - -inf)


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=quick_if(d == "float32")) for d in FLOATS])
@pytest.mark.parametrize("op", SOFTMAX)
def test_softmax_special_values(op: str, dtype: str) -> None:
    x = softmax_special_rows(dtype)
    graph = op_graph(op, [8, 9], dtype, [-1])
    (actual,), (expected,) = run_both(graph, [x])
    values = actual.astype(np.float64)
    assert np.isnan(values[ALL_NAN_ROWS]).all(), values
    assert not np.isnan(values[[0, 3]]).any()
    assert np.isnan(expected.astype(np.float64)[ALL_NAN_ROWS]).all()  # as numpy does
    log = op == "LogSoftmaxV2"
    assert (values[3, [0, 5]] == (-np.inf if log else 0.0)).all()  # -inf entries
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(
        values, expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
    )
    for r in (0, 3):  # the other rows: as without the special rows
        ref = softmax64(x[r : r + 1], (1,), log)
        np.testing.assert_allclose(values[r : r + 1], ref, rtol=rtol, atol=atol)


# --- softmax and log-softmax -----------------------------------------------------------------
SOFTMAX_SHAPES = [[1, 1], [3, 1], [4, 17], [2, 3, 40]]


def _softmax_cases() -> list[Any]:
    params = []
    for op in SOFTMAX:
        for dtype in FLOATS:
            for shape in SOFTMAX_SHAPES:
                for axes in ([-1], [-2, -1]):
                    quick = dtype == "float32"
                    params.append(
                        pytest.param(
                            op,
                            dtype,
                            shape,
                            axes,
                            marks=quick_if(quick),
                            id=f"{op}-{dtype}-{shape}-{axes}",
                        )
                    )
    return params


@pytest.mark.parametrize(("op", "dtype", "shape", "axes"), _softmax_cases())
def test_softmax_matches_numpy(op: str, dtype: str, shape: list[int], axes: list[int]) -> None:
    x = random_feed(shape, dtype, op, axes)
    graph = op_graph(op, shape, dtype, axes)
    compiled = CompiledGraph(graph)
    (task,) = node_tasks(compiled, [shape], op)
    assert task.function is row_kernel(op, dtype)
    (actual,) = compiled.run_arrays([x])
    assert actual.dtype == NP[dtype] and actual.shape == tuple(shape)
    log = op == "LogSoftmaxV2"
    red = tuple(a % len(shape) for a in axes)
    rtol, atol = TOL[dtype]
    values = actual.astype(np.float64)
    np.testing.assert_allclose(values, softmax64(x, red, log), rtol=rtol, atol=atol)
    probs = np.exp(values) if log else values
    np.testing.assert_allclose(probs.sum(axis=red), 1.0, rtol=0, atol=ROW_SUM_TOL[dtype])


@pytest.mark.slow  # compiling the float16 kernel alone takes ~5 s with a cold kernel cache
def test_half_to_float_gives_float32() -> None:
    x = random_feed([4, 17], "float16", "h2f")
    graph = graph_of(
        lambda t: ge.es.SoftmaxV2(t, axes=[-1], half_to_float=True), [4, 17], "float16"
    )
    compiled = CompiledGraph(graph)
    (task,) = node_tasks(compiled, [[4, 17]], "SoftmaxV2")
    assert task.function is row_kernel("SoftmaxV2", "float16", "float32")
    (actual,), (expected,) = run_both(graph, [x])
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, softmax64(x, (1,), False), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", pytest.param("bfloat16", marks=pytest.mark.slow)])
def test_half_to_float_leaves_other_types(dtype: str) -> None:
    graph = graph_of(lambda t: ge.es.SoftmaxV2(t, axes=[-1], half_to_float=True), [3, 5], dtype)
    (actual,), (expected,) = run_both(graph, [random_feed([3, 5], dtype, "h2f")])
    assert actual.dtype == NP[dtype]
    assert_close(actual, expected, dtype)


def test_log_softmax_of_shifted_inputs_keeps_float32_accuracy() -> None:
    # (x - max) - log(sum), not x - (max + log(sum)): that shift rounds at the magnitude of max
    # (an error of 2e-4 at x ~ 1e4).
    x = random_feed([4, 17], "float32", "shift") + np.float32(1e4)
    graph = op_graph("LogSoftmaxV2", [4, 17], "float32", [-1])
    (actual,), (expected,) = run_both(graph, [x])
    ref = softmax64(x, (1,), log=True)
    np.testing.assert_allclose(expected, ref, rtol=1e-5, atol=1e-6)  # eval_graph holds
    np.testing.assert_allclose(actual, ref, rtol=1e-5, atol=1e-6)


def test_softmax_of_an_intermediate_in_the_arena() -> None:
    # Inputs, outputs and the per-block scratch rows all live in the arena: none may overlap
    # while the softmax runs.
    def fn(x: Any) -> Any:
        a = ge.es.LogSoftmaxV2(x * 2.0 + 1.0, axes=[-1])
        return ge.es.SoftmaxV2(a * 0.5, axes=[-1]) + 1.0

    for shape in ([4, 17], [64, 1024]):
        graph = graph_of(fn, shape, "float32")
        (actual,), (expected,) = run_both(graph, [random_feed(shape, "float32", "arena")])
        assert_close(actual, expected, "float32")


# --- empty shapes ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "keep"),
    [(op, keep) for op in OPS for keep in (False, True) if op in REDUCE_KIND or not keep],
)
def test_zero_rows(op: str, keep: bool) -> None:
    graph = op_graph(op, [0, 5], "float32", [-1], keep)
    (actual,), _ = run_both(graph, [np.zeros((0, 5), np.float32)])  # checks dtype and shape
    assert actual.size == 0


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")  # numpy, in eval_graph
@pytest.mark.parametrize(("shape", "axes"), [([5, 0], [-1]), ([2, 0, 3], [-2, -1])])
@pytest.mark.parametrize("op", OPS)
def test_zero_columns(op: str, shape: list[int], axes: list[int]) -> None:
    # Declared with unknown dims, so the graph builds; the shape arrives with the feed.
    graph = op_graph(op, [-1] * len(shape), "float32", axes)
    x = np.zeros(shape, np.float32)
    if op in ("ReduceMax", "ReduceMin"):  # no identity: an error in both
        with pytest.raises(GeValueError):
            eval_graph(graph, [x])
        with pytest.raises(GeValueError):
            CompiledGraph(graph).run_arrays([x])
        return
    (actual,), (expected,) = run_both(graph, [x])  # sum 0, prod 1, mean NaN, softmax empty
    np.testing.assert_array_equal(actual, expected)


# --- blocks sharing the rows -----------------------------------------------------------------
@pytest.mark.parametrize("cpus", [2, 3, 7])
@pytest.mark.parametrize("shape", [[3, 40000], [40001, 3]])
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "SoftmaxV2", "LogSoftmaxV2"])
def test_rows_split_over_blocks(
    op: str, shape: list[int], cpus: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The row kernels size their launch from os.cpu_count(): pretend, for this module only, so
    # that rows do not divide evenly over the blocks whatever machine runs the test.
    monkeypatch.setattr(rows, "os", SimpleNamespace(cpu_count=lambda: cpus))
    graph = op_graph(op, shape, "float32", [-1])
    compiled = CompiledGraph(graph)
    (task,) = node_tasks(compiled, [shape], op)
    assert task.function is row_kernel(op, "float32")
    assert task.block_dim == min(cpus, shape[0]) > 1
    x = random_feed(shape, "float32", "split")
    (actual,) = compiled.run_arrays([x])
    assert_close(actual, reference64(op, x, [-1]), "float32")
    if op != "ReduceSum":  # (eval_graph sums 40000 values in float32: less accurate)
        assert_close(actual, np.asarray(eval_graph(graph, [x])[0]), "float32")


def test_concurrent_runs_use_their_own_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows, "os", SimpleNamespace(cpu_count=lambda: 4))
    shape = [64, 1024]

    def fn(x: Any) -> Any:
        return [
            ge.es.SoftmaxV2(x, axes=[-1]),
            ge.es.LogSoftmaxV2(x * 3.0, axes=[-1]),
            ge.es.ReduceSum(x, [-1]),
        ]

    graph = graph_of(fn, shape, "float32")
    compiled = CompiledGraph(graph)
    (task,) = node_tasks(compiled, [shape], "SoftmaxV2")
    assert task.block_dim == 4
    feeds = [random_feed(shape, "float32", "thread", t) for t in range(4)]
    expected = [compiled.run_arrays([f]) for f in feeds]  # one at a time: the kernels are
    for f, (soft, log, total) in zip(feeds, expected, strict=True):  # deterministic
        assert_close(soft, reference64("SoftmaxV2", f, [-1]), "float32")
        assert_close(log, reference64("LogSoftmaxV2", f * np.float32(3.0), [-1]), "float32")
        assert_close(total, reference64("ReduceSum", f, [-1]), "float32")
    barrier = threading.Barrier(4)
    failures: list[str] = []

    def worker(t: int) -> None:
        try:
            barrier.wait()
            for _ in range(20):
                for a, e in zip(compiled.run_arrays([feeds[t]]), expected[t], strict=True):
                    np.testing.assert_array_equal(a, e)
        except Exception as e:  # reported below, with the thread
            failures.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
