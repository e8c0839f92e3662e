"""numpy's scans, sorts, partitions, median and quantiles under ``ge.jit``
(``ge.es._numpy_sorting``) against numpy: values, dtype and shape, for 0-d, 0-size,
negative-axis, ``axis=None``, non-contiguous inputs and NaN/ties. Default tier: float32 (and a
few int32 cases); every other dtype runs with ``-m slow``.

Sorts are stable in ge, so ``argsort`` is compared with numpy's ``kind='stable'``; partitions
are checked against numpy's contract (not numpy's exact arrangement).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeTypeError, GeValueError

ALL = ("float32", "int32", "float64", "float16", "int8", "int64", "uint8", "bool")
NO_BOOL = tuple(d for d in ALL if d != "bool")


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    shape: tuple[int, ...] = (4, 6)
    dtypes: tuple[str, ...] = ALL
    layout: str = "C"  # "T": a transposed view, "S": every other column
    quick: bool = True  # False: every dtype under -m slow (cases that compile many kernels)


def _stable_argsort(axis: Any = -1) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.argsort(x, axis=axis, kind="stable")


CASES: tuple[Case, ...] = (
    Case("cumsum_flat", np.cumsum),
    Case("cumsum_axis", lambda x: np.cumsum(x, axis=1)),
    Case("cumsum_neg_axis", lambda x: np.cumsum(x, axis=-2), (3, 4, 2)),
    Case("cumsum_dtype", lambda x: np.cumsum(x, axis=0, dtype=np.float64)),
    Case("cumsum_dtype_int8", lambda x: np.cumsum(x, axis=1, dtype=np.int8), dtypes=("int32",)),
    Case("cumsum_bool_dtype", lambda x: np.cumsum(x, axis=1, dtype=bool), dtypes=("int32",)),
    Case("cumsum_scalar", np.cumsum, ()),
    Case("cumsum_scalar_axis", lambda x: np.cumsum(x, axis=0), ()),
    Case("cumsum_empty", lambda x: np.cumsum(x, axis=0), (0, 3)),
    Case("cumsum_transposed", lambda x: np.cumsum(x, axis=1), layout="T"),
    Case("cumprod_flat", np.cumprod, (2, 5)),
    Case("cumprod_axis", lambda x: np.cumprod(x, axis=0), (5, 3)),
    Case("cumprod_strided", lambda x: np.cumprod(x, axis=-1), (3, 4), layout="S"),
    Case("cumulative_sum", lambda x: np.cumulative_sum(x, axis=1, include_initial=True)),
    Case("cumulative_sum_1d", np.cumulative_sum, (7,)),
    Case("cumulative_prod", lambda x: np.cumulative_prod(x, axis=0, include_initial=True), (3, 2)),
    Case("cumulative_prod_empty", lambda x: np.cumulative_prod(x, include_initial=True), (0,)),
    Case("nancumsum", lambda x: np.nancumsum(x, axis=1)),
    Case("nancumprod_flat", np.nancumprod, (2, 3)),
    Case("sort_last", np.sort),
    Case("sort_axis0", lambda x: np.sort(x, axis=0), (5, 3, 2)),
    Case("sort_flat", lambda x: np.sort(x, axis=None)),
    Case("sort_kind", lambda x: np.sort(x, kind="mergesort")),
    Case("sort_empty", lambda x: np.sort(x, axis=0), (0, 4)),
    Case("sort_1d", np.sort, (17,)),
    Case("sort_strided", np.sort, (3, 5), layout="S"),
    Case("sort_transposed", lambda x: np.sort(x, axis=0), layout="T"),
    Case("argsort_last", lambda x: np.argsort(x, kind="stable")),
    Case("argsort_axis0", lambda x: np.argsort(x, axis=0, kind="stable"), (5, 3)),
    Case("argsort_flat", lambda x: np.argsort(x, axis=None, kind="stable")),
    Case("argsort_scalar", lambda x: np.argsort(x, kind="stable"), ()),
    Case("argsort_empty", lambda x: np.argsort(x, kind="stable"), (3, 0)),
    Case("median_all", np.median, dtypes=NO_BOOL),
    Case("median_axis", lambda x: np.median(x, axis=1), (4, 5), dtypes=NO_BOOL),
    Case("median_even", lambda x: np.median(x, axis=-1), (3, 6), dtypes=NO_BOOL),
    Case(
        "median_axes", lambda x: np.median(x, axis=(0, 2)), (2, 3, 3), dtypes=NO_BOOL, quick=False
    ),
    Case("median_keepdims", lambda x: np.median(x, axis=0, keepdims=True), dtypes=NO_BOOL),
    Case("median_scalar", np.median, (), dtypes=NO_BOOL, quick=False),
    Case("median_bool", np.median, (3, 4), dtypes=("bool",), quick=False),
    Case("median_transposed", lambda x: np.median(x, axis=0), layout="T", dtypes=NO_BOOL),
    Case("quantile", lambda x: np.quantile(x, 0.3), dtypes=NO_BOOL),
    Case("quantile_list", lambda x: np.quantile(x, [0.1, 0.5, 0.9], axis=1), dtypes=NO_BOOL),
    Case(
        "quantile_array_q",
        lambda x: np.quantile(x, np.array([0.25, 0.8]), axis=0, keepdims=True),
        dtypes=NO_BOOL,
        quick=False,
    ),
    Case("quantile_f32_q", lambda x: np.quantile(x, np.float32(0.3), axis=1), dtypes=NO_BOOL),
    Case("quantile_int_q", lambda x: np.quantile(x, 1, axis=0), dtypes=NO_BOOL),
    Case("quantile_ends", lambda x: np.quantile(x, [0.0, 1.0]), dtypes=NO_BOOL, quick=False),
    Case("percentile", lambda x: np.percentile(x, 40, axis=-1), dtypes=NO_BOOL),
    Case("quantile_lower", lambda x: np.quantile(x, [0.2, 0.7], axis=1, method="lower")),
    Case("quantile_higher", lambda x: np.quantile(x, 0.45, axis=0, method="higher"), (5, 3)),
    Case("quantile_nearest", lambda x: np.quantile(x, [0.1, 0.5, 0.9], method="nearest")),
    Case(
        "percentile_midpoint",
        lambda x: np.percentile(x, [0, 30, 100], axis=-1, method="midpoint"),
        dtypes=NO_BOOL,
    ),
    Case(
        "percentile_2d_q",
        lambda x: np.percentile(x, [[10, 50], [75, 100]]),
        dtypes=NO_BOOL,
        quick=False,
    ),
)


def _draw(name: str, shape: tuple[int, ...], dtype: str, layout: str = "C") -> np.ndarray:
    """Small values (many ties); floats get NaN, inf and -0.0 in some places."""
    rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype}".encode()))
    full = (
        shape[::-1] if layout == "T" else (*shape[:-1], 2 * shape[-1]) if layout == "S" else shape
    )
    if dtype == "bool":
        x = np.asarray(rng.random(full) < 0.5)
    else:
        lo = 0 if dtype.startswith("u") else -3
        x = np.asarray(rng.integers(lo, 4, size=full)).astype(dtype)
        if x.dtype.kind == "f" and x.size > 3:
            flat = x.reshape(-1)
            flat[[1, 2]] = [-0.0, np.inf]
    x = x.T if layout == "T" else x[..., ::2] if layout == "S" else x
    assert x.shape == shape
    return x


def _check(actual: Any, expected: Any, dtype: str) -> None:
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != numpy's {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != numpy's {e.dtype}"
    if a.dtype.kind == "f":
        tol = {"float16": 2e-3, "float32": 1e-6}.get(str(a.dtype), 1e-12)
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize(
    ("case", "dtype"),
    [
        pytest.param(
            c, d, id=f"{c.name}-{d}", marks=() if c.quick and d == c.dtypes[0] else pytest.mark.slow
        )
        for c in CASES
        for d in c.dtypes
    ],
)
def test_matches_numpy(case: Case, dtype: str) -> None:
    x = _draw(case.name, case.shape, dtype, case.layout)
    with np.errstate(all="ignore"):
        expected = case.fn(x)
    _check(ge.jit(case.fn)(x), expected, dtype)


@pytest.mark.parametrize("dtype", ["float32", pytest.param("float64", marks=pytest.mark.slow)])
def test_nan_sorts_last_and_propagates(dtype: str) -> None:
    x = np.array([[3.0, np.nan, -1.0, 2.0], [0.0, -0.0, 5.0, 1.0]], dtype)
    for fn in (
        np.sort,
        lambda v: np.argsort(v, kind="stable"),
        lambda v: np.nancumsum(v, axis=1),
        lambda v: np.nancumprod(v, axis=0, dtype=np.float64),
        lambda v: np.median(v, axis=1),
        lambda v: np.quantile(v, [0.2, 0.7], axis=1),
        np.median,
    ):
        _check(ge.jit(fn)(x), fn(x), dtype)


def test_cumsum_float16_accumulates_in_float32() -> None:
    x = np.full(200, 0.1, np.float16)
    got = ge.jit(np.cumsum)(x)
    assert got.dtype == np.float16
    expected = np.cumsum(x.astype(np.float32)).astype(np.float16)  # the documented rounding
    np.testing.assert_array_equal(got, expected)


def _assert_partitioned(part: np.ndarray, x: np.ndarray, kth: list[int], axis: int) -> None:
    """numpy's contract: the kth element is where a sort puts it, none before it larger,
    none after it smaller; and the result holds the same elements."""
    ref = np.sort(x, axis=axis)
    moved, ref_moved = np.moveaxis(part, axis, -1), np.moveaxis(ref, axis, -1)
    np.testing.assert_array_equal(np.sort(moved, axis=-1), ref_moved)
    for k in kth:
        pivot = moved[..., k : k + 1]
        np.testing.assert_array_equal(moved[..., k], ref_moved[..., k])
        assert np.all(moved[..., :k] <= pivot) and np.all(moved[..., k + 1 :] >= pivot)


@pytest.mark.parametrize(
    ("kth", "axis"), [(2, -1), ([0, 3], -1), (-1, 0), (1, None)], ids=["k", "ks", "neg", "flat"]
)
def test_partition_contract(kth: Any, axis: Any) -> None:
    x = _draw("partition", (4, 6), "float32")
    x = np.nan_to_num(x, posinf=9.0)
    ks = [int(k) for k in np.atleast_1d(kth)]
    size = x.size if axis is None else x.shape[axis]
    ks = [k % size for k in ks]
    flat = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    part = ge.jit(lambda v: np.partition(v, kth, axis=axis))(x)
    assert part.dtype == x.dtype and part.shape == np.partition(x, kth, axis=axis).shape
    _assert_partitioned(part, flat, ks, ax)
    order = ge.jit(lambda v: np.argpartition(v, kth, axis=axis))(x)
    assert order.dtype == np.int64
    _assert_partitioned(np.take_along_axis(flat, order, ax), flat, ks, ax)


def test_argsort_is_a_permutation_of_int64() -> None:
    x = _draw("perm", (3, 50), "int32")
    order = ge.jit(lambda v: np.argsort(v, axis=1))(x)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.sort(order, axis=1), np.broadcast_to(np.arange(50), (3, 50)))
    np.testing.assert_array_equal(np.take_along_axis(x, order, 1), np.sort(x, axis=1))


BAD: tuple[tuple[str, Callable[..., Any], type[Exception], str], ...] = (
    ("sort_axis", lambda x: np.sort(x, axis=2), GeValueError, "axis 2"),
    ("sort_scalar", lambda x: np.sort(x[0, 0]), GeValueError, "axis -1"),
    ("sort_order", lambda x: np.sort(x, order="f"), GeValueError, "order"),
    ("sort_kind", lambda x: np.sort(x, kind="bogo"), GeValueError, "kind"),
    ("argsort_axis", lambda x: np.argsort(x, axis=-3), GeValueError, "axis -3"),
    ("cumsum_axis", lambda x: np.cumsum(x, axis=3), GeValueError, "axis 3"),
    ("cumsum_out", lambda x: np.cumsum(x, out=x), GeTypeError, "'out'"),
    ("cumulative_axis", np.cumulative_sum, GeValueError, "axis argument is required"),
    ("cumprod_dtype", lambda x: np.cumprod(x, dtype="no such type"), GeTypeError, "dtype"),
    ("partition_kth", lambda x: np.partition(x, 4), GeValueError, "kth(=4) out of bounds (4)"),
    ("partition_kth_type", lambda x: np.partition(x, 1.5), GeTypeError, "kth"),
    ("median_out", lambda x: np.median(x, out=x), GeTypeError, "'out'"),
    ("median_axis", lambda x: np.median(x, axis=(0, 0)), GeValueError, "repeated axis"),
    ("quantile_method", lambda x: np.quantile(x, 0.5, method="weibull"), GeValueError, "linear"),
    ("quantile_range", lambda x: np.quantile(x, 1.5), GeValueError, "range [0, 1]"),
    ("percentile_range", lambda x: np.percentile(x, -1), GeValueError, "range [0, 100]"),
    ("quantile_empty", lambda x: np.quantile(x[:0], 0.5), GeValueError, "empty"),
)


@pytest.mark.parametrize(("fn", "error", "text"), [pytest.param(*b[1:], id=b[0]) for b in BAD])
def test_bad_input(fn: Callable[..., Any], error: type[Exception], text: str) -> None:
    x = np.ones((3, 4), np.float32)
    with pytest.raises(error) as info:
        ge.jit(fn)(x)
    assert text in str(info.value), str(info.value)
