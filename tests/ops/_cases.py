"""The op table: one record per registered op, checked against numpy by ``test_ops_table.py``.

A ``Record`` names the op, the numpy reference (written here, never ge's own ``reference``), the
input that carries the case dtype, and a few ``Variant``s: input sets with attributes, covering
ordinary, scalar (rank 0), 0-size, broadcast, negative-axis and non-contiguous inputs. Each input
is an ``Arg``: a Data node fed to ``eval_graph`` (``D``) or a Const node whose value ``infer``
sees (``K``: axes, perms, shapes, ...). The dtypes a record claims are the op's own
``TensorSpec.dtypes`` (of the dtype-carrying input) intersected with ``PRACTICAL``.

References compute in float64 (or int64) from the very values fed and round to the expected
output type, so half types are compared with looser tolerances (``TOLERANCE``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from ge.graph import DataType, Graph, Node, Tensor, TensorDesc
from ge.ops import add_op_node, get_op

BF16 = np.dtype(ml_dtypes.bfloat16)

# The practical dtypes and their GE DataType, transcribed by hand (OPS_REFERENCE.md §1.2).
NP: dict[str, np.dtype[Any]] = {
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "bfloat16": BF16,
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "bool": np.dtype(np.bool_),
}
GE_TYPE: dict[str, DataType] = {
    "float16": DataType.DT_FLOAT16,
    "float32": DataType.DT_FLOAT,
    "float64": DataType.DT_DOUBLE,
    "bfloat16": DataType.DT_BF16,
    "int8": DataType.DT_INT8,
    "int16": DataType.DT_INT16,
    "int32": DataType.DT_INT32,
    "int64": DataType.DT_INT64,
    "uint8": DataType.DT_UINT8,
    "uint16": DataType.DT_UINT16,
    "bool": DataType.DT_BOOL,
}
PRACTICAL = tuple(NP)
FLOATS = frozenset({"float16", "float32", "float64", "bfloat16"})
SIGNED = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint8", "uint16"})

# (rtol, atol) per dtype; exact comparison for integers and bool.
TOLERANCE: dict[str, tuple[float, float]] = {
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-12),
}

# Ops covered outside the table: graph-boundary ops (test_ops_table.py boundary tests),
# control flow (test_control.py) and ge.jit's body print (tests/jit/test_debug_print_control.py).
BOUNDARY = frozenset({"Data", "RefData", "AippData", "AnyData", "Variable", "Const", "NetOutput"})
CONTROL = frozenset({"If", "Case", "While", "FusedElementwise", "FusedReduce", "JitDebugPrint"})


def name_of(dtype: np.dtype[Any]) -> str:
    for name, dt in NP.items():
        if dt == dtype:
            return name
    raise KeyError(f"no practical dtype for {dtype}")


# ------------------------------------------------------------------------------ generators ----
Gen = Callable[[np.random.Generator, tuple[int, ...], np.dtype[Any]], np.ndarray]


def _int_range(dt: np.dtype[Any], lo: int, hi: int) -> tuple[int, int]:
    return (max(lo, 0), max(hi, 0)) if dt.kind == "u" else (lo, hi)


def normal(scale: float = 1.0, lo: int = -9, hi: int = 9) -> Gen:
    """Floats ~ N(0, scale); ints in [lo, hi] (non-negative part for unsigned); random bools."""

    def gen(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
        if dt.kind == "b":
            return np.asarray(rng.random(shape) < 0.5)
        if dt.kind in "iu":
            a, b = _int_range(dt, lo, hi)
            return np.asarray(rng.integers(a, b + 1, size=shape)).astype(dt)
        return np.asarray(rng.normal(0.0, scale, size=shape)).astype(dt)

    return gen


def positive(lo: float = 0.5, hi: float = 3.0, ihi: int = 9) -> Gen:
    """Values in [lo, hi] (ints in [1, ihi]); for Log, Sqrt, Rsqrt, Pow bases."""

    def gen(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
        if dt.kind == "b":
            return np.ones(shape, bool)
        if dt.kind in "iu":
            return np.asarray(rng.integers(1, ihi + 1, size=shape)).astype(dt)
        return np.asarray(rng.uniform(lo, hi, size=shape)).astype(dt)

    return gen


def nonzero(lo: float = 0.5, hi: float = 2.0) -> Gen:
    """Values with lo <= |v| <= hi (ints: 1..9, signed both ways); for divisors."""

    def gen(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
        if dt.kind == "b":
            return np.ones(shape, bool)
        sign = np.where(rng.random(shape) < 0.5, -1, 1) if dt.kind != "u" else 1
        if dt.kind in "iu":
            return np.asarray(sign * rng.integers(1, 10, size=shape)).astype(dt)
        return np.asarray(sign * rng.uniform(lo, hi, size=shape)).astype(dt)

    return gen


def ints(lo: int, hi: int) -> Gen:
    """Integer values in [lo, hi] in any dtype (ties, exact casts, indices)."""

    def gen(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
        a, b = _int_range(dt, lo, hi)
        values = np.asarray(rng.integers(a, b + 1, size=shape))
        return values.astype(dt) if dt.kind != "b" else values != 0

    return gen


NORMAL = normal()


# ------------------------------------------------------------------------------ the table -----
@dataclass(frozen=True)
class Arg:
    """One tensor feeding the op: a Data input (fed to eval_graph) or, with ``const``, a Const.

    ``dtype`` None means the case dtype. ``value`` fixes the data (cast to the dtype).
    ``layout`` "T" feeds a transposed view, "S" a view with stride 2 in the last dim: both
    non-contiguous numpy arrays.
    """

    shape: tuple[int, ...] = ()
    gen: Gen = NORMAL
    dtype: str | None = None
    const: bool = False
    value: Any = None
    layout: str = "C"

    def make(self, rng: np.random.Generator, case_dtype: str) -> np.ndarray:
        dt = NP[self.dtype or case_dtype]
        if self.value is not None:
            return np.asarray(self.value).astype(dt)
        if self.layout == "T":
            assert len(self.shape) >= 2
            array = self.gen(rng, self.shape[::-1], dt).T
        elif self.layout == "S":
            wide = (*self.shape[:-1], 2 * self.shape[-1])
            array = self.gen(rng, wide, dt)[..., ::2]
        else:
            array = self.gen(rng, self.shape, dt)
        assert array.shape == self.shape and array.dtype == dt
        if self.layout != "C" and array.size > 1:
            assert not array.flags.c_contiguous
        return array


def D(*shape: int, gen: Gen = NORMAL, dtype: str | None = None, layout: str = "C") -> Arg:
    """A Data input of ``shape``."""
    return Arg(tuple(shape), gen, dtype, False, None, layout)


def K(value: Any, dtype: str | None = "int32") -> Arg:
    """A Const input holding ``value`` (axes, perm, shape...; int32 unless said otherwise)."""
    return Arg(tuple(np.shape(value)), NORMAL, dtype, True, value)


def V(value: Any, dtype: str | None = None) -> Arg:
    """A Data input fed a fixed ``value`` (its value unknown to infer)."""
    return Arg(tuple(np.shape(value)), NORMAL, dtype, False, value)


Ref = Callable[[list[Any], dict[str, Any]], Any]


@dataclass(frozen=True)
class Variant:
    """One input set. ``dtypes`` narrows the record's dtypes; ``ref`` overrides its reference;
    ``unknown_ok`` lets inferred dims be -1 (shape-carrying inputs fed as Data)."""

    label: str
    inputs: tuple[Any, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    dtypes: frozenset[str] | None = None
    ref: Ref | None = None
    output_counts: tuple[int, ...] | None = None
    unknown_ok: bool = False


@dataclass(frozen=True)
class Record:
    op: str
    ref: Ref | None
    variants: tuple[Variant, ...]
    dtype_input: int = 0  # the IR input whose TensorSpec.dtypes the record claims
    dtypes: tuple[str, ...] | None = None  # explicit claim (default: spec ∩ PRACTICAL)
    tol: dict[str, tuple[float, float]] = field(default_factory=dict)

    def claimed(self) -> tuple[str, ...]:
        if self.dtypes is not None:
            return self.dtypes
        spec = get_op(self.op).inputs[self.dtype_input].dtypes
        return tuple(n for n in PRACTICAL if spec is None or GE_TYPE[n] in spec)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tol.get(dtype, TOLERANCE.get(dtype, (0.0, 0.0)))


# ------------------------------------------------------------------------------ helpers -------
def wide(x: np.ndarray) -> np.ndarray:
    """x in float64 (floats, bf16) or int64 (ints, bool), where our references compute."""
    x = np.asarray(x)
    return x.astype(np.int64) if x.dtype.kind in "biu" else x.astype(np.float64)


def f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def same_type(fn: Callable[..., Any]) -> Ref:
    """y = fn(x) in float64, rounded to x's type."""

    def ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
        x = xs[0]
        with np.errstate(all="ignore"):
            return np.asarray(fn(f64(x), at)).astype(x.dtype)

    return ref


