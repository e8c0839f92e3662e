"""Elementwise ops: unary math, binary arithmetic with broadcasting, comparisons, logic, Cast.

Each op is one row of a table: GE name, numpy reference, allowed dtypes, flags. Decisions where
GE is silent: binary ops accept mixed input types and compute in the promoted type
(``ge.ops._rules.promote_types``); integer ``Div``/``RealDiv`` truncate toward zero like C, and
an integer division by zero gives 0; integer ``Pow`` computes in float64 and truncates (a
negative exponent gives 0 unless the base is 1 or -1); half-precision inputs are computed in
float32 and rounded back, as GE's kernels do; ``Gelu`` is the tanh approximation GE's kernel
uses.

Each row also carries the op's ``scalar`` body (``ge.ops.schema.ScalarBody``: one element, as
the compiler's elementwise codegen writes it and fuses it) and its numpy ufunc name, so the
op's kernel body, fusibility and numpy alias live here and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ge.error import InferError
from ge.graph._dtypes import data_type_from_numpy, numpy_dtype
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import (
    attr,
    binary_infer,
    compute_float,
    dyn,
    inp,
    out,
    out_dtype,
    same_infer,
)
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef, ScalarBody

__all__: list[str] = []

VT = AttrValueType
_D = DataType
SIGNED = frozenset({_D.DT_INT8, _D.DT_INT16, _D.DT_INT32, _D.DT_INT64})
_LOG_ATTRS = (
    attr("base", VT.VT_FLOAT, -1.0),
    attr("scale", VT.VT_FLOAT, 1.0),
    attr("shift", VT.VT_FLOAT, 0.0),
)

_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu(x: np.ndarray) -> np.ndarray:
    inner = np.sqrt(2.0 / np.pi) * (x + 0.044715 * x * x * x)
    y: np.ndarray = 0.5 * x * (1.0 + np.tanh(inner))
    return y


def _exp(x: np.ndarray, base: float, scale: float, shift: float) -> np.ndarray:
    z = x * x.dtype.type(scale) + x.dtype.type(shift)
    y: np.ndarray = np.exp(z) if base == -1.0 else np.exp(z * x.dtype.type(math.log(base)))
    return y


def _log(x: np.ndarray, base: float, scale: float, shift: float) -> np.ndarray:
    y: np.ndarray = np.log(x * x.dtype.type(scale) + x.dtype.type(shift))
    return y if base == -1.0 else y / x.dtype.type(math.log(base))


def _log_base_infer(ctx: InferContext) -> list[TensorDesc]:
    """``same_infer``, and a ``base`` that has a logarithm: -1 (meaning e), or positive and,
    for ``Log``, not 1 (log to base 1 divides by log(1) = 0)."""
    base = ctx.attrs["base"]
    if base != -1.0 and not (base > 0.0 and (base != 1.0 or ctx.op.type == "Exp")):
        need = "> 0" if ctx.op.type == "Exp" else "> 0 and not 1"
        raise InferError(f"attribute base must be -1 (for e) or {need}, got {base}")
    return same_infer(ctx)


def _erf_array(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(x), dtype=x.dtype)


def _log_params(log: bool) -> Callable[[dict[str, Any]], list[float]]:
    """``Exp``/``Log`` attributes as (scale, shift, log factor); ``[]`` for the defaults."""

    def params(attrs: dict[str, Any]) -> list[float]:
        base, scale, shift = attrs["base"], attrs["scale"], attrs["shift"]
        if base == -1.0 and scale == 1.0 and shift == 0.0:
            return []
        factor = 1.0 if base == -1.0 else math.log(base)
        return [scale, shift, 1.0 / factor if log else factor]

    return params


def _scaled(plain: str, scaled: str, log: bool) -> ScalarBody:
    """``plain`` with the default attributes, else ``scaled`` over the params ``p0, p1, p2``."""
    params = _log_params(log)
    return ScalarBody(lambda attrs, arity, compute: scaled if params(attrs) else plain, params)


def _by_kind_bool(other: str, booleans: str) -> ScalarBody:
    """``booleans`` when the compute type is bool, else ``other``."""
    return ScalarBody(lambda attrs, arity, compute: booleans if compute.kind == "b" else other)


def _with_bits(template: str) -> ScalarBody:
    """``template`` with ``{bits}`` the compute type's width (the shifts need it)."""
    return ScalarBody(lambda attrs, arity, compute: template.format(bits=compute.itemsize * 8))


