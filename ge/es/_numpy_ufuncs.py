"""numpy's composite ufuncs, the ufunc methods and a few selections on traced values (issue #16).

``UFUNCS`` maps a ufunc's ``__name__`` to a rule ``rule(anchor, *inputs)`` for the ufuncs that
are several ops (a one-op ufunc is found through its ``OpDef.ufunc``); ``FUNCTIONS`` maps a numpy
function's ``__name__`` to a rule in the form of ``ge.es._numpy_api``; ``ufunc_method`` builds
``np.<ufunc>.outer/.reduce/.accumulate``. ``TensorHolder`` merges the tables.

Every rule follows numpy's NEP 50 dtypes: numpy itself is the oracle (``resolve_dtypes`` for a
ufunc's loop, numpy's own result on zero-size arrays of the operand dtypes for ``select``,
``.reduce`` and ``.accumulate``). The composites are ``ge.jit``'s (numpy semantics): on GE-PY
holders they are not defined, and numpy raises its ``TypeError``. Decisions where numpy is
silent or a graph cannot follow it:

- ``fmax``/``fmin`` are numpy's ``(a >= b or isnan(b)) ? a : b``; ``heaviside`` gives ``x2``
  where ``x1 == 0`` and NaN for a NaN ``x1``; ``signbit`` reads the sign bit through
  ``CopySign`` (so ``-nan`` is negative, as numpy's); ``conjugate``/``positive`` of a real value
  are the value in the loop dtype.
- ``logaddexp(x, y)`` is ``max + log1p(exp(-|x - y|))`` (``x + log(2)`` where ``x == y``,
  so equal infinities stay infinite); ``logaddexp2`` the same in base 2.
- ``ldexp(x, n)`` is ``x * 2**h * 2**(n - h)`` with ``h = n // 2`` (exact products of powers
  of two; ``2**h`` overflowing the float type gives inf where numpy's result is finite only
  for ``|n|`` beyond twice the exponent range).
- ``nextafter``/``spacing`` of float16 raise ``GeTypeError`` (the step is a half-precision
  one, which the float32 compute type of half values cannot give); ``spacing(x)`` is
  ``nextafter(x, copysign(inf, x)) - x`` (NaN for infinities, as numpy's).
- ``.reduce`` of ``add/multiply/maximum/minimum/logical_and/logical_or`` is the matching
  reduction (numpy's dtype; ``maximum``/``minimum`` of an empty axis raise numpy's
  ``ValueError`` as ``GeValueError``); any other binary ufunc is folded left over the axis
  (unrolled: at most ``MAX_FOLD`` elements; a non-reorderable one takes one axis, numpy's rule).
  ``out``, ``where`` and ``initial`` raise ``GeTypeError`` naming them.
- ``.accumulate`` of ``add``/``multiply`` uses ``np.cumsum``/``np.cumprod`` when a rule for it is
  registered, else raises ``GeTypeError``; ``.at``, ``.reduceat`` and the accumulation of other
  ufuncs raise ``GeTypeError`` naming the method.
- ``np.select`` needs boolean conditions (numpy's ``TypeError`` as ``GeTypeError``); the first
  true condition wins. ``argmin`` finds the first minimum (the first NaN where there is one) as
  ``ArgMaxV2`` of an order-reversing map (``-x`` for floats, ``~x`` for integers).
- ``nanmax``/``nanmin`` of an all-NaN slice give NaN (numpy warns and gives NaN); ``nansum``,
  ``nanprod`` and ``nanmean`` treat NaN as 0/1/absent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es import _numpy_rules as rules
from ge.es._numpy_common import rule_registrar
from ge.es.tensor_holder import TensorHolder, innermost

__all__ = ["ACCUMULATORS", "FUNCTIONS", "MAX_FOLD", "METHOD_KEYWORDS", "UFUNCS", "ufunc_method"]

MAX_FOLD = 256  # the longest axis a generic ``.reduce`` unrolls

Rule = Callable[..., Any]
UFUNCS: dict[str, Rule] = {}
FUNCTIONS: dict[str, Rule] = {}
_LN2 = float(np.log(2.0))


# --- helpers -------------------------------------------------------------------------------------
def _c(x: TensorHolder, value: Any) -> TensorHolder:
    """A constant of ``x``'s dtype."""
    return x._operand(np.asarray(value).astype(x.dtype))


