"""Enum names and values against GE_REFERENCE.md §1 (tables transcribed by hand, not generated)."""

from __future__ import annotations

from enum import Enum, IntEnum

import pytest

from ge.graph import DataType, DumpFormat, Format, Placement
from ge.graph.types import AttrValueType

# GE_REFERENCE.md §1.1, column "ge::DataType == ge.graph.DataType".
DATA_TYPE_VALUES = {
    "DT_FLOAT": 0,
    "DT_FLOAT16": 1,
    "DT_INT8": 2,
    "DT_INT32": 3,
    "DT_UINT8": 4,
    "DT_INT16": 6,
    "DT_UINT16": 7,
    "DT_UINT32": 8,
    "DT_INT64": 9,
    "DT_UINT64": 10,
    "DT_DOUBLE": 11,
    "DT_BOOL": 12,
    "DT_STRING": 13,
    "DT_DUAL_SUB_INT8": 14,
    "DT_DUAL_SUB_UINT8": 15,
    "DT_COMPLEX64": 16,
    "DT_COMPLEX128": 17,
    "DT_QINT8": 18,
    "DT_QINT16": 19,
    "DT_QINT32": 20,
    "DT_QUINT8": 21,
    "DT_QUINT16": 22,
    "DT_RESOURCE": 23,
    "DT_STRING_REF": 24,
    "DT_DUAL": 25,
    "DT_VARIANT": 26,
    "DT_BF16": 27,
    "DT_UNDEFINED": 28,
    "DT_INT4": 29,
    "DT_UINT1": 30,
    "DT_INT2": 31,
    "DT_UINT2": 32,
    "DT_COMPLEX32": 33,
    "DT_HIFLOAT8": 34,
    "DT_FLOAT8_E5M2": 35,
    "DT_FLOAT8_E4M3FN": 36,
    "DT_FLOAT8_E8M0": 37,
    "DT_FLOAT6_E3M2": 38,
    "DT_FLOAT6_E2M3": 39,
    "DT_FLOAT4_E2M1": 40,
    "DT_FLOAT4_E1M2": 41,
    "DT_HIFLOAT4": 42,
    "DT_MAX": 43,
}

# GE_REFERENCE.md §1.2, column "ge.graph.Format (Python types.py)".
FORMAT_VALUES = {
    "FORMAT_NCHW": 0,
    "FORMAT_NHWC": 1,
    "FORMAT_ND": 2,
    "FORMAT_NC1HWC0": 3,
    "FORMAT_FRACTAL_Z": 4,
    "FORMAT_NC1C0HWPAD": 5,
    "FORMAT_NHWC1C0": 6,
    "FORMAT_FSR_NCHW": 7,
    "FORMAT_FRACTAL_DECONV": 8,
    "FORMAT_C1HWNC0": 9,
    "FORMAT_FRACTAL_DECONV_TRANSPOSE": 10,
    "FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS": 11,
    "FORMAT_NC1HWC0_C04": 12,
    "FORMAT_FRACTAL_Z_C04": 13,
    "FORMAT_CHWN": 14,
    "FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS": 15,
    "FORMAT_HWCN": 16,
    "FORMAT_NC1KHKWHWC0": 17,
    "FORMAT_BN_WEIGHT": 18,
    "FORMAT_FILTER_HWCK": 19,
    "FORMAT_HASHTABLE_LOOKUP_LOOKUPS": 20,
    "FORMAT_HASHTABLE_LOOKUP_KEYS": 21,
    "FORMAT_HASHTABLE_LOOKUP_VALUE": 22,
    "FORMAT_HASHTABLE_LOOKUP_OUTPUT": 23,
    "FORMAT_HASHTABLE_LOOKUP_HITS": 24,
    "FORMAT_C1HWNCoC0": 25,
    "FORMAT_MD": 26,
    "FORMAT_NDHWC": 27,
    "FORMAT_FRACTAL_ZZ": 28,
    "FORMAT_FRACTAL_NZ": 29,
    "FORMAT_NCDHW": 30,
    "FORMAT_DHWCN": 31,
    "FORMAT_NDC1HWC0": 32,
    "FORMAT_FRACTAL_Z_3D": 33,
    "FORMAT_CN": 34,
    "FORMAT_NC": 35,
    "FORMAT_DHWNC": 36,
    "FORMAT_FRACTAL_Z_3D_TRANSPOSE": 37,
    "FORMAT_FRACTAL_ZN_LSTM": 38,
    "FORMAT_FRACTAL_Z_G": 39,
    "FORMAT_RESERVED": 40,
    "FORMAT_ALL": 41,
    "FORMAT_NULL": 42,
    "FORMAT_ND_RNN_BIAS": 43,
    "FORMAT_FRACTAL_ZN_RNN": 44,
    "FORMAT_NYUV": 45,
    "FORMAT_NYUV_A": 46,
    "FORMAT_NCL": 47,
    "FORMAT_FRACTAL_Z_WINO": 48,
    "FORMAT_C1HWC0": 49,
    "FORMAT_FRACTAL_NZ_C0_16": 50,
    "FORMAT_FRACTAL_NZ_C0_32": 51,
    "FORMAT_END": 52,
    "FORMAT_MAX": 53,
}