def _by_kind(floats: str, integers: str) -> ScalarBody:
    """``integers`` when the compute type is an integer type, else ``floats``."""
    return ScalarBody(lambda attrs, arity, compute: integers if compute.kind in "iu" else floats)


@dataclass(frozen=True)
class _Unary:
    type: str
    fn: Callable[..., np.ndarray]
    dtypes: frozenset[DataType]
    scalar: str | ScalarBody  # a: the input, in the compute type
    ufunc: str = ""
    group: str = "math"
    attrs: tuple[Any, ...] = ()
    out_type: DataType | None = None  # a fixed output type (bool for IsNan), else the input's


_FLOAT_FN = rules.FLOATS
_GELU = "0.5 * a * (1.0 + math.tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))"
_UNARY = (
    _Unary("Neg", np.negative, rules.FLOATS | SIGNED, "-a", "negative"),
    _Unary("Abs", np.abs, rules.FLOATS | SIGNED, "abs(a)", "absolute"),
    _Unary(
        "Exp",
        _exp,
        _FLOAT_FN,
        _scaled("math.exp(a)", "math.exp((a * p0 + p1) * p2)", log=False),
        "exp",
        attrs=_LOG_ATTRS,
    ),
    _Unary(
        "Log",
        _log,
        _FLOAT_FN,
        _scaled("math.log(a)", "math.log(a * p0 + p1) * p2", log=True),
        "log",
        attrs=_LOG_ATTRS,
    ),
    _Unary("Sqrt", np.sqrt, _FLOAT_FN, "np.sqrt(a)", "sqrt"),
    _Unary("Rsqrt", lambda x: 1.0 / np.sqrt(x), _FLOAT_FN, "1.0 / np.sqrt(a)"),
    _Unary("Square", np.square, rules.FLOATS | {_D.DT_INT32, _D.DT_INT64}, "a * a", "square"),
    _Unary("Reciprocal", lambda x: 1.0 / x, _FLOAT_FN, "1.0 / a", "reciprocal"),
    _Unary("Sin", np.sin, _FLOAT_FN, "math.sin(a)", "sin"),
    _Unary("Cos", np.cos, _FLOAT_FN, "math.cos(a)", "cos"),
    _Unary("Tanh", np.tanh, _FLOAT_FN, "math.tanh(a)", "tanh"),
    _Unary(
        "Sigmoid",
        lambda x: 1.0 / (1.0 + np.exp(-x)),
        _FLOAT_FN,
        "1.0 / (1.0 + math.exp(-a))",
        group="nn",
    ),
    _Unary(
        "Relu",
        lambda x: np.maximum(x, x.dtype.type(0)),
        rules.FLOATS | SIGNED | {_D.DT_UINT8, _D.DT_UINT16},
        "a if (a > 0 or a != a) else 0",  # NaN stays NaN and -inf gives 0, as np.maximum
        group="nn",
    ),
    _Unary("Gelu", _gelu, _FLOAT_FN, _GELU, group="nn"),
    _Unary("Erf", _erf_array, _FLOAT_FN, "math.erf(a)"),
    _Unary(  # numpy: the sign of -0.0 is +0.0, of NaN NaN
        "Sign",
        np.sign,
        rules.FLOATS | {_D.DT_INT32, _D.DT_INT64},
        _by_kind("1.0 if a > 0 else (-1.0 if a < 0 else a - a)", "np.sign(a)"),
        "sign",
    ),
    _Unary("Floor", np.floor, _FLOAT_FN, "np.floor(a)", "floor"),
    _Unary("Ceil", np.ceil, _FLOAT_FN, "np.ceil(a)", "ceil"),
    _Unary("LogicalNot", np.logical_not, rules.BOOL, "not a", "logical_not"),
    # numpy's float ufuncs (issue #16), TF's names where GE has none
    _Unary("Tan", np.tan, _FLOAT_FN, "math.tan(a)", "tan"),
    _Unary("Asin", np.arcsin, _FLOAT_FN, "np.arcsin(a)", "arcsin"),
    _Unary("Acos", np.arccos, _FLOAT_FN, "np.arccos(a)", "arccos"),
    _Unary("Atan", np.arctan, _FLOAT_FN, "math.atan(a)", "arctan"),
    _Unary("Sinh", np.sinh, _FLOAT_FN, "math.sinh(a)", "sinh"),
    _Unary("Cosh", np.cosh, _FLOAT_FN, "math.cosh(a)", "cosh"),
    _Unary("Asinh", np.arcsinh, _FLOAT_FN, "math.asinh(a)", "arcsinh"),
    _Unary("Acosh", np.arccosh, _FLOAT_FN, "np.arccosh(a)", "arccosh"),
    _Unary("Atanh", np.arctanh, _FLOAT_FN, "np.arctanh(a)", "arctanh"),
    _Unary("Log1p", np.log1p, _FLOAT_FN, "np.log1p(a)", "log1p"),
    _Unary("Expm1", np.expm1, _FLOAT_FN, "math.expm1(a)", "expm1"),
    _Unary("Log2", np.log2, _FLOAT_FN, "np.log2(a)", "log2"),
    _Unary("Log10", np.log10, _FLOAT_FN, "np.log10(a)", "log10"),
    _Unary("Exp2", np.exp2, _FLOAT_FN, "np.exp2(a)", "exp2"),
    _Unary("Round", np.rint, _FLOAT_FN, "np.rint(a)", "rint"),  # half to even, as GE's Round
    _Unary("Trunc", np.trunc, _FLOAT_FN, "np.trunc(a)", "trunc"),
    _Unary("Cbrt", np.cbrt, _FLOAT_FN, "np.cbrt(a)", "cbrt"),  # TF has none: numpy's name
    _Unary("IsNan", np.isnan, _FLOAT_FN, "a != a", "isnan", out_type=_D.DT_BOOL),
    _Unary("IsInf", np.isinf, _FLOAT_FN, "math.isinf(a)", "isinf", out_type=_D.DT_BOOL),
    _Unary("IsFinite", np.isfinite, _FLOAT_FN, "math.isfinite(a)", "isfinite", out_type=_D.DT_BOOL),
    _Unary(
        "Invert",
        np.invert,
        rules.INTS | rules.BOOL,
        _by_kind_bool("~a", "not a"),
        "invert",
    ),
)