def _isnan(x: TensorHolder) -> TensorHolder:
    return x._op("NotEqual", x, x)


def _select(cond: TensorHolder, a: TensorHolder, b: TensorHolder) -> TensorHolder:
    return cond._op("SelectV2", cond, a, b)


def _or(a: TensorHolder, b: TensorHolder) -> TensorHolder:
    return a._op("LogicalOr", a, b)


def _composite(name: str) -> Callable[[Rule], Rule]:
    """Register ``body(*holders)`` as ``np.<name>``: the operands cast to numpy's loop dtypes,
    the result cast to the loop's output dtype; ``NotImplemented`` outside ge.jit."""

    def wrap(body: Rule) -> Rule:
        def rule(anchor: TensorHolder, *inputs: Any) -> Any:
            anchor = innermost(anchor, *inputs)
            if not anchor._builder._numpy_semantics:
                return NotImplemented
            dtypes = rules.loop_dtypes(name, *(rules.key(v) for v in inputs))
            holders = [rules.as_dtype(anchor, v, d) for v, d in zip(inputs, dtypes, strict=False)]
            return body(*holders).astype(dtypes[-1])

        UFUNCS[name] = rule
        return body

    return wrap


def _alias(name: str, *aliases: str) -> None:
    for alias in aliases:
        UFUNCS[alias] = UFUNCS[name]


# --- composite ufuncs ----------------------------------------------------------------------------
@_composite("deg2rad")
def _deg2rad(x: TensorHolder) -> TensorHolder:
    return x._op("Mul", x, _c(x, np.pi / 180.0))


@_composite("rad2deg")
def _rad2deg(x: TensorHolder) -> TensorHolder:
    return x._op("Mul", x, _c(x, 180.0 / np.pi))


_alias("deg2rad", "radians")
_alias("rad2deg", "degrees")


@_composite("fabs")
def _fabs(x: TensorHolder) -> TensorHolder:
    return x._op("Abs", x)


@_composite("float_power")
def _float_power(x: TensorHolder, y: TensorHolder) -> TensorHolder:
    return x._op("Pow", x, y)


def _nan_ignoring(compare: str) -> Rule:
    def body(a: TensorHolder, b: TensorHolder) -> TensorHolder:
        keep = a._op(compare, a, b)
        if a.dtype.kind == "f":
            keep = _or(keep, _isnan(b))
        return _select(keep, a, b)

    return body


_composite("fmax")(_nan_ignoring("GreaterEqual"))
_composite("fmin")(_nan_ignoring("LessEqual"))


@_composite("heaviside")
def _heaviside(x: TensorHolder, h0: TensorHolder) -> TensorHolder:
    zero, one = _c(x, 0), _c(x, 1)
    y = _select(x._op("Greater", x, zero), one, x)  # NaN stays NaN
    y = _select(x._op("Less", x, zero), zero, y)
    return _select(x._op("Equal", x, zero), h0, y)


@_composite("ldexp")
def _ldexp(x: TensorHolder, n: TensorHolder) -> TensorHolder:
    half = n._op("FloorDiv", n, _c(n, 2))
    rest = n._op("Sub", n, half)
    for power in (half, rest):
        x = x._op("Mul", x, x._op("Exp2", power.astype(x.dtype)))
    return x


def _log_add_exp(exp: str, log_of_two: float, scale: float) -> Rule:
    def body(x: TensorHolder, y: TensorHolder) -> TensorHolder:
        top = x._op("Maximum", x, y)
        gap = x._op("Neg", x._op("Abs", x._op("Sub", x, y)))
        tail = x._op("Log1p", x._op(exp, gap))
        if scale != 1.0:
            tail = tail._op("Mul", tail, _c(tail, scale))
        total = top._op("Add", top, tail)
        return _select(x._op("Equal", x, y), x._op("Add", x, _c(x, log_of_two)), total)

    return body


_composite("logaddexp")(_log_add_exp("Exp", _LN2, 1.0))
_composite("logaddexp2")(_log_add_exp("Exp2", 1.0, 1.0 / _LN2))


