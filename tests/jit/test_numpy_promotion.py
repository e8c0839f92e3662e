"""Inside ``@ge.jit`` traced values follow numpy >= 2's dtype rules (NEP 50); an ES holder keeps
GE-PY's. numpy itself is the oracle: each case runs the same function on numpy arrays and
through ``ge.jit`` and compares values, dtype and shape. One jitted function per operand
combination computes every operator at once (one trace per case keeps the table fast); an
operator numpy refuses for the combination is checked to raise the same exception type.
"""

from __future__ import annotations

import functools
import itertools
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.es import GraphBuilder
from ge.ops.interpreter import eval_graph

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")
SCALARS: tuple[Any, ...] = (2, -3, 2.5, -1.5, True)

Fn = Callable[..., Any]
BINARY: dict[str, Fn] = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
    "//": lambda x, y: x // y,
    "%": lambda x, y: x % y,
    "**": lambda x, y: x ** abs(y),  # numpy refuses negative integer powers at run time
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "np.add": np.add,
    "np.true_divide": np.true_divide,
    "np.floor_divide": np.floor_divide,
    "np.remainder": np.remainder,
    "np.maximum": np.maximum,
    "np.where": lambda x, y: np.where(x > y, x, y),
}
SCALAR_OPS: dict[str, Fn] = {**BINARY, "**": lambda x, y: x**y}  # a weak exponent as is
UNARY: dict[str, Fn] = {"-x": lambda x: -x, "abs": abs, "np.negative": np.negative}
REDUCTIONS: dict[str, Fn] = {
    "np.sum": np.sum,
    "np.sum_axis": lambda x: np.sum(x, axis=1),
    "np.prod": np.prod,
    "np.prod_axis_keepdims": lambda x: np.prod(x, axis=0, keepdims=True),
    "np.mean": np.mean,
    "np.mean_axis": lambda x: np.mean(x, axis=-1),
    "np.max": np.max,
    "np.min_axis": lambda x: np.min(x, axis=0),
    "x.sum": lambda x: x.sum(),
    "x.prod_axis": lambda x: x.prod(axis=1),
    "x.mean": lambda x: x.mean(),
    "x.max_axis": lambda x: x.max(axis=1),
}


def draw(dtype: str, shape: tuple[int, ...], key: str) -> np.ndarray:
    """Small values (integer powers stay in int8), zeros included, floats on a 0.25 grid."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, 4, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    return (rng.integers(-12, 13, size=shape) / 4).astype(dtype)


def tolerance(dtype: np.dtype[Any]) -> float:
    return {"e": 2e-3, "f": 1e-6, "d": 1e-12}.get(dtype.char, 0.0)


def numpy_results(ops: dict[str, Fn], *args: Any) -> tuple[dict[str, Any], dict[str, type]]:
    """numpy's result per op, and the exception type of each op numpy refuses."""
    results: dict[str, Any] = {}
    refused: dict[str, type] = {}
    for name, fn in ops.items():
        try:
            with np.errstate(all="ignore"):
                results[name] = np.asarray(fn(*args))
        except (TypeError, ValueError, OverflowError) as error:
            refused[name] = type(error)
    return results, refused


def assert_like_numpy(name: str, actual: Any, expected: np.ndarray) -> None:
    assert isinstance(actual, np.ndarray), f"{name}: got a {type(actual).__name__}"
    assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    tol = tolerance(expected.dtype)
    np.testing.assert_allclose(
        actual.astype(np.float64),
        expected.astype(np.float64),
        rtol=tol,
        atol=tol,
        equal_nan=True,
        err_msg=name,
    )