def _unary_infer(out_type: DataType | None) -> Callable[[InferContext], list[TensorDesc]]:
    """``same_infer``, with the output type ``out_type`` where one is given."""
    if out_type is None:
        return same_infer

    def infer(ctx: InferContext) -> list[TensorDesc]:
        x = ctx.inputs[0]
        return [rules.desc(x._shape, out_type, x._format)]

    return infer


def _body(scalar: str | ScalarBody) -> ScalarBody:
    return scalar if isinstance(scalar, ScalarBody) else ScalarBody(scalar)


def _unary_reference(row: _Unary) -> Callable[[ExecContext], list[np.ndarray]]:
    attr_names = [a.name for a in row.attrs]

    def reference(ctx: ExecContext) -> list[np.ndarray]:
        x = ctx.inputs[0]
        extra = [ctx.attrs[n] for n in attr_names]
        if x.dtype.kind in "biu":
            with np.errstate(all="ignore"):
                y = np.asarray(row.fn(x, *extra))
        else:
            y = compute_float(lambda a: row.fn(a, *extra), x)
        return [y.astype(out_dtype(ctx), copy=False)]

    return reference


for _row in _UNARY:
    register_op_def(
        OpDef(
            _row.type,
            inputs=(inp("x", _row.dtypes),),
            outputs=(out("y", {_row.out_type} if _row.out_type else _row.dtypes),),
            attrs=_row.attrs,
            infer=_log_base_infer if _row.attrs else _unary_infer(_row.out_type),
            reference=_unary_reference(_row),
            group=_row.group,
            elementwise=True,
            scalar=_body(_row.scalar),
            ufunc=_row.ufunc,
            doc=f"y = {_row.type.lower()}(x), elementwise.",
        )
    )


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind not in "iu":
        return np.asarray(x / y)
    with np.errstate(all="ignore"):
        safe = np.where(y == 0, 1, y)
        q = np.floor_divide(x, safe)
        inexact = (q * safe != x) & ((x < 0) != (safe < 0))
        return np.where(y == 0, 0, q + inexact.astype(q.dtype))


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":
        return np.trunc(np.power(x.astype(np.float64), y.astype(np.float64)))
    return np.asarray(np.power(x, y))


