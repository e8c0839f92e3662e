"""The Cumsum/Cumprod/Sort/TopKV2 kernels (``ge.compiler.kernels.sorting``) against numpy.

Each case builds one node, checks that the plan runs it as a kernel (no reference fallback),
and compares with numpy computed here (stable argsort, NaN last ascending / first
descending; scans in numpy's own order of operations). Default tier: a few dtypes that
share kernels with the rest; every dtype runs with ``-m slow``.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from ge.compiler.executable import CompiledGraph
from ge.graph import Graph
from ge.ops import add_op_node
from ge.runtime.plan import KernelTask

from ..ops._cases import BF16, NP, const_node, data_node

QUICK = ("float32", "int32", "float16")
ALL_SORT = (*QUICK, "float64", "bfloat16", "int8", "int16", "int64", "uint8", "uint16", "bool")
ALL_SCAN = tuple(d for d in ALL_SORT if d != "bool")


def _params(dtypes: tuple[str, ...]) -> list[Any]:
    return [pytest.param(d, marks=() if d in QUICK else (pytest.mark.slow,), id=d) for d in dtypes]


def _feed(shape: tuple[int, ...], dtype: str, *key: Any) -> np.ndarray:
    """Values with many ties (small ints), and for floats NaN, +-inf and -0.0 mixed in."""
    rng = np.random.default_rng(zlib.crc32(repr((shape, dtype, key)).encode()))
    dt = NP[dtype]
    if dt == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    lo = 0 if dt.kind == "u" else -4
    x = np.array(rng.integers(lo, 5, size=shape), np.float64)
    if dt.kind == "f" or dt == BF16:
        x = np.asarray(x / 2)
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
        pick = rng.random(shape) < 0.15
        x[pick] = rng.choice(specials, size=int(pick.sum()))
    return x.astype(dt)


def _run(
    op: str, x: np.ndarray, attrs: dict[str, Any], value: int | None = None
) -> list[np.ndarray]:
    """``op`` on ``x`` (and a Const second input ``value``), compiled; checks no host task."""
    graph = Graph("g")
    data = data_node(graph, 0, list(x.shape), _name(x.dtype))
    inputs: list[Any] = [(data, 0)]
    if value is not None:
        inputs.append((const_node(graph, np.asarray(value, np.int32)), 0))
    node = add_op_node(graph, op, inputs, attrs, name="op")
    graph.set_outputs([(node, i) for i in range(node.get_outputs_size())])
    compiled = CompiledGraph(graph)
    plan = compiled.plan_for([list(x.shape)])
    assert plan is not None
    tasks = [t for t in plan.tasks if t.name == "op"]
    assert tasks and all(isinstance(t, KernelTask) for t in tasks)  # no reference fallback
    return compiled.run_arrays([x])


def _name(dtype: np.dtype[Any]) -> str:
    return next(n for n, d in NP.items() if d == dtype)


def _keys(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) if x.dtype.kind == "f" or x.dtype == BF16 else x


def _order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """numpy's stable order; descending: by the negated group of equal keys (NaNs one group,
    the last), which keeps ties in input order and puts NaN first."""
    keys = _keys(x)
    ascending = np.argsort(keys, axis=axis, kind="stable")
    if not descending:
        return ascending
    group = np.empty(ascending.shape, np.int64)
    ranked = np.take_along_axis(keys, ascending, axis)
    np.put_along_axis(group, ascending, _group_ids(ranked, axis), axis)
    return np.argsort(-group, axis=axis, kind="stable")


def _group_ids(sorted_keys: np.ndarray, axis: int) -> np.ndarray:
    """Along ``axis`` of sorted keys: the index of each element's group of equal keys (NaNs
    one group)."""
    moved = np.moveaxis(sorted_keys, axis, -1)
    same = moved[..., 1:] == moved[..., :-1]
    if moved.dtype.kind == "f":
        same |= np.isnan(moved[..., 1:]) & np.isnan(moved[..., :-1])
    starts = np.concatenate(
        [np.ones((*moved.shape[:-1], min(moved.shape[-1], 1)), bool), ~same], -1
    )
    return np.moveaxis(np.cumsum(starts, axis=-1) - 1, -1, axis)


def _assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if actual.dtype.kind == "f" or actual.dtype == BF16:
        np.testing.assert_array_equal(actual.astype(np.float64), expected.astype(np.float64))
        # -0.0 and 0.0 are equal keys: the value written is the element's own bits
        np.testing.assert_array_equal(
            np.signbit(actual.astype(np.float64)), np.signbit(expected.astype(np.float64))
        )
    else:
        np.testing.assert_array_equal(actual, expected)


# --- Sort / TopKV2 -------------------------------------------------------------------------------
SORT_SHAPES = [
    ((37,), -1),
    ((3, 50, 4), 1),
    ((5, 33), 0),
    ((2, 1, 3), 1),
    ((0, 4), 1),
    ((4, 0), 1),
    ((), -1),
]


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("dtype", _params(ALL_SORT))
def test_sort_matches_stable_numpy(dtype: str, descending: bool) -> None:
    for shape, axis in SORT_SHAPES:
        x = _feed(shape, dtype, axis)
        values, indices = _run("Sort", x, {"axis": axis, "descending": descending})
        line = x.reshape(x.shape or (1,))
        order = _order(line, axis, descending)
        _assert_same(values, np.take_along_axis(line, order, axis).reshape(x.shape))
        _assert_same(indices, order.astype(np.int32).reshape(x.shape))


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("dtype", _params(ALL_SORT))
def test_topk_is_the_head_of_the_stable_sort(dtype: str, largest: bool) -> None:
    for shape, dim, k in [((40,), 0, 5), ((3, 50, 4), 1, 50), ((6, 7), 0, 0), ((2, 9), -1, 1)]:
        x = _feed(shape, dtype, dim, k)
        values, indices = _run("TopKV2", x, {"dim": dim, "largest": largest}, k)
        order = np.take(_order(x, dim, largest), range(k), axis=dim)
        _assert_same(values, np.take_along_axis(x, order, dim))
        _assert_same(indices, order.astype(np.int32))


@pytest.mark.parametrize("dtype", _params(("float32", "int32", "float64", "uint8", "bool")))
def test_topk_small_k_of_long_rows_selects(dtype: str) -> None:
    """k <= 64 with n >= 16 k takes the streaming selection: ties, NaN, both directions,
    sorted and reverse-sorted rows (the selection's worst case), k = 64 at the boundary."""
    x = _feed((3, 1024), dtype, "select")
    rising = np.sort(x, axis=1)
    for data in (x, rising, rising[:, ::-1].copy()):
        for k in (1, 5, 64):
            for largest in (True, False):
                values, indices = _run("TopKV2", data, {"largest": largest}, k)
                order = _order(data, 1, largest)[:, :k]
                _assert_same(indices, order.astype(np.int32))
                _assert_same(values, np.take_along_axis(data, order, 1))
    values, indices = _run("TopKV2", x, {"dim": 0}, 1)  # n = 3 < 16: the sort path
    _assert_same(indices, _order(x, 0, True)[:1].astype(np.int32))


def test_sort_many_rows_in_parallel_blocks() -> None:
    x = _feed((300, 257), "float32", "big")  # 77k elements: several blocks
    for axis in (0, 1):
        values, indices = _run("Sort", x, {"axis": axis})
        order = _order(x, axis, False)
        _assert_same(indices, order.astype(np.int32))
        _assert_same(values, np.take_along_axis(x, order, axis))


def test_sort_long_row_merges_across_many_runs() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=5000).astype(np.float64)
    x[::7] = x[3]  # ties across runs
    values, indices = _run("Sort", x, {"descending": True})
    order = _order(x, 0, True)
    _assert_same(indices, order.astype(np.int32))
    _assert_same(values, x[order])