@_composite("logical_xor")
def _logical_xor(a: TensorHolder, b: TensorHolder) -> TensorHolder:
    return a._op("NotEqual", a.astype(np.bool_), b.astype(np.bool_))


@_composite("positive")
def _positive(x: TensorHolder) -> TensorHolder:
    return x


_composite("conjugate")(_positive)  # real values: the value, in conjugate's own loop dtype


@_composite("signbit")
def _signbit(x: TensorHolder) -> TensorHolder:
    sign = x._op("CopySign", _c(x, 1.0), x)
    return sign._op("Less", sign, _c(sign, 0.0))


@_composite("spacing")
def _spacing(x: TensorHolder) -> TensorHolder:
    rules.check_precision("spacing", x.dtype)
    away = x._op("CopySign", _c(x, np.inf), x)
    return x._op("Sub", x._op("NextAfter", x, away), x)


# --- ufunc methods -------------------------------------------------------------------------------
_REDUCERS = {  # ufunc -> the holder reduction whose numpy dtype rule .reduce shares
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}
ACCUMULATORS = {"add": "cumsum", "multiply": "cumprod"}
METHOD_KEYWORDS = {
    "outer": frozenset(),
    "reduce": frozenset({"axis", "dtype", "keepdims"}),
    "accumulate": frozenset({"axis", "dtype"}),
}


def ufunc_method(
    anchor: TensorHolder,
    ufunc: np.ufunc,
    method: str,
    inputs: Sequence[Any],
    kwargs: dict[str, Any],
) -> Any:
    """``np.<ufunc>.<method>(*inputs, **kwargs)`` on traced values."""
    name = ufunc.__name__
    if method not in METHOD_KEYWORDS:
        raise GeTypeError(
            f"np.{name}.{method} of a traced value is not supported (supported: "
            f"np.{name}.outer, .reduce, .accumulate)"
        )
    unknown = sorted(set(kwargs) - METHOD_KEYWORDS[method])
    if unknown:
        raise GeTypeError(f"np.{name}.{method} of a traced value does not take {unknown}")
    if ufunc.nin != 2 or ufunc.nout != 1:
        raise GeValueError(
            f"np.{name}.{method} needs a binary ufunc with one output; np.{name} takes "
            f"{ufunc.nin} inputs and gives {ufunc.nout} outputs"
        )
    return _METHODS[method](innermost(anchor, *inputs), ufunc, *inputs, **kwargs)


def _outer(anchor: TensorHolder, ufunc: np.ufunc, a: Any, b: Any) -> Any:
    x = rules.holder(anchor, a)
    ndim = b.ndim if isinstance(b, TensorHolder) else np.ndim(b)
    return ufunc(x.reshape(*x.shape, *([1] * ndim)), b)


def _axes(axis: Any, ndim: int, what: str) -> list[int]:
    items = (
        list(range(ndim))
        if axis is None
        else (list(axis) if isinstance(axis, (list, tuple)) else [axis])
    )
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise GeTypeError(f"{what}: axis must be an int, a tuple of ints or None, got {a!r}")
        if not -ndim <= int(a) < ndim:
            raise GeValueError(
                f"{what}: axis {int(a)} is out of bounds for array of dimension {ndim}"
            )
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise GeValueError(f"{what}: duplicate value in 'axis': {axis!r}")
    return out


@functools.cache
def _method_dtype(name: str, method: str, source: np.dtype[Any], dtype: Any) -> np.dtype[Any]:
    """numpy's result dtype of ``np.<name>.<method>`` on ``source`` (with ``dtype=``)."""
    try:
        result = getattr(getattr(np, name), method)(np.zeros(1, source), dtype=dtype)
    except TypeError as error:
        raise GeTypeError(f"np.{name}.{method} inside ge.jit follows numpy: {error}") from None
    dtype_: np.dtype[Any] = np.asarray(result).dtype
    return dtype_