@dataclass(frozen=True)
class _Binary:
    type: str
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    dtypes: frozenset[DataType]
    scalar: str | ScalarBody  # a, b: the inputs, in the promoted compute type
    ufunc: str = ""
    out_type: DataType | None = None
    commutative: bool = False


_ARITH = rules.REAL
_COMPARE = rules.REAL | rules.BOOL
_DIV = _by_kind("a / b", "int_div(a, b)")  # C's truncation, 0 for a division by 0
_MAX = "a if (a >= b or a != a) else b"  # NaN propagates, as np.maximum
_MIN = "a if (a <= b or a != a) else b"
_BOOL = _D.DT_BOOL
_BITS = rules.INTS | rules.BOOL
_BINARY = (
    _Binary("Add", np.add, _ARITH | rules.BOOL, "a + b", "add", commutative=True),
    _Binary("Sub", np.subtract, _ARITH, "a - b", "subtract"),
    _Binary("Mul", np.multiply, _ARITH | rules.BOOL, "a * b", "multiply", commutative=True),
    _Binary("Div", _trunc_div, _ARITH, _DIV),
    _Binary("RealDiv", _trunc_div, _ARITH, _DIV),
    _Binary("Maximum", np.maximum, _ARITH, _MAX, "maximum", commutative=True),
    _Binary("Minimum", np.minimum, _ARITH, _MIN, "minimum", commutative=True),
    _Binary(
        "Pow", _pow, _ARITH, _by_kind("a ** b", "np.trunc(np.float64(a) ** np.float64(b))"), "power"
    ),
    _Binary("Equal", np.equal, _COMPARE, "a == b", "equal", _BOOL, commutative=True),
    _Binary("NotEqual", np.not_equal, _COMPARE, "a != b", "not_equal", _BOOL, commutative=True),
    _Binary("Less", np.less, _COMPARE, "a < b", "less", _BOOL),
    _Binary("LessEqual", np.less_equal, _COMPARE, "a <= b", "less_equal", _BOOL),
    _Binary("Greater", np.greater, _COMPARE, "a > b", "greater", _BOOL),
    _Binary("GreaterEqual", np.greater_equal, _COMPARE, "a >= b", "greater_equal", _BOOL),
    _Binary(
        "LogicalAnd", np.logical_and, rules.BOOL, "a and b", "logical_and", _BOOL, commutative=True
    ),
    _Binary(
        "LogicalOr", np.logical_or, rules.BOOL, "a or b", "logical_or", _BOOL, commutative=True
    ),
    # numpy's ufuncs (issue #16): floor division and modulo as numpy computes them (float:
    # from fmod, so 1.0 // 0.1 is 9; integers: x // 0 and x % 0 are 0), C's fmod ("Mod")
    _Binary(
        "FloorDiv",
        np.floor_divide,
        _ARITH,
        _by_kind("floor_div_f(a, b)", "floor_div_i(a, b)"),
        "floor_divide",
    ),
    _Binary(
        "FloorMod",
        np.remainder,
        _ARITH,
        _by_kind("floor_mod_f(a, b)", "floor_mod_i(a, b)"),
        "remainder",
    ),
    _Binary("Mod", np.fmod, _ARITH, _by_kind("np.fmod(a, b)", "int_fmod(a, b)"), "fmod"),
    _Binary("Atan2", np.arctan2, _FLOAT_FN, "math.atan2(a, b)", "arctan2"),
    _Binary("Hypot", np.hypot, _FLOAT_FN, "math.hypot(a, b)", "hypot", commutative=True),
    _Binary("CopySign", np.copysign, _FLOAT_FN, "math.copysign(a, b)", "copysign"),
    _Binary("BitwiseAnd", np.bitwise_and, _BITS, "a & b", "bitwise_and", commutative=True),
    _Binary("BitwiseOr", np.bitwise_or, _BITS, "a | b", "bitwise_or", commutative=True),
    _Binary("BitwiseXor", np.bitwise_xor, _BITS, "a ^ b", "bitwise_xor", commutative=True),
    # numpy's gcd/lcm (TF/GE have none: numpy's names; the results are non-negative and
    # wrap as numpy's do for the most negative value) and TF's NextAfter (float32/float64:
    # a float16 nextafter is a half-precision step, which a float32 compute type cannot give)
    _Binary("Gcd", np.gcd, rules.INTS, "np.gcd(a, b)", "gcd", commutative=True),
    _Binary("Lcm", np.lcm, rules.INTS, "np.lcm(a, b)", "lcm", commutative=True),
    _Binary(
        "NextAfter",
        np.nextafter,
        frozenset({_D.DT_FLOAT, _D.DT_DOUBLE}),
        ScalarBody(lambda attrs, arity, compute: f"next_after_f{compute.itemsize * 8}(a, b)"),
        "nextafter",
    ),
    # numpy: a shift by the width or more (or a negative shift) gives 0, or -1 for a negative
    # value shifted right
    _Binary(
        "LeftShift", np.left_shift, rules.INTS, _with_bits("left_shift(a, b, {bits})"), "left_shift"
    ),
    _Binary(
        "RightShift",
        np.right_shift,
        rules.INTS,
        _with_bits("right_shift(a, b, {bits})"),
        "right_shift",
    ),
)