def check(ops: dict[str, Fn], *args: Any, compiled: bool = False) -> None:
    """``ge.jit`` of every op numpy computes on ``args`` matches it; a refused op raises.
    The traced graph runs on the reference interpreter (the dtypes and shapes are the
    trace's; compiling hundreds of dtype combinations would take minutes), or ``compiled``."""
    expected, refused = numpy_results(ops, *args)
    names = list(expected)
    jitted = ge.jit(lambda *xs: tuple(ops[n](*xs) for n in names))
    actual = jitted(*args) if compiled else eval_graph(jitted.trace(*args), list(args))
    for name, value in zip(names, actual, strict=True):
        assert_like_numpy(name, value, expected[name])
    for name, error in refused.items():
        with pytest.raises(error):
            ge.jit(ops[name]).trace(*args)


@pytest.mark.parametrize(("left", "right"), list(itertools.product(DTYPES, DTYPES)))
def test_array_with_array(left: str, right: str) -> None:
    x = draw(left, (2, 3), f"{left}-{right}-x")
    y = draw(right, (3,), f"{left}-{right}-y")  # broadcast
    check(BINARY, x, y)


def _right(fn: Fn, scalar: Any, x: Any) -> Any:
    return fn(x, scalar)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("side", ["array_first", "scalar_first"])
def test_array_with_python_scalar(dtype: str, scalar: Any, side: str) -> None:
    x = draw(dtype, (4,), f"{dtype}-{scalar}")
    if side == "array_first":
        ops = {n: functools.partial(_right, f, scalar) for n, f in SCALAR_OPS.items()}
    else:
        ops = {n: functools.partial(f, scalar) for n, f in BINARY.items()}
    check(ops, x)


@pytest.mark.parametrize(
    ("left", "right"),
    [("int32", "float32"), ("int8", "uint8"), ("bool", "int16"), ("float16", "int64")],
)
def test_zero_d_operands(left: str, right: str) -> None:
    check(BINARY, draw(left, (), "a"), draw(right, (), "b"))  # 0-d with 0-d
    check(BINARY, draw(left, (), "c"), draw(right, (2, 2), "d"))  # 0-d with an array


