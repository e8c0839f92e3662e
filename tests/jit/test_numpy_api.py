"""The numpy functions of ``ge.es._numpy_api`` through ``@ge.jit``, against numpy.

One record per case: a function (run on numpy arrays for the reference and traced by
``ge.jit``), its argument shapes and dtypes. Each case compares values, shape and dtype with
numpy's (default tier: float32; the int32 cases run with ``-m slow``); the bad-input
tests check the GE error type and that the message names the problem.
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

F32 = ("float32",)
F32_I32 = ("float32", "int32")


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...] = F32_I32
    draw: str = "normal"  # "normal", "positive", "small" (ints in [-3, 3])


CASES: tuple[Case, ...] = (
    Case("swapaxes", lambda x: np.swapaxes(x, 0, -1), ((2, 3, 4),)),
    Case("swapaxes_0size", lambda x: np.swapaxes(x, 0, 1), ((0, 3),)),
    Case("moveaxis", lambda x: np.moveaxis(x, 0, -1), ((2, 3, 4),)),
    Case("moveaxis_multi", lambda x: np.moveaxis(x, [0, 1], [-1, 0]), ((2, 3, 4),)),
    Case("ravel", np.ravel, ((2, 3, 4),)),
    Case("ravel_scalar", np.ravel, ((),)),
    Case("flip_all", np.flip, ((2, 3, 4),)),
    Case("flip_axis", lambda x: np.flip(x, -1), ((3, 4),)),
    Case("flip_1d", lambda x: np.flip(x, 0), ((5,),)),
    Case("flip_0size", lambda x: np.flip(x, 0), ((0, 2),)),
    Case("fliplr", np.fliplr, ((3, 4),)),
    Case("flipud", np.flipud, ((3, 4),)),
    Case("roll_flat", lambda x: np.roll(x, 2), ((3, 4),)),
    Case("roll_axis", lambda x: np.roll(x, -1, axis=1), ((3, 4),)),
    Case("roll_multi", lambda x: np.roll(x, (1, 2), axis=(0, 2)), ((2, 3, 4),)),
    Case("roll_big_shift", lambda x: np.roll(x, 7, axis=0), ((3, 2),)),
    Case("hstack", lambda x, y: np.hstack([x, y]), ((3, 2), (3, 4))),
    Case("hstack_1d", lambda x, y: np.hstack((x, y)), ((3,), (2,))),
    Case("vstack", lambda x, y: np.vstack([x, y]), ((4,), (4,))),
    Case("vstack_2d", lambda x, y: np.vstack([x, y]), ((2, 3), (1, 3))),
    Case("dstack", lambda x, y: np.dstack([x, y]), ((2, 3), (2, 3))),
    Case("column_stack", lambda x, y: np.column_stack([x, y]), ((3,), (3, 2))),
    Case("stack_mixed_dtype", lambda x: np.hstack([x, np.ones(2, np.float64)]), ((3,),)),
    Case("split", lambda x: np.split(x, 2, axis=1), ((3, 4),)),
    Case("split_indices", lambda x: np.split(x, [1, 3]), ((5, 2),)),
    Case("array_split", lambda x: np.array_split(x, 3, axis=-1), ((2, 7),)),
    Case("repeat_flat", lambda x: np.repeat(x, 2), ((2, 3),)),
    Case("repeat_axis", lambda x: np.repeat(x, [1, 0, 2], axis=0), ((3, 2),)),
    Case("pad_constant", lambda x: np.pad(x, ((1, 0), (2, 1))), ((2, 3),)),
    Case("pad_value", lambda x: np.pad(x, 1, constant_values=5), ((2, 3),)),
    Case("pad_edge", lambda x: np.pad(x, (2, 1), mode="edge"), ((2, 3),)),
    Case("pad_1d", lambda x: np.pad(x, (0, 3)), ((4,),)),
    Case("triu", np.triu, ((4, 4),)),
    Case("triu_k", lambda x: np.triu(x, 1), ((3, 5),)),
    Case("tril_batch", lambda x: np.tril(x, -1), ((2, 3, 3),)),
    Case("diagonal", np.diagonal, ((3, 4),)),
    Case("diagonal_offset", lambda x: np.diagonal(x, -1), ((4, 3),)),
    Case("diagonal_axes", lambda x: np.diagonal(x, 1, 1, 2), ((2, 3, 4),)),
    Case("diag_of_matrix", lambda x: np.diag(x, 1), ((3, 4),)),
    Case("diag_of_vector", np.diag, ((3,),)),
    Case("diag_of_vector_k", lambda x: np.diag(x, -2), ((3,),)),
    Case("trace", np.trace, ((3, 4),)),
    Case("trace_3d", lambda x: np.trace(x, axis1=1, axis2=2), ((2, 3, 3),)),
    Case("outer", np.outer, ((3,), (4,))),
    Case("outer_2d", np.outer, ((2, 2), (3,))),
    Case("inner", np.inner, ((2, 3), (4, 3))),
    Case("inner_1d", np.inner, ((3,), (3,))),
    Case("vdot", np.vdot, ((2, 3), (3, 2))),
    Case("tensordot", np.tensordot, ((2, 3, 4), (3, 4, 5))),
    Case("tensordot_axes", lambda x, y: np.tensordot(x, y, ([0], [1])), ((3, 2), (4, 3))),
    Case("tensordot_0", lambda x, y: np.tensordot(x, y, 0), ((2,), (3,))),
    Case("einsum_matmul", lambda x, y: np.einsum("ij,jk->ik", x, y), ((2, 3), (3, 4))),
    Case("einsum_batch", lambda x, y: np.einsum("bij,bjk->bik", x, y), ((2, 2, 3), (2, 3, 4))),
    Case("einsum_transpose", lambda x: np.einsum("ij->ji", x), ((2, 3),)),
    Case("einsum_trace", lambda x: np.einsum("ii", x), ((3, 3),)),
    Case("einsum_diag", lambda x: np.einsum("ii->i", x), ((3, 3),)),
    Case("einsum_sum", lambda x: np.einsum("ij->", x), ((2, 3),)),
    Case("einsum_outer", lambda x, y: np.einsum("i,j", x, y), ((2,), (3,))),
    Case("einsum_implicit", lambda x, y: np.einsum("ij,jk", x, y), ((2, 3), (3, 2))),
    Case("var", np.var, ((3, 4),)),
    Case("var_axis_ddof", lambda x: np.var(x, axis=-1, ddof=1), ((3, 4),)),
    Case("std", lambda x: np.std(x, axis=0, keepdims=True), ((3, 4),)),
    Case("std_dtype", lambda x: np.std(x, dtype=np.float64), ((5,),)),
    Case("mean_dtype", lambda x: np.mean(x, axis=1, dtype=np.float64), ((3, 4),)),
    Case("any", lambda x: np.any(x > 1), ((3, 4),)),
    Case("any_axis", lambda x: np.any(x, axis=0), ((3, 4),), draw="small"),
    Case("all", lambda x: np.all(x > -5, axis=-1, keepdims=True), ((3, 4),)),
    Case("all_0size", np.all, ((0, 3),)),
    Case("any_0size", lambda x: np.any(x, axis=0), ((0, 3),)),
    Case("count_nonzero", np.count_nonzero, ((3, 4),), draw="small"),
    Case("count_nonzero_axis", lambda x: np.count_nonzero(x, axis=1), ((3, 4),), draw="small"),
    Case("ptp", lambda x: np.ptp(x, axis=0), ((3, 4),)),
    Case("ptp_all", np.ptp, ((2, 3, 4),)),
    Case("average", np.average, ((3, 4),)),
    Case(
        "average_weights",
        lambda x, w: np.average(x, axis=1, weights=w),
        ((3, 4), (4,)),
        draw="positive",
    ),
    Case(
        "average_full_weights",
        lambda x, w: np.average(x, weights=w),
        ((3, 4), (3, 4)),
        draw="positive",
    ),
    Case("norm", np.linalg.norm, ((3, 4),)),
    Case("norm_vec_1", lambda x: np.linalg.norm(x, 1), ((5,),)),
    Case("norm_vec_inf", lambda x: np.linalg.norm(x, np.inf), ((5,),)),
    Case("norm_axis", lambda x: np.linalg.norm(x, axis=-1), ((3, 4),)),
    Case("norm_fro", lambda x: np.linalg.norm(x, "fro"), ((3, 4),)),
    Case("norm_mat_1", lambda x: np.linalg.norm(x, 1), ((3, 4),)),
    Case("norm_mat_inf", lambda x: np.linalg.norm(x, np.inf, keepdims=True), ((3, 4),)),
    Case("take", lambda x: np.take(x, [2, 0, -1], axis=1), ((3, 4),)),
    Case("take_flat", lambda x: np.take(x, [[0, 5], [11, 3]]), ((3, 4),)),
    Case(
        "take_along_axis", lambda x: np.take_along_axis(x, np.array([[0], [2], [1]]), 1), ((3, 4),)
    ),
    Case(
        "take_along_axis_0", lambda x: np.take_along_axis(x, np.array([[2, 0, 1, 1]]), 0), ((3, 4),)
    ),
    Case("broadcast_arrays", np.broadcast_arrays, ((3, 1), (4,))),
    Case("atleast_1d", np.atleast_1d, ((),)),
    Case("atleast_2d", np.atleast_2d, ((3,),)),
    Case("atleast_3d", np.atleast_3d, ((3,),)),
    Case("atleast_3d_2d", np.atleast_3d, ((2, 3),)),
    Case("atleast_3d_multi", np.atleast_3d, ((), (2, 3, 4))),
    Case("full_like", lambda x: np.full_like(x, 7), ((2, 3),)),
    Case("full_like_dtype", lambda x: np.full_like(x, 2.5, dtype=np.float64), ((2, 3),)),
    Case("empty_like_shape", lambda x: np.empty_like(x).shape, ((2, 3),)),
    Case("isclose", lambda x, y: np.isclose(x, x + y * 1e-9), ((3, 4), (3, 4)), F32),
    Case("isclose_far", np.isclose, ((3, 4), (3, 4)), F32),
    Case("allclose", lambda x: np.allclose(x, x), ((3, 4),), F32),
    Case("allclose_false", lambda x: np.allclose(x, x + 1), ((3, 4),), F32),
)


def _draw(case: Case, dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    out = []
    for shape in case.shapes:
        if case.draw == "small" or dtype.startswith("int"):
            low = 1 if case.draw == "positive" else -3
            out.append(rng.integers(low, 4, size=shape).astype(dtype))
        elif case.draw == "positive":
            out.append(rng.uniform(0.5, 2.0, size=shape).astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flat(item)]
    return [value]


def _check(actual: Any, expected: Any, dtype: str) -> None:
    got, want = _flat(actual), _flat(expected)
    assert len(got) == len(want)
    for got_item, want_item in zip(got, want, strict=True):
        a, e = np.asarray(got_item), np.asarray(want_item)
        assert a.shape == e.shape, f"shape {a.shape} != numpy's {e.shape}"
        assert a.dtype == e.dtype, f"dtype {a.dtype} != numpy's {e.dtype}"
        if a.dtype.kind == "f":
            tol = 1e-5 if a.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(a, e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize(
    ("case", "dtype"),
    [
        pytest.param(c, d, id=f"{c.name}-{d}", marks=() if d == c.dtypes[0] else pytest.mark.slow)
        for c in CASES
        for d in c.dtypes
    ],
)
def test_matches_numpy(case: Case, dtype: str) -> None:
    args = _draw(case, dtype)
    expected = case.fn(*args)
    actual = ge.jit(case.fn)(*args)
    _check(actual, expected, dtype)


def test_non_contiguous_input() -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    fn = lambda v: np.roll(np.flip(v, 0), 1, axis=1)  # noqa: E731
    _check(ge.jit(fn)(x), fn(x), "float32")


def test_nan_to_num() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0], np.float32)
    for fn in (np.nan_to_num, lambda v: np.nan_to_num(v, nan=1.0, posinf=9.0, neginf=-9.0)):
        _check(ge.jit(fn)(x), fn(x), "float32")
    i = np.arange(3, dtype=np.int32)
    _check(ge.jit(np.nan_to_num)(i), np.nan_to_num(i), "int32")


def test_isclose_equal_nan_and_inf() -> None:
    x = np.array([np.nan, np.inf, 1.0, 2.0], np.float32)
    y = np.array([np.nan, np.inf, 1.0 + 1e-7, 3.0], np.float32)
    fn = lambda a, b: np.isclose(a, b, equal_nan=True)  # noqa: E731
    _check(ge.jit(fn)(x, y), fn(x, y), "float32")
    _check(ge.jit(np.isclose)(x, y), np.isclose(x, y), "float32")


BAD: tuple[tuple[str, Callable[..., Any], type[Exception], str], ...] = (
    ("swapaxes_axis", lambda x: np.swapaxes(x, 0, 2), GeValueError, "axis 2"),
    ("flip_axis", lambda x: np.flip(x, -3), GeValueError, "axis -3"),
    ("roll_axis", lambda x: np.roll(x, 1, axis=5), GeValueError, "axis 5"),
    ("moveaxis_len", lambda x: np.moveaxis(x, [0, 1], [0]), GeValueError, "same number"),
    ("split_unequal", lambda x: np.split(x, 2), GeValueError, "equal division"),
    ("repeat_len", lambda x: np.repeat(x, [1, 2], axis=0), GeValueError, "repeats"),
    ("pad_mode", lambda x: np.pad(x, 1, mode="linear_ramp"), GeValueError, "linear_ramp"),
    ("pad_reflect_odd", lambda x: np.pad(x, 1, "reflect", reflect_type="odd"), GeValueError, "odd"),
    ("pad_wrap_kw", lambda x: np.pad(x, 1, "wrap", constant_values=1), GeTypeError, "constant_"),
    ("pad_empty_axis", lambda x: np.pad(x[:0], 1, "symmetric"), GeValueError, "empty axis 0"),
    ("tril_1d", lambda x: np.tril(x[0]), GeValueError, ">= 2-d"),
    ("diagonal_same", lambda x: np.diagonal(x, 0, 1, 1), GeValueError, "cannot be the same"),
    ("tensordot_shape", lambda x: np.tensordot(x, x, ([0], [1])), GeValueError, "shape mismatch"),
    ("einsum_terms", lambda x: np.einsum("ij,jk", x), GeValueError, "2 subscript terms"),
    ("einsum_ellipsis", lambda x: np.einsum("...i->i", x), GeValueError, "'...'"),
    ("norm_ord", lambda x: np.linalg.norm(x, 2), GeValueError, "ord"),
    ("take_oob", lambda x: np.take(x, [7], axis=0), GeValueError, "out of bounds"),
    ("var_kw", lambda x: np.var(x, where=x > 0), GeTypeError, "'where'"),
    ("std_out", lambda x: np.std(x, out=None), GeTypeError, "'out'"),
    ("take_mode", lambda x: np.take(x, [0], mode="clip"), GeTypeError, "mode"),
    ("where_one", lambda x: np.where(x > 0), GeValueError, "np.where(mask, x, y)"),
    ("nonzero", np.nonzero, GeValueError, "depends on the values"),
    ("unique", np.unique, GeValueError, "depends on the values"),
    ("broadcast", lambda x: np.broadcast_arrays(x, x[:2, :1].T), GeValueError, "broadcast"),
)


@pytest.mark.parametrize(("fn", "error", "text"), [pytest.param(*b[1:], id=b[0]) for b in BAD])
def test_bad_input(fn: Callable[..., Any], error: type[Exception], text: str) -> None:
    x = np.ones((3, 4), np.float32)
    with pytest.raises(error, match=None) as info:
        ge.jit(fn)(x)
    assert text in str(info.value), str(info.value)