def _binary_reference(row: _Binary) -> Callable[[ExecContext], list[np.ndarray]]:
    def reference(ctx: ExecContext) -> list[np.ndarray]:
        a, b = ctx.inputs
        promoted = rules.promote_types(data_type_from_numpy(a.dtype), data_type_from_numpy(b.dtype))
        common = numpy_dtype(promoted) if row.out_type else out_dtype(ctx)
        a, b = a.astype(common, copy=False), b.astype(common, copy=False)
        y = compute_float(row.fn, a, b) if a.dtype.kind == "f" else np.asarray(_quiet(row.fn, a, b))
        return [y.astype(out_dtype(ctx), copy=False)]

    return reference


def _quiet(fn: Callable[..., Any], *args: np.ndarray) -> Any:
    with np.errstate(all="ignore"):
        return fn(*args)


def _closed_infer(row: _Binary) -> Callable[[InferContext], list[TensorDesc]]:
    """``binary_infer``, refusing inputs whose promoted type the op does not take: an integer-
    only op given int64 and uint64 (numpy promotes them to float64 and has no integer loop
    for the pair, so ``np.lcm``/``np.bitwise_and`` refuse it too). Only rows without float64
    need it: for the others every promotion stays inside their types."""
    infer = binary_infer(row.out_type)
    if _D.DT_DOUBLE in row.dtypes:
        return infer

    def closed(ctx: InferContext) -> list[TensorDesc]:
        a, b = ctx.inputs[0], ctx.inputs[1]
        promoted = rules.promote_types(a._data_type, b._data_type)
        if promoted not in row.dtypes:
            raise InferError(
                f"inputs x1 ({a._data_type.name}) and x2 ({b._data_type.name}) "
                f"promote to {promoted.name}, which {row.type} does not take; cast both to "
                f"one type"
            )
        return infer(ctx)

    return closed


for _b in _BINARY:
    register_op_def(
        OpDef(
            _b.type,
            inputs=(inp("x1", _b.dtypes), inp("x2", _b.dtypes)),
            outputs=(out("y", {_b.out_type} if _b.out_type else _b.dtypes),),
            infer=_closed_infer(_b),
            reference=_binary_reference(_b),
            elementwise=True,
            commutative=_b.commutative,
            scalar=_body(_b.scalar),
            ufunc=_b.ufunc,
            doc=f"y = {_b.type}(x1, x2) with broadcasting.",
        )
    )


