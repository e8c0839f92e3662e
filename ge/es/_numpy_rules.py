"""numpy's rules for the values ``ge.jit`` traces (a builder whose ``_numpy_semantics`` is set).

A traced value follows numpy >= 2 (NEP 50): an operator, ufunc or numpy function on it gives
numpy's dtype and shape. numpy itself is the oracle: ``ufunc.resolve_dtypes`` gives a ufunc's
loop dtypes for the operand dtypes, a Python ``int``/``float`` passed as a *weak* scalar
(``int8 + 1 -> int8``, ``int8 + 1.0 -> float64``, ``float16 + 1.0 -> float16``), a Python
``bool`` as ``np.bool_``; numpy scalars, arrays and lists are strong. The answers are cached by
(ufunc, operand keys), so a trace pays one dict look-up per op. The operands are cast to the
loop dtypes (``Cast`` nodes) and the op is built; an op that lacks the loop dtype (``Maximum``
of bools, ``Neg`` of unsigned ints) is computed in a wider type and cast back. What numpy
refuses (``bool - bool``, ``-bool_array``) raises ``GeTypeError`` with numpy's message.

Decisions where numpy's rule depends on values the trace does not have:

- A Python int that does not fit the loop dtype raises numpy's ``OverflowError``
  (``int8_array + 300``); in a comparison it is compared exactly (numpy 2's rule), in int64
  (float64 when it does not fit int64 or the array is uint64).
- ``//`` and ``%`` are numpy's floor division and modulo (the remainder has the divisor's
  sign): the ``FloorDiv``/``FloorMod`` ops, which compute them as numpy does (floats from
  fmod, so ``1.0 // 0.1`` is 9). Integers divided by zero give 0 for both, as numpy does
  (numpy also warns; a compiled graph cannot).
- An integer raised to a negative Python int raises numpy's ``ValueError`` at trace time; a
  negative exponent *array* gives ``Pow``'s integer result (0 unless the base is +-1) where
  numpy raises at run time.
- ``sum``/``prod`` of bools and integers accumulate in numpy's default integer (int64, uint64
  for unsigned); ``mean`` of them is float64; ``max``/``min`` keep the dtype (bools too).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import as_array, typed_const
from ge.graph._dtypes import data_type_from_numpy
from ge.graph.types import DataType
from ge.ops.registry import find_op

__all__ = [
    "as_dtype",
    "binary",
    "check_precision",
    "concat_dtype",
    "floor_divmod",
    "holder",
    "is_ufunc",
    "key",
    "loop_dtypes",
    "matmul_operands",
    "reduction_result",
    "reduction_source",
    "unary",
    "where",
]

Key = Any  # np.dtype (a strong operand) or the type int/float (a weak Python scalar)
_BOOL = np.dtype(np.bool_)
_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)
_BOOL_TYPES = frozenset({DataType.DT_BOOL})
_COMPARISONS = frozenset(("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"))
# The next wider type an op lacking a dtype computes in, before the result is cast back (the
# cast wraps as numpy's arithmetic does: ``-uint8(200)`` is 56 either way).
_WIDER: dict[np.dtype[Any], np.dtype[Any]] = {
    np.dtype(np.bool_): np.dtype(np.uint8),
    np.dtype(np.uint8): np.dtype(np.int16),
    np.dtype(np.int8): np.dtype(np.int16),
    np.dtype(np.int16): np.dtype(np.int32),
    np.dtype(np.uint16): np.dtype(np.int32),
    np.dtype(np.int32): np.dtype(np.int64),
    np.dtype(np.uint32): np.dtype(np.int64),
    np.dtype(np.uint64): np.dtype(np.int64),
    np.dtype(np.float16): np.dtype(np.float32),
    np.dtype(np.float32): np.dtype(np.float64),
}


def key(value: Any) -> Key:
    """How ``value`` enters numpy's promotion: a dtype, or ``int``/``float`` when weak."""
    if isinstance(value, TensorHolder):
        return value.dtype
    kind = type(value)
    if kind is int or kind is float:
        return kind
    if kind is bool:
        return _BOOL
    return as_array(value).dtype