def _reduce(
    anchor: TensorHolder,
    ufunc: np.ufunc,
    array: Any,
    axis: Any = 0,
    dtype: Any = None,
    keepdims: bool = False,
) -> TensorHolder:
    name, x = ufunc.__name__, rules.holder(anchor, array)
    what = f"np.{name}.reduce"
    axes = _axes(axis, x.ndim, what)
    result = _method_dtype(name, "reduce", x.dtype, None if dtype is None else np.dtype(dtype))
    if name in ("maximum", "minimum") and any(x.shape[a] == 0 for a in axes):
        raise GeValueError(
            f"{what}: zero-size array to reduction operation {name} which has no identity"
        )
    source = x if dtype is None else x.astype(dtype)
    if not axes:  # numpy reduces over no axis: the values, in the result dtype
        return source.astype(result)
    reducer = _REDUCERS.get(name)
    if reducer is not None:
        if reducer in ("all", "any"):
            y = (
                np.all(source, axis=tuple(axes), keepdims=keepdims)
                if reducer == "all"
                else (np.any(source, axis=tuple(axes), keepdims=keepdims))
            )
        else:
            y = getattr(source, reducer)(axis=axes, keepdims=keepdims)
        return cast(TensorHolder, y).astype(result)
    return _fold(source, ufunc, axes, keepdims).astype(result)


def _fold(x: TensorHolder, ufunc: np.ufunc, axes: list[int], keepdims: bool) -> TensorHolder:
    """``ufunc`` folded left along ``axes`` (unrolled), numpy's generic ``.reduce``."""
    name = ufunc.__name__
    if len(axes) > 1 and not _reorderable(name):
        raise GeValueError(
            f"np.{name}.reduce: reduction operation '{name}' is not reorderable, so at most "
            f"one axis may be specified"
        )
    for a in sorted(axes, reverse=True):
        size = x.shape[a]
        if size < 0 or size > MAX_FOLD:
            raise GeValueError(
                f"np.{name}.reduce of a traced value unrolls the axis: it needs a known size "
                f"of at most {MAX_FOLD}, axis {a} has {size}"
            )
        if size == 0:
            raise GeValueError(
                f"np.{name}.reduce: zero-size array to reduction operation {name} which has "
                f"no identity"
            )
        key: list[Any] = [slice(None)] * x.ndim
        parts = []
        for i in range(size):
            key[a] = slice(i, i + 1) if keepdims else i
            parts.append(x[tuple(key)])
        total = parts[0]
        for part in parts[1:]:
            total = ufunc(total, part)
        x = total
    return x


def _reorderable(name: str) -> bool:
    return name in (
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "logical_xor",
        "fmax",
        "fmin",
        "gcd",
        "lcm",
    )


def _accumulate(
    anchor: TensorHolder, ufunc: np.ufunc, array: Any, axis: Any = 0, dtype: Any = None
) -> Any:
    name = ufunc.__name__
    function = ACCUMULATORS.get(name)
    from ge.es.tensor_holder import _FUNCTIONS  # noqa: PLC0415  (it imports this module)

    if function is None or function not in _FUNCTIONS:
        supported = "np.add.accumulate and np.multiply.accumulate (with np.cumsum/np.cumprod)"
        raise GeTypeError(
            f"np.{name}.accumulate of a traced value is not supported; {supported}"
            + ("" if function is None else f": np.{function} has no rule yet")
        )
    x = rules.holder(anchor, array)
    result = _method_dtype(name, "accumulate", x.dtype, None if dtype is None else np.dtype(dtype))
    return _FUNCTIONS[function](x, x, axis=axis, dtype=result)


_METHODS: dict[str, Rule] = {"outer": _outer, "reduce": _reduce, "accumulate": _accumulate}


# --- numpy functions -----------------------------------------------------------------------------
_register = rule_registrar(FUNCTIONS)  # the keyword-checking registrar of every family


def _reversed_order(x: TensorHolder) -> TensorHolder:
    """Values whose order is ``x``'s reversed (NaN stays NaN): argmax of them is argmin."""
    if x.dtype.kind == "f":
        return x._op("Neg", x)
    source = x.astype(np.uint8) if x.dtype == np.bool_ else x
    return source._op("Invert", source)


