"""DataType facts (proto number, serial string, size, numpy dtype) and Format layout strings.

The tables are transcribed from GE_REFERENCE.md §1.1 and §1.2, not read from our own code.
"""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from ge.error import GeError, GeTypeError
from ge.graph import DataType, Format
from ge.graph._dtypes import (
    data_type_from_numpy,
    data_type_from_proto,
    dtype_info,
    numpy_dtype,
    proto_data_type,
)
from ge.graph._formats import format_from_string, format_to_string

# GE_REFERENCE.md §1.1: name -> (ge.proto.DataType number, serial string, GetSizeByDataType).
DTYPE_TABLE = {
    "DT_FLOAT": (1, "DT_FLOAT", 4),
    "DT_FLOAT16": (2, "DT_FLOAT16", 2),
    "DT_INT8": (3, "DT_INT8", 1),
    "DT_INT32": (7, "DT_INT32", 4),
    "DT_UINT8": (4, "DT_UINT8", 1),
    "DT_INT16": (5, "DT_INT16", 2),
    "DT_UINT16": (6, "DT_UINT16", 2),
    "DT_UINT32": (9, "DT_UINT32", 4),
    "DT_INT64": (8, "DT_INT64", 8),
    "DT_UINT64": (10, "DT_UINT64", 8),
    "DT_DOUBLE": (12, "DT_DOUBLE", 8),
    "DT_BOOL": (11, "DT_BOOL", 1),
    "DT_STRING": (13, "DT_STRING", -1),
    "DT_DUAL_SUB_INT8": (14, "DT_DUAL_SUB_INT8", 1),
    "DT_DUAL_SUB_UINT8": (15, "DT_DUAL_SUB_UINT8", 1),
    "DT_COMPLEX64": (16, "DT_COMPLEX64", 8),
    "DT_COMPLEX128": (17, "DT_COMPLEX128", 16),
    "DT_QINT8": (18, "DT_QINT8", 1),
    "DT_QINT16": (19, "DT_QINT16", 2),
    "DT_QINT32": (20, "DT_QINT32", 4),
    "DT_QUINT8": (21, "DT_QUINT8", 1),
    "DT_QUINT16": (22, "DT_QUINT16", 2),
    "DT_RESOURCE": (23, "DT_RESOURCE", 8),
    "DT_STRING_REF": (24, "DT_STRING_REF", -1),
    "DT_DUAL": (25, "DT_DUAL", 5),
    "DT_VARIANT": (26, "DT_VARIANT", 8),
    "DT_BF16": (27, "DT_BFLOAT16", 2),
    "DT_UNDEFINED": (0, "DT_UNDEFINED", -1),
    "DT_INT4": (28, "DT_INT4", 1000 + 4),
    "DT_UINT1": (29, "DT_UINT1", 1000 + 1),
    "DT_INT2": (30, "DT_INT2", 1000 + 2),
    "DT_UINT2": (31, "DT_UINT2", 1000 + 2),
    "DT_COMPLEX32": (32, "DT_COMPLEX32", 4),
    "DT_HIFLOAT8": (33, "DT_HIFLOAT8", 1),
    "DT_FLOAT8_E5M2": (34, "DT_FLOAT8_E5M2", 1),
    "DT_FLOAT8_E4M3FN": (35, "DT_FLOAT8_E4M3FN", 1),
    "DT_FLOAT8_E8M0": (36, "DT_FLOAT8_E8M0", 1),
    "DT_FLOAT6_E3M2": (37, "DT_FLOAT6_E3M2", 1000 + 6),
    "DT_FLOAT6_E2M3": (38, "DT_FLOAT6_E2M3", 1000 + 6),
    "DT_FLOAT4_E2M1": (39, "DT_FLOAT4_E2M1", 1000 + 4),
    "DT_FLOAT4_E1M2": (40, "DT_FLOAT4_E1M2", 1000 + 4),
    "DT_HIFLOAT4": (41, "DT_HIFLOAT4", 1000 + 4),
}