@pytest.mark.parametrize(("left", "right"), [("int8", "float16")])
def test_compiled_kernels_agree(left: str, right: str) -> None:
    """The compiled plan (fused kernels, not the interpreter) gives numpy's results too."""
    check(BINARY, draw(left, (2, 3), "x"), draw(right, (3,), "y"), compiled=True)
    check(REDUCTIONS, draw(left, (3, 4), "r"), compiled=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(dtype: str) -> None:
    check(UNARY, draw(dtype, (2, 3), dtype))
    check(UNARY, draw(dtype, (), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions(dtype: str) -> None:
    check(REDUCTIONS, draw(dtype, (3, 4), dtype))


def test_reduction_with_a_dtype_keeps_it() -> None:
    x = draw("int8", (3, 4), "dtype")
    traced = ge.jit(lambda v: (np.sum(v, dtype=np.int8), v.mean(dtype=np.float32))).trace(x)
    out = eval_graph(traced, [x])
    assert_like_numpy("sum", out[0], np.asarray(np.sum(x, dtype=np.int8)))
    assert_like_numpy("mean", out[1], np.asarray(x.mean(dtype=np.float32)))


# --- the cases the issue names, spelled out -------------------------------------------------------
def test_the_silent_wrong_results_of_issue_16() -> None:
    i = np.array([7, -7, 1, 0], np.int32)
    j = np.array([2, 2, -4, 3], np.int32)
    f = np.array([0.5, 1.5, -2.0, 3.0], np.float32)
    div, mixed, total = ge.jit(lambda a, b, c: (a / b, a + c, np.sum(a)))(i, j, f)
    assert div.dtype == np.float64
    np.testing.assert_array_equal(div, [3.5, -3.5, -0.25, 0.0])
    assert mixed.dtype == np.float64
    assert total.dtype == np.int64


def test_floor_division_and_modulo_take_the_divisor_sign() -> None:
    a = np.array([7, -7, 7, -7, 0, 5, -5], np.int64)
    b = np.array([2, 2, -2, -2, 3, 0, 0], np.int64)
    fns = (lambda x, y: x // y, lambda x, y: x % y, divmod)
    with np.errstate(divide="ignore", invalid="ignore"):
        for fn in fns:
            np.testing.assert_array_equal(ge.jit(fn)(a, b), fn(a, b))  # x // 0 == x % 0 == 0
            fa, fb = a.astype(np.float32) + 0.5, b.astype(np.float32)
            np.testing.assert_array_equal(ge.jit(fn)(fa, fb), fn(fa, fb))  # inf and nan at 0


def test_weak_python_ints_that_do_not_fit() -> None:
    x = np.array([1, -2], np.int8)
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        ge.jit(lambda v: v + 300)(x)
    compared = ge.jit(lambda v: (v < 1000, v > -(2**70), v == 2**64))(x)
    for actual, expected in zip(compared, (x < 1000, x > -(2**70), x == 2**64), strict=True):
        assert_like_numpy("compare", actual, expected)


def test_refused_bool_arithmetic_says_what_numpy_says() -> None:
    b = np.array([True, False])
    with pytest.raises(TypeError, match="boolean subtract"):
        ge.jit(lambda v: v - v)(b)
    with pytest.raises(TypeError, match="boolean negative"):
        ge.jit(lambda v: -v)(b)
    with pytest.raises(ValueError, match="negative integer powers"):
        ge.jit(lambda v: v**-1)(np.array([2], np.int32))


def test_numpy_functions_promote() -> None:
    i = np.array([[1, 2], [3, 4]], np.int32)
    f = np.array([[0.5, 1.0], [1.5, 2.0]], np.float32)
    fns: dict[str, Fn] = {
        "concatenate": lambda a, b: np.concatenate([a, b]),
        "stack": lambda a, b: np.stack([a, b]),
        "matmul": lambda a, b: a @ b,
        "where_scalar": lambda a, b: np.where(a > 2, a, 0.5),
        "clip": lambda a, b: np.clip(a, 1.5, 3.5),
        "exp_of_int": lambda a, b: np.exp(a),
        "sqrt_of_int8": lambda a, b: np.sqrt(a.astype(np.int8)),
    }
    check(fns, i, f)


def test_control_flow_subgraphs_follow_numpy() -> None:
    @ge.jit
    def halve(x: Any, flag: Any) -> Any:
        return ge.jit.cond(flag, lambda a: a / 2, lambda a: a * 0.5, x)

    out = halve(np.array([3, 4], np.int32), np.array(True))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.5, 2.0])

    @ge.jit
    def count(n: Any) -> Any:
        return ge.jit.while_loop(lambda s: s[0] > 1, lambda s: (s[0] // 2, s[1] + 1), (n, 0))[1]

    assert count(np.array(37, np.int32)) == 5


# --- an ES TensorHolder keeps GE-PY's rules -----------------------------------------------------
def test_es_holders_keep_ge_rules() -> None:
    builder = GraphBuilder("es_rules")
    assert builder._numpy_semantics is False
    i = builder.create_input(0, shape=[4], data_type=ge.DataType.DT_INT32)
    j = builder.create_input(1, shape=[4], data_type=ge.DataType.DT_INT32)
    f = builder.create_input(2, shape=[4], data_type=ge.DataType.DT_FLOAT)
    i8 = builder.create_input(3, shape=[4], data_type=ge.DataType.DT_INT8)
    assert (i / j).data_type == ge.DataType.DT_INT32  # GE-PY's Div
    assert (i / j)._node.type == "Div"
    assert (i + f).data_type == ge.DataType.DT_FLOAT  # not numpy's float64
    assert i.sum().data_type == ge.DataType.DT_INT32  # not numpy's int64
    assert (i8 + 1.5).data_type == ge.DataType.DT_FLOAT  # GE-PY's float constant
    assert np.divide(i, j).data_type == ge.DataType.DT_FLOAT  # float32 true division
    with pytest.raises(TypeError):
        i // j  # GE-PY's holders have no floor division
    with pytest.raises(TypeError):
        i % 2
