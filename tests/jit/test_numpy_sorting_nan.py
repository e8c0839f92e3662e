"""``np.nanmedian``, ``np.nanquantile`` and ``np.nanpercentile`` under ``ge.jit``
(``ge.es._numpy_sorting``) against numpy: values, dtype and shape over ``axis`` (None, int,
negative, tuple), ``keepdims``, ``q`` forms (Python float, list, float32, integer array),
``method`` (linear, lower, higher, nearest, midpoint),
0-d and 0-size inputs, rows holding some NaN and rows holding only NaN (numpy's NaN, with a
warning numpy gives and a compiled graph does not), and that each compiles to kernels only
(no reference interpreter in the plan). Default tier: float32; other dtypes with ``-m slow``.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeTypeError, GeValueError
from ge.runtime.plan import KernelTask

OTHER_DTYPES = ("float64", "float16", "int32", "bool")

CASES: tuple[tuple[str, Callable[..., Any], tuple[int, ...]], ...] = (
    ("nanmedian_all", np.nanmedian, (4, 6)),
    ("nanmedian_axis", lambda x: np.nanmedian(x, axis=1), (5, 6)),
    ("nanmedian_odd", lambda x: np.nanmedian(x, axis=-1), (6, 5)),
    ("nanmedian_axes_keepdims", lambda x: np.nanmedian(x, axis=(0, 2), keepdims=True), (3, 2, 4)),
    ("nanmedian_0d", np.nanmedian, ()),
    ("nanmedian_empty_axis0", lambda x: np.nanmedian(x, axis=0), (0, 3)),
    ("nanmedian_empty_rows", lambda x: np.nanmedian(x, axis=1, keepdims=True), (3, 0)),
    ("nanquantile", lambda x: np.nanquantile(x, 0.3, axis=1), (5, 6)),
    ("nanquantile_all", lambda x: np.nanquantile(x, 0.75), (4, 6)),
    ("nanquantile_list", lambda x: np.nanquantile(x, [0.0, 0.1, 0.5, 1.0], axis=0), (6, 4)),
    (
        "nanquantile_array_keepdims",
        lambda x: np.nanquantile(x, np.array([0.25, 0.8]), axis=-1, keepdims=True),
        (3, 2, 5),
    ),
    ("nanquantile_f32_q", lambda x: np.nanquantile(x, np.float32(0.3), axis=1), (5, 6)),
    ("nanquantile_int_q", lambda x: np.nanquantile(x, np.array([0, 1]), axis=1), (5, 6)),
    ("nanquantile_0d", lambda x: np.nanquantile(x, 0.4), ()),
    ("nanquantile_empty", lambda x: np.nanquantile(x, [0.3, 0.5], axis=0), (0, 3)),
    ("nanpercentile", lambda x: np.nanpercentile(x, 40, axis=-1), (5, 6)),
    ("nanpercentile_2d_q", lambda x: np.nanpercentile(x, [[10, 50], [75, 100]], axis=0), (6, 3)),
    ("nanpercentile_axes", lambda x: np.nanpercentile(x, 90, axis=(0, 1)), (3, 4, 2)),
    ("nanquantile_lower", lambda x: np.nanquantile(x, [0.2, 0.7], axis=1, method="lower"), (5, 6)),
    ("nanquantile_higher", lambda x: np.nanquantile(x, 0.45, axis=0, method="higher"), (6, 3)),
    ("nanquantile_nearest", lambda x: np.nanquantile(x, [0.1, 0.5], method="nearest"), (4, 5)),
    (
        "nanpercentile_midpoint",
        lambda x: np.nanpercentile(x, [0, 30, 100], axis=-1, method="midpoint"),
        (5, 6),
    ),
)


def _draw(name: str, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Small values (many ties); floats get NaN in places, one row of NaN only, inf, -0.0."""
    rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype}".encode()))
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    x = np.asarray(rng.integers(-3, 4, size=shape)).astype(dtype)
    if x.dtype.kind == "f" and x.size > 3:
        x[rng.random(shape) < 0.3] = np.nan
        flat = x.reshape(-1)
        flat[[1, 2]] = [-0.0, np.inf]
        if x.ndim >= 2:
            x[..., 1, :] = np.nan  # a slice of the last axis holding only NaN
            x[1, ...] = np.nan  # and one of the first
    return x


