"""numpy's remaining ufuncs, ufunc methods, np.select/argmin/nan*, ndarray methods and
np.linalg.cholesky/solve under ``ge.jit``, against numpy (issue #16)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import ge
from ge.compiler import background
from ge.compiler.kernels import _codegen
from ge.error import GeTypeError, GeValueError
from ge.es import tensor_holder

EDGE = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0, -8.0, 1e-7, np.nan, np.inf, -np.inf]
UNARY = [
    "cbrt", "deg2rad", "rad2deg", "degrees", "radians", "fabs", "signbit", "spacing",
    "positive", "conjugate", "conj", "rint", "fix", "sign", "nan_to_num",
]  # fmt: skip
BINARY = [
    "float_power", "fmax", "fmin", "heaviside", "logaddexp", "logaddexp2", "logical_xor",
    "nextafter", "fmod", "remainder", "floor_divide", "copysign",
]  # fmt: skip


class _NeverDone:
    def done(self) -> bool:
        return False


class _NoWorker:
    """A background compiler that never compiles: every trace runs on the reference path."""

    def submit(self, graph: Any, options: Any = None) -> _NeverDone:
        return _NeverDone()


@contextlib.contextmanager
def _never_cached() -> Iterator[None]:
    raise _codegen.KernelNotCached("no kernel is loaded or on disk")
    yield  # pragma: no cover


@pytest.fixture
def compiled() -> None:
    """Run this test's traces compiled (Numba kernels), not on the reference interpreter."""