# rows from 32 (8/16-bit keys), 64 (32-bit) or 128 (64-bit) elements are radix sorted
RADIX_SHAPES = [((3, 300), 1), ((300, 2), 0), ((2, 63), 1), ((2, 64), 1), ((2, 127), -1)]
RADIX_SHAPES += [((2, 128), -1)]


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("dtype", _params(ALL_SORT))
def test_long_rows_radix_sort_matches_stable_numpy(dtype: str, descending: bool) -> None:
    """Long rows take the radix sort (rows around each key size's threshold): ties, NaN,
    +-inf and -0.0 (the feed's small values leave most digits constant, so skipped passes
    are covered), a strided axis."""
    for shape, axis in RADIX_SHAPES:
        x = _feed(shape, dtype, "radix", axis)
        values, indices = _run("Sort", x, {"axis": axis, "descending": descending})
        order = _order(x, axis, descending)
        _assert_same(indices, order.astype(np.int32))
        _assert_same(values, np.take_along_axis(x, order, axis))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "uint8"])
def test_radix_sort_uses_every_digit_of_full_range_integers(dtype: str) -> None:
    """Random full-range integers with the extremes mixed in: every radix pass does work."""
    info = np.iinfo(NP[dtype])
    rng = np.random.default_rng(11)
    x = rng.integers(info.min, info.max, size=(2, 1000), dtype=NP[dtype], endpoint=True)
    x[:, :4] = [info.min, info.max, 0, info.min]
    for descending in (False, True):
        values, indices = _run("Sort", x, {"axis": 1, "descending": descending})
        order = _order(x, 1, descending)
        _assert_same(indices, order.astype(np.int32))
        _assert_same(values, np.take_along_axis(x, order, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_radix_sort_float_keys(dtype: str) -> None:
    """NaNs of any sign and payload are one key above +inf (last ascending, first
    descending, in input order), -0.0 and 0.0 are one key (input order kept), and every
    value is written with its own bits."""
    bits = np.dtype(f"u{NP[dtype].itemsize}")
    sign = 1 << (8 * bits.itemsize - 1)
    quiet = int(np.array(np.nan, NP[dtype]).view(bits))
    signaling = int(np.array(np.inf, NP[dtype]).view(bits)) | 1
    nans = np.array([quiet | 1, sign | quiet, signaling, sign | signaling | 6], bits)
    rng = np.random.default_rng(5)
    x = rng.normal(size=600).astype(NP[dtype])
    x[rng.choice(600, 40, replace=False)] = rng.choice(nans, 40).view(NP[dtype])
    x[rng.choice(600, 30, replace=False)] = rng.choice([0.0, -0.0, np.inf, -np.inf], 30)
    x[100:120] = x[7]  # a run of ties
    for descending in (False, True):
        values, indices = _run("Sort", x, {"descending": descending})
        with np.errstate(invalid="ignore"):  # the signaling NaNs, widened
            order = _order(x, 0, descending)
        np.testing.assert_array_equal(indices, order.astype(np.int32))
        np.testing.assert_array_equal(values.view(bits), x.view(bits)[order])


def test_topk_large_k_of_long_rows_radix_sorts() -> None:
    x = _feed((3, 400), "float32", "radix-topk")
    for largest in (True, False):
        values, indices = _run("TopKV2", x, {"largest": largest}, 100)
        order = _order(x, 1, largest)[:, :100]
        _assert_same(indices, order.astype(np.int32))
        _assert_same(values, np.take_along_axis(x, order, 1))


# --- Cumsum / Cumprod ---------------------------------------------------------------------------
def _scan(fn: Any, x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """numpy's scan in x's type (float32 for half types, rounded at the end)."""
    work = x.astype(np.float32) if x.dtype.itemsize < 4 and x.dtype.kind not in "iu" else x
    line = work.reshape(work.shape or (1,))
    if reverse:
        line = np.flip(line, axis)
    with np.errstate(all="ignore"):
        y = fn(line, axis=axis, dtype=work.dtype)
    if exclusive and y.shape[axis]:
        identity = np.ones_like if fn is np.cumprod else np.zeros_like
        head = identity(np.take(y, [0], axis=axis))
        y = np.concatenate([head, np.take(y, range(y.shape[axis] - 1), axis=axis)], axis)
    if reverse:
        y = np.flip(y, axis)
    return y.astype(x.dtype).reshape(x.shape)


SCAN_SHAPES = [((13,), 0), ((3, 9, 4), 1), ((4, 5), -2), ((2, 0, 3), 1), ((), 0)]


@pytest.mark.parametrize("op", ["Cumsum", "Cumprod"])
@pytest.mark.parametrize("dtype", _params(ALL_SCAN))
def test_scan_matches_numpy(dtype: str, op: str) -> None:
    fn = np.cumsum if op == "Cumsum" else np.cumprod
    for shape, axis in SCAN_SHAPES:
        for exclusive, reverse in [(False, False), (True, False), (False, True), (True, True)]:
            x = _feed(shape, dtype, op, axis)
            if op == "Cumprod" and (x.dtype.kind == "f" or x.dtype == BF16):
                x = np.where(np.isfinite(x.astype(np.float64)), x, 1).astype(x.dtype)
            (y,) = _run(op, x, {"exclusive": exclusive, "reverse": reverse}, axis)
            expected = _scan(fn, x, axis % max(x.ndim, 1), exclusive, reverse)
            np.testing.assert_array_equal(y.astype(np.float64), expected.astype(np.float64))
            assert y.dtype == x.dtype


def test_integer_scans_wrap_in_their_type() -> None:
    x = np.full(40, 100, np.int8)
    (y,) = _run("Cumsum", x, {}, 0)
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int8))
    big = np.full(70, 3, np.int64)
    (p,) = _run("Cumprod", big, {}, 0)
    np.testing.assert_array_equal(p, np.cumprod(big))


def test_float32_cumsum_is_numpy_bit_for_bit() -> None:
    x = np.random.default_rng(3).normal(size=(64, 300)).astype(np.float32)
    (y,) = _run("Cumsum", x, {}, 1)
    np.testing.assert_array_equal(y, np.cumsum(x, axis=1))


def test_topk_with_k_fed_at_run_time_runs_the_kernel() -> None:
    """k decides the output shape: each value gets a plan of its own, still one kernel."""
    graph = Graph("g")
    x, k = data_node(graph, 0, [2, 5], "float32"), data_node(graph, 1, [], "int32")
    node = add_op_node(graph, "TopKV2", [(x, 0), (k, 0)], {}, name="op")
    graph.set_outputs([(node, 0), (node, 1)])
    compiled = CompiledGraph(graph)
    xs = _feed((2, 5), "float32", "k")
    for kv in (2, 5, 0):
        feeds = [xs, np.asarray(kv, np.int32)]
        plan = compiled.plan_for([[2, 5], []], feeds)
        assert plan is not None
        assert all(isinstance(t, KernelTask) for t in plan.tasks if t.name == "op")
        values, indices = compiled.run_arrays(feeds)
        order = _order(xs, 1, True)[:, :kv]
        _assert_same(indices, order.astype(np.int32))
        _assert_same(values, np.take_along_axis(xs, order, 1))