@functools.cache
def loop_dtypes(ufunc: str, *keys: Key) -> tuple[np.dtype[Any], ...]:
    """numpy's loop dtypes (inputs..., output) of ``np.<ufunc>`` on operands of ``keys``."""
    try:
        return tuple(getattr(np, ufunc).resolve_dtypes((*keys, None)))
    except TypeError as error:  # numpy has no loop: bool subtract, bool negative, ...
        raise GeTypeError(f"np.{ufunc} inside ge.jit follows numpy: {error}") from None


@functools.cache
def _result_type(*keys: Key) -> np.dtype[Any]:
    return np.result_type(*(k(0) if isinstance(k, type) else k for k in keys))


@functools.cache
def _reduce_dtype(method: str, dtype: np.dtype[Any]) -> np.dtype[Any]:
    result: np.dtype[Any] = getattr(np, method)(np.zeros(1, dtype)).dtype
    return result


def _as(anchor: TensorHolder, value: Any, dtype: np.dtype[Any]) -> TensorHolder:
    """``value`` as a holder of ``dtype`` in ``anchor``'s graph (a Cast or a typed Const)."""
    if isinstance(value, TensorHolder):
        return anchor._operand(value).astype(dtype)
    return typed_const(anchor._builder, value, data_type_from_numpy(dtype))


as_dtype = _as


def holder(anchor: TensorHolder, value: Any) -> TensorHolder:
    """``value`` as a holder of ``anchor``'s graph (a constant of numpy's dtype for it)."""
    if isinstance(value, TensorHolder):
        return anchor._operand(value)
    return anchor._operand(as_array(value))


_FLOOR_OPS = {"floor_divide": "FloorDiv", "remainder": "FloorMod"}
# ufuncs whose result is a step of the dtype's precision: no wider compute type will do
_EXACT_PRECISION = frozenset({"nextafter", "spacing"})


def check_precision(ufunc: str, dtype: np.dtype[Any]) -> None:
    """Refuse half types for a precision-step ufunc (their compute type is float32)."""
    if ufunc in _EXACT_PRECISION and dtype.itemsize < 4:
        raise GeTypeError(
            f"np.{ufunc} of a traced {dtype} value is not supported: the step is one of "
            f"{dtype}'s precision, and {dtype} values are computed in float32; cast to float32"
        )


@functools.cache
def is_ufunc(name: str) -> bool:
    """Whether ``np.<name>`` is a numpy ufunc (a custom op's ``ufunc`` name may not be)."""
    return isinstance(getattr(np, name, None), np.ufunc)


@functools.cache
def _compute_type(op_type: str, dtype: np.dtype[Any]) -> np.dtype[Any]:
    """``dtype``, or the nearest wider type ``op_type`` takes (bool for a logical op)."""
    op = find_op(op_type)
    allowed = op.inputs[0].dtypes if op is not None else None
    if allowed is None:
        return dtype
    if allowed <= _BOOL_TYPES:
        return _BOOL
    compute: np.dtype[Any] | None = dtype
    while compute is not None and data_type_from_numpy(compute) not in allowed:
        compute = _WIDER.get(compute)
    return compute if compute is not None else dtype  # none fits: the op's own error says so


def _build(
    anchor: TensorHolder, op_type: str, operands: Sequence[Any], dtypes: tuple[np.dtype[Any], ...]
) -> TensorHolder:
    """``op_type`` on ``operands`` cast to the loop ``dtypes`` (inputs..., output)."""
    compute = _compute_type(op_type, dtypes[0])
    loop = dtypes[:-1] if compute == dtypes[0] else (compute,) * (len(dtypes) - 1)
    holders = [_as(anchor, v, d) for v, d in zip(operands, loop, strict=True)]
    y = anchor._op(op_type, *holders)
    return y.astype(dtypes[-1]) if y.dtype != dtypes[-1] else y


