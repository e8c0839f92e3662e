"""numpy ufuncs that are one new elementwise op (issue #16), under ``ge.jit``, against numpy.

Default tier: each ufunc in the representative dtypes of tests/_tiers.py (float32, int32, bool,
and each other dtype once); ``-m slow`` runs every ufunc in every dtype."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge

from .._tiers import default_pairs, representatives

EDGE = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0, 1e-7, np.nan, np.inf, -np.inf]

UNARY = [
    "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
    "log1p", "expm1", "log2", "log10", "exp2", "rint", "trunc", "isnan", "isinf", "isfinite",
]  # fmt: skip
BINARY_FLOAT = ["arctan2", "hypot", "copysign", "fmod", "floor_divide", "remainder"]
BINARY_INT = ["fmod", "floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor"]
SHAPES = [(), (0,), (3, 1), (2, 3)]
INTS = [np.int8, np.int32, np.int64, np.uint8, np.uint16]
QUICK = representatives(np.dtype(d).name for d in [np.bool_, *INTS])  # of test_invert_...
SLOW = (pytest.mark.slow,)


def _sweep(names: list[str], dtypes: list[Any]) -> list[Any]:
    """``(name, dtype)`` params, id ``name-dtype``, outside tests/_tiers.py's default pairs slow."""
    pairs = [(name, np.dtype(dtype).name) for name in names for dtype in dtypes]
    default = default_pairs(pairs)
    return [
        pytest.param(
            name,
            dtype,
            marks=() if (name, np.dtype(dtype).name) in default else SLOW,
            id=f"{name}-{np.dtype(dtype).name}",
        )
        for name in names
        for dtype in dtypes
    ]


def _check(got: Any, want: Any, tight: bool = True) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        rtol = 1e-6 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
        if tight:  # signs of zeros and infinities too
            assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()
    else:
        np.testing.assert_array_equal(got, want)