# GE_REFERENCE.md §1.2: Format name -> layout string (FormatToSerialString).
FORMAT_STRINGS = {
    "FORMAT_NCHW": "NCHW",
    "FORMAT_NHWC": "NHWC",
    "FORMAT_ND": "ND",
    "FORMAT_NC1HWC0": "NC1HWC0",
    "FORMAT_FRACTAL_Z": "FRACTAL_Z",
    "FORMAT_NC1C0HWPAD": "NC1C0HWPAD",
    "FORMAT_NHWC1C0": "NHWC1C0",
    "FORMAT_FSR_NCHW": "FSR_NCHW",
    "FORMAT_FRACTAL_DECONV": "FRACTAL_DECONV",
    "FORMAT_C1HWNC0": "C1HWNC0",
    "FORMAT_FRACTAL_DECONV_TRANSPOSE": "FRACTAL_DECONV_TRANSPOSE",
    "FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS": "FRACTAL_DECONV_SP_STRIDE_TRANS",
    "FORMAT_NC1HWC0_C04": "NC1HWC0_C04",
    "FORMAT_FRACTAL_Z_C04": "FRACTAL_Z_C04",
    "FORMAT_CHWN": "CHWN",
    "FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS": "DECONV_SP_STRIDE8_TRANS",
    "FORMAT_HWCN": "HWCN",
    "FORMAT_NC1KHKWHWC0": "NC1KHKWHWC0",
    "FORMAT_BN_WEIGHT": "BN_WEIGHT",
    "FORMAT_FILTER_HWCK": "FILTER_HWCK",
    "FORMAT_HASHTABLE_LOOKUP_LOOKUPS": "LOOKUP_LOOKUPS",
    "FORMAT_HASHTABLE_LOOKUP_KEYS": "LOOKUP_KEYS",
    "FORMAT_HASHTABLE_LOOKUP_VALUE": "LOOKUP_VALUE",
    "FORMAT_HASHTABLE_LOOKUP_OUTPUT": "LOOKUP_OUTPUT",
    "FORMAT_HASHTABLE_LOOKUP_HITS": "LOOKUP_HITS",
    "FORMAT_C1HWNCoC0": "C1HWNCoC0",
    "FORMAT_MD": "MD",
    "FORMAT_NDHWC": "NDHWC",
    "FORMAT_FRACTAL_ZZ": "RESERVED",  # not in GE's map
    "FORMAT_FRACTAL_NZ": "FRACTAL_NZ",
    "FORMAT_NCDHW": "NCDHW",
    "FORMAT_DHWCN": "DHWCN",
    "FORMAT_NDC1HWC0": "NDC1HWC0",
    "FORMAT_FRACTAL_Z_3D": "FRACTAL_Z_3D",
    "FORMAT_CN": "CN",
    "FORMAT_NC": "NC",
    "FORMAT_DHWNC": "DHWNC",
    "FORMAT_FRACTAL_Z_3D_TRANSPOSE": "FRACTAL_Z_3D_TRANSPOSE",
    "FORMAT_FRACTAL_ZN_LSTM": "FRACTAL_ZN_LSTM",
    "FORMAT_FRACTAL_Z_G": "FRACTAL_Z_G",
    "FORMAT_RESERVED": "FORMAT_RESERVED",
    "FORMAT_ALL": "ALL",
    "FORMAT_NULL": "NULL",
    "FORMAT_ND_RNN_BIAS": "ND_RNN_BIAS",
    "FORMAT_FRACTAL_ZN_RNN": "FRACTAL_ZN_RNN",
    "FORMAT_NYUV": "NYUV",
    "FORMAT_NYUV_A": "NYUV_A",
    "FORMAT_NCL": "NCL",
    "FORMAT_FRACTAL_Z_WINO": "FRACTAL_Z_WINO",
    "FORMAT_C1HWC0": "C1HWC0",
    "FORMAT_FRACTAL_NZ_C0_16": "FRACTAL_NZ_C0_16",
    "FORMAT_FRACTAL_NZ_C0_32": "FRACTAL_NZ_C0_32",
    "FORMAT_END": "END",
    "FORMAT_MAX": "MAX",
}