def _addn_infer(ctx: InferContext) -> list[Any]:
    xs = ctx.inputs[0]
    if not xs:
        raise InferError("AddN needs at least one input")
    if ctx.attrs["N"] != len(xs):
        raise InferError(f"attribute N is {ctx.attrs['N']} but {len(xs)} inputs were given")
    shape = rules.broadcast_shapes(*(x._shape for x in xs))
    return [rules.desc(shape, rules.promote_types(*(x._data_type for x in xs)), xs[0]._format)]


def _addn_reference(ctx: ExecContext) -> list[np.ndarray]:
    dtype = out_dtype(ctx)
    total = ctx.inputs[0][0].astype(dtype)
    for x in ctx.inputs[0][1:]:
        total = total + x.astype(dtype)
    return [np.asarray(total, dtype=dtype)]


register_op_def(
    OpDef(
        "AddN",
        inputs=(dyn("x", rules.REAL),),
        outputs=(out("y", rules.REAL),),
        attrs=(attr("N", VT.VT_INT),),
        infer=_addn_infer,
        reference=_addn_reference,
        elementwise=True,
        commutative=True,
        scalar=ScalarBody(
            lambda attrs, arity, compute: " + ".join("abcdefghijklmnopqrstuvwxyz"[:arity])
        ),
        doc="y = x0 + x1 + ... (N inputs).",
    )
)


def _cast_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    try:
        dst = DataType(ctx.attrs["dst_type"])
        rules.np_type_check(dst)
    except ValueError:
        raise InferError(f"dst_type {ctx.attrs['dst_type']} is not a DataType value") from None
    return [rules.desc(x._shape, dst, x._format)]


def _cast_reference(ctx: ExecContext) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return [ctx.inputs[0].astype(out_dtype(ctx))]


register_op_def(
    OpDef(
        "Cast",
        inputs=(inp("x", rules.ALL),),
        outputs=(out("y", rules.ALL),),
        attrs=(attr("dst_type", VT.VT_INT),),
        infer=_cast_infer,
        reference=_cast_reference,
        elementwise=True,
        scalar=ScalarBody("a", compute="source"),  # computed in the input's type, then stored
        doc="y = x converted to dst_type (a raw ge::DataType value).",
    )
)


def _picks_rows(cond: list[int], values: list[int]) -> bool:
    """TF's Select: a vector condition as long as dim 0 of rank>1 values picks whole rows."""
    return len(cond) == 1 and len(values) > 1 and cond[0] == values[0] and cond[0] != 1


def _select_infer(rows: bool) -> Any:
    def infer(ctx: InferContext) -> list[Any]:
        cond, a, b = ctx.inputs
        rules.check_dtype(cond, rules.BOOL, "condition")
        shape = rules.broadcast_shapes(a._shape, b._shape)
        if not (rows and _picks_rows(list(cond._shape), shape)):
            shape = rules.broadcast_shapes(cond._shape, shape)
        return [rules.desc(shape, rules.promote_types(a._data_type, b._data_type), a._format)]

    return infer


def _select_reference(rows: bool) -> Any:
    def reference(ctx: ExecContext) -> list[np.ndarray]:
        cond, a, b = ctx.inputs
        values_shape = list(np.broadcast_shapes(a.shape, b.shape))
        if rows and _picks_rows(list(cond.shape), values_shape):
            cond = cond.reshape(cond.shape + (1,) * (len(values_shape) - 1))
        dtype = out_dtype(ctx)
        return [np.where(cond, a.astype(dtype), b.astype(dtype))]

    return reference


for _name, _ins, _out, _rows in (
    ("Select", ("condition", "x1", "x2"), "y", True),
    ("SelectV2", ("condition", "then", "else"), "result", False),
):
    register_op_def(
        OpDef(
            _name,
            inputs=(inp(_ins[0], rules.BOOL), inp(_ins[1], rules.ALL), inp(_ins[2], rules.ALL)),
            outputs=(out(_out, rules.ALL),),
            infer=_select_infer(_rows),
            reference=_select_reference(_rows),
            elementwise=True,
            # Select's vector condition picks rows (not numpy's broadcasting): not fused
            scalar=ScalarBody("b if a else c", compute="select", numpy_broadcast=not _rows),
            doc=f"{_out} = condition ? {_ins[1]} : {_ins[2]}, with broadcasting.",
        )
    )