def _comparison_dtypes(
    ufunc: str, keys: tuple[Key, ...], operands: tuple[Any, ...]
) -> tuple[np.dtype[Any], ...]:
    """numpy 2 compares a Python int exactly, even out of the array's range."""
    dtypes = loop_dtypes(ufunc, *keys)
    for value in operands:
        if type(value) is int and dtypes[0].kind in "iu":
            info = np.iinfo(dtypes[0])
            if not info.min <= value <= info.max:
                fits = -(1 << 63) <= value < 1 << 63 and np.dtype(np.uint64) not in keys
                wide = _INT64 if fits else _FLOAT64
                return (wide, wide, _BOOL)
    return dtypes


def binary(anchor: TensorHolder, ufunc: str, op_type: str, a: Any, b: Any) -> TensorHolder:
    """``op_type(a, b)`` with numpy's ``np.<ufunc>`` dtypes; ``anchor`` is a holder operand."""
    keys = (key(a), key(b))
    if ufunc in _COMPARISONS:
        dtypes = _comparison_dtypes(ufunc, keys, (a, b))
    else:
        dtypes = loop_dtypes(ufunc, *keys)
    if ufunc == "power" and dtypes[0].kind == "i" and type(b) is int and b < 0:
        raise GeValueError("Integers to negative integer powers are not allowed.")
    if ufunc in _FLOOR_OPS:
        op_type = _FLOOR_OPS[ufunc]
    check_precision(ufunc, dtypes[0])
    return _build(anchor, op_type, (a, b), dtypes)


def unary(anchor: TensorHolder, ufunc: str, op_type: str, x: Any) -> TensorHolder:
    """``op_type(x)`` with numpy's ``np.<ufunc>`` dtypes."""
    holder = anchor._operand(x)
    if ufunc == "absolute" and holder.dtype.kind in "bu":
        return holder  # |x| of an unsigned or boolean value is x
    return _build(holder, op_type, (holder,), loop_dtypes(ufunc, holder.dtype))


def floor_divmod(
    anchor: TensorHolder, a: Any, b: Any, dtype: np.dtype[Any]
) -> tuple[TensorHolder, TensorHolder]:
    """numpy's ``a // b`` and ``a % b`` in ``dtype`` (``FloorDiv``/``FloorMod``, which compute
    them as numpy does; the remainder takes the divisor's sign)."""
    dtypes = (dtype, dtype, dtype)
    return _build(anchor, "FloorDiv", (a, b), dtypes), _build(anchor, "FloorMod", (a, b), dtypes)


def reduction_source(holder: TensorHolder, method: str) -> TensorHolder:
    """``holder`` cast to the type numpy's ``np.<method>`` accumulates it in."""
    dtype = _reduce_dtype(method, holder.dtype)
    if method in ("max", "min") and dtype == _BOOL:
        return holder.astype(np.uint8)  # the caller casts the result back
    return holder.astype(dtype)


def reduction_result(
    holder: TensorHolder, method: str, source_dtype: np.dtype[Any]
) -> TensorHolder:
    """The reduced ``holder`` in numpy's result dtype for a source of ``source_dtype``."""
    return holder.astype(_reduce_dtype(method, source_dtype))


def where(anchor: TensorHolder, cond: Any, a: Any, b: Any) -> TensorHolder:
    """``np.where(cond, a, b)``: ``cond`` as bool, ``a`` and ``b`` in their numpy result type."""
    dtype = _result_type(key(a), key(b))
    condition = _as(anchor, cond, _BOOL)
    x, y = (np.array(v).astype(dtype) if type(v) is int else v for v in (a, b))  # wraps, as numpy
    return anchor._op("SelectV2", condition, _as(anchor, x, dtype), _as(anchor, y, dtype))


def concat_dtype(parts: Sequence[TensorHolder]) -> np.dtype[Any]:
    """numpy's dtype for concatenating ``parts``."""
    return _result_type(*(p.dtype for p in parts))


def matmul_operands(a: TensorHolder, b: TensorHolder) -> tuple[TensorHolder, TensorHolder]:
    """``a`` and ``b`` cast to numpy's matmul loop dtype."""
    dtypes = loop_dtypes("matmul", a.dtype, b.dtype)
    return a.astype(dtypes[0]), b.astype(dtypes[1])