# Our numpy mapping (module docstring of ge/graph/_dtypes.py): float16 is numpy's own, bfloat16
# and float8 come from ml_dtypes.
NUMPY_OF = {
    "DT_FLOAT": np.dtype(np.float32),
    "DT_FLOAT16": np.dtype(np.float16),
    "DT_DOUBLE": np.dtype(np.float64),
    "DT_INT8": np.dtype(np.int8),
    "DT_INT16": np.dtype(np.int16),
    "DT_INT32": np.dtype(np.int32),
    "DT_INT64": np.dtype(np.int64),
    "DT_UINT8": np.dtype(np.uint8),
    "DT_UINT16": np.dtype(np.uint16),
    "DT_UINT32": np.dtype(np.uint32),
    "DT_UINT64": np.dtype(np.uint64),
    "DT_BOOL": np.dtype(np.bool_),
    "DT_COMPLEX64": np.dtype(np.complex64),
    "DT_COMPLEX128": np.dtype(np.complex128),
    "DT_BF16": np.dtype(ml_dtypes.bfloat16),
    "DT_FLOAT8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "DT_FLOAT8_E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "DT_FLOAT8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
}

# Types with no numpy equivalent at all (no numpy or ml_dtypes type of that meaning exists).
NO_NUMPY = [
    "DT_STRING",
    "DT_STRING_REF",
    "DT_RESOURCE",
    "DT_VARIANT",
    "DT_DUAL",
    "DT_DUAL_SUB_INT8",
    "DT_DUAL_SUB_UINT8",
    "DT_UNDEFINED",
    "DT_UINT1",
    "DT_COMPLEX32",
    "DT_HIFLOAT8",
    "DT_HIFLOAT4",
    "DT_FLOAT4_E1M2",
]


def test_table_covers_every_data_type_below_max() -> None:
    assert {m.name for m in DataType} - {"DT_MAX"} == DTYPE_TABLE.keys()


@pytest.mark.parametrize(("name", "row"), DTYPE_TABLE.items())
def test_proto_number(name: str, row: tuple[int, str, int]) -> None:
    dt = DataType[name]
    assert proto_data_type(dt) == row[0]
    assert dtype_info(dt).proto == row[0]
    assert data_type_from_proto(row[0]) is dt


@pytest.mark.parametrize(("name", "row"), DTYPE_TABLE.items())
def test_serial_string(name: str, row: tuple[int, str, int]) -> None:
    assert dtype_info(DataType[name]).serial == row[1]


@pytest.mark.parametrize(("name", "row"), DTYPE_TABLE.items())
def test_byte_size(name: str, row: tuple[int, str, int]) -> None:
    assert dtype_info(DataType[name]).size == row[2]


def test_proto_numbers_differ_from_enum_values() -> None:
    assert proto_data_type(DataType.DT_FLOAT) == 1
    assert proto_data_type(DataType.DT_UNDEFINED) == 0
    assert data_type_from_proto(0) is DataType.DT_UNDEFINED
    assert data_type_from_proto(1) is DataType.DT_FLOAT


@pytest.mark.parametrize("number", [42, 43, 99, 1000, -1])
def test_unknown_proto_number_reads_as_undefined(number: int) -> None:
    assert data_type_from_proto(number) is DataType.DT_UNDEFINED


def test_dt_max_has_no_table_row() -> None:
    with pytest.raises(GeTypeError):
        dtype_info(DataType.DT_MAX)
    with pytest.raises(TypeError):
        proto_data_type(DataType.DT_MAX)
    with pytest.raises(TypeError):
        numpy_dtype(DataType.DT_MAX)


@pytest.mark.parametrize(("name", "expected"), NUMPY_OF.items())
def test_numpy_dtype(name: str, expected: np.dtype) -> None:
    got = numpy_dtype(DataType[name])
    assert isinstance(got, np.dtype)
    assert got == expected
    assert got.itemsize == DTYPE_TABLE[name][2]


def test_float16_is_numpy_native() -> None:
    assert numpy_dtype(DataType.DT_FLOAT16) is np.dtype("float16")
    assert numpy_dtype(DataType.DT_FLOAT16).kind == "f"