def unary_variants(gen: Gen = NORMAL, attrs: dict[str, Any] | None = None) -> tuple[Variant, ...]:
    a = dict(attrs or {})
    return (
        Variant("2x3", (D(2, 3, gen=gen),), a),
        Variant("scalar", (D(gen=gen),), a),
        Variant("empty", (D(0, 3, gen=gen),), a),
        Variant("transposed", (D(3, 4, gen=gen, layout="T"),), a),
    )


def binary_variants(g1: Gen = NORMAL, g2: Gen = NORMAL) -> tuple[Variant, ...]:
    return (
        Variant("2x3", (D(2, 3, gen=g1), D(2, 3, gen=g2))),
        Variant("bcast[3,1]+[4]", (D(3, 1, gen=g1), D(4, gen=g2))),
        Variant("scalar+[2,3]", (D(gen=g1), D(2, 3, gen=g2))),
        Variant("empty", (D(0, 3, gen=g1), D(1, 3, gen=g2))),
        Variant("strided", (D(2, 3, gen=g1, layout="S"), D(2, 3, gen=g2, layout="T"))),
    )


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _exp_ref(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    # GE Exp: y = base ^ (shift + scale * x), base -1 meaning e.
    base, scale, shift = at.get("base", -1.0), at.get("scale", 1.0), at.get("shift", 0.0)
    z = shift + scale * x
    return np.exp(z) if base == -1.0 else np.power(base, z)


def _log_ref(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    # GE Log: y = log_base(shift + scale * x), base -1 meaning e.
    base, scale, shift = at.get("base", -1.0), at.get("scale", 1.0), at.get("shift", 0.0)
    y = np.log(shift + scale * x)
    return y if base == -1.0 else y / math.log(base)


def _unary(op: str, fn: Callable[[np.ndarray], Any], gen: Gen = NORMAL) -> Record:
    return Record(op, same_type(lambda x, at: fn(x)), unary_variants(gen))


_UNARY_RECORDS = [
    _unary("Neg", np.negative),
    _unary("Abs", np.abs),
    Record(
        "Exp",
        same_type(_exp_ref),
        (
            *unary_variants(normal(1.0)),
            Variant("base2", (D(2, 3),), {"base": 2.0, "scale": 0.5, "shift": 1.0}),
        ),
    ),
    Record(
        "Log",
        same_type(_log_ref),
        (
            *unary_variants(positive()),
            Variant("base2", (D(2, 3, gen=positive()),), {"base": 2.0, "scale": 2.0, "shift": 0.5}),
        ),
    ),
    _unary("Sqrt", np.sqrt, positive(0.0, 4.0)),
    _unary("Rsqrt", lambda x: 1.0 / np.sqrt(x), positive()),
    _unary("Square", np.square),
    _unary("Reciprocal", lambda x: 1.0 / x, nonzero()),
    _unary("Sin", np.sin, normal(2.0)),
    _unary("Cos", np.cos, normal(2.0)),
    _unary("Tanh", np.tanh),
    _unary("Sigmoid", _sigmoid, normal(2.0)),
    _unary("Relu", lambda x: np.maximum(x, 0.0)),
    _unary("Gelu", _gelu_tanh, normal(2.0)),
    _unary("Erf", _erf),
    _unary("Sign", np.sign, ints(-2, 2)),
    _unary("Floor", np.floor, normal(3.0)),
    _unary("Ceil", np.ceil, normal(3.0)),
    _unary("LogicalNot", lambda x: x == 0),
    _unary("Tan", np.tan, positive(-1.2, 1.2)),
    _unary("Asin", np.arcsin, positive(-0.95, 0.95)),
    _unary("Acos", np.arccos, positive(-0.95, 0.95)),
    _unary("Atan", np.arctan, normal(3.0)),
    _unary("Sinh", np.sinh, normal(2.0)),
    _unary("Cosh", np.cosh, normal(2.0)),
    _unary("Asinh", np.arcsinh, normal(3.0)),
    _unary("Acosh", np.arccosh, positive(1.0, 4.0)),
    _unary("Atanh", np.arctanh, positive(-0.9, 0.9)),
    _unary("Log1p", np.log1p, positive(0.0, 3.0)),
    _unary("Expm1", np.expm1, normal(1.0)),
    _unary("Log2", np.log2, positive()),
    _unary("Log10", np.log10, positive()),
    _unary("Exp2", np.exp2, normal(2.0)),
    _unary("Round", np.rint, normal(3.0)),
    _unary("Trunc", np.trunc, normal(3.0)),
    _unary("Cbrt", np.cbrt, normal(3.0)),
    *(
        Record(op, lambda xs, at, fn=fn: np.asarray(fn(f64(xs[0]))), unary_variants())
        for op, fn in (("IsNan", np.isnan), ("IsInf", np.isinf), ("IsFinite", np.isfinite))
    ),
    Record("Invert", lambda xs, at: np.invert(np.asarray(xs[0])), unary_variants()),
    _unary("Identity", lambda x: x),
    _unary("ZerosLike", np.zeros_like),
    _unary("OnesLike", np.ones_like),
]


# --- binary ---------------------------------------------------------------------------------
def arith(fn: Callable[[np.ndarray, np.ndarray], Any], logical: Any = None) -> Ref:
    """Same-typed x1, x2: computed in float64 / int64 and rounded (ints wrap like C); ``logical``
    is the bool version (``np.logical_or`` for Add, ...)."""

    def ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
        a, b = xs
        dt = a.dtype
        if dt.kind == "b":
            assert logical is not None
            return np.asarray(logical(a, b))
        with np.errstate(all="ignore"):
            return np.asarray(fn(wide(a), wide(b))).astype(dt)

    return ref


def compare(fn: Callable[[np.ndarray, np.ndarray], Any]) -> Ref:
    return lambda xs, at: np.asarray(fn(wide(xs[0]), wide(xs[1])))


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division: integers truncate toward zero and x / 0 is 0; floats divide."""
    if a.dtype.kind == "f":
        return a / b
    a_, b_ = np.broadcast_arrays(a, b)
    q = np.zeros(a_.shape, np.int64)
    nz = b_ != 0
    q[nz] = np.trunc(a_[nz] / b_[nz])  # small ints: float64 division is exact enough
    return q


def int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.power(a, b)
    return np.asarray(np.power(a, b))  # exponents are >= 0 in the table


_DIV_VARIANTS = (
    *binary_variants(NORMAL, nonzero()),
    Variant("int-trunc", (V([7, -7, 7, -7, 0, 5]), V([2, 2, -2, -2, 3, 0])), dtypes=SIGNED),
)

_BINARY_RECORDS = [
    Record("Add", arith(np.add, np.logical_or), binary_variants()),
    Record("Sub", arith(np.subtract), binary_variants()),
    Record("Mul", arith(np.multiply, np.logical_and), binary_variants()),
    Record("Div", arith(trunc_div), _DIV_VARIANTS),
    Record("RealDiv", arith(trunc_div), _DIV_VARIANTS),
    Record("Maximum", arith(np.maximum), binary_variants(ints(-3, 3), ints(-3, 3))),
    Record("Minimum", arith(np.minimum), binary_variants(ints(-3, 3), ints(-3, 3))),
    Record(
        "Pow",
        arith(int_pow),
        (
            *binary_variants(positive(0.5, 3.0, ihi=3), normal(1.0, 0, 3)),
            Variant("int", (D(2, 3, gen=ints(-3, 3)), D(2, 3, gen=ints(0, 3)))),
        ),
    ),
    *(
        Record(op, compare(fn), binary_variants(ints(-2, 2), ints(-2, 2)))
        for op, fn in (
            ("Equal", np.equal),
            ("NotEqual", np.not_equal),
            ("Less", np.less),
            ("LessEqual", np.less_equal),
            ("Greater", np.greater),
            ("GreaterEqual", np.greater_equal),
        )
    ),
    Record("LogicalAnd", compare(np.logical_and), binary_variants()),
    Record("LogicalOr", compare(np.logical_or), binary_variants()),
    Record("FloorDiv", arith(np.floor_divide), binary_variants(NORMAL, nonzero())),
    Record("FloorMod", arith(np.remainder), binary_variants(NORMAL, nonzero())),
    Record("Mod", arith(np.fmod), binary_variants(NORMAL, nonzero())),
    Record("Atan2", arith(np.arctan2), binary_variants()),
    Record("Hypot", arith(np.hypot), binary_variants()),
    Record("CopySign", arith(np.copysign), binary_variants()),
    Record("BitwiseAnd", arith(np.bitwise_and, np.logical_and), binary_variants()),
    Record("BitwiseOr", arith(np.bitwise_or, np.logical_or), binary_variants()),
    Record("BitwiseXor", arith(np.bitwise_xor, np.logical_xor), binary_variants()),
    Record("Gcd", arith(np.gcd), binary_variants()),
    Record("Lcm", arith(np.lcm), binary_variants()),
    # in the inputs' own type: a float64 step rounded to float32 would be no step
    Record("NextAfter", lambda xs, at: np.nextafter(xs[0], xs[1]), binary_variants()),
    Record("LeftShift", arith(np.left_shift), binary_variants(NORMAL, ints(0, 3))),
    Record("RightShift", arith(np.right_shift), binary_variants(NORMAL, ints(0, 3))),
]


# --- AddN, Cast, Select ---------------------------------------------------------------------
def _addn_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    parts = xs[0]
    with np.errstate(all="ignore"):
        return np.asarray(sum(wide(p) for p in parts)).astype(parts[0].dtype)


def _cast_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    target = {int(t): n for n, t in GE_TYPE.items()}[int(at["dst_type"])]
    x = xs[0]
    if target == "bool":
        return np.asarray(x.astype(np.float64) != 0)
    return np.asarray(np.trunc(x.astype(np.float64))).astype(NP[target])


_SMALL = ints(0, 5)


def _cast(label: str, dst: str, gen: Gen = _SMALL, **kw: Any) -> Variant:
    return Variant(label, (D(2, 3, gen=gen),), {"dst_type": int(GE_TYPE[dst])}, **kw)


_CAST = Record(
    "Cast",
    _cast_ref,
    (
        _cast("to-float32", "float32"),
        _cast("to-float16", "float16"),
        _cast("to-bfloat16", "bfloat16"),
        _cast("to-float64", "float64"),
        _cast("to-int32", "int32"),
        _cast("to-int64", "int64"),
        _cast("to-uint8", "uint8"),
        _cast("to-bool", "bool"),
        _cast("trunc-to-int32", "int32", normal(3.0), dtypes=FLOATS),
        Variant("scalar", (D(gen=ints(0, 5)),), {"dst_type": int(DataType.DT_INT16)}),
        Variant("transposed", (D(3, 4, gen=ints(0, 5), layout="T"),), {"dst_type": 0}),
    ),
)


def _where(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    c, a, b = xs
    return np.where(c, a, b)


def _where_rows(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    c, a, b = xs  # TF Select: a vector condition picks whole rows
    return np.where(c.reshape(c.shape + (1,) * (a.ndim - 1)), a, b)


_BOOL = "bool"
_SELECT_COMMON = (
    Variant("2x3", (D(2, 3, dtype=_BOOL), D(2, 3), D(2, 3))),
    Variant("scalar-cond", (D(dtype=_BOOL), D(2, 3), D(2, 3))),
    Variant("bcast", (D(3, 1, dtype=_BOOL), D(4), D(3, 4))),
    Variant("empty", (D(0, 3, dtype=_BOOL), D(0, 3), D(0, 3))),
    Variant("strided", (D(2, 3, dtype=_BOOL, layout="T"), D(2, 3, layout="S"), D(2, 3))),
)
_SELECTS = [
    Record(
        "Select",
        _where,
        (
            *_SELECT_COMMON,
            Variant("vector-cond-rows", (D(2, dtype=_BOOL), D(2, 3), D(2, 3)), ref=_where_rows),
        ),
        dtype_input=1,
    ),
    Record(
        "SelectV2",
        _where,
        (
            *_SELECT_COMMON,
            # SelectV2 broadcasts like numpy.where: a [2] condition against [2, 2] picks columns.
            Variant(
                "vector-cond-broadcasts",
                (V([True, False], _BOOL), D(2, 2, gen=ints(1, 5)), D(2, 2, gen=ints(0, 0))),
            ),
        ),
        dtype_input=1,
    ),
]


# --- reductions -----------------------------------------------------------------------------
def _axes_of(value: np.ndarray, rank: int) -> tuple[int, ...]:
    return tuple(sorted(int(a) % max(rank, 1) for a in np.asarray(value).reshape(-1)))


def reduce_ref(kind: str) -> Ref:
    def ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
        x, axes_value = xs
        keep = at.get("keep_dims", False)
        axes = _axes_of(axes_value, x.ndim)
        if not axes:
            if at.get("noop_with_empty_axes", True):
                return x.copy()
            axes = tuple(range(x.ndim))
        if x.ndim == 0:
            return x.copy()
        w = wide(x)
        with np.errstate(all="ignore"):
            if kind == "sum":
                y = w.sum(axis=axes, keepdims=keep)
            elif kind == "prod":
                y = w.prod(axis=axes, keepdims=keep)
            elif kind == "max":
                y = w.max(axis=axes, keepdims=keep)
            elif kind == "min":
                y = w.min(axis=axes, keepdims=keep)
            else:
                count = math.prod(x.shape[a] for a in axes)
                y = w.sum(axis=axes, keepdims=keep) / count
                if x.dtype.kind in "iu":
                    y = np.trunc(y)
        return np.asarray(y).astype(x.dtype)

    return ref


def _reduce_variants(gen: Gen, empty_axis0: bool) -> tuple[Variant, ...]:
    out = (
        Variant("axis1", (D(2, 3, 4, gen=gen), K([1]))),
        Variant("neg-axis-keep", (D(2, 3, 4, gen=gen), K([-1], "int64")), {"keep_dims": True}),
        Variant("multi-axes", (D(2, 3, 4, gen=gen), K([0, -1]))),
        Variant("scalar-axis", (D(3, 4, gen=gen), K(-2))),
        Variant("empty-axes-noop", (D(2, 3, gen=gen), K(np.zeros(0, np.int32)))),
        Variant(
            "empty-axes-all",
            (D(2, 3, gen=gen), K(np.zeros(0, np.int32))),
            {"noop_with_empty_axes": False},
        ),
        Variant("scalar-x", (D(gen=gen), K([0]))),
        Variant("scalar-x-neg-axis", (D(gen=gen), K([-1]))),
        Variant("zero-rows", (D(0, 3, gen=gen), K([1]))),
        Variant("transposed", (D(3, 4, gen=gen, layout="T"), K([0]))),
    )
    if empty_axis0:
        out += (Variant("over-empty-axis", (D(0, 3, gen=gen), K([0]))),)
    return out


_REDUCE_RECORDS = [
    Record("ReduceSum", reduce_ref("sum"), _reduce_variants(NORMAL, True)),
    Record("ReduceMean", reduce_ref("mean"), _reduce_variants(NORMAL, False)),
    Record("ReduceMax", reduce_ref("max"), _reduce_variants(ints(-5, 5), False)),
    Record("ReduceMin", reduce_ref("min"), _reduce_variants(ints(-5, 5), False)),
    Record("ReduceProd", reduce_ref("prod"), _reduce_variants(ints(-2, 2), True)),
]


def _argmax_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, dim = xs
    out = {DataType.DT_INT64: np.int64, DataType.DT_INT32: np.int32}[
        DataType(at.get("dtype", DataType.DT_INT64))
    ]
    return np.asarray(np.argmax(wide(x), axis=int(np.asarray(dim).reshape(-1)[0]))).astype(out)


_ARGMAX = Record(
    "ArgMaxV2",
    _argmax_ref,
    (
        Variant("dim1", (D(3, 4, gen=ints(-3, 3)), K(1))),
        Variant("dim-neg", (D(2, 3, 4, gen=ints(-3, 3)), K([-1], "int64"))),
        Variant("dim0", (D(2, 3, 4, gen=ints(-3, 3)), K(0))),
        Variant("int32", (D(3, 4, gen=ints(-3, 3)), K(1)), {"dtype": DataType.DT_INT32}),
        Variant("1d", (D(5, gen=ints(-3, 3)), K(0))),
        Variant("zero-rows", (D(0, 3, gen=ints(-3, 3)), K(1))),
        Variant("transposed", (D(3, 4, gen=ints(-3, 3), layout="T"), K(0))),
    ),
)


# --- nn -------------------------------------------------------------------------------------
def _softmax_ref(log: bool) -> Ref:
    def ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
        x = xs[0]
        out = np.float32 if at.get("half_to_float") and x.dtype == np.float16 else x.dtype
        v = f64(x)
        if v.ndim == 0 or v.size == 0:  # softmax over a length-1 (or empty) axis
            y = np.zeros_like(v) if log else np.ones_like(v)
            return y.astype(out)
        axes = tuple(int(a) for a in at.get("axes", [-1]))
        m = v.max(axis=axes, keepdims=True)
        s = np.exp(v - m).sum(axis=axes, keepdims=True)
        y = v - m - np.log(s) if log else np.exp(v - m) / s
        return y.astype(out)

    return ref


def _softmax_variants(with_half_to_float: bool) -> tuple[Variant, ...]:
    out = (
        Variant("last", (D(2, 3, gen=normal(2.0)),)),
        Variant("axis0", (D(3, 4, gen=normal(2.0)),), {"axes": [0]}),
        Variant("two-axes", (D(2, 3, 4, gen=normal(2.0)),), {"axes": [0, -1]}),
        Variant("scalar", (D(),)),
        Variant("empty", (D(0, 3),)),
        Variant("transposed", (D(3, 4, layout="T"),), {"axes": [-2]}),
    )
    if with_half_to_float:
        out += (Variant("half-to-float", (D(2, 3),), {"half_to_float": True}),)
    return out


def _layer_norm_ref(xs: list[Any], at: dict[str, Any]) -> list[np.ndarray]:
    x, gamma, beta = xs
    begin = at.get("begin_norm_axis", 0) % x.ndim
    eps = float(np.float32(at.get("epsilon", 1e-7)))  # a GE Float attr is a float32
    v = f64(x)
    axes = tuple(range(begin, x.ndim))
    mean = v.mean(axis=axes, keepdims=True)
    var = np.square(v - mean).mean(axis=axes, keepdims=True)
    y = (v - mean) / np.sqrt(var + eps) * f64(gamma) + f64(beta)
    return [y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)]


_LAYER_NORM = Record(
    "LayerNorm",
    _layer_norm_ref,
    (
        Variant("all-axes", (D(2, 3, 4), D(2, 3, 4), D(2, 3, 4))),
        Variant(
            "last-axis",
            (D(2, 3, 4), D(4), D(4)),
            {"begin_norm_axis": -1, "begin_params_axis": -1},
        ),
        Variant(
            "from-axis1",
            (D(2, 3, 4), D(3, 4), D(3, 4)),
            {"begin_norm_axis": 1, "begin_params_axis": 1, "epsilon": 1e-3},
        ),
        Variant(
            "transposed",
            (D(3, 4, layout="T"), D(4), D(4, layout="S")),
            {"begin_norm_axis": 1, "begin_params_axis": 1},
        ),
    ),
)


def _bias_add_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, bias = xs
    fmt = at.get("data_format", "NHWC")
    axis = 1 if fmt.startswith("NC") and x.ndim > 1 else x.ndim - 1
    shape = [1] * x.ndim
    shape[axis] = bias.shape[0]
    with np.errstate(all="ignore"):
        return np.asarray(wide(x) + wide(bias).reshape(shape)).astype(x.dtype)


_BIAS_ADD = Record(
    "BiasAdd",
    _bias_add_ref,
    (
        Variant("nhwc", (D(2, 3, 4), D(4))),
        Variant("nchw", (D(2, 3, 4, 5), D(3)), {"data_format": "NCHW"}),
        Variant("1d", (D(4), D(4))),
        Variant("empty-batch", (D(0, 4), D(4))),
        Variant("strided", (D(3, 4, layout="S"), D(4))),
    ),
)


def _matmul_ref(flags: tuple[str, str]) -> Ref:
    def ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
        a, b, bias = xs[0], xs[1], xs[2]
        wa, wb = wide(a), wide(b)
        if at.get(flags[0]):
            wa = np.swapaxes(wa, -1, -2)
        if at.get(flags[1]):
            wb = np.swapaxes(wb, -1, -2)
        y = wa @ wb
        if bias is not None:
            y = y + wide(bias)
        return np.asarray(y).astype(a.dtype)

    return ref


def _matmul_variants(extra: tuple[Any, ...], flags: tuple[str, str]) -> tuple[Variant, ...]:
    return (
        Variant("2x3@3x4", (D(2, 3), D(3, 4), None, *extra)),
        Variant("t1", (D(3, 2), D(3, 4), None, *extra), {flags[0]: True}),
        Variant("t2", (D(2, 3), D(4, 3), None, *extra), {flags[1]: True}),
        Variant("bias", (D(2, 3), D(3, 4), D(4), *extra)),
        Variant("k0", (D(2, 0), D(0, 4), None, *extra)),
        Variant("strided", (D(2, 3, layout="T"), D(3, 4, layout="S"), None, *extra)),
    )


_ADJ = ("adj_x1", "adj_x2")
_TR = ("transpose_x1", "transpose_x2")
_MATMULS = [
    Record("MatMul", _matmul_ref(_TR), _matmul_variants((), _TR)),
    Record("MatMulV2", _matmul_ref(_TR), _matmul_variants((None,), _TR)),
    Record(
        "BatchMatMulV2",
        _matmul_ref(_ADJ),
        (
            *_matmul_variants((None,), _ADJ),
            Variant("batch", (D(2, 2, 3), D(2, 3, 4), None, None)),
            Variant("batch-bcast", (D(2, 1, 2, 3), D(3, 3, 4), None, None)),
            Variant("batch-x2-2d", (D(2, 2, 3), D(3, 4), None, None)),
            Variant(
                "batch-adj", (D(2, 3, 2), D(2, 4, 3), None, None), {"adj_x1": True, "adj_x2": True}
            ),
        ),
    ),
]


def _gemm_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    a, b, c, alpha, beta = xs
    wa, wb = wide(a), wide(b)
    wa = wa.T if at.get("transpose_a") else wa
    wb = wb.T if at.get("transpose_b") else wb
    y = wide(alpha).reshape(()) * (wa @ wb) + wide(beta).reshape(()) * wide(c)
    return np.broadcast_to(y, (wa.shape[0], wb.shape[1])).astype(np.result_type(a, b, c))


def _gemm_variant(label: str, a: Arg, b: Arg, c: Arg, **kw: Any) -> Variant:
    """GEMM with alpha 2 and beta -1 (Consts of the case dtype) unless ``kw`` says otherwise."""
    scales = kw.pop("scales", (K(2, None), K(-1, None)))
    return Variant(label, (a, b, c, *scales), kw.pop("attrs", {}), kw.pop("dtypes", _GEMM_SAME))


_GEMM_SAME = frozenset({"float16", "float32", "float64", "int32"})  # int8 a, b need int32 c
_GEMM = Record(
    "GEMM",
    _gemm_ref,
    (
        _gemm_variant("2x3@3x4", D(2, 3), D(3, 4), D(2, 4)),
        _gemm_variant(
            "t-both",
            D(3, 2),
            D(4, 3),
            D(2, 4),
            scales=(K([3], None), K([1], None)),
            attrs={"transpose_a": True, "transpose_b": True},
        ),
        _gemm_variant("c[N]", D(2, 3), D(3, 4), D(4)),
        _gemm_variant("c[1,N]", D(2, 3), D(3, 4), D(1, 4)),
        _gemm_variant("c[M,1]", D(2, 3), D(3, 4), D(2, 1)),
        _gemm_variant("c-scalar", D(2, 3), D(3, 4), D()),
        _gemm_variant("scales-fed", D(2, 3), D(3, 4), D(2, 4), scales=(D(), D(1))),
        _gemm_variant("scales-one", D(2, 3), D(3, 4), D(4), scales=(K(1, None), K(1, None))),
        _gemm_variant("m0", D(0, 3), D(3, 4), D(4)),
        _gemm_variant("n0", D(2, 3), D(3, 0), D(2, 0)),
        _gemm_variant("k0", D(2, 0), D(0, 4), D(2, 4)),
        _gemm_variant("strided", D(2, 3, layout="T"), D(3, 4, layout="S"), D(2, 4, layout="T")),
        _gemm_variant(
            "int8",
            D(2, 3),
            D(3, 4),
            D(2, 4, dtype="int32"),
            scales=(K(2, "int32"), K(-1, "int32")),
            dtypes=frozenset({"int8"}),
        ),
    ),
)


# --- shape ops ------------------------------------------------------------------------------
def _reshape_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, shape = xs
    target = [int(d) for d in np.asarray(shape).reshape(-1)]
    axis, num_axes = at.get("axis", 0), at.get("num_axes", -1)
    rank = x.ndim
    start = axis if axis >= 0 else axis + rank + 1  # Caffe's convention: -1 is after the last
    stop = rank if num_axes == -1 else start + num_axes
    span = math.prod(x.shape[start:stop])
    if -1 in target:
        known = math.prod(d for d in target if d != -1)
        target = [span // known if d == -1 else d for d in target]
    return x.reshape((*x.shape[:start], *target, *x.shape[stop:]))


_RESHAPE = Record(
    "Reshape",
    _reshape_ref,
    (
        Variant("2x3->3x2", (D(2, 3), K([3, 2]))),
        Variant("infer-dim", (D(2, 3, 4), K([-1, 4], "int64"))),
        Variant("scalar->[1]", (D(), K([1]))),
        Variant("[1]->scalar", (D(1), K(np.zeros(0, np.int32)))),
        Variant("empty", (D(0, 3), K([3, 0]))),
        Variant("axis1-num1", (D(2, 3, 4), K([3, 1])), {"axis": 1, "num_axes": 1}),
        Variant("axis-neg2", (D(2, 3, 4), K([2, 2])), {"axis": -2, "num_axes": 1}),
        Variant("transposed", (D(3, 4, layout="T"), K([-1]))),
        Variant("shape-as-data", (D(2, 3), V([3, 2], "int32")), unknown_ok=True),
    ),
)

_TRANSPOSE = Record(
    "Transpose",
    lambda xs, at: np.transpose(xs[0], [int(p) for p in xs[1]]),
    (
        Variant("3d", (D(2, 3, 4), K([2, 0, 1]))),
        Variant("2d-int64", (D(2, 3), K([1, 0], "int64"))),
        Variant("identity-perm", (D(2, 3), K([0, 1]))),
        Variant("empty", (D(0, 3), K([1, 0]))),
        Variant("scalar", (D(), K(np.zeros(0, np.int32)))),
        Variant("transposed", (D(3, 4, layout="T"), K([1, 0]))),
    ),
)


def _squeeze_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    axis = tuple(at.get("axis", []))
    return np.squeeze(xs[0], axis=axis) if axis else np.squeeze(xs[0])


def _unsqueeze_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x = xs[0]
    axes = at.get("axes", [])
    rank = x.ndim + len(axes)
    where = {a % rank for a in axes}  # axes are positions in the output
    dims = iter(x.shape)
    return x.reshape([1 if i in where else next(dims) for i in range(rank)])


_SQUEEZES = [
    Record(
        "Squeeze",
        _squeeze_ref,
        (
            Variant("all", (D(1, 3, 1),)),
            Variant("neg-axis", (D(1, 3, 1),), {"axis": [-1]}),
            Variant("two-axes", (D(1, 3, 1),), {"axis": [0, 2]}),
            Variant("scalar", (D(),)),
            Variant("empty", (D(0, 1),), {"axis": [1]}),
            Variant("strided", (D(1, 4, layout="S"),)),
        ),
    ),
    Record(
        "Unsqueeze",
        _unsqueeze_ref,
        (
            Variant("front", (D(2, 3),), {"axes": [0]}),
            Variant("neg", (D(2, 3),), {"axes": [-1]}),
            Variant("two", (D(2, 3),), {"axes": [0, 3]}),
            Variant("scalar", (D(),), {"axes": [0]}),
            Variant("empty", (D(0, 3),), {"axes": [1]}),
        ),
    ),
    Record(
        "ExpandDims",
        lambda xs, at: np.expand_dims(xs[0], int(np.asarray(xs[1]).reshape(-1)[0])),
        (
            Variant("front", (D(2, 3), K(0))),
            Variant("neg", (D(2, 3), K(-1))),
            Variant("mid-int64", (D(2, 3), K([1], "int64"))),
            Variant("scalar", (D(), K(0))),
            Variant("empty", (D(0, 3), K(-1))),
        ),
    ),
]


_CONCAT = Record(
    "ConcatV2",
    lambda xs, at: np.concatenate(xs[0], axis=int(np.asarray(xs[1]).reshape(-1)[0])),
    (
        Variant("neg-axis", ([D(2, 3), D(2, 1), D(2, 2)], K(-1)), {"N": 3}),
        Variant("axis0", ([D(1, 3), D(2, 3)], K(0, "int64")), {"N": 2}),
        Variant("with-empty", ([D(0, 3), D(2, 3)], K(0)), {"N": 2}),
        Variant("single", ([D(2, 3)], K(1))),
        Variant("strided", ([D(2, 3, layout="T"), D(2, 2, layout="S")], K(1)), {"N": 2}),
    ),
)


def _split_ref(xs: list[Any], at: dict[str, Any]) -> list[np.ndarray]:
    x, sizes, dim = xs
    axis = int(np.asarray(dim).reshape(-1)[0]) % x.ndim
    sizes_list = [int(s) for s in np.asarray(sizes).reshape(-1)]
    if -1 in sizes_list:
        rest = x.shape[axis] - sum(s for s in sizes_list if s != -1)
        sizes_list = [rest if s == -1 else s for s in sizes_list]
    out, start = [], 0
    for s in sizes_list:
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, start + s)
        out.append(x[tuple(index)])
        start += s
    return out


_SPLIT = Record(
    "SplitV",
    _split_ref,
    (
        Variant("axis0", (D(6, 4), K([1, 2, 3]), K(0)), {"num_split": 3}, output_counts=(3,)),
        Variant("neg-axis", (D(2, 5), K([2, -1]), K(-1)), {"num_split": 2}, output_counts=(2,)),
        Variant(
            "zero-piece", (D(2, 4), K([0, 4], "int64"), K(1)), {"num_split": 2}, output_counts=(2,)
        ),
        Variant("one", (D(2, 4), K([4]), K(1)), {"num_split": 1}, output_counts=(1,)),
        Variant(
            "strided", (D(4, 3, layout="T"), K([1, 3]), K(0)), {"num_split": 2}, output_counts=(2,)
        ),
    ),
)


def _ss(
    label: str, x: Arg, b: Any, e: Any, s: Any, ref: Ref, dt: str = "int32", **masks: int
) -> Variant:
    return Variant(label, (x, K(b, dt), K(e, dt), K(s, dt)), dict(masks), ref=ref)


_STRIDED_SLICE = Record(
    "StridedSlice",
    None,
    (
        _ss("basic", D(4, 6), [1, 0], [3, 6], [1, 2], lambda xs, at: xs[0][1:3, 0:6:2]),
        _ss(
            "reverse-masks",
            D(4, 6),
            [0, 0],
            [0, 0],
            [-1, 1],
            lambda xs, at: xs[0][::-1, :],
            begin_mask=3,
            end_mask=3,
        ),
        _ss(
            "neg-begin",
            D(4, 6),
            [-3, -2],
            [4, 6],
            [1, 1],
            lambda xs, at: xs[0][-3:4, -2:6],
            "int64",
        ),
        _ss(
            "shrink",
            D(4, 6),
            [1, 0],
            [2, 6],
            [1, 1],
            lambda xs, at: xs[0][1, 0:6],
            shrink_axis_mask=1,
        ),
        _ss(
            "new-axis",
            D(4, 6),
            [0, 0],
            [0, 4],
            [1, 1],
            lambda xs, at: xs[0][np.newaxis, 0:4],
            new_axis_mask=1,
        ),
        _ss(
            "ellipsis",
            D(2, 3, 4),
            [0, 1],
            [0, 3],
            [1, 1],
            lambda xs, at: xs[0][..., 1:3],
            ellipsis_mask=1,
        ),
        _ss("clamped-end", D(5), [1], [100], [2], lambda xs, at: xs[0][1:100:2]),
        _ss("empty-result", D(4, 6), [2, 0], [2, 6], [1, 1], lambda xs, at: xs[0][2:2, 0:6]),
        _ss(
            "strided-input",
            D(4, 6, layout="T"),
            [0, 1],
            [4, 5],
            [2, 1],
            lambda xs, at: xs[0][0:4:2, 1:5],
        ),
    ),
)

_SLICE = Record(
    "Slice",
    None,
    (
        Variant("basic", (D(4, 6), K([1, 2]), K([2, -1])), ref=lambda xs, at: xs[0][1:3, 2:]),
        Variant(
            "int64", (D(4, 6), K([0, 0], "int64"), K([4, 6], "int64")), ref=lambda xs, at: xs[0]
        ),
        Variant("empty", (D(4, 6), K([1, 1]), K([0, 3])), ref=lambda xs, at: xs[0][1:1, 1:4]),
        Variant(
            "scalar",
            (D(), K(np.zeros(0, np.int32)), K(np.zeros(0, np.int32))),
            ref=lambda xs, at: xs[0],
        ),
        Variant(
            "transposed",
            (D(4, 6, layout="T"), K([2, 1]), K([-1, 3])),
            ref=lambda xs, at: xs[0][2:, 1:4],
        ),
    ),
)


def _gather_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, indices, axis_value = xs
    axis = int(np.asarray(axis_value).reshape(-1)[0]) % x.ndim
    idx = np.where(indices < 0, indices + x.shape[axis], indices)
    batch = at.get("batch_dims", 0)
    if batch == 0:
        return np.take(x, idx, axis=axis)
    assert batch == 1
    return np.stack([np.take(x[i], idx[i], axis=axis - 1) for i in range(x.shape[0])])


def _idx(*shape: int, lo: int = 0, hi: int = 2, dt: str = "int32") -> Arg:
    return D(*shape, gen=ints(lo, hi), dtype=dt)


_GATHER = Record(
    "GatherV2",
    _gather_ref,
    (
        Variant("axis0", (D(4, 3), _idx(5, hi=3), K(0))),
        Variant("neg-axis", (D(2, 5), _idx(3, hi=4, dt="int64"), K(-1))),
        Variant("2d-indices", (D(4, 3), _idx(2, 2, hi=3), K([0]))),
        Variant("scalar-index", (D(4, 3), _idx(hi=2), K(1))),
        Variant("batch-dims", (D(2, 3, 4), _idx(2, 5), K(2)), {"batch_dims": 1}),
        Variant(
            "negative-indices",
            (D(4, 3), _idx(3, lo=-4, hi=-1), K(0)),
            {"negative_index_support": True},
        ),
        Variant("empty-indices", (D(4, 3), _idx(0), K(0))),
        Variant("transposed", (D(4, 3, layout="T"), _idx(2, hi=2), K(1))),
    ),
)


def _pad_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, pads = xs
    flat = [int(p) for p in np.asarray(pads).reshape(-1)]
    return np.pad(x, [(flat[2 * i], flat[2 * i + 1]) for i in range(x.ndim)])


_PAD = Record(
    "Pad",
    _pad_ref,
    (
        Variant("2d", (D(2, 3), K([[1, 0], [2, 1]]))),
        Variant("zero-pads", (D(2, 3), K([[0, 0], [0, 0]], "int64"))),
        Variant("empty", (D(0, 2), K([[1, 1], [0, 0]]))),
        Variant("strided", (D(2, 3, layout="S"), K([[0, 1], [1, 0]]))),
    ),
)

_TILE = Record(
    "Tile",
    lambda xs, at: np.tile(xs[0], [int(m) for m in np.asarray(xs[1]).reshape(-1)]),
    (
        Variant("2x1", (D(2, 3), K([2, 1]))),
        Variant("2x3-int64", (D(2, 3), K([2, 3], "int64"))),
        Variant("zero", (D(2, 3), K([0, 2]))),
        Variant("transposed", (D(2, 3, layout="T"), K([1, 2]))),
    ),
)

_BROADCAST_TO = Record(
    "BroadcastTo",
    lambda xs, at: np.broadcast_to(xs[0], [int(d) for d in np.asarray(xs[1]).reshape(-1)]).copy(),
    (
        Variant("3x1->2x3x4", (D(3, 1), K([2, 3, 4]))),
        Variant("scalar", (D(), K([2, 2], "int64"))),
        Variant("to-empty", (D(1), K([0]))),
        Variant("strided", (D(1, 3, layout="S"), K([2, 3]))),
    ),
)

_FILL = Record(
    "Fill",
    lambda xs, at: np.full(
        [int(d) for d in np.asarray(xs[0]).reshape(-1)], np.asarray(xs[1]).reshape(())
    ),
    (
        Variant("2x3", (K([2, 3]), D())),
        Variant("value[1]", (K([2, 3], "int64"), D(1))),
        Variant("empty", (K([0, 3]), D())),
        Variant("scalar", (K(np.zeros(0, np.int32)), D())),
        Variant("dims-as-data", (V([2, 3], "int32"), D()), unknown_ok=True),
    ),
    dtype_input=1,
)


def _range_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    start, limit, delta = (f64(v).reshape(-1)[0] for v in xs)
    span = (limit - start) / delta
    n = max(math.floor(span) + 1 if at.get("is_closed") else math.ceil(span), 0)
    return np.asarray([start + i * delta for i in range(n)], np.float64).astype(xs[0].dtype)


def _kc(v: Any) -> Arg:
    return K(v, None)  # a Const of the case dtype


_RANGE = Record(
    "Range",
    _range_ref,
    (
        Variant("0..5", (_kc(0), _kc(5), _kc(1))),
        Variant("step2", (_kc(1), _kc(8), _kc(2))),
        Variant("fraction", (_kc(0.5), _kc(3), _kc(0.7)), dtypes=FLOATS),
        Variant("negative-delta", (_kc(5), _kc(1), _kc(-1.5)), dtypes=FLOATS),
        Variant("negative-int-delta", (_kc(5), _kc(-2), _kc(-2)), dtypes=SIGNED),
        Variant("empty", (_kc(3), _kc(3), _kc(1))),
        Variant("closed", (_kc(1), _kc(4), _kc(1)), {"is_closed": True}),
        Variant("as-data", (V(0), V(4), V(1)), unknown_ok=True),
    ),
)


def _shape_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    out = {3: np.int32, 9: np.int64}[int(at.get("dtype", 3))]
    return np.asarray(xs[0].shape, dtype=out)


_SHAPE = Record(
    "Shape",
    _shape_ref,
    (
        Variant("2x3", (D(2, 3),)),
        Variant("int64", (D(2, 3, 4),), {"dtype": 9}),
        Variant("scalar", (D(),)),
        Variant("empty", (D(0, 3),)),
        Variant("transposed", (D(3, 4, layout="T"),)),
    ),
)


RECORDS: tuple[Record, ...] = (
    *_UNARY_RECORDS,
    *_BINARY_RECORDS,
    Record(
        "AddN",
        _addn_ref,
        (
            Variant("three", ([D(2, 3), D(2, 3), D(2, 3)],), {"N": 3}),
            Variant("one", ([D(2, 3)],), {"N": 1}),
            Variant("scalars", ([D(), D()],), {"N": 2}),
            Variant("empty", ([D(0, 3), D(0, 3)],), {"N": 2}),
            Variant("strided", ([D(2, 3, layout="T"), D(2, 3, layout="S")],), {"N": 2}),
        ),
    ),
    _CAST,
    *_SELECTS,
    *_REDUCE_RECORDS,
    _ARGMAX,
    Record("SoftmaxV2", _softmax_ref(log=False), _softmax_variants(True)),
    Record("LogSoftmaxV2", _softmax_ref(log=True), _softmax_variants(False)),
    _LAYER_NORM,
    _BIAS_ADD,
    *_MATMULS,
    _GEMM,
    _RESHAPE,
    _TRANSPOSE,
    *_SQUEEZES,
    _CONCAT,
    _SPLIT,
    _STRIDED_SLICE,
    _SLICE,
    _GATHER,
    _PAD,
    _TILE,
    _BROADCAST_TO,
    _FILL,
    _RANGE,
    _SHAPE,
)

BY_OP: dict[str, Record] = {r.op: r for r in RECORDS}


def cases() -> list[tuple[Record, Variant, str]]:
    """Every (record, variant, dtype) the table test runs."""
    out = []
    for record in RECORDS:
        for variant in record.variants:
            for dtype in record.claimed():
                if variant.dtypes is None or dtype in variant.dtypes:
                    out.append((record, variant, dtype))
    return out


def flat_outputs(result: Any) -> list[np.ndarray]:
    if isinstance(result, (list, tuple)):
        return [np.asarray(r) for r in result]
    return [np.asarray(result)]


# ------------------------------------------------------------------------------ building ------
@dataclass
class Built:
    graph: Graph
    node: Node
    feeds: list[np.ndarray]  # what eval_graph gets, by Data index
    values: list[Any]  # per IR input: array, None or list of arrays (what the reference gets)


def data_node(
    graph: Graph, index: int, shape: list[int], dtype: str, name: str | None = None
) -> Node:
    """A Data node for graph input ``index`` declared as ``dtype[shape]``."""
    desc = TensorDesc(list(shape), data_type=GE_TYPE[dtype])
    return add_op_node(graph, "Data", [None], {"index": index}, name=name, declared=[desc])


def const_node(graph: Graph, value: np.ndarray, name: str | None = None) -> Node:
    tensor = Tensor.from_numpy(np.array(value, order="C"))  # (ascontiguousarray makes 0-d 1-d)
    return add_op_node(graph, "Const", [], {"value": tensor}, name=name)


def build(
    op: str,
    inputs: tuple[Any, ...],
    attrs: dict[str, Any],
    dtype: str,
    rng: np.random.Generator,
    output_counts: tuple[int, ...] | None = None,
    declare: Callable[[list[int]], list[int]] | None = None,
) -> Built:
    """A graph of Data/Const nodes feeding one ``op`` node whose outputs are the graph's.

    ``declare`` maps a Data input's shape to the shape it is declared with (to hide dims
    from inference: ``lambda s: [-1] * len(s)``)."""
    graph = Graph("case")
    feeds: list[np.ndarray] = []
    values: list[Any] = []
    ports: list[Any] = []

    def make(arg: Arg) -> tuple[tuple[Node, int], np.ndarray]:
        array = arg.make(rng, dtype)
        if arg.const:
            node = const_node(graph, array)
        else:
            shape = list(array.shape) if declare is None else declare(list(array.shape))
            node = data_node(graph, len(feeds), shape, name_of(array.dtype))
            feeds.append(array)
        return (node, 0), array

    for item in inputs:
        if item is None:
            ports.append(None)
            values.append(None)
        elif isinstance(item, list):
            made = [make(a) for a in item]
            ports.append([m[0] for m in made])
            values.append([m[1] for m in made])
        else:
            port, array = make(item)
            ports.append(port)
            values.append(array)
    node = add_op_node(graph, op, ports, dict(attrs), name="op", output_counts=output_counts)
    graph.set_outputs([(node, i) for i in range(node.get_outputs_size())])
    return Built(graph, node, feeds, values)


# ------------------------------------------------------------------------------ indexing ops --
# ReverseV2, MirrorPad, GatherNd and the scatters (ge/ops/indexing.py), appended to the table.
def _reverse_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, axis = xs
    return np.flip(x, tuple(int(a) for a in np.asarray(axis).reshape(-1)))


def _mirror_pad_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, pads = xs
    if x.ndim == 0:
        return x.copy()
    pairs = np.asarray(pads, dtype=np.int64).reshape(x.ndim, 2)
    return np.pad(x, pairs.tolist(), mode=at.get("mode", "REFLECT").lower())


def _rows(indices: Any) -> list[tuple[int, ...]]:
    idx = np.asarray(indices, dtype=np.int64)
    return [tuple(r) for r in idx.reshape(math.prod(idx.shape[:-1]), idx.shape[-1]).tolist()]


def _gather_nd_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    x, indices = xs
    idx = np.asarray(indices)
    depth = idx.shape[-1]
    parts = [x[r] for r in _rows(idx)]
    out = np.stack(parts) if parts else np.zeros((0, *x.shape[depth:]), x.dtype)
    return out.reshape((*idx.shape[:-1], *x.shape[depth:]))


def _scatter_ref(base: np.ndarray, indices: Any, updates: np.ndarray, add: bool) -> np.ndarray:
    idx = np.asarray(indices)
    y = wide(base).copy()
    ups = wide(updates).reshape((math.prod(idx.shape[:-1]), *base.shape[idx.shape[-1] :]))
    for r, row in enumerate(_rows(idx)):  # in index order: the last duplicate wins
        y[row] = y[row] + ups[r] if add else ups[r]
    return y.astype(base.dtype)


_INDEXING_RECORDS = (
    Record(
        "ReverseV2",
        _reverse_ref,
        (
            Variant("2d-both", (D(2, 3), K([0, 1]))),
            Variant("neg-axis", (D(2, 3, 4), K([-1], "int64"))),
            Variant("axis-scalar", (D(2, 3), K(1))),
            Variant("scalar", (D(), K(np.zeros(0, np.int32)))),
            Variant("empty", (D(0, 3), K([0, 1]))),
            Variant("transposed", (D(3, 4, layout="T"), K([0]))),
        ),
    ),
    Record(
        "MirrorPad",
        _mirror_pad_ref,
        (
            Variant("reflect", (D(3, 4), K([[1, 2], [2, 3]])), {"mode": "REFLECT"}),
            Variant("symmetric", (D(3, 4), K([[3, 0], [4, 1]], "int64")), {"mode": "SYMMETRIC"}),
            Variant("scalar", (D(), K(np.zeros((0, 2), np.int32))), {"mode": "REFLECT"}),
            Variant("empty", (D(0, 3), K([[0, 0], [1, 1]])), {"mode": "SYMMETRIC"}),
            Variant("strided", (D(2, 3, layout="S"), K([[1, 1], [2, 0]])), {"mode": "REFLECT"}),
        ),
    ),
    Record(
        "GatherNd",
        _gather_nd_ref,
        (
            Variant("full-depth", (D(3, 4), V([[0, 1], [2, 3], [1, 0]], "int32"))),
            Variant("slices", (D(3, 4, 2), V([[2], [0], [2]], "int64"))),
            Variant("batched", (D(3, 4), V([[[0, 0], [1, 1]], [[2, 2], [0, 3]]], "int32"))),
            Variant("scalar-out", (D(3, 4), V([1, 2], "int32"))),
            Variant("depth-0", (D(2, 3), V(np.zeros((2, 0), np.int32), "int32"))),
            Variant("empty", (D(3, 4), V(np.zeros((0, 2), np.int64), "int64"))),
            Variant("transposed", (D(4, 3, layout="T"), V([[3, 2], [0, 0]], "int32"))),
        ),
    ),
    Record(
        "ScatterNd",
        lambda xs, at: _scatter_ref(
            np.zeros(np.asarray(xs[2]).reshape(-1).tolist(), xs[1].dtype), xs[0], xs[1], True
        ),
        (
            Variant("duplicates", (V([[0], [0], [2]], "int32"), D(3, 2), K([4, 2]))),
            Variant("full-depth", (V([[0, 1], [1, 1], [0, 1]], "int64"), D(3), K([2, 2]))),
            Variant("empty", (V(np.zeros((0, 1), np.int32), "int32"), D(0, 2), K([3, 2]))),
            Variant("strided", (V([[1], [0]], "int32"), D(2, 3, layout="S"), K([2, 3]))),
        ),
        dtype_input=1,
    ),
    *(
        Record(
            op,
            lambda xs, at, add=add: _scatter_ref(xs[0], xs[1], xs[2], add),
            (
                Variant("duplicates", (D(3, 2), V([[0], [0], [2]], "int64"), D(3, 2))),
                Variant("full-depth", (D(2, 3), V([[0, 1], [1, 2], [0, 1]], "int32"), D(3))),
                Variant("empty", (D(3, 2), V(np.zeros((0, 1), np.int32), "int32"), D(0, 2))),
                Variant("whole", (D(2, 2), V(np.zeros((2, 0), np.int32), "int32"), D(2, 2, 2))),
                Variant("transposed", (D(3, 4, layout="T"), V([[2], [1]], "int32"), D(2, 4))),
            ),
        )
        for op, add in (("TensorScatterUpdate", False), ("TensorScatterAdd", True))
    ),
)
RECORDS = (*RECORDS, *_INDEXING_RECORDS)
BY_OP.update({r.op: r for r in _INDEXING_RECORDS})


# --- scans and sorts (ge.ops.sorting) ------------------------------------------------------------
def _stable_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """numpy's stable argsort of ``x`` (as float64 / int64) along ``axis``; descending sorts by
    the negated rank of each group of equal keys (NaNs one group, the last), so ties keep
    their input order and NaNs come first."""
    keys = wide(x)
    ascending = np.argsort(keys, axis=axis, kind="stable")
    if not descending:
        return ascending
    ranked = np.moveaxis(np.take_along_axis(keys, ascending, axis), axis, -1)
    same = (ranked[..., 1:] == ranked[..., :-1]) | (
        np.isnan(ranked[..., 1:].astype(np.float64)) & np.isnan(ranked[..., :-1].astype(np.float64))
    )
    starts = np.concatenate(
        [np.ones((*same.shape[:-1], min(ranked.shape[-1], 1)), bool), ~same], -1
    )
    group = np.empty(ascending.shape, np.int64)
    np.put_along_axis(group, ascending, np.moveaxis(np.cumsum(starts, -1), -1, axis), axis)
    return np.argsort(-group, axis=axis, kind="stable")


def _scan_case_ref(prod: bool) -> Ref:
    def ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
        x, axis = xs[0], int(np.asarray(xs[1]).reshape(-1)[0])
        line = wide(x).reshape(x.shape or (1,))
        axis %= line.ndim
        if at.get("reverse"):
            line = np.flip(line, axis)
        y = (np.cumprod if prod else np.cumsum)(line, axis=axis)
        if at.get("exclusive"):
            head = np.full_like(y[(slice(None),) * axis + (slice(0, 1),)], 1 if prod else 0)
            y = np.concatenate([head, y[(slice(None),) * axis + (slice(0, -1),)]], axis)
        if at.get("reverse"):
            y = np.flip(y, axis)
        return y.reshape(x.shape).astype(x.dtype)

    return ref


def _sort_case_ref(xs: list[Any], at: dict[str, Any]) -> list[np.ndarray]:
    x = xs[0]
    line = x.reshape(x.shape or (1,))
    axis = int(at.get("axis", -1)) % line.ndim
    order = _stable_order(line, axis, bool(at.get("descending", False)))
    values = np.take_along_axis(line, order, axis).reshape(x.shape)
    return [values, order.astype(np.int32).reshape(x.shape)]


def _topk_case_ref(xs: list[Any], at: dict[str, Any]) -> list[np.ndarray]:
    x, k = xs[0], int(np.asarray(xs[1]).reshape(-1)[0])
    dim = int(at.get("dim", -1)) % x.ndim
    order = _stable_order(x, dim, bool(at.get("largest", True)))
    order = order[(slice(None),) * dim + (slice(0, k),)]
    return [np.take_along_axis(x, order, dim), order.astype(np.int32)]


def _scan_case_variants(gen: Gen) -> tuple[Variant, ...]:
    return (
        Variant("axis1", (D(2, 3, 4, gen=gen), K(1))),
        Variant("neg-axis-int64", (D(2, 3, 4, gen=gen), K([-1], "int64"))),
        Variant("exclusive", (D(3, 5, gen=gen), K(1)), {"exclusive": True}),
        Variant("reverse", (D(3, 5, gen=gen), K(0)), {"reverse": True}),
        Variant("excl-rev", (D(4, 3, gen=gen), K(-2)), {"exclusive": True, "reverse": True}),
        Variant("scalar", (D(gen=gen), K(0))),
        Variant("scalar-exclusive", (D(gen=gen), K(-1)), {"exclusive": True}),
        Variant("empty", (D(0, 3, gen=gen), K(0)), {"exclusive": True}),
        Variant("empty-axis", (D(2, 0, gen=gen), K(1))),
        Variant("transposed", (D(3, 4, gen=gen, layout="T"), K(0))),
    )


_TIES = ints(-3, 3)
_SORTING_RECORDS = [
    Record("Cumsum", _scan_case_ref(prod=False), _scan_case_variants(NORMAL)),
    Record("Cumprod", _scan_case_ref(prod=True), _scan_case_variants(ints(-2, 2))),
    Record(
        "Sort",
        _sort_case_ref,
        (
            Variant("last", (D(3, 5, gen=_TIES),)),
            Variant("axis0-desc", (D(5, 2, 3, gen=_TIES),), {"axis": 0, "descending": True}),
            Variant("neg-axis", (D(2, 6, 2, gen=_TIES),), {"axis": -2}),
            Variant("scalar", (D(),)),
            Variant("empty", (D(0, 3),), {"descending": True}),
            Variant("strided", (D(2, 6, gen=_TIES, layout="S"),)),
            Variant("transposed", (D(4, 3, gen=_TIES, layout="T"),), {"axis": 0}),
        ),
    ),
    Record(
        "TopKV2",
        _topk_case_ref,
        (
            Variant("k2", (D(3, 5, gen=_TIES), K(2))),
            Variant("dim0-smallest", (D(4, 3, gen=_TIES), K(3)), {"dim": 0, "largest": False}),
            Variant("k-all-int64", (D(2, 6, gen=_TIES), K([6], "int64"))),
            Variant("k0", (D(2, 4), K(0))),
            Variant("empty-rows", (D(0, 4), K(2))),
            Variant("unsorted", (D(5, gen=_TIES), K(3)), {"sorted": False}),
            Variant("transposed", (D(3, 4, gen=_TIES, layout="T"), K(4))),
        ),
    ),
]
RECORDS = (*RECORDS, *_SORTING_RECORDS)
BY_OP.update({r.op: r for r in _SORTING_RECORDS})


# --- linear algebra (ge.ops.linalg) ---------------------------------------------------------
def spd(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
    """Symmetric positive definite matrices ``m @ m.T + n * I`` (well conditioned)."""
    m = rng.normal(size=shape)
    return np.asarray(m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dt)


def well_posed(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
    """Random square matrices with a dominant diagonal (well conditioned, not symmetric)."""
    return np.asarray(rng.normal(size=shape) + 3 * np.eye(shape[-1])).astype(dt)


def _cholesky_case_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    return np.linalg.cholesky(f64(xs[0])).astype(xs[0].dtype)


def _solve_case_ref(xs: list[Any], at: dict[str, Any]) -> np.ndarray:
    a, b = f64(xs[0]), f64(xs[1])
    if at.get("adjoint"):
        a = np.swapaxes(a, -1, -2)
    return np.linalg.solve(a, b).astype(xs[0].dtype)


_LINALG_TOL = {"float32": (1e-4, 1e-5)}
_LINALG_RECORDS = [
    Record(
        "Cholesky",
        _cholesky_case_ref,
        (
            Variant("3x3", (D(3, 3, gen=spd),)),
            Variant("1x1", (D(1, 1, gen=spd),)),
            Variant("batch", (D(2, 3, 4, 4, gen=spd),)),
            Variant("empty-batch", (D(0, 2, 2, gen=spd),)),
            Variant("transposed", (D(5, 5, gen=spd, layout="T"),)),
        ),
        tol=_LINALG_TOL,
    ),
    Record(
        "MatrixSolve",
        _solve_case_ref,
        (
            Variant("3x3-k2", (D(3, 3, gen=well_posed), D(3, 2))),
            Variant("adjoint", (D(4, 4, gen=well_posed), D(4, 3)), {"adjoint": True}),
            Variant("batch-bcast", (D(2, 1, 3, 3, gen=well_posed), D(4, 3, 1))),
            Variant("empty-k", (D(3, 3, gen=well_posed), D(3, 0))),
            Variant("transposed", (D(4, 4, gen=well_posed, layout="T"), D(4, 2, layout="T"))),
        ),
        tol=_LINALG_TOL,
    ),
]
RECORDS = (*RECORDS, *_LINALG_RECORDS)
BY_OP.update({r.op: r for r in _LINALG_RECORDS})