# GE_REFERENCE.md §1.4, AttrValueType scalar kinds.
ATTR_SCALAR_VALUES = {
    "VT_NONE": 0,
    "VT_STRING": 1,
    "VT_FLOAT": 2,
    "VT_BOOL": 3,
    "VT_INT": 4,
    "VT_TENSOR_DESC": 5,
    "VT_TENSOR": 6,
    "VT_BYTES": 7,
    "VT_GRAPH": 8,
    "VT_NAMED_ATTRS": 9,
    "VT_LIST_LIST_INT": 10,
    "VT_DATA_TYPE": 11,
    "VT_LIST_LIST_FLOAT": 12,
}
# The scalars that have a VT_LIST_X == 1000 + VT_X twin (§1.4).
ATTR_LISTED = [
    "STRING",
    "FLOAT",
    "BOOL",
    "INT",
    "TENSOR_DESC",
    "TENSOR",
    "BYTES",
    "GRAPH",
    "NAMED_ATTRS",
    "DATA_TYPE",
]


@pytest.mark.parametrize("enum", [DataType, Format, Placement, AttrValueType])
def test_int_enums_are_int_enums(enum: type[IntEnum]) -> None:
    assert issubclass(enum, IntEnum)


@pytest.mark.parametrize(("name", "value"), DATA_TYPE_VALUES.items())
def test_data_type_member(name: str, value: int) -> None:
    member = DataType[name]
    assert member.value == value
    assert int(member) == value
    assert DataType(value) is member


def test_data_type_has_exactly_the_reference_members() -> None:
    assert {m.name: m.value for m in DataType} == DATA_TYPE_VALUES
    # no aliases hiding behind the canonical members
    assert dict(DataType.__members__.items()).keys() == DATA_TYPE_VALUES.keys()


def test_data_type_value_5_is_reserved() -> None:
    with pytest.raises(ValueError):
        DataType(5)


def test_data_type_tail() -> None:
    assert DataType.DT_HIFLOAT4 == 42
    assert DataType.DT_MAX == 43
    assert max(DataType) is DataType.DT_MAX


def test_data_type_repr_is_standard() -> None:
    assert repr(DataType.DT_FLOAT) == "<DataType.DT_FLOAT: 0>"
    assert repr(DataType.DT_BF16) == "<DataType.DT_BF16: 27>"


@pytest.mark.parametrize(("name", "value"), FORMAT_VALUES.items())
def test_format_member(name: str, value: int) -> None:
    member = Format[name]
    assert member.value == value
    assert Format(value) is member


def test_format_has_exactly_the_reference_members() -> None:
    assert {m.name: m.value for m in Format} == FORMAT_VALUES
    assert dict(Format.__members__.items()).keys() == FORMAT_VALUES.keys()


def test_format_python_tail_not_cpp_tail() -> None:
    assert Format.FORMAT_END == 52
    assert Format.FORMAT_MAX == 53
    for cpp_only in ("FORMAT_FRACTAL_NZ_C0_2", "FORMAT_FRACTAL_NZ_C0_4", "FORMAT_FRACTAL_NZ_C0_8"):
        assert cpp_only not in Format.__members__


def test_placement_has_exactly_two_members() -> None:
    assert len(list(Placement)) == 2
    assert {m.name: m.value for m in Placement} == {"PLACEMENT_HOST": 0, "PLACEMENT_DEVICE": 1}


@pytest.mark.parametrize(("name", "value"), ATTR_SCALAR_VALUES.items())
def test_attr_value_type_scalar(name: str, value: int) -> None:
    assert AttrValueType[name] == value


def test_attr_value_type_list_base() -> None:
    assert AttrValueType.VT_LIST_BASE == 1000


@pytest.mark.parametrize("kind", ATTR_LISTED)
def test_attr_value_type_list_is_1000_plus_scalar(kind: str) -> None:
    assert AttrValueType[f"VT_LIST_{kind}"] == 1000 + AttrValueType[f"VT_{kind}"]
    assert AttrValueType[f"VT_LIST_{kind}"] == 1000 + ATTR_SCALAR_VALUES[f"VT_{kind}"]


def test_attr_value_type_has_exactly_the_reference_members() -> None:
    expected = dict(ATTR_SCALAR_VALUES)
    expected["VT_LIST_BASE"] = 1000
    for kind in ATTR_LISTED:
        expected[f"VT_LIST_{kind}"] = 1000 + ATTR_SCALAR_VALUES[f"VT_{kind}"]
    assert {m.name: m.value for m in AttrValueType} == expected


def test_dump_format() -> None:
    assert issubclass(DumpFormat, Enum)
    assert not issubclass(DumpFormat, int)  # a plain Enum: an int is not a DumpFormat
    assert {m.name: m.value for m in DumpFormat} == {"kOnnx": 0, "kTxt": 1, "kReadable": 2}
    assert DumpFormat.kOnnx != 0