def _check(actual: Any, expected: Any) -> None:
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != numpy's {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != numpy's {e.dtype}"
    tol = {"float16": 2e-3, "float32": 1e-6}.get(str(a.dtype), 1e-12)
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol, equal_nan=True)


def _numpy(fn: Callable[..., Any], x: np.ndarray) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # All-NaN slice, Mean of empty slice
        return fn(x)


@pytest.mark.parametrize(
    ("name", "fn", "shape", "dtype"),
    [pytest.param(n, f, s, "float32", id=f"{n}-float32") for n, f, s in CASES]
    + [
        pytest.param(n, f, s, d, id=f"{n}-{d}", marks=pytest.mark.slow)
        for n, f, s in CASES
        for d in OTHER_DTYPES
    ],
)
def test_matches_numpy(
    name: str, fn: Callable[..., Any], shape: tuple[int, ...], dtype: str
) -> None:
    x = _draw(name, shape, dtype)
    try:
        expected = _numpy(fn, x)
    except TypeError as error:  # numpy refuses bool quantiles (boolean subtract)
        with pytest.raises(GeTypeError, match=str(error).split(",")[0]):
            ge.jit(fn)(x)
        return
    _check(ge.jit(fn)(x), expected)


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: np.nanmedian(v, axis=0),
        lambda v: np.nanquantile(v, [0.1, 0.6], axis=1, keepdims=True),
        lambda v: np.nanpercentile(v, 35.0, axis=-1),
    ],
    ids=["nanmedian", "nanquantile", "nanpercentile"],
)
def test_non_contiguous_inputs(fn: Callable[..., Any]) -> None:
    base = _draw("strided", (5, 12), "float32")
    for view in (base[:, ::2], base.T[::2]):  # every other column; a transposed view
        assert not view.flags.c_contiguous
        _check(ge.jit(fn)(view), _numpy(fn, view))


def test_a_row_of_nan_only_gives_nan_and_the_others_ignore_nan() -> None:
    x = np.array([[np.nan, np.nan, np.nan], [4.0, np.nan, 1.0], [2.0, 8.0, 5.0]], np.float32)
    median = ge.jit(lambda v: np.nanmedian(v, axis=1))(x)
    np.testing.assert_array_equal(median, np.array([np.nan, 2.5, 5.0], np.float32))
    quartiles = ge.jit(lambda v: np.nanquantile(v, [0.25, 0.75], axis=1))(x)
    np.testing.assert_allclose(quartiles, [[np.nan, 1.75, 3.5], [np.nan, 3.25, 6.5]], rtol=1e-6)


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: np.nanmedian(v, axis=0),
        lambda v: np.nanquantile(v, [0.2, 0.7], axis=1),
        lambda v: np.nanpercentile(v, 50.0),
    ],
    ids=["nanmedian", "nanquantile", "nanpercentile"],
)
def test_compiles_to_kernels_only(fn: Callable[..., Any]) -> None:
    x = _draw("kernels", (4, 5), "float32")
    f = ge.jit(fn)
    _check(f(x), _numpy(fn, x))
    plan = f.lower(x).plan
    assert plan is not None
    assert all(isinstance(t, KernelTask) for t in plan.tasks), plan.as_text()


BAD: tuple[tuple[str, Callable[..., Any], type[Exception], str], ...] = (
    ("method", lambda x: np.nanquantile(x, 0.5, method="weibull"), GeValueError, "'linear'"),
    ("quantile_range", lambda x: np.nanquantile(x, 1.5), GeValueError, "range [0, 1]"),
    ("percentile_range", lambda x: np.nanpercentile(x, 101), GeValueError, "range [0, 100]"),
    ("traced_q", lambda x: np.nanquantile(x, x[0, 0]), GeValueError, "q as a constant"),
    ("out", lambda x: np.nanmedian(x, out=x), GeTypeError, "out"),
    ("axis", lambda x: np.nanmedian(x, axis=2), GeValueError, "axis 2"),
    ("weights", lambda x: np.nanquantile(x, 0.5, weights=x), GeTypeError, "'weights'"),
)


@pytest.mark.parametrize(("fn", "error", "text"), [pytest.param(*b[1:], id=b[0]) for b in BAD])
def test_bad_input(fn: Callable[..., Any], error: type[Exception], text: str) -> None:
    with pytest.raises(error) as info:
        ge.jit(fn)(np.ones((3, 4), np.float32))
    assert text in str(info.value), str(info.value)
