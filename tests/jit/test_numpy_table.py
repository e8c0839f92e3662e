"""Every numpy function and operator a traced value supports, through ``@ge.jit``, against numpy.

One record per op: the function (written once, run on numpy arrays for the reference and
traced by ``ge.jit``), its argument shapes (the first set is the op's main case; the others are
odd shapes: scalar ``()``, size-0, broadcasting), the dtypes it supports and how its inputs are
drawn. Each case jits a fresh function, calls it twice (the second call is a cache hit, not a
trace) and compares both results with numpy's: values within the dtype's tolerance, and the
same shape and dtype. Default tier: every record with every shape set in its main dtype (float32
where it has it) and its first shape set in its other representative dtypes (tests/_tiers.py:
int32; float64 once); ``-m slow`` runs every combination.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ge

from .._tiers import default_pairs, main_dtype

F32 = ("float32",)
FLOATS = ("float32", "float64")
NUMERIC = ("float32", "float64", "int32")
TOLERANCE = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14), "int32": (0, 0)}

Shapes = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Record:
    """One op: ``fn`` on arrays or traced values, its argument shapes, dtypes and inputs."""

    name: str
    fn: Callable[..., Any]
    shapes: tuple[Shapes, ...]
    dtypes: tuple[str, ...] = F32
    draw: str = "normal"  # "normal", "positive", "unit" (in (-1, 1)), "bool" (first arg)
    rtol: float | None = None  # loosened per op (a longer reduction, a transcendental)
    atol: float | None = None


UNARY = (((3, 4),), ((),), ((0, 3),), ((2, 3, 4),))
BINARY = (((3, 4), (3, 4)), ((), ()), ((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((0, 3), (1, 3)))
MATRIX = (((3, 4),), ((2, 3, 4),), ((0, 4),))
SUM: dict[str, Any] = {"rtol": 1e-5, "atol": 1e-5}

RECORDS: tuple[Record, ...] = (
    # --- Python operators ---------------------------------------------------------------------
    Record("add", lambda x, y: x + y, BINARY, NUMERIC),
    Record("sub", lambda x, y: x - y, BINARY, NUMERIC),
    Record("mul", lambda x, y: x * y, BINARY, NUMERIC),
    Record("truediv", lambda x, y: x / y, BINARY, FLOATS, draw="positive"),
    Record("pow", lambda x, y: x**y, BINARY, FLOATS, draw="positive", rtol=1e-5),
    Record("neg", lambda x: -x, UNARY, NUMERIC),
    Record("pos", lambda x: +x, UNARY[:1], NUMERIC),
    Record("abs_builtin", abs, UNARY, NUMERIC),
    Record("add_scalar", lambda x: x + 1.5, UNARY, FLOATS),
    Record("radd_scalar", lambda x: 2 + x, UNARY, NUMERIC),
    Record("rsub_scalar", lambda x: 1 - x, UNARY, NUMERIC),
    Record("rmul_scalar", lambda x: 3 * x, UNARY, NUMERIC),
    Record("rtruediv_scalar", lambda x: 1.0 / x, UNARY, FLOATS, draw="positive"),
    Record("square_pow", lambda x: x**2, UNARY, FLOATS),
    Record("rpow_scalar", lambda x: 2.0**x, UNARY, FLOATS, rtol=1e-5),
    Record("lt", lambda x, y: x < y, BINARY, NUMERIC),
    Record("le", lambda x, y: x <= y, BINARY, NUMERIC),
    Record("gt", lambda x, y: x > y, BINARY, NUMERIC),
    Record("ge", lambda x, y: x >= y, BINARY, NUMERIC),
    Record("eq", lambda x, y: x == y, BINARY, ("int32",)),
    Record("ne", lambda x, y: x != y, BINARY, ("int32",)),
    Record("gt_scalar", lambda x: x > 0, UNARY, NUMERIC),
    Record("reflected_lt_scalar", lambda x: 0 < x, UNARY[:2], NUMERIC),  # noqa: SIM300
    Record("numpy_scalar", lambda x: x * np.float32(2.5) - np.float32(1), UNARY[:2], F32),
    Record("ndarray_left", lambda x: np.arange(4, dtype=x.dtype) + x, (((3, 4),),), NUMERIC),
    Record("ndarray_left_matmul", lambda x: np.ones((2, 3), x.dtype) @ x, (((3, 4),),), FLOATS),
    Record("and_or_not", lambda x, y: ((x > 0) & (y > 0)) | ~(x > y), BINARY[:3]),
    Record("matmul_op", lambda x, y: x @ y, (((3, 4), (4, 5)),), FLOATS, rtol=1e-5),
    Record("matmul_op_vec", lambda x, y: x @ y, (((3, 4), (4,)), ((4,), (4, 5))), FLOATS),
    Record("matmul_op_batch", lambda x, y: x @ y, (((2, 3, 4), (2, 4, 5)),), FLOATS, rtol=1e-5),
    # --- numpy ufuncs -------------------------------------------------------------------------
    Record("np.exp", np.exp, UNARY, FLOATS, rtol=1e-5),
    Record("np.log", np.log, UNARY, FLOATS, draw="positive", rtol=1e-5, atol=1e-6),
    Record("np.sqrt", np.sqrt, UNARY, FLOATS, draw="positive"),
    Record("np.tanh", np.tanh, UNARY, FLOATS, rtol=1e-5, atol=1e-6),
    Record("np.sin", np.sin, UNARY, FLOATS, rtol=1e-5, atol=1e-6),
    Record("np.cos", np.cos, UNARY, FLOATS, rtol=1e-5, atol=1e-6),
    Record("np.abs", np.abs, UNARY, NUMERIC),
    Record("np.negative", np.negative, UNARY[:1], NUMERIC),
    Record("np.floor", np.floor, UNARY[:2], FLOATS),
    Record("np.ceil", np.ceil, UNARY[:2], FLOATS),
    Record("np.sign", np.sign, UNARY[:2], NUMERIC),
    Record("np.square", np.square, UNARY[:2], NUMERIC),
    Record("np.reciprocal", np.reciprocal, UNARY[:2], FLOATS, draw="positive"),
    Record("np.add", np.add, BINARY, NUMERIC),
    Record("np.subtract", np.subtract, BINARY, NUMERIC),
    Record("np.multiply", np.multiply, BINARY, NUMERIC),
    Record("np.divide", np.divide, BINARY, FLOATS, draw="positive"),
    Record("np.power", np.power, BINARY[:3], FLOATS, draw="positive", rtol=1e-5),
    Record("np.maximum", np.maximum, BINARY, NUMERIC),
    Record("np.minimum", np.minimum, BINARY, NUMERIC),
    Record("np.maximum_scalar", lambda x: np.maximum(x, 0.0), UNARY, FLOATS),
    Record("np.less", np.less, BINARY[:3], NUMERIC),
    Record("np.greater_equal", np.greater_equal, BINARY[:3], NUMERIC),
    Record("np.equal", np.equal, BINARY[:3], ("int32",)),
    Record("np.logical_not", lambda x: np.logical_not(x > 0), UNARY[:2]),
    Record(
        "np.logical_and_or",
        lambda x, y: np.logical_or(np.logical_and(x > 0, y > 0), x > 1),
        BINARY[:3],
    ),
    Record("np.matmul", np.matmul, (((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5))), FLOATS, rtol=1e-5),
    Record("np.dot", np.dot, (((3, 4), (4, 5)), ((4,), (4,))), FLOATS, rtol=1e-5),
    # --- numpy functions ----------------------------------------------------------------------
    Record("np.where", lambda x, y: np.where(x > 0, x, y), BINARY, NUMERIC),
    Record("np.where_scalar", lambda x: np.where(x > 0, x, 0.0), UNARY, FLOATS),
    Record("np.sum", np.sum, UNARY, NUMERIC, **SUM),
    Record("np.sum_axis", lambda x: np.sum(x, axis=1), MATRIX, NUMERIC, **SUM),
    Record(
        "np.sum_axis_keepdims", lambda x: np.sum(x, axis=-1, keepdims=True), MATRIX, NUMERIC, **SUM
    ),
    Record("np.sum_axes", lambda x: np.sum(x, axis=(0, 2)), (((2, 3, 4),),), NUMERIC, **SUM),
    Record("np.mean", np.mean, UNARY[:1] + UNARY[3:], FLOATS, rtol=1e-5, atol=1e-6),
    Record(
        "np.mean_axis_keepdims",
        lambda x: np.mean(x, axis=0, keepdims=True),
        MATRIX[:2],
        FLOATS,
        rtol=1e-5,
        atol=1e-6,
    ),
    Record("np.max", np.max, UNARY[:2] + UNARY[3:], NUMERIC),
    Record("np.max_axis", lambda x: np.max(x, axis=1), MATRIX[:2], NUMERIC),
    Record("np.max_keepdims", lambda x: np.max(x, axis=-1, keepdims=True), MATRIX[:2], NUMERIC),
    Record("np.min", np.min, UNARY[:2] + UNARY[3:], NUMERIC),
    Record("np.min_axis_keepdims", lambda x: np.min(x, 0, keepdims=True), MATRIX[:2], NUMERIC),
    Record("np.amax_axis", lambda x: np.amax(x, axis=0), MATRIX[:2], NUMERIC),
    Record("np.prod_axis", lambda x: np.prod(x, axis=1), MATRIX[:2], FLOATS, rtol=1e-5),
    Record("np.argmax_axis", lambda x: np.argmax(x, axis=1), MATRIX[:2], F32),
    Record("np.concatenate", lambda x, y: np.concatenate([x, y]), (((2, 3), (4, 3)),), NUMERIC),
    Record(
        "np.concatenate_axis",
        lambda x, y: np.concatenate((x, y, x), axis=1),
        (((2, 3), (2, 1)), ((0, 3), (0, 2))),
        NUMERIC,
    ),
    Record("np.stack", lambda x, y: np.stack([x, y], axis=1), (((2, 3), (2, 3)),), NUMERIC),
    Record("np.transpose", np.transpose, MATRIX, NUMERIC),
    Record("np.transpose_axes", lambda x: np.transpose(x, (1, 0, 2)), (((2, 3, 4),),), NUMERIC),
    Record("np.reshape", lambda x: np.reshape(x, (2, -1)), (((3, 4),), ((2, 3, 4),)), NUMERIC),
    Record("np.expand_dims", lambda x: np.expand_dims(x, 1), UNARY[:1], NUMERIC),
    Record("np.squeeze", lambda x: np.squeeze(x, axis=1), (((3, 1, 4),),), NUMERIC),
    Record("np.broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4)), (((3, 1),), ((4,),))),
    Record("np.tile", lambda x: np.tile(x, (2, 3)), (((2, 3),),), NUMERIC),
    Record("np.clip", lambda x: np.clip(x, -0.5, 0.5), UNARY, FLOATS),
    Record("np.clip_upper", lambda x: np.clip(x, None, 0.5), UNARY[:1], FLOATS),
    Record("np.zeros_like", np.zeros_like, UNARY[:2], NUMERIC),
    Record("np.ones_like", np.ones_like, UNARY[:2], NUMERIC),
    # --- methods and attributes ---------------------------------------------------------------
    Record("x.sum_axis", lambda x: x.sum(axis=0), MATRIX, NUMERIC, **SUM),
    Record("x.sum_keepdims", lambda x: x.sum(axis=1, keepdims=True), MATRIX[:2], NUMERIC, **SUM),
    Record("x.mean", lambda x: x.mean(), UNARY[:1], FLOATS, rtol=1e-5, atol=1e-6),
    Record("x.max_axis", lambda x: x.max(axis=-1), MATRIX[:2], NUMERIC),
    Record("x.min", lambda x: x.min(), UNARY[:2], NUMERIC),
    Record("x.T", lambda x: x.T, (*MATRIX, ((4,),)), NUMERIC),
    Record("x.transpose", lambda x: x.transpose(2, 0, 1), (((2, 3, 4),),), NUMERIC),
    Record("x.reshape", lambda x: x.reshape(4, 3), (((3, 4),), ((12,),)), NUMERIC),
    Record("x.reshape_tuple", lambda x: x.reshape((-1,)), (((3, 4),), ((0, 3),)), NUMERIC),
    Record("x.astype_int32", lambda x: x.astype(np.int32), UNARY[:3], FLOATS),
    Record("x.astype_float32", lambda x: x.astype(np.float32), UNARY[:2], ("float64", "int32")),
    Record("x.astype_float64", lambda x: x.astype(np.float64), UNARY[:2], ("float32", "int32")),
    Record("x.astype_same", lambda x: x.astype(x.dtype), UNARY[:1], NUMERIC),
    Record("x.argmax", lambda x: x.argmax(), UNARY[:1], F32),
    # --- indexing -----------------------------------------------------------------------------
    Record("x[1:3]", lambda x: x[1:3], (((5, 4),), ((5,),)), NUMERIC),
    Record("x[:, 0]", lambda x: x[:, 0], (((5, 4),), ((0, 4),)), NUMERIC),
    Record("x[1]", lambda x: x[1], (((5, 4),), ((5,),)), NUMERIC),
    Record("x[-1]", lambda x: x[-1], (((5, 4),),), NUMERIC),
    Record("x[::2]", lambda x: x[::2], (((5, 4),),), NUMERIC),
    Record("x[::-1]", lambda x: x[::-1], (((5, 4),),), NUMERIC),
    Record("x[1:, :-1]", lambda x: x[1:, :-1], (((5, 4),),), NUMERIC),
    Record("x[None]", lambda x: x[None, :, None], (((5, 4),),), NUMERIC),
    Record("x[..., 1]", lambda x: x[..., 1], (((2, 3, 4),),), NUMERIC),
    Record("x[[2, 0]]", lambda x: x[[2, 0, 2]], (((5, 4),),), NUMERIC),
    Record("x[:, idx]", lambda x: x[:, np.array([3, 1])], (((5, 4),),), NUMERIC),
    # --- a few compositions (they fuse) -------------------------------------------------------
    Record(
        "softmax",
        lambda x: (
            np.exp(x - x.max(axis=-1, keepdims=True))
            / np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)
        ),
        MATRIX[:2],
        FLOATS,
        rtol=1e-5,
        atol=1e-6,
    ),
    Record(
        "mlp",
        lambda x, w, b: np.maximum(x @ w + b, 0.0),
        (((3, 4), (4, 5), (5,)),),
        FLOATS,
        rtol=1e-5,
        atol=1e-6,
    ),
)


def _draw(record: Record, shapes: Shapes, dtype: str, key: str) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    out = []
    for shape in shapes:
        if dtype == "int32":
            lo = 1 if record.draw == "positive" else -5
            out.append(rng.integers(lo, 6, size=shape).astype(np.int32))
        elif record.draw == "positive":
            out.append(rng.uniform(0.5, 2.0, size=shape).astype(dtype))
        else:
            out.append(rng.standard_normal(size=shape).astype(dtype))
    return out


def _params() -> list[Any]:
    default = default_pairs((record.name, dtype) for record in RECORDS for dtype in record.dtypes)
    params = []
    for record in RECORDS:
        main = main_dtype(record.dtypes)
        for i, shapes in enumerate(record.shapes):
            for dtype in record.dtypes:
                quick = dtype == main or (i == 0 and (record.name, dtype) in default)
                label = "_".join("x".join(map(str, s)) or "scalar" for s in shapes)
                params.append(
                    pytest.param(
                        record,
                        shapes,
                        dtype,
                        marks=() if quick else (pytest.mark.slow,),
                        id=f"{record.name}-{label}-{dtype}",
                    )
                )
    return params


def assert_matches(actual: Any, expected: Any, dtype: str, record: Record) -> None:
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), f"got a {type(actual).__name__}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != numpy's {expected.shape}"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != numpy's {expected.dtype}"
    rtol, atol = TOLERANCE[dtype]
    if expected.dtype.kind == "f":
        rtol = max(rtol, record.rtol or 0.0) if dtype == "float32" else rtol * 10
        atol = max(atol, record.atol or 0.0) if dtype == "float32" else atol * 10
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize(("record", "shapes", "dtype"), _params())
def test_jit_matches_numpy(record: Record, shapes: Shapes, dtype: str) -> None:
    args = _draw(record, shapes, dtype, f"{record.name}-{shapes}-{dtype}")
    expected = record.fn(*args)
    jitted = ge.jit(record.fn)
    first = jitted(*args)
    second = jitted(*args)
    info = jitted.cache_info()
    assert (info.traces, info.misses, info.hits, info.entries) == (1, 1, 1, 1)
    assert_matches(first, expected, dtype, record)
    assert_matches(second, expected, dtype, record)


# --- numpy's true division of integers (float64; tests/jit/test_numpy_promotion.py has more) -----
def test_np_divide_of_integers_is_float64_true_division() -> None:
    x = np.array([1, -7, 9, 0], np.int32)
    y = np.array([2, 2, -4, 3], np.int32)
    out = ge.jit(np.divide)(x, y)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, x / y)


# --- gaps and bugs found while writing the table (each one a numpy result we do not match) -------
@pytest.mark.parametrize("fn", [np.mean, lambda x: x.mean(axis=0)], ids=["np.mean", "x.mean"])
def test_mean_of_integers(fn: Callable[..., Any]) -> None:
    x = np.array([1, 2, 3, -4], np.int32)
    out = ge.jit(fn)(x)
    np.testing.assert_allclose(out, fn(x))


def test_sum_with_a_dtype() -> None:
    x = np.array([1.5, 2.25], np.float32)
    out = ge.jit(lambda v: np.sum(v, dtype=np.float64))(x)
    assert out.dtype == np.float64


@pytest.mark.parametrize(
    "fn", [lambda x: x[[-1]], lambda x: x[:, [-1, 0]]], ids=["rows", "columns"]
)
def test_negative_array_index(fn: Callable[..., Any]) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(ge.jit(fn)(x), fn(x))


def test_sum_of_booleans() -> None:
    x = np.array([1.0, -1.0, 2.0], np.float32)
    assert ge.jit(lambda v: np.sum(v > 0))(x) == 2