@pytest.mark.parametrize("name", NO_NUMPY)
def test_no_numpy_equivalent_raises_naming_the_type(name: str) -> None:
    with pytest.raises(GeTypeError, match=name):
        numpy_dtype(DataType[name])
    # GeTypeError is both a TypeError and a GeError
    with pytest.raises(TypeError):
        numpy_dtype(DataType[name])
    with pytest.raises(GeError):
        numpy_dtype(DataType[name])


@pytest.mark.parametrize("name", NUMPY_OF.keys())
def test_data_type_from_numpy_round_trip(name: str) -> None:
    dt = DataType[name]
    assert data_type_from_numpy(numpy_dtype(dt)) is dt
    assert data_type_from_numpy(NUMPY_OF[name]) is dt


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("int64", DataType.DT_INT64),
        ("float32", DataType.DT_FLOAT),
        (np.float16, DataType.DT_FLOAT16),
        (np.dtype("<f8"), DataType.DT_DOUBLE),
        (np.bool_, DataType.DT_BOOL),
        (bool, DataType.DT_BOOL),
        ("uint32", DataType.DT_UINT32),
        (np.complex64, DataType.DT_COMPLEX64),
        (ml_dtypes.bfloat16, DataType.DT_BF16),
    ],
)
def test_data_type_from_numpy_accepts_dtype_likes(spec: object, expected: DataType) -> None:
    assert data_type_from_numpy(spec) is expected


@pytest.mark.parametrize("name", ["DT_QINT8", "DT_QINT16", "DT_QINT32", "DT_QUINT8", "DT_QUINT16"])
def test_quantised_types_do_not_win_the_reverse_mapping(name: str) -> None:
    dt = DataType[name]
    back = data_type_from_numpy(numpy_dtype(dt))
    assert back is not dt
    assert back.name == name.replace("DT_Q", "DT_")


@pytest.mark.parametrize("spec", [object, "U3", "S2", "datetime64[s]", "timedelta64[s]", "V4"])
def test_data_type_from_numpy_rejects_non_numeric(spec: object) -> None:
    with pytest.raises(GeTypeError):
        data_type_from_numpy(spec)


def test_data_type_from_numpy_rejects_garbage() -> None:
    with pytest.raises(TypeError):
        data_type_from_numpy(3.5)


def test_format_string_table_covers_every_format() -> None:
    assert {m.name for m in Format} == FORMAT_STRINGS.keys()


@pytest.mark.parametrize(("name", "text"), FORMAT_STRINGS.items())
def test_format_to_string(name: str, text: str) -> None:
    assert format_to_string(Format[name]) == text


@pytest.mark.parametrize(
    ("name", "text"), [(n, t) for n, t in FORMAT_STRINGS.items() if t != "RESERVED"]
)
def test_format_from_string_round_trip(name: str, text: str) -> None:
    assert format_from_string(text) is Format[name]


def test_format_from_string_ignores_sub_format_suffix() -> None:
    assert format_from_string("NCHW:3") is Format.FORMAT_NCHW
    assert format_from_string("FRACTAL_Z:16") is Format.FORMAT_FRACTAL_Z


@pytest.mark.parametrize("text", ["", "nchw", "FORMAT_NCHW", "FRACTAL_NZ_C0_2", "NOPE"])
def test_format_from_unknown_string(text: str) -> None:
    assert format_from_string(text) is None


def test_plain_dtypes_do_not_import_ml_dtypes() -> None:
    # ml_dtypes 0.7 takes ~0.5 s to import; a float32 jit call must not pay for it, while
    # naming an exotic dtype by string still works in a fresh process.
    code = """
import sys
import numpy as np
import ge
from ge.graph._dtypes import data_type_from_numpy
double = ge.jit(lambda x: x * 2)
assert double(np.ones(3, np.float32)).tolist() == [2.0, 2.0, 2.0]
print("ml_dtypes" in sys.modules)
print(data_type_from_numpy("bfloat16").name, "ml_dtypes" in sys.modules)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split("\n")[:2] == ["False", "DT_BF16 True"]