@pytest.fixture(autouse=True)
def _reference_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules' numpy semantics (dtypes, shapes, values) are checked on ge.jit's reference
    path (the graph run by the numpy references), so the default tier compiles no kernels;
    tests that take the ``compiled`` fixture run the Numba kernels (the new ops' kernels are
    checked in tests/compiler)."""
    if "compiled" in request.fixturenames:
        return
    monkeypatch.setenv("GE_JIT_BACKGROUND", "1")
    monkeypatch.setattr(_codegen, "cached_only", _never_cached)
    monkeypatch.setattr(background, "compiler", _NoWorker)


def _check(got: Any, want: Any, rtol: float | None = None, zero_signs: bool = True) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        default = {2: 1e-3, 4: 1e-6}.get(want.dtype.itemsize, 1e-13)
        tol = rtol if rtol is not None else default
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
        exact = ~np.isnan(want) & (((want == 0) & zero_signs) | np.isinf(want))
        assert (np.signbit(got) == np.signbit(want))[exact].all()  # signed zeros, infinities
    else:
        np.testing.assert_array_equal(got, want)


def _same(fn: Callable[..., Any], *args: Any, rtol: float | None = None) -> None:
    """``ge.jit(fn)`` gives numpy's value, dtype and shape, or the GeError numpy's error is."""
    try:
        with np.errstate(all="ignore"):
            want = fn(*args)
    except (TypeError, ValueError) as error:
        kind = GeTypeError if isinstance(error, TypeError) else GeValueError
        with pytest.raises(kind):
            ge.jit(fn)(*args)
        return
    got = ge.jit(fn)(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            _check(g, w, rtol)
    else:
        _check(got, want, rtol)


# --- ufuncs ---------------------------------------------------------------------------------------
def _many(fns: list[Callable[..., Any]], *args: Any, rtol: float | None = None) -> None:
    """Each of ``fns`` on ``args``, all in one traced function, against numpy; those numpy
    refuses raise GeTypeError/GeValueError (TypeError/ValueError) on their own."""
    kept = []
    for fn in fns:
        try:
            with np.errstate(all="ignore"):
                fn(*args)
        except (TypeError, ValueError) as error:
            with pytest.raises(TypeError if isinstance(error, TypeError) else ValueError):
                ge.jit(fn)(*args)
            continue
        kept.append(fn)
    fns = kept
    with np.errstate(all="ignore"):
        wants = [fn(*args) for fn in fns]
    got = ge.jit(lambda *a: tuple(fn(*a) for fn in fns))(*args)
    for n, (g, w) in enumerate(zip(got, wants, strict=True)):
        try:
            _check(g, w, rtol)
        except AssertionError as error:
            raise AssertionError(f"function {n} of the list: {error}") from None


def _all_at_once(names: list[str], *args: np.ndarray) -> None:
    """Every ufunc of ``names`` on ``args`` in one traced function (one compile), against numpy;
    the ones numpy refuses (or gives a float16 step for) raise the matching GeError alone."""
    fns, refused = [], []
    for name in names:
        fn = getattr(np, name)
        try:
            with np.errstate(all="ignore"):
                want = fn(*args)
        except (TypeError, ValueError):
            refused.append(fn)
            continue
        half_step = name in ("spacing", "nextafter") and np.asarray(want).dtype == np.float16
        (refused if half_step else fns).append(fn)
    got = ge.jit(lambda *a: tuple(fn(*a) for fn in fns))(*args)
    with np.errstate(all="ignore"):
        wants = [fn(*args) for fn in fns]
    for fn, g, w in zip(fns, got, wants, strict=True):
        try:  # numpy's fmax/fmin of +-0.0 depend on its SIMD path: either zero is right
            _check(g, w, zero_signs=fn not in (np.fmax, np.fmin))
        except AssertionError as error:
            raise AssertionError(f"np.{fn.__name__}: {error}") from None
    for fn in refused:
        with pytest.raises(GeTypeError):
            ge.jit(lambda *a, f=fn: f(*a))(*args)


def _values(dtype: Any) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return np.array(EDGE, dtype)
    if np.dtype(dtype).kind == "b":
        return np.array([True, False, True])
    if np.dtype(dtype).kind == "u":
        return np.array([0, 1, 2, 7, 12, 5, 255], np.int64).astype(dtype)
    return np.array([0, 1, -1, 2, -3, 7, 12, -12, 5], np.int64).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_unary_ufuncs(dtype: Any) -> None:
    _all_at_once(UNARY, _values(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int64])
def test_unary_ufuncs_more_dtypes(dtype: Any) -> None:
    x = _values(dtype)
    _all_at_once(UNARY, x[::2])


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_binary_ufuncs(dtype: Any) -> None:
    grid = _values(dtype)
    x, y = np.meshgrid(grid, grid)
    _all_at_once(BINARY, x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.bool_])
def test_binary_ufuncs_more_dtypes(dtype: Any) -> None:
    grid = _values(dtype)
    _all_at_once(BINARY, grid[:, None], grid[None, ::2])


def test_unary_odd_shapes() -> None:
    f = ge.jit(lambda v: (np.cbrt(v), np.signbit(v), np.deg2rad(v), np.spacing(v)))
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    for value in (np.float64(-2.0), x[:0], x[:, ::2], x.T):
        got = f(value)
        want = (np.cbrt(value), np.signbit(value), np.deg2rad(value), np.spacing(value))
        for g, w in zip(got, want, strict=True):
            _check(g, w)


_MIXED = [
    lambda a, b: np.float_power(a, 2),  # an int8 array to a Python int: float64
    lambda a, b: np.fmax(a, 1.5),  # a weak float keeps float32
    lambda a, b: np.heaviside(b, 0.5),
    lambda a, b: np.logaddexp(b, b[:, :1]),
    lambda a, b: np.ldexp(b, a),
    lambda a, b: np.ldexp(b, 3),
    lambda a, b: np.gcd(a, a[:1]),
    lambda a, b: np.lcm(a, 4),
    lambda a, b: np.nextafter(b, 0.0),
    np.logical_xor,
    lambda a, b: np.fmin(b, np.float64(2.0)),  # a numpy scalar is strong: float64
]


def test_mixed_dtypes_and_weak_scalars() -> None:
    a = np.array([[3, -4, 0], [6, 9, -2]], np.int8)
    b = np.array([[1.5, -0.0, np.nan], [0.0, -2.0, 3.0]], np.float32)
    _many(_MIXED, a, b)


def test_logaddexp_infinities_and_large_gaps() -> None:
    x = np.array([-np.inf, np.inf, -np.inf, 1000.0, -1000.0, 1e-300, np.nan])
    y = np.array([-np.inf, np.inf, np.inf, 1000.0, 0.0, 1e-300, 0.0])
    _same(lambda a, b: (np.logaddexp(a, b), np.logaddexp2(a, b)), x, y)


def test_gcd_lcm_of_ints() -> None:
    info = np.iinfo(np.int32)
    a = np.array([0, 0, 12, -12, 7, info.max, -36, 1], np.int32)
    b = np.array([0, 5, 18, 18, -21, 3, -48, info.min + 1], np.int32)
    _same(lambda x, y: (np.gcd(x, y), np.lcm(x, y)), a, b)


def test_nextafter_steps_and_specials() -> None:
    x = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 5e-324, np.nan, 2.0, 1.7e308])
    y = np.array([1.0, -1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, np.inf])
    for dtype in (np.float32, np.float64):
        with np.errstate(all="ignore"):
            _same(lambda a, b: np.nextafter(a, b), x.astype(dtype), y.astype(dtype))  # noqa: PLW0108


def test_half_precision_steps_are_refused() -> None:
    h = np.ones(3, np.float16)
    for fn in (lambda v: np.nextafter(v, v), lambda v: np.spacing(v)):  # noqa: PLW0108
        with pytest.raises(GeTypeError, match="float16"):
            ge.jit(fn)(h)
    _same(lambda v: np.cbrt(v), np.array([8.0, -27.0, 2.0], np.float16), rtol=1e-3)  # noqa: PLW0108


def test_numpys_refusals_are_ge_type_errors() -> None:
    with pytest.raises(GeTypeError, match="gcd"):
        ge.jit(lambda v: np.gcd(v, v))(np.ones(2))
    with pytest.raises(GeTypeError, match="positive"):
        ge.jit(lambda v: np.positive(v))(np.ones(2, bool))  # noqa: PLW0108


def test_composites_have_no_meaning_on_ge_py_holders() -> None:
    from ge.es import GraphBuilder

    x = GraphBuilder("g").create_input(0, shape=[2])
    with pytest.raises(TypeError):
        np.fmax(x, x)
    with pytest.raises(TypeError):
        np.add.reduce(x)


# --- ufunc methods --------------------------------------------------------------------------------
_X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
_I8 = (np.arange(12, dtype=np.int8).reshape(3, 4) * 37) % 11 - 5
_MASK = _I8 % 3 == 0
_REDUCE_KWARGS = [
    {},
    {"axis": None},
    {"axis": 1},
    {"axis": -1, "keepdims": True},
    {"axis": (0, 1)},
    {"axis": ()},
    {"dtype": np.float64},
]


@pytest.mark.parametrize(
    "ufunc",
    [np.add, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or, np.subtract],
    ids=lambda u: u.__name__,
)
def test_reduce(ufunc: np.ufunc) -> None:
    fns = [
        lambda *a, k=kwargs, n=n: ufunc.reduce(a[n], **k)
        for kwargs in _REDUCE_KWARGS
        for n in range(3)
    ]
    _many(fns, _X, _I8, _MASK)


def test_reduce_generic_fold_and_its_limits() -> None:
    _same(lambda a: (np.bitwise_or.reduce(a, axis=(0, 1)), np.bitwise_xor.reduce(a)), _I8)
    _same(lambda a: (np.subtract.reduce(a, axis=1), np.divide.reduce(a, axis=-1)), _X)
    _same(lambda a: np.power.reduce(a, axis=0, keepdims=True), _X[:, :2] / 10)
    with pytest.raises(GeValueError, match="not reorderable"):
        ge.jit(lambda a: np.subtract.reduce(a, axis=None))(_X)
    with pytest.raises(GeValueError, match="at most 256"):
        ge.jit(np.subtract.reduce)(np.ones(300))
    with pytest.raises(GeValueError, match="no identity"):
        ge.jit(lambda a: np.maximum.reduce(a, axis=0))(np.ones((0, 2)))
    _same(lambda a: np.add.reduce(a, axis=0), np.ones((0, 2)))  # add has an identity


def test_reduce_of_0d_and_bad_arguments() -> None:
    _same(lambda a: np.add.reduce(a, axis=None), np.float64(3.0))
    with pytest.raises(GeValueError, match="axis 2 is out of bounds"):
        ge.jit(lambda a: np.add.reduce(a, axis=2))(_I8)
    with pytest.raises(GeTypeError, match=r"\bout\b"):
        ge.jit(lambda a: np.add.reduce(a, out=a))(_I8)
    with pytest.raises(GeTypeError, match="initial"):
        ge.jit(lambda a: np.maximum.reduce(a, initial=0))(_I8)
    with pytest.raises(ValueError, match="binary"):  # numpy's own check, before dispatch
        ge.jit(np.exp.reduce)(_X)


def test_outer() -> None:
    a, b = np.abs(_I8[0]), np.array([[1, 2], [3, 0]], np.int16)
    fns = []
    for u in (np.add, np.multiply, np.subtract, np.maximum, np.less, np.power, np.fmax, np.gcd):
        fns += [
            lambda x, y, u=u: u.outer(x, y),
            lambda x, y, u=u: u.outer(y, x),
            lambda x, y, u=u: u.outer(x, np.array([2, 3])),  # a constant operand
            lambda x, y, u=u: u.outer([2.5, 3], y),
            lambda x, y, u=u: u.outer(x[0], x),  # a 0-d operand
        ]
    _many(fns, a, b)


def test_accumulate_matches_numpy_or_says_cumsum_is_missing() -> None:
    for ufunc in (np.add, np.multiply):
        for arr, axis in ((_X, 0), (_X, -1), (_I8, 1), (_MASK, 0)):
            fn = lambda a, u=ufunc, ax=axis: u.accumulate(a, axis=ax)  # noqa: E731
            scan = "cumsum" if ufunc is np.add else "cumprod"
            if scan in tensor_holder._FUNCTIONS:
                _same(fn, arr)
            else:
                with pytest.raises(GeTypeError, match=f"np.{scan}"):
                    ge.jit(fn)(arr)


@pytest.mark.parametrize(
    ("fn", "method"),
    [
        (np.maximum.accumulate, "maximum.accumulate"),
        (lambda a: np.add.reduceat(a, [0, 1]), "add.reduceat"),
        (lambda a: np.add.at(a, [0], 1.0), "add.at"),
    ],
)
def test_unsupported_ufunc_methods_name_the_method(fn: Callable[..., Any], method: str) -> None:
    with pytest.raises(GeTypeError, match=method.replace(".", r"\.")):
        ge.jit(fn)(np.ones(4))


# --- argmin, select, nan reductions, round --------------------------------------------------------
@pytest.mark.parametrize(
    "arr",
    [
        _X,
        _I8,
        _MASK,
        np.array([3.0, np.nan, -1.0, np.nan]),
        np.array([2, 0, 0, 2], np.uint8),
        np.array(np.iinfo(np.int64).min),
        _X[:, ::2].T,
    ],
    ids=["f32", "i8", "bool", "nan", "u8-ties", "0d-int-min", "strided"],
)
def test_argmin(arr: np.ndarray) -> None:
    fns = [np.argmin, lambda a: a.argmin(), lambda a: np.argmin(a, keepdims=True)]
    for axis in range(-arr.ndim, arr.ndim):
        fns += [
            lambda a, ax=axis: np.argmin(a, axis=ax),
            lambda a, ax=axis: np.argmin(a, axis=ax, keepdims=True),
        ]
    _many(fns, arr)


def test_argmin_errors() -> None:
    with pytest.raises(GeValueError, match="empty sequence"):
        ge.jit(lambda a: np.argmin(a))(np.ones(0))  # noqa: PLW0108
    with pytest.raises(GeValueError, match="out of bounds"):
        ge.jit(lambda a: np.argmin(a, axis=3))(_X)
    with pytest.raises(GeTypeError, match="out"):
        ge.jit(lambda a: np.argmin(a, out=a))(_X)


_SELECTS = [
    lambda a, b: np.select([a < 0, a > 3], [a, a * 2], 7),
    lambda a, b: np.select([a < 0, a < 5], [a, b]),  # overlapping: the first wins
    lambda a, b: np.select([b > 0], [1.5], default=-1),
    lambda a, b: np.select([a > 0, b > 1], [a.astype(np.int8), 2]),
    lambda a, b: np.select([a[:1] > 0], [b], default=np.float32(0.5)),  # broadcast
]


def test_select() -> None:
    a = np.array([[-2.0, 0.0, 4.0], [1.0, 6.0, -5.0]], np.float32)
    b = np.array([[1, 2, 3]], np.int64)
    _many(_SELECTS, a, b)


def test_select_errors() -> None:
    x = np.arange(3)
    with pytest.raises(GeTypeError, match="invalid entry 0 in condlist"):
        ge.jit(lambda a: np.select([a], [a]))(x)
    with pytest.raises(GeValueError, match="same length"):
        ge.jit(lambda a: np.select([a > 0, a > 1], [a]))(x)
    with pytest.raises(ValueError, match="empty"):  # no traced argument: numpy's own error
        ge.jit(lambda a: np.select([], [], a))(x)


@pytest.mark.parametrize("name", ["nanmax", "nanmin", "nansum", "nanprod", "nanmean"])
def test_nan_reductions(name: str) -> None:
    fn = getattr(np, name)
    n = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [-2.0, 5.0, np.inf]], np.float32)
    with (
        np.errstate(all="ignore"),
        pytest.warns(RuntimeWarning)
        if name
        in (
            "nanmax",
            "nanmin",
            "nanmean",
        )
        else _no_warning(),
    ):
        want = (fn(n, axis=1), fn(n[0]), fn(n, axis=0, keepdims=True))
    got = ge.jit(lambda a: (fn(a, axis=1), fn(a[0]), fn(a, axis=0, keepdims=True)))(n)
    for g, w in zip(got, want, strict=True):
        _check(g, w)
    _same(lambda a: fn(a, axis=-1), _I8)
    if name in ("nansum", "nanprod", "nanmean"):
        _same(lambda a: fn(a, dtype=np.float64), n[0])


class _no_warning:  # noqa: N801  (a context manager used like pytest.warns)
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round(decimals: int) -> None:
    x = np.array([1.25, -2.675, 0.5, 1.5, -0.5, 123.456, np.nan, -np.inf], np.float64)
    _same(lambda a: (np.round(a, decimals), a.round(decimals), np.around(a, decimals)), x)
    _same(lambda a: np.round(a, decimals), x.astype(np.float32), rtol=1e-6)
    if decimals >= 0:
        _same(lambda a: np.round(a, decimals), _I8)
    else:
        with pytest.raises(GeValueError, match="decimals >= 0"):
            ge.jit(lambda a: np.round(a, decimals))(_I8)


# --- ndarray methods ------------------------------------------------------------------------------
_METHODS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("argmin", (), {"axis": 1}),
    ("round", (1,), {}),
    ("clip", (-1, 3), {}),
    ("conj", (), {}),
    ("conjugate", (), {}),
    ("trace", (), {}),
    ("diagonal", (), {"offset": 1}),
    ("repeat", (2,), {"axis": 0}),
    ("squeeze", (), {}),
    ("swapaxes", (0, 1), {}),
    ("take", ([0, 2],), {"axis": 1}),
    ("var", (), {"axis": 0}),
    ("std", (), {"ddof": 1}),
    ("all", (), {"axis": 1}),
    ("any", (), {}),
    ("ravel", (), {}),
    ("flatten", (), {}),
    ("cumsum", (), {"axis": 0}),
    ("cumprod", (), {}),
    ("sort", (), {"axis": 0}),
    ("argsort", (), {}),
]


def test_ndarray_methods() -> None:
    x = np.array([[3.0, -1.5, 2.0], [0.5, 4.0, -2.0]], np.float32)
    supported, missing = [], []
    for name, args, kwargs in _METHODS:
        function = "ravel" if name == "flatten" else name
        fn = lambda a, n=name, p=args, k=kwargs: getattr(a, n)(*p, **k)  # noqa: E731
        if name == "sort":
            continue  # in place: test_sort_method_sorts_in_place
        if function in ("conj", "conjugate") or function in tensor_holder._FUNCTIONS:
            supported.append(fn)
        else:
            missing.append((fn, function))
    _many(supported, x)
    for fn, function in missing:  # no rule for the function yet: the method names it
        with pytest.raises(GeTypeError, match=rf"np\.{function}\b"):
            ge.jit(fn)(x)


def test_sort_method_sorts_in_place() -> None:
    def fn(a: Any) -> Any:
        b = a * 2
        b.sort(axis=0)
        a.sort()
        return b

    x = np.array([[3.0, -1.5, 2.0], [0.5, 4.0, -2.0]], np.float32)
    if "sort" not in tensor_holder._FUNCTIONS:
        with pytest.raises(GeTypeError, match=r"np\.sort"):
            ge.jit(fn)(x.copy())
        return
    got_x, want_x = x.copy(), x.copy()
    _check(ge.jit(fn)(got_x), fn(want_x))
    _check(got_x, want_x)  # the argument was sorted in place, as numpy's


def test_dot_and_ptp_methods() -> None:
    a = np.arange(6.0).reshape(2, 3)
    _same(lambda x: (x.dot(x.T), x[0].dot(x[1])), a)
    got = ge.jit(lambda x: (x.ptp(), x.ptp(axis=1)))(a)  # numpy 2's ndarray has no ptp
    _check(got[0], np.ptp(a))
    _check(got[1], np.ptp(a, axis=1))


@pytest.mark.parametrize("name", ["item", "tolist"])
def test_methods_that_need_values_are_refused(name: str) -> None:
    with pytest.raises(GeTypeError, match=rf"{name}\(\)"):
        ge.jit(lambda a: getattr(a, name)())(np.ones(1))


def test_nonzero_method_is_refused_with_a_hint() -> None:
    with pytest.raises(GeValueError, match=r"np\.where"):
        ge.jit(lambda a: a.nonzero())(np.ones(3))


# --- np.linalg ------------------------------------------------------------------------------------
def _spd(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=shape)
    return np.asarray(m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_cholesky(dtype: Any) -> None:
    x = _spd((2, 4, 4)).astype(dtype) + (4 * np.eye(4, dtype=dtype) if dtype is np.int64 else 0)
    rtol = 1e-4 if dtype is np.float32 else 1e-10
    _same(lambda a: np.linalg.cholesky(a), x, rtol=rtol)  # noqa: PLW0108
    _same(lambda a: np.linalg.cholesky(a, upper=True), x[0], rtol=rtol)
    _same(lambda a: np.linalg.cholesky(a), x[0, :1, :1], rtol=rtol)  # noqa: PLW0108


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan() -> None:
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(bad)
    got = ge.jit(lambda a: np.linalg.cholesky(a))(np.stack([bad, np.eye(2) * 4]))  # noqa: PLW0108
    assert np.isnan(got[0]).all()
    np.testing.assert_array_equal(got[1], np.eye(2) * 2)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1)), ((2, 1, 3, 3), (4, 3, 2))],
)
def test_solve(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(a_shape))
    a = rng.normal(size=a_shape) + 3 * np.eye(a_shape[-1])
    b = rng.normal(size=b_shape)
    _same(lambda x, y: np.linalg.solve(x, y), a, b, rtol=1e-9)  # noqa: PLW0108
    _same(lambda x, y: np.linalg.solve(x, y), a.astype(np.float32), b, rtol=1e-9)  # noqa: PLW0108
    _same(
        lambda x, y: np.linalg.solve(x, y),  # noqa: PLW0108
        a.astype(np.float32),
        b.astype(np.float32),
        rtol=1e-4,
    )


def test_linalg_of_0_size_inputs() -> None:
    _same(np.linalg.cholesky, np.zeros((0, 2, 2)))
    _same(np.linalg.cholesky, np.zeros((0, 0)))
    _same(np.linalg.solve, np.zeros((0, 2, 2)), np.zeros((0, 2, 1)))
    _same(np.linalg.solve, np.eye(2), np.zeros((2, 0)))


def test_solve_of_a_singular_matrix_is_nan() -> None:
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(np.ones((2, 2)), np.ones(2))
    got = ge.jit(lambda a, b: np.linalg.solve(a, b))(  # noqa: PLW0108
        np.stack([np.ones((2, 2)), np.eye(2)]), np.ones((2, 2, 1))
    )
    assert np.isnan(got[0]).all()
    np.testing.assert_array_equal(got[1], np.ones((2, 1)))


def test_linalg_bad_input() -> None:
    with pytest.raises(GeValueError, match="square"):
        ge.jit(lambda a: np.linalg.cholesky(a))(np.ones((2, 3)))  # noqa: PLW0108
    with pytest.raises(GeValueError, match="at least 2-dimensional"):
        ge.jit(lambda a: np.linalg.cholesky(a))(np.ones(3))  # noqa: PLW0108
    with pytest.raises(GeValueError, match="3 rows"):
        ge.jit(lambda a, b: np.linalg.solve(a, b))(np.eye(3), np.ones((2, 1)))  # noqa: PLW0108
    with pytest.raises(GeValueError, match="broadcast"):
        ge.jit(lambda a, b: np.linalg.solve(a, b))(  # noqa: PLW0108
            np.ones((2, 3, 3)), np.ones((3, 3, 1))
        )
    with pytest.raises(GeTypeError, match="float16"):
        ge.jit(lambda a: np.linalg.cholesky(a))(np.eye(2, dtype=np.float16))  # noqa: PLW0108
    with pytest.raises(TypeError, match="lower"):  # numpy's dispatcher refuses it first
        ge.jit(lambda a: np.linalg.cholesky(a, lower=True))(np.eye(2))


# --- the compiled path ----------------------------------------------------------------------------
def test_compiled_linalg(compiled: None) -> None:
    a = _spd((2, 3, 3))
    b = np.arange(6.0).reshape(2, 3, 1)
    _many([lambda x, y: np.linalg.cholesky(x), np.linalg.solve], a, b, rtol=1e-9)


@pytest.mark.slow
def test_compiled_composites(compiled: None) -> None:
    a = _spd((2, 3, 3))
    _many([np.logaddexp, np.fmax, lambda x, y: np.argmin(x, axis=1)], a, a[:, :1], rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_compiled_ufuncs(compiled: None, dtype: Any) -> None:
    _all_at_once(UNARY, _values(dtype))
    grid = _values(dtype)
    _all_at_once(BINARY, grid[:, None], grid[None, :])
