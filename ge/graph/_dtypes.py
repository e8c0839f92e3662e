"""Facts about each ``DataType``: AIR proto number, serial string, byte size, numpy dtype.

One table, read by the tensor code, the AIR codec and the printer. bfloat16 and the byte-sized
float8 types map to ``ml_dtypes`` (imported only when first needed). Types with no numpy
equivalent (strings, resources, and GE's sub-byte types, which GE packs several to a byte while
numpy cannot) raise ``GeTypeError`` naming the type.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from functools import cache

import numpy as np

from ge.error import GeTypeError
from ge.graph.types import DataType

__all__ = [
    "BOOL_TYPES",
    "COMPLEX_TYPES",
    "FLOAT_TYPES",
    "INT_TYPES",
    "DTypeInfo",
    "data_type_from_numpy",
    "data_type_from_proto",
    "dtype_info",
    "numpy_dtype",
    "proto_data_type",
]


@dataclass(frozen=True, slots=True)
class DTypeInfo:
    proto: int  # ge.proto.DataType number (differs from the ge::DataType value)
    serial: str  # GE's TypeUtils string, e.g. "DT_BFLOAT16" for DT_BF16
    size: int  # bytes; -1 unknown; 1000+n for a sub-byte type of n bits
    numpy: str | None  # numpy dtype name, "ml_dtypes.<name>" for ml_dtypes, None if none
    short: str  # compact name used by str(graph)


_D = DataType
_TABLE: dict[DataType, DTypeInfo] = {
    _D.DT_FLOAT: DTypeInfo(1, "DT_FLOAT", 4, "float32", "f32"),
    _D.DT_FLOAT16: DTypeInfo(2, "DT_FLOAT16", 2, "float16", "f16"),
    _D.DT_INT8: DTypeInfo(3, "DT_INT8", 1, "int8", "i8"),
    _D.DT_INT32: DTypeInfo(7, "DT_INT32", 4, "int32", "i32"),
    _D.DT_UINT8: DTypeInfo(4, "DT_UINT8", 1, "uint8", "u8"),
    _D.DT_INT16: DTypeInfo(5, "DT_INT16", 2, "int16", "i16"),
    _D.DT_UINT16: DTypeInfo(6, "DT_UINT16", 2, "uint16", "u16"),
    _D.DT_UINT32: DTypeInfo(9, "DT_UINT32", 4, "uint32", "u32"),
    _D.DT_INT64: DTypeInfo(8, "DT_INT64", 8, "int64", "i64"),
    _D.DT_UINT64: DTypeInfo(10, "DT_UINT64", 8, "uint64", "u64"),
    _D.DT_DOUBLE: DTypeInfo(12, "DT_DOUBLE", 8, "float64", "f64"),
    _D.DT_BOOL: DTypeInfo(11, "DT_BOOL", 1, "bool", "bool"),
    _D.DT_STRING: DTypeInfo(13, "DT_STRING", -1, None, "str"),
    _D.DT_DUAL_SUB_INT8: DTypeInfo(14, "DT_DUAL_SUB_INT8", 1, None, "dual_sub_i8"),
    _D.DT_DUAL_SUB_UINT8: DTypeInfo(15, "DT_DUAL_SUB_UINT8", 1, None, "dual_sub_u8"),
    _D.DT_COMPLEX64: DTypeInfo(16, "DT_COMPLEX64", 8, "complex64", "c64"),
    _D.DT_COMPLEX128: DTypeInfo(17, "DT_COMPLEX128", 16, "complex128", "c128"),
    _D.DT_QINT8: DTypeInfo(18, "DT_QINT8", 1, "int8", "qi8"),
    _D.DT_QINT16: DTypeInfo(19, "DT_QINT16", 2, "int16", "qi16"),
    _D.DT_QINT32: DTypeInfo(20, "DT_QINT32", 4, "int32", "qi32"),
    _D.DT_QUINT8: DTypeInfo(21, "DT_QUINT8", 1, "uint8", "qu8"),
    _D.DT_QUINT16: DTypeInfo(22, "DT_QUINT16", 2, "uint16", "qu16"),
    _D.DT_RESOURCE: DTypeInfo(23, "DT_RESOURCE", 8, None, "resource"),
    _D.DT_STRING_REF: DTypeInfo(24, "DT_STRING_REF", -1, None, "str_ref"),
    _D.DT_DUAL: DTypeInfo(25, "DT_DUAL", 5, None, "dual"),
    _D.DT_VARIANT: DTypeInfo(26, "DT_VARIANT", 8, None, "variant"),
    _D.DT_BF16: DTypeInfo(27, "DT_BFLOAT16", 2, "ml_dtypes.bfloat16", "bf16"),
    _D.DT_UNDEFINED: DTypeInfo(0, "DT_UNDEFINED", -1, None, "undef"),
    _D.DT_INT4: DTypeInfo(28, "DT_INT4", 1004, None, "i4"),
    _D.DT_UINT1: DTypeInfo(29, "DT_UINT1", 1001, None, "u1"),
    _D.DT_INT2: DTypeInfo(30, "DT_INT2", 1002, None, "i2"),
    _D.DT_UINT2: DTypeInfo(31, "DT_UINT2", 1002, None, "u2"),
    _D.DT_COMPLEX32: DTypeInfo(32, "DT_COMPLEX32", 4, None, "c32"),
    _D.DT_HIFLOAT8: DTypeInfo(33, "DT_HIFLOAT8", 1, None, "hif8"),
    _D.DT_FLOAT8_E5M2: DTypeInfo(34, "DT_FLOAT8_E5M2", 1, "ml_dtypes.float8_e5m2", "f8e5m2"),
    _D.DT_FLOAT8_E4M3FN: DTypeInfo(
        35, "DT_FLOAT8_E4M3FN", 1, "ml_dtypes.float8_e4m3fn", "f8e4m3fn"
    ),
    _D.DT_FLOAT8_E8M0: DTypeInfo(36, "DT_FLOAT8_E8M0", 1, "ml_dtypes.float8_e8m0fnu", "f8e8m0"),
    _D.DT_FLOAT6_E3M2: DTypeInfo(37, "DT_FLOAT6_E3M2", 1006, None, "f6e3m2"),
    _D.DT_FLOAT6_E2M3: DTypeInfo(38, "DT_FLOAT6_E2M3", 1006, None, "f6e2m3"),
    _D.DT_FLOAT4_E2M1: DTypeInfo(39, "DT_FLOAT4_E2M1", 1004, None, "f4e2m1"),
    _D.DT_FLOAT4_E1M2: DTypeInfo(40, "DT_FLOAT4_E1M2", 1004, None, "f4e1m2"),
    _D.DT_HIFLOAT4: DTypeInfo(41, "DT_HIFLOAT4", 1004, None, "hif4"),
}
# Categories of the numeric types, used by promotion rules, op dtype sets and constants.
FLOAT_TYPES = frozenset({_D.DT_FLOAT, _D.DT_FLOAT16, _D.DT_DOUBLE, _D.DT_BF16})
INT_TYPES = frozenset(
    {
        _D.DT_INT8,
        _D.DT_INT16,
        _D.DT_INT32,
        _D.DT_INT64,
        _D.DT_UINT8,
        _D.DT_UINT16,
        _D.DT_UINT32,
        _D.DT_UINT64,
    }
)
COMPLEX_TYPES = frozenset({_D.DT_COMPLEX64, _D.DT_COMPLEX128})
BOOL_TYPES = frozenset({_D.DT_BOOL})
_FROM_PROTO = {info.proto: dt for dt, info in _TABLE.items()}

# numpy dtype -> DataType, preferring the plain types over the quantised aliases.
_CANONICAL = (
    _D.DT_FLOAT,
    _D.DT_FLOAT16,
    _D.DT_DOUBLE,
    _D.DT_INT8,
    _D.DT_INT16,
    _D.DT_INT32,
    _D.DT_INT64,
    _D.DT_UINT8,
    _D.DT_UINT16,
    _D.DT_UINT32,
    _D.DT_UINT64,
    _D.DT_BOOL,
    _D.DT_COMPLEX64,
    _D.DT_COMPLEX128,
    _D.DT_BF16,
    _D.DT_FLOAT8_E5M2,
    _D.DT_FLOAT8_E4M3FN,
    _D.DT_FLOAT8_E8M0,
)


def dtype_info(data_type: DataType) -> DTypeInfo:
    """The table row of ``data_type`` (``GeTypeError`` for ``DT_MAX`` or a non-member)."""
    try:
        return _TABLE[DataType(data_type)]
    except (KeyError, ValueError):
        raise GeTypeError(
            f"data_type: expected a DataType member below DT_MAX, got {data_type!r}"
        ) from None


def proto_data_type(data_type: DataType) -> int:
    """``ge.proto.DataType`` number used in ``TensorDescriptor.dtype``."""
    return dtype_info(data_type).proto


def data_type_from_proto(number: int) -> DataType:
    """Inverse of :func:`proto_data_type`; unknown numbers read as ``DT_UNDEFINED`` like GE."""
    return _FROM_PROTO.get(number, DataType.DT_UNDEFINED)


@cache
def numpy_dtype(data_type: DataType) -> np.dtype[np.generic]:
    """numpy dtype that holds ``data_type`` elements.

    >>> numpy_dtype(DataType.DT_FLOAT16)
    dtype('float16')
    """
    info = dtype_info(data_type)
    if info.numpy is None:
        raise GeTypeError(
            f"data_type: {DataType(data_type).name} has no numpy equivalent; "
            f"use a numeric, bool, complex, bfloat16 or float8 type"
        )
    if info.numpy.startswith("ml_dtypes."):
        import ml_dtypes  # noqa: PLC0415  (only graphs with exotic types pay for the import)

        exotic: np.dtype[np.generic] = np.dtype(getattr(ml_dtypes, info.numpy[len("ml_dtypes.") :]))
        return exotic
    return np.dtype(info.numpy)


@cache
def _numpy_to_data_type(exotic: bool) -> dict[np.dtype[np.generic], DataType]:
    """numpy dtype -> DataType for the plain types, and with ``exotic`` also ml_dtypes' ones.

    The two are apart because importing ml_dtypes costs 50-500 ms (0.7 loads a large
    extension): a float32 graph must not pay for it, and a bfloat16 dtype object cannot exist
    before ml_dtypes is imported anyway.
    """
    table: dict[np.dtype[np.generic], DataType] = {}
    for dt in _CANONICAL:
        if exotic or not (dtype_info(dt).numpy or "").startswith("ml_dtypes."):
            table.setdefault(numpy_dtype(dt), dt)
    return table


def _as_numpy_dtype(dtype: object) -> np.dtype[np.generic]:
    try:
        return np.dtype(dtype)  # type: ignore[call-overload, no-any-return]
    except TypeError:
        pass
    if "ml_dtypes" not in sys.modules:  # "bfloat16" names a dtype once ml_dtypes registers it
        import ml_dtypes  # noqa: F401, PLC0415

        with contextlib.suppress(TypeError):
            return np.dtype(dtype)  # type: ignore[call-overload, no-any-return]
    raise GeTypeError(f"dtype: expected a numpy dtype, got {dtype!r}") from None


def data_type_from_numpy(dtype: object) -> DataType:
    """DataType for a numpy dtype (or anything ``np.dtype`` accepts).

    >>> data_type_from_numpy("int64")
    <DataType.DT_INT64: 9>
    """
    np_dtype = _as_numpy_dtype(dtype)
    if np_dtype.kind in "biufc":
        found = _numpy_to_data_type(exotic=False).get(np_dtype)
        if found is not None:
            return found
    if np_dtype.name.startswith(("float8", "bfloat16")):
        found = _numpy_to_data_type(exotic=True).get(np_dtype)
        if found is not None:
            return found
    raise GeTypeError(f"dtype: numpy dtype {np_dtype} has no GE DataType")