def _values(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    pool = np.array(EDGE + list(np.random.default_rng(seed).normal(0, 3, 20)), dtype)
    return np.random.default_rng(seed + 1).choice(pool, size=shape)


@pytest.mark.parametrize(("name", "dtype"), _sweep(UNARY, [np.float32, np.float64]))
def test_unary_float(name: str, dtype: Any) -> None:
    fn = getattr(np, name)
    f = ge.jit(lambda x: fn(x))  # noqa: PLW0108
    for shape in [*SHAPES, (len(EDGE),)]:
        x = np.array(EDGE, dtype) if shape == (len(EDGE),) else _values(shape, dtype, 3)
        with np.errstate(all="ignore"):
            want = fn(x)
        for _ in range(2):
            _check(f(x), want, tight=name not in ("tan",))


@pytest.mark.parametrize(("name", "dtype"), _sweep(BINARY_FLOAT, [np.float32, np.float64]))
def test_binary_float(name: str, dtype: Any) -> None:
    fn = getattr(np, name)
    f = ge.jit(lambda x, y: fn(x, y))  # noqa: PLW0108
    grid = np.array([*EDGE, 0.1, 7.0, -7.0], dtype)
    x, y = np.meshgrid(grid, grid)
    cases = [(x, y), (_values((3, 1), dtype, 1), _values((1, 4), dtype, 2))]
    cases += [(_values((), dtype, 5), _values((), dtype, 6)), (grid[:0], grid[:0])]
    cases += [(x[:, ::2], y[:, ::2])]  # non-contiguous
    for a, b in cases:
        with np.errstate(all="ignore"):
            want = fn(a, b)
        for _ in range(2):
            _check(f(a, b), want)


def test_floor_divide_matches_numpy_where_floor_of_quotient_does_not() -> None:
    f = ge.jit(lambda x, y: (x // y, x % y, divmod(x, y)))
    x, y = np.array([1.0, -1.0, 0.7]), np.array([0.1, 0.1, -0.1])
    q, r, (q2, r2) = f(x, y)
    _check(q, x // y)
    _check(r, x % y)
    _check(q2, x // y)
    _check(r2, x % y)
    assert q[0] == 9.0


@pytest.mark.parametrize(("name", "dtype"), _sweep(BINARY_INT, INTS))
def test_binary_int(name: str, dtype: Any) -> None:
    fn = getattr(np, name)
    f = ge.jit(lambda x, y: fn(x, y))  # noqa: PLW0108
    info = np.iinfo(dtype)
    grid = np.unique(np.array([0, 1, 2, 3, 7, info.max, info.min, -1, -2, -7], np.int64))
    grid = grid[(grid >= info.min) & (grid <= info.max)].astype(dtype)
    x, y = np.meshgrid(grid, grid)
    for a, b in [(x, y), (grid[:, None], grid[None, :3]), (grid[0], grid[1]), (grid[:0], grid[:0])]:
        with np.errstate(all="ignore"):
            want = fn(a, b)
        for _ in range(2):
            _check(f(a, b), want)


@pytest.mark.parametrize(("name", "dtype"), _sweep(["left_shift", "right_shift"], INTS))
def test_shifts(name: str, dtype: Any) -> None:
    fn = getattr(np, name)
    f = ge.jit(lambda x, y: fn(x, y))  # noqa: PLW0108
    info = np.iinfo(dtype)
    bits = info.bits
    values = np.array([v for v in (0, 1, 5, -1, -8, info.max, info.min) if info.min <= v], dtype)
    shifts = np.array([s for s in (0, 1, 3, bits - 1, bits, bits + 3, -1) if s >= info.min], dtype)
    x, y = np.meshgrid(values, shifts)
    want = fn(x, y)
    for _ in range(2):
        _check(f(x, y), want)


@pytest.mark.parametrize(
    "dtype",
    [
        pytest.param(d, id=np.dtype(d).name, marks=() if np.dtype(d).name in QUICK else SLOW)
        for d in [np.bool_, *INTS]
    ],
)
def test_invert_and_bitwise_of_bools_and_ints(dtype: Any) -> None:
    f = ge.jit(lambda x, y: (np.invert(x), np.bitwise_and(x, y), np.bitwise_xor(x, y)))
    x = np.array([0, 1, 1, 0, 5, 255, 127], np.int64).astype(dtype)
    y = np.array([0, 0, 1, 1, 3, 15, 64], np.int64).astype(dtype)
    for _ in range(2):
        for got, want in zip(f(x, y), (~x, x & y, x ^ y), strict=True):
            _check(got, want)


def test_half_precision_computes_in_float32() -> None:
    f = ge.jit(lambda x: (np.expm1(x), np.isnan(x)))
    x = np.array([0.5, -1.0, np.nan, 2.0], np.float16)
    got, nan = f(x)
    _check(got, np.expm1(x.astype(np.float32)).astype(np.float16), tight=False)
    _check(nan, np.isnan(x))


def test_float_only_op_refuses_an_int_in_the_graph_api() -> None:
    from ge.error import GeError
    from ge.ops import get_op

    assert ge.graph.DataType.DT_INT32 not in get_op("Atan2").inputs[0].dtypes
    with pytest.raises(GeError):
        ge.jit(lambda x, y: np.left_shift(x, y))(  # noqa: PLW0108
            np.ones(2, np.float32), np.ones(2, np.float32)
        )


_OPERATORS = (
    lambda x, y: x & y,
    lambda x, y: x | y,
    lambda x, y: x ^ y,
    lambda x, y: x << y,
    lambda x, y: x >> y,
    lambda x, y: ~x,
    lambda x, y: 3 ^ x,
    lambda x, y: 1 << y,
    lambda x, y: x & 6,
)


@pytest.mark.parametrize("index", range(len(_OPERATORS)))
def test_bitwise_operators_are_numpys_on_ints(index: int) -> None:
    fn = _OPERATORS[index]
    a = np.array([[5, -3, 7, 0]], np.int32)
    b = np.array([[1], [2], [31]], np.int64)
    got, want = ge.jit(fn)(a, b), fn(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_bitwise_operators_on_bools_stay_bool() -> None:
    m = np.array([True, False, True, False])
    for fn in (lambda x: x & x[::-1], lambda x: ~x, lambda x: x ^ True, lambda x: x | x[::-1]):
        got, want = ge.jit(fn)(m), fn(m)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, want)


def test_ge_py_holders_keep_logical_and_and_no_xor() -> None:
    from ge.es import GraphBuilder

    b = GraphBuilder("g")
    x = b.create_input(0, data_type=ge.graph.DataType.DT_BOOL, shape=[2])
    graph = b.build_and_reset([x & x])
    assert "LogicalAnd" in [node.type for node in graph.get_all_nodes()]
    with pytest.raises(TypeError):
        x ^ x