@_register("argmin")
def _argmin(
    anchor: TensorHolder, a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False
) -> TensorHolder:
    if out is not None:
        raise GeTypeError("np.argmin of a traced value does not take 'out'")
    x = rules.holder(anchor, a)
    if axis is not None:
        _axes(axis, x.ndim, "np.argmin")
    if x.dtype.kind in "iub" or x.dtype.kind == "f":
        order = _reversed_order(x)
    else:
        raise GeTypeError(f"np.argmin of a traced value needs numbers, got {x.dtype}")
    if 0 in x.shape and (axis is None or x.shape[int(axis)] == 0):
        raise GeValueError("np.argmin: attempt to get argmin of an empty sequence")
    y = order.argmax(axis).astype(np.intp)
    if keepdims:
        shape = (
            [1] * x.ndim
            if axis is None
            else [1 if n == int(axis) % x.ndim else d for n, d in enumerate(x.shape)]
        )
        y = y.reshape(shape)
    return y


@_register("select")
def _select_rule(
    anchor: TensorHolder, condlist: Any, choicelist: Any, default: Any = 0
) -> TensorHolder:
    conds, choices = list(condlist), list(choicelist)
    if len(conds) != len(choices):
        raise GeValueError("np.select: list of cases must be same length as list of conditions")
    if not choices:
        raise GeValueError("np.select: select with an empty condition list is not possible")
    anchor = innermost(anchor, *conds, *choices, default)
    holders = [rules.holder(anchor, c) for c in conds]
    for n, c in enumerate(holders):
        if c.dtype != np.bool_:
            raise GeTypeError(
                f"np.select: invalid entry {n} in condlist: should be boolean ndarray, got "
                f"{c.dtype}"
            )
    samples = [np.zeros((), v.dtype) if isinstance(v, TensorHolder) else v for v in choices]
    dtype = np.select([np.zeros((), bool)] * len(samples), samples, default).dtype
    values = [rules.as_dtype(anchor, v, dtype) for v in choices]
    result = rules.as_dtype(anchor, np.asarray(default).astype(dtype), dtype)
    for cond, value in zip(reversed(holders), reversed(values), strict=True):
        result = _select(cond, value, result)
    shape = np.broadcast_shapes(*(h.shape for h in (*holders, *values, result)))
    if result.shape != shape:
        result = result._op("BroadcastTo", result, result._ints(list(shape)))
    return result


@_register("fix")
def _fix(anchor: TensorHolder, x: Any, out: Any = None) -> TensorHolder:
    if out is not None:
        raise GeTypeError("np.fix of a traced value does not take 'out'")
    v = rules.holder(anchor, x)
    return v if v.dtype.kind in "biu" else v._op("Trunc", v)


def _nan_reduction(method: str, fill: Any) -> Rule:
    """``np.nan<method>``: NaN replaced by ``fill`` (a value, or the dtype's -inf/+inf for
    max/min, where an all-NaN slice gives NaN)."""

    def rule(
        anchor: TensorHolder, a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False
    ) -> TensorHolder:
        x = rules.holder(anchor, a)
        axes = _axes(axis, x.ndim, f"np.nan{method}")
        kwargs: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
        if dtype is not None:
            kwargs["dtype"] = dtype
        if x.dtype.kind != "f":
            return cast(TensorHolder, getattr(x, method)(**kwargs))
        nan = _isnan(x)
        if method == "mean":
            total = _select(nan, _c(x, 0), x).sum(**kwargs)
            count = (~nan).sum(axis=axes, keepdims=keepdims).astype(total.dtype)
            return cast(TensorHolder, total / count)
        y = getattr(_select(nan, _c(x, fill), x), method)(**kwargs)
        if method in ("max", "min"):
            empty = nan.min(axis=axes, keepdims=keepdims)  # every value NaN
            y = _select(empty, _c(y, np.nan), y)
        return cast(TensorHolder, y)

    return rule


for _method, _fill in (("max", -np.inf), ("min", np.inf), ("sum", 0), ("prod", 1), ("mean", 0)):
    _rule = _nan_reduction(_method, _fill)
    if _method in ("max", "min"):  # numpy's nanmax/nanmin take no dtype

        def _no_dtype(
            anchor: TensorHolder, a: Any, axis: Any = None, keepdims: bool = False, _r: Rule = _rule
        ) -> TensorHolder:
            return cast(TensorHolder, _r(anchor, a, axis, None, keepdims))

        _register(f"nan{_method}")(_no_dtype)
    else:
        _register(f"nan{_method}")(_rule)


@_register("round", "around")
def _round(anchor: TensorHolder, a: Any, decimals: Any = 0, out: Any = None) -> TensorHolder:
    """numpy's rule: ``rint(x * 10**d) / 10**d`` (``rint(x / 10**-d) * 10**-d`` for d < 0),
    in ``x``'s dtype; integers with ``d >= 0`` are themselves."""
    if out is not None:
        raise GeTypeError("np.round of a traced value does not take 'out'")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise GeTypeError(f"np.round: decimals must be an int, got {decimals!r}")
    x, d = rules.holder(anchor, a), int(decimals)
    if x.dtype.kind in "biu":
        if d < 0:
            raise GeValueError(
                f"np.round of traced integers supports decimals >= 0, got {d} (round a float copy)"
            )
        return x
    if d == 0:
        return x._op("Round", x)
    scale = _c(x, 10.0 ** abs(d))
    if d > 0:
        return x._op("RealDiv", x._op("Round", x._op("Mul", x, scale)), scale)
    return x._op("Mul", x._op("Round", x._op("RealDiv", x, scale)), scale)


# --- np.linalg -----------------------------------------------------------------------------------
@functools.cache
def _linalg_dtype(name: str, *dtypes: np.dtype[Any]) -> np.dtype[Any]:
    """numpy's result dtype of ``np.linalg.<name>`` for operands of ``dtypes``."""
    samples = [np.eye(1, dtype=d) for d in dtypes]
    try:
        result: np.dtype[Any] = getattr(np.linalg, name)(*samples).dtype
    except TypeError as error:
        raise GeTypeError(f"np.linalg.{name} inside ge.jit follows numpy: {error}") from None
    return result


def _square_matrices(x: TensorHolder, name: str, what: str) -> None:
    if x.ndim < 2:
        raise GeValueError(
            f"np.linalg.{name}: {what} must be at least 2-dimensional, got shape {x.shape}"
        )
    if x.shape[-1] != x.shape[-2]:
        raise GeValueError(
            f"np.linalg.{name}: {what} must be square in its last two dimensions, got "
            f"shape {x.shape}"
        )


@_register("cholesky")
def _cholesky(anchor: TensorHolder, a: Any, *, upper: bool = False) -> TensorHolder:
    """The ``Cholesky`` op; a matrix that is not positive definite gives NaN (numpy raises
    ``LinAlgError``)."""
    x = rules.holder(anchor, a)
    _square_matrices(x, "cholesky", "a")
    dtype = _linalg_dtype("cholesky", x.dtype)
    y = x.astype(dtype)._op("Cholesky", x.astype(dtype))
    if upper:
        perm = [*range(y.ndim - 2), y.ndim - 1, y.ndim - 2]
        y = y.transpose(perm)
    return y


@_register("solve")
def _solve(anchor: TensorHolder, a: Any, b: Any) -> TensorHolder:
    """The ``MatrixSolve`` op (batch dims broadcast); ``b`` is a vector when 1-d (numpy 2's
    rule). A singular matrix gives NaN (numpy raises ``LinAlgError``)."""
    anchor = innermost(anchor, a, b)
    x, rhs = rules.holder(anchor, a), rules.holder(anchor, b)
    _square_matrices(x, "solve", "a")
    dtype = _linalg_dtype("solve", x.dtype, rhs.dtype)
    vector = rhs.ndim == 1
    if vector:
        rhs = rhs.reshape(-1, 1)
    if rhs.ndim < 2 or rhs.shape[-2] != x.shape[-1]:
        raise GeValueError(
            f"np.linalg.solve: b must have {x.shape[-1]} rows to match a of shape {x.shape}, "
            f"got shape {rules.holder(anchor, b).shape}"
        )
    try:
        np.broadcast_shapes(x.shape[:-2], rhs.shape[:-2])
    except ValueError:
        raise GeValueError(
            f"np.linalg.solve: the batch dims of a {x.shape} and b {rhs.shape} do not broadcast"
        ) from None
    y = x._op("MatrixSolve", x.astype(dtype), rhs.astype(dtype), attrs={"adjoint": False})
    return y.reshape(*y.shape[:-1]) if vector else y
