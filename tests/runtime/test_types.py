"""``ge.runtime`` value types against GE_REFERENCE.md §1.4, §7.6, §10 item 9 and seed 004's pages.

Every public property and method is exercised, with the exact exception types (the ``ge.error``
family, which derives from the builtins GE-PY documents) and the documented message substrings.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from enum import IntEnum
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ge.error import GeError, GeTypeError, GeValueError
from ge.graph import DataType, Format
from ge.runtime.types import (
    MAX_DIM_NUM,
    ExpandDimsType,
    Shape,
    StorageFormat,
    StorageShape,
    Tensor,
    TensorDesc,
    TensorPlacement,
)

INT64_MAX = 2**63 - 1
BORROWED = "borrowed"
RETURNED = "callback has returned"

# --- TensorPlacement -------------------------------------------------------------------------


def test_tensor_placement_members_and_values() -> None:
    assert issubclass(TensorPlacement, IntEnum)
    assert {m.name: m.value for m in TensorPlacement} == {
        "ON_DEVICE_HBM": 0,
        "ON_HOST": 1,
        "FOLLOWING": 2,
        "ON_DEVICE_P2P": 3,
        "END": 4,
    }


# --- Shape -----------------------------------------------------------------------------------


def test_shape_default_is_scalar() -> None:
    s = Shape()
    assert s.dims == []
    assert s.dim_num == 0
    assert s.is_scalar()
    assert s.size == 1  # the element count of a scalar
    assert Shape(None) == s


def test_shape_from_dims() -> None:
    s = Shape([2, 3, 4])
    assert s.dims == [2, 3, 4]
    assert s.dim_num == 3
    assert s.size == 24
    assert not s.is_scalar()
    assert Shape((2, 3)).dims == [2, 3]
    assert Shape([np.int64(5), np.int32(6)]).dims == [5, 6]
    assert all(type(d) is int for d in Shape([np.int64(5)]).dims)


def test_shape_dims_is_a_copy() -> None:
    s = Shape([2, 3])
    dims = s.dims
    dims.append(9)
    assert s.dims == [2, 3]


def test_shape_constructor_copies_its_argument() -> None:
    source = [1, 2]
    s = Shape(source)
    source.append(3)
    assert s.dims == [1, 2]


@pytest.mark.parametrize(
    ("dims", "size"),
    [
        ([], 1),
        ([0], 0),
        ([0, 5], 0),
        ([7], 7),
        ([2, -1], -1),
        ([-2], -1),
        ([0, -1], -1),
        ([2**62, 4], -1),  # overflows int64
        ([2**31, 2**31], 2**62),
    ],
)
def test_shape_size(dims: list[int], size: int) -> None:
    assert Shape(dims).size == size


@pytest.mark.parametrize("bad", ["ab", 3, 1.5, {1: 2}, {1, 2}])
def test_shape_rejects_non_lists(bad: Any) -> None:
    with pytest.raises(GeTypeError, match="list of integers"):
        Shape(bad)


@pytest.mark.parametrize("bad", [[1.0], [True], [1, "2"], [None]])
def test_shape_rejects_non_int_dims(bad: list[Any]) -> None:
    with pytest.raises(TypeError, match="list of integers"):
        Shape(bad)


def test_shape_rejects_dims_outside_int64() -> None:
    with pytest.raises(GeValueError, match="int64"):
        Shape([2**63])
    assert Shape([INT64_MAX, -(2**63)]).dims == [INT64_MAX, -(2**63)]


def test_shape_max_dim_num() -> None:
    assert MAX_DIM_NUM == 25
    assert Shape([1] * 25).dim_num == 25
    with pytest.raises(ValueError, match="maximum dimension count"):
        Shape([1] * 26)


def test_shape_get_dim() -> None:
    s = Shape([4, 5])
    assert s.get_dim(0) == 4
    assert s.get_dim(1) == 5
    assert s.get_dim(np.int64(1)) == 5
    for bad in (2, -1):
        with pytest.raises(GeValueError, match="out of range"):
            s.get_dim(bad)
    with pytest.raises(GeValueError, match="out of range"):
        Shape().get_dim(0)
    for bad_type in (True, 0.0, "0", None):
        with pytest.raises(GeTypeError, match="must be an integer"):
            s.get_dim(bad_type)  # type: ignore[arg-type]


def test_shape_set_dim() -> None:
    s = Shape([4, 5])
    assert s.set_dim(1, 7) is None  # type: ignore[func-returns-value]
    assert s.dims == [4, 7]
    s.set_dim(0, -1)
    assert s.dims == [-1, 7]
    with pytest.raises(GeValueError, match="out of range"):
        s.set_dim(2, 1)
    with pytest.raises(GeValueError, match="out of range"):
        s.set_dim(-1, 1)
    with pytest.raises(GeTypeError, match="must be an integer"):
        s.set_dim(0, 1.5)  # type: ignore[arg-type]
    with pytest.raises(GeTypeError, match="must be an integer"):
        s.set_dim(0, False)
    with pytest.raises(GeValueError, match="int64"):
        s.set_dim(0, 2**63)
    assert s.dims == [-1, 7]


def test_shape_append_dim_returns_self_and_chains() -> None:
    s = Shape()
    assert s.append_dim(2) is s
    s.append_dim(3).append_dim(4)
    assert s.dims == [2, 3, 4]
    with pytest.raises(GeTypeError, match="must be an integer"):
        s.append_dim("5")  # type: ignore[arg-type]
    assert s.dims == [2, 3, 4]


def test_shape_append_dim_stops_at_25() -> None:
    s = Shape()
    for i in range(25):
        s.append_dim(i)
    with pytest.raises(GeValueError, match="maximum dimension count"):
        s.append_dim(1)
    assert s.dim_num == 25


def test_shape_set_scalar() -> None:
    s = Shape([2, 3])
    assert s.set_scalar() is None  # type: ignore[func-returns-value]
    assert s.is_scalar()
    assert s.dims == []
    assert s.size == 1


def test_shape_equality_repr_and_copy() -> None:
    assert Shape([1, 2]) == Shape([1, 2])
    assert Shape([1, 2]) != Shape([2, 1])
    assert Shape([1, 2]) != [1, 2]  # only Shapes compare equal to Shapes
    with pytest.raises(TypeError):
        hash(Shape())
    assert repr(Shape([2, 3])) == "Shape([2, 3])"
    assert repr(Shape()) == "Shape([])"
    s = Shape([1, 2])
    for twin in (copy.copy(s), copy.deepcopy(s)):
        assert twin == s
        assert twin is not s
        twin.set_dim(0, 9)
        assert s.dims == [1, 2]


# --- StorageShape ----------------------------------------------------------------------------


def test_storage_shape_default_is_scalar() -> None:
    s = StorageShape()
    assert s.origin_shape.is_scalar()
    assert s.storage_shape.is_scalar()
    assert isinstance(s.origin_shape, Shape)
    assert isinstance(s.storage_shape, Shape)


def test_storage_shape_from_lists_and_shapes() -> None:
    s = StorageShape([2, 3], [1, 2, 3])
    assert s.origin_shape.dims == [2, 3]
    assert s.storage_shape.dims == [1, 2, 3]
    t = StorageShape(Shape([4]), (5, 6))
    assert t.origin_shape.dims == [4]
    assert t.storage_shape.dims == [5, 6]
    u = StorageShape(origin_shape=[], storage_shape=[])
    assert u == StorageShape()


def test_storage_shape_copies_its_arguments() -> None:
    origin = Shape([2])
    storage = [3]
    s = StorageShape(origin, storage)
    origin.append_dim(9)
    storage.append(9)
    assert s.origin_shape.dims == [2]
    assert s.storage_shape.dims == [3]
    assert s.origin_shape is not origin


@pytest.mark.parametrize(
    "args",
    [([1],), ([1], None), (None, [1])],
)
def test_storage_shape_needs_both_shapes_or_none(args: tuple[Any, ...]) -> None:
    with pytest.raises(GeTypeError, match="both origin_shape and storage_shape"):
        StorageShape(*args)


def test_storage_shape_rejects_bad_shapes() -> None:
    with pytest.raises(GeTypeError, match="origin_shape must be a Shape or a list of integers"):
        StorageShape("12", [1])  # type: ignore[arg-type]
    with pytest.raises(GeTypeError, match="storage_shape must be a list of integers"):
        StorageShape([1], [1.0])  # type: ignore[list-item]
    with pytest.raises(GeValueError, match="maximum dimension count"):
        StorageShape([1], [1] * 26)


def test_storage_shape_views_are_live() -> None:
    s = StorageShape([2, 3], [2, 3])
    origin = s.origin_shape
    assert s.origin_shape is origin
    origin.set_dim(0, 7)
    assert s.origin_shape.dims == [7, 3]
    s.storage_shape.append_dim(1)
    assert s.storage_shape.dims == [2, 3, 1]
    assert s.origin_shape.dims == [7, 3]  # origin and storage are independent


def test_storage_shape_setters_copy_into_existing_views() -> None:
    s = StorageShape()
    origin, storage = s.origin_shape, s.storage_shape
    assert s.set_origin_shape([4, 5]) is None  # type: ignore[func-returns-value]
    source = Shape([1, 4, 5])
    assert s.set_storage_shape(source) is None  # type: ignore[func-returns-value]
    assert origin.dims == [4, 5]
    assert storage.dims == [1, 4, 5]
    source.set_dim(0, 9)
    assert storage.dims == [1, 4, 5]
    s.set_origin_shape((6,))
    assert origin.dims == [6]
    with pytest.raises(GeTypeError, match="origin_shape must be a Shape or a list of integers"):
        s.set_origin_shape(3)  # type: ignore[arg-type]
    with pytest.raises(GeTypeError, match="storage_shape must be a list of integers"):
        s.set_storage_shape([True])
    with pytest.raises(GeValueError, match="maximum dimension count"):
        s.set_storage_shape([2] * 26)
    assert storage.dims == [1, 4, 5]


def test_storage_shape_equality_repr_and_copy() -> None:
    s = StorageShape([2, 3], [6])
    assert s == StorageShape([2, 3], [6])
    assert s != StorageShape([2, 3], [2, 3])
    assert s != StorageShape([6], [6])
    assert s != Shape([2, 3])
    with pytest.raises(TypeError):
        hash(s)
    assert repr(s) == "StorageShape(origin_shape=[2, 3], storage_shape=[6])"
    for twin in (copy.copy(s), copy.deepcopy(s)):
        assert twin == s
        twin.origin_shape.set_dim(0, 9)
        assert s.origin_shape.dims == [2, 3]


# --- ExpandDimsType --------------------------------------------------------------------------


def test_expand_dims_type_default() -> None:
    e = ExpandDimsType()
    assert e.full_size == 0
    assert not e.is_expand_index(0)
    assert int(e) == 0
    assert e == ExpandDimsType(None)
    assert e == ExpandDimsType("")
    assert e == ExpandDimsType(0)
    assert repr(e) == "ExpandDimsType()"


def test_expand_dims_type_str_rule() -> None:
    e = ExpandDimsType("1000")  # [3, 256, 256] -> [1, 3, 256, 256]
    assert e.full_size == 4
    assert e.is_expand_index(0)
    assert [e.is_expand_index(i) for i in range(6)] == [True, False, False, False, False, False]
    f = ExpandDimsType("0101")
    assert [f.is_expand_index(i) for i in range(4)] == [False, True, False, True]
    assert ExpandDimsType("0000").full_size == 4
    assert ExpandDimsType("0000") != ExpandDimsType("000")
    assert ExpandDimsType("1" * 56).full_size == 56


@pytest.mark.parametrize(
    ("rule", "packed"),
    [
        ("", 0),
        ("1", (1 << 56) | 1),
        ("1000", (4 << 56) | 0b0001),
        ("0101", (4 << 56) | 0b1010),
        ("0011", (4 << 56) | 0b1100),
        ("1" * 56, (56 << 56) | (2**56 - 1)),
    ],
)
def test_expand_dims_type_int_encoding(rule: str, packed: int) -> None:
    assert int(ExpandDimsType(rule)) == packed
    assert ExpandDimsType(packed) == ExpandDimsType(rule)
    assert ExpandDimsType(np.int64(packed)) == ExpandDimsType(rule)
    assert ExpandDimsType(packed).full_size == len(rule)


def test_expand_dims_type_int_rule_high_and_low_bits() -> None:
    e = ExpandDimsType((3 << 56) | 0b010)
    assert e.full_size == 3
    assert [e.is_expand_index(i) for i in range(3)] == [False, True, False]
    # a mask with no length is kept as it is (as GE's bit fields do)
    m = ExpandDimsType(0b1)
    assert m.full_size == 0
    assert m.is_expand_index(0)
    assert int(m) == 1


@pytest.mark.parametrize("bad", ["10a0", "1 0", "2", "\u0661", "1" * 57])
def test_expand_dims_type_rejects_bad_str_rules(bad: str) -> None:
    with pytest.raises(GeValueError):
        ExpandDimsType(bad)


def test_expand_dims_type_bad_str_messages() -> None:
    with pytest.raises(ValueError, match="only '0' and '1'"):
        ExpandDimsType("12")
    with pytest.raises(ValueError, match="more than 56"):
        ExpandDimsType("0" * 57)


@pytest.mark.parametrize("bad", [-1, 2**63, 2**64, 57 << 56, 0xFF << 56])
def test_expand_dims_type_rejects_bad_int_rules(bad: int) -> None:
    with pytest.raises(GeValueError, match="expand dims rule"):
        ExpandDimsType(bad)


@pytest.mark.parametrize("bad", [True, False, 1.0, [1, 0], b"10"])
def test_expand_dims_type_rejects_other_types(bad: Any) -> None:
    with pytest.raises(GeTypeError, match="must be a str, an int or None"):
        ExpandDimsType(bad)


def test_expand_dims_type_set_expand_index() -> None:
    e = ExpandDimsType("000")
    assert e.set_expand_index(1) is None  # type: ignore[func-returns-value]
    assert e == ExpandDimsType("010")
    e.set_expand_index(1)  # idempotent
    assert e == ExpandDimsType("010")
    e.set_expand_index(55)  # beyond full_size but inside the 56-bit mask: allowed
    assert e.is_expand_index(55)
    assert e.full_size == 3
    assert int(e) == (3 << 56) | 0b010 | (1 << 55)
    assert repr(e) == f"ExpandDimsType({int(e)})"
    for bad in (56, -1):
        with pytest.raises(GeValueError, match="out of range"):
            e.set_expand_index(bad)
    with pytest.raises(GeTypeError, match="must be an integer"):
        e.set_expand_index(True)


def test_expand_dims_type_is_expand_index_arguments() -> None:
    e = ExpandDimsType("1")
    assert not e.is_expand_index(100)
    with pytest.raises(GeValueError, match="non-negative"):
        e.is_expand_index(-1)
    with pytest.raises(GeTypeError, match="must be an integer"):
        e.is_expand_index("0")  # type: ignore[arg-type]


def test_expand_dims_type_equality_repr_and_copy() -> None:
    assert ExpandDimsType("10") == ExpandDimsType("10")
    assert ExpandDimsType("10") != ExpandDimsType("01")
    assert ExpandDimsType("10") != "10"
    with pytest.raises(TypeError):
        hash(ExpandDimsType())
    assert repr(ExpandDimsType("1000")) == "ExpandDimsType('1000')"
    assert repr(ExpandDimsType("00")) == "ExpandDimsType('00')"
    e = ExpandDimsType("100")
    for twin in (copy.copy(e), copy.deepcopy(e)):
        assert twin == e
        twin.set_expand_index(2)
        assert not e.is_expand_index(2)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="01", max_size=56))
def test_expand_dims_type_str_int_round_trip(rule: str) -> None:
    e = ExpandDimsType(rule)
    assert e.full_size == len(rule)
    assert [e.is_expand_index(i) for i in range(len(rule))] == [c == "1" for c in rule]
    assert ExpandDimsType(int(e)) == e
    assert int(ExpandDimsType(int(e))) == int(e)
    assert int(e) >> 56 == len(rule)
    if rule:
        assert repr(e) == f"ExpandDimsType({rule!r})"


# --- StorageFormat ---------------------------------------------------------------------------


def test_storage_format_default() -> None:
    f = StorageFormat()
    assert f.origin_format is Format.FORMAT_RESERVED
    assert f.storage_format is Format.FORMAT_RESERVED
    assert f.expand_dims_type == ExpandDimsType()


def test_storage_format_full_constructor() -> None:
    rule = ExpandDimsType("1000")
    f = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, rule)
    assert f.origin_format is Format.FORMAT_NCHW
    assert f.storage_format is Format.FORMAT_NC1HWC0
    assert f.expand_dims_type == ExpandDimsType("1000")
    assert f.expand_dims_type is not rule  # copied
    rule.set_expand_index(1)
    assert f.expand_dims_type == ExpandDimsType("1000")
    g = StorageFormat(
        origin_format=Format.FORMAT_ND,
        storage_format=Format.FORMAT_FRACTAL_NZ,
    )
    assert g.expand_dims_type == ExpandDimsType()


@pytest.mark.parametrize(
    "args",
    [
        (Format.FORMAT_ND,),
        (None, Format.FORMAT_ND),
        (None, None, ExpandDimsType()),
    ],
)
def test_storage_format_needs_all_or_nothing(args: tuple[Any, ...]) -> None:
    with pytest.raises(GeTypeError, match="either no arguments"):
        StorageFormat(*args)


@pytest.mark.parametrize("bad", [DataType.DT_FLOAT, 2, True, "FORMAT_ND"])
def test_storage_format_rejects_non_formats(bad: Any) -> None:
    with pytest.raises(GeTypeError, match="origin_format must be a Format"):
        StorageFormat(bad, Format.FORMAT_ND, ExpandDimsType())
    with pytest.raises(GeTypeError, match="storage_format must be a Format"):
        StorageFormat(Format.FORMAT_ND, bad, ExpandDimsType())
    f = StorageFormat()
    with pytest.raises(GeTypeError, match="origin_format must be a Format"):
        f.set_origin_format(bad)
    with pytest.raises(GeTypeError, match="storage_format must be a Format"):
        f.set_storage_format(bad)
    assert f == StorageFormat()


def test_storage_format_rejects_non_expand_dims_type() -> None:
    with pytest.raises(GeTypeError, match="must be an ExpandDimsType"):
        StorageFormat(Format.FORMAT_ND, Format.FORMAT_ND, "1000")  # type: ignore[arg-type]
    with pytest.raises(GeTypeError, match="must be an ExpandDimsType"):
        StorageFormat().set_expand_dims_type(4)  # type: ignore[arg-type]


def test_storage_format_setters() -> None:
    f = StorageFormat()
    view = f.expand_dims_type
    assert f.set_origin_format(Format.FORMAT_NHWC) is None  # type: ignore[func-returns-value]
    assert f.set_storage_format(Format.FORMAT_NC1HWC0) is None  # type: ignore[func-returns-value]
    rule = ExpandDimsType("0110")
    assert f.set_expand_dims_type(rule) is None  # type: ignore[func-returns-value]
    assert f.origin_format is Format.FORMAT_NHWC
    assert f.storage_format is Format.FORMAT_NC1HWC0
    assert view == rule  # the earlier view sees the new rule
    assert f.expand_dims_type is view
    rule.set_expand_index(0)
    assert view == ExpandDimsType("0110")
    view.set_expand_index(0)  # editing the view edits the format
    assert f.expand_dims_type == ExpandDimsType("1110")


def test_storage_format_equality_repr_and_copy() -> None:
    f = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, ExpandDimsType("1"))
    assert f == StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, ExpandDimsType("1"))
    assert f != StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, ExpandDimsType("0"))
    assert f != StorageFormat(Format.FORMAT_NHWC, Format.FORMAT_NC1HWC0, ExpandDimsType("1"))
    assert f != StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND, ExpandDimsType("1"))
    assert f != Format.FORMAT_NCHW
    with pytest.raises(TypeError):
        hash(f)
    assert repr(f) == (
        "StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, ExpandDimsType('1'))"
    )
    assert repr(StorageFormat()) == (
        "StorageFormat(Format.FORMAT_RESERVED, Format.FORMAT_RESERVED, ExpandDimsType())"
    )
    for twin in (copy.copy(f), copy.deepcopy(f)):
        assert twin == f
        twin.set_origin_format(Format.FORMAT_ND)
        twin.expand_dims_type.set_expand_index(3)
        assert f.origin_format is Format.FORMAT_NCHW
        assert f.expand_dims_type == ExpandDimsType("1")


# --- TensorDesc ------------------------------------------------------------------------------


def test_tensor_desc_from_list_sets_origin_and_storage() -> None:
    d = TensorDesc([2, 3], DataType.DT_FLOAT)
    assert isinstance(d.shape, StorageShape)
    assert d.shape.origin_shape.dims == [2, 3]
    assert d.shape.storage_shape.dims == [2, 3]
    assert d.data_type is DataType.DT_FLOAT
    k = TensorDesc(shape=[np.int64(4)], data_type=DataType.DT_INT8)
    assert k.shape.storage_shape.dims == [4]


def test_tensor_desc_none_is_scalar() -> None:
    d = TensorDesc(None, DataType.DT_INT64)
    assert d.shape.origin_shape.is_scalar()
    assert d.shape.storage_shape.is_scalar()
    assert d.shape == StorageShape()
    assert TensorDesc([], DataType.DT_INT64) == d


def test_tensor_desc_copies_a_storage_shape() -> None:
    source = StorageShape([2, 3], [1, 2, 3])
    d = TensorDesc(source, DataType.DT_FLOAT16)
    assert d.shape == source
    assert d.shape is not source
    source.origin_shape.set_dim(0, 9)
    assert d.shape.origin_shape.dims == [2, 3]
    assert d.shape.storage_shape.dims == [1, 2, 3]


def test_tensor_desc_infer_meta_pattern_from_seed() -> None:
    # seed 004: ``return TensorDesc(x.shape, x.data_type)``
    x = TensorDesc([2, 3], DataType.DT_FLOAT)
    out = TensorDesc(x.shape, x.data_type)
    assert out == x
    out.shape.storage_shape.set_dim(0, 5)
    assert x.shape.storage_shape.dims == [2, 3]


@pytest.mark.parametrize(
    "bad",
    [(2, 3), Shape([2, 3]), "23", 3, {2: 3}, [2.0, 3], [True], [1, None]],
)
def test_tensor_desc_rejects_bad_shapes(bad: Any) -> None:
    with pytest.raises(GeTypeError, match="StorageShape, a list of integers or None"):
        TensorDesc(bad, DataType.DT_FLOAT)


def test_tensor_desc_max_dim_num() -> None:
    assert TensorDesc([1] * 25, DataType.DT_FLOAT).shape.origin_shape.dim_num == 25
    with pytest.raises(GeValueError, match="maximum dimension count"):
        TensorDesc([1] * 26, DataType.DT_FLOAT)
    d = TensorDesc([1], DataType.DT_FLOAT)
    with pytest.raises(ValueError, match="maximum dimension count"):
        d.shape = [1] * 26
    assert d.shape.origin_shape.dims == [1]


@pytest.mark.parametrize("bad", [Format.FORMAT_ND, True, False, 0, 1, "DT_FLOAT", None, np.float32])
def test_tensor_desc_rejects_non_data_types(bad: Any) -> None:
    with pytest.raises(GeTypeError, match="Data type must be a DataType"):
        TensorDesc([1], bad)
    d = TensorDesc([1], DataType.DT_INT32)
    with pytest.raises(TypeError, match="Data type must be a DataType"):
        d.data_type = bad
    assert d.data_type is DataType.DT_INT32


def test_tensor_desc_rejects_dt_max() -> None:
    with pytest.raises(GeValueError, match="DT_MAX"):
        TensorDesc([1], DataType.DT_MAX)
    d = TensorDesc([1], DataType.DT_INT32)
    with pytest.raises(ValueError, match="DT_MAX"):
        d.data_type = DataType.DT_MAX
    assert d.data_type is DataType.DT_INT32


def test_tensor_desc_data_type_setter() -> None:
    d = TensorDesc([2], DataType.DT_FLOAT)
    d.data_type = DataType.DT_FLOAT16
    assert d.data_type is DataType.DT_FLOAT16
    d.data_type = DataType.DT_HIFLOAT4
    assert d.data_type is DataType.DT_HIFLOAT4


def test_tensor_desc_shape_setter_forms() -> None:
    d = TensorDesc([2, 3], DataType.DT_FLOAT)
    view = d.shape
    d.shape = [4]
    assert view.origin_shape.dims == [4]
    assert view.storage_shape.dims == [4]
    source = StorageShape([5, 6], [30])
    d.shape = source
    assert view == source
    assert d.shape is view  # the setter copies into the existing shape
    source.set_origin_shape([1])
    assert d.shape.origin_shape.dims == [5, 6]
    d.shape = None
    assert view.origin_shape.is_scalar()
    assert view.storage_shape.is_scalar()
    for bad in ((1,), "1", 1.0, Shape([1])):
        with pytest.raises(GeTypeError, match="StorageShape, a list of integers or None"):
            d.shape = bad  # type: ignore[assignment]
    assert d.shape == StorageShape()


def test_tensor_desc_shape_view_is_live() -> None:
    d = TensorDesc([2, 3], DataType.DT_FLOAT)
    d.shape.storage_shape.append_dim(16)
    d.shape.set_origin_shape([6])
    assert d.shape.storage_shape.dims == [2, 3, 16]
    assert d.shape.origin_shape.dims == [6]
    view = d.shape
    del d  # the view keeps its owner alive; there is no "handle has expired" here
    assert view.origin_shape.dims == [6]


def test_tensor_desc_equality_repr_and_copy() -> None:
    d = TensorDesc(StorageShape([2, 3], [6]), DataType.DT_FLOAT)
    assert d == TensorDesc(StorageShape([2, 3], [6]), DataType.DT_FLOAT)
    assert d != TensorDesc(StorageShape([2, 3], [2, 3]), DataType.DT_FLOAT)
    assert d != TensorDesc(StorageShape([2, 3], [6]), DataType.DT_INT32)
    assert d != d.shape
    with pytest.raises(TypeError):
        hash(d)
    assert repr(d) == (
        "TensorDesc(StorageShape(origin_shape=[2, 3], storage_shape=[6]), DataType.DT_FLOAT)"
    )
    for twin in (copy.copy(d), copy.deepcopy(d)):
        assert twin == d
        twin.shape.origin_shape.set_dim(0, 7)
        twin.data_type = DataType.DT_INT8
        assert d.shape.origin_shape.dims == [2, 3]
        assert d.data_type is DataType.DT_FLOAT


def test_tensor_desc_requires_both_arguments() -> None:
    with pytest.raises(TypeError):
        TensorDesc([1])  # type: ignore[call-arg]


# --- Tensor ----------------------------------------------------------------------------------

TENSOR_PROPERTIES = {
    "addr",
    "data_type",
    "expand_dims_type",
    "format",
    "origin_format",
    "origin_shape",
    "placement",
    "shape",
    "shape_size",
    "size",
    "storage_format",
    "storage_shape",
}


def _nc1hwc0_tensor(**kw: Any) -> Tensor:
    return Tensor._view(
        0x1000,
        StorageShape([1, 16, 4, 4], [1, 1, 4, 4, 16]),
        DataType.DT_FLOAT16,
        StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, ExpandDimsType("1000")),
        TensorPlacement.ON_DEVICE_HBM,
        **kw,
    )


def test_tensor_is_not_constructible() -> None:
    with pytest.raises(GeError, match="should not be created directly"):
        Tensor()
    with pytest.raises(RuntimeError):
        Tensor()


def test_tensor_public_surface_is_seed_004s() -> None:
    public = {n for n in dir(Tensor) if not n.startswith("_")}
    assert public == TENSOR_PROPERTIES
    assert all(isinstance(getattr(Tensor, n), property) for n in TENSOR_PROPERTIES)


def test_tensor_properties() -> None:
    t = _nc1hwc0_tensor()
    assert t.addr == 0x1000
    assert t.data_type is DataType.DT_FLOAT16
    assert t.placement is TensorPlacement.ON_DEVICE_HBM
    assert isinstance(t.shape, StorageShape)
    assert t.shape == StorageShape([1, 16, 4, 4], [1, 1, 4, 4, 16])
    assert isinstance(t.origin_shape, Shape)
    assert t.origin_shape.dims == [1, 16, 4, 4]
    assert isinstance(t.storage_shape, Shape)
    assert t.storage_shape.dims == [1, 1, 4, 4, 16]
    assert t.shape_size == 256  # element count of the storage shape
    assert t.size == 512  # bytes
    assert isinstance(t.format, StorageFormat)
    assert t.origin_format is Format.FORMAT_NCHW
    assert t.storage_format is Format.FORMAT_NC1HWC0
    assert isinstance(t.expand_dims_type, ExpandDimsType)
    assert t.expand_dims_type == ExpandDimsType("1000")


def test_tensor_properties_are_read_only() -> None:
    t = _nc1hwc0_tensor()
    for name in TENSOR_PROPERTIES:
        with pytest.raises(AttributeError):
            setattr(t, name, 1)


def test_tensor_views_are_live() -> None:
    t = _nc1hwc0_tensor()
    assert t.storage_shape is t.shape.storage_shape
    assert t.origin_shape is t.shape.origin_shape
    assert t.expand_dims_type is t.format.expand_dims_type
    t.storage_shape.set_dim(0, 2)
    assert t.shape.storage_shape.dims == [2, 1, 4, 4, 16]
    assert t.shape_size == 512  # follows the storage shape
    assert t.size == 512  # the memory behind the view does not change
    t.format.set_storage_format(Format.FORMAT_ND)
    assert t.storage_format is Format.FORMAT_ND


def test_tensor_view_copies_its_inputs() -> None:
    shape = StorageShape([4], [4])
    fmt = StorageFormat(Format.FORMAT_ND, Format.FORMAT_ND, ExpandDimsType())
    t = Tensor._view(8, shape, DataType.DT_INT32, fmt, TensorPlacement.ON_HOST)
    assert t.shape is not shape
    assert t.format is not fmt
    shape.set_storage_shape([100])
    fmt.set_origin_format(Format.FORMAT_NCHW)
    assert t.shape_size == 4
    assert t.size == 16
    assert t.origin_format is Format.FORMAT_ND
    t._invalidate()
    assert shape.storage_shape.dims == [100]  # the inputs were not lent
    assert fmt.expand_dims_type.full_size == 0


@pytest.mark.parametrize(
    ("dims", "data_type", "size"),
    [
        ([], DataType.DT_INT64, 8),
        ([0, 3], DataType.DT_FLOAT, 0),
        ([5], DataType.DT_INT4, 3),  # sub-byte types are packed, rounded up
        ([3], DataType.DT_UINT1, 1),
        ([4], DataType.DT_FLOAT6_E3M2, 3),
        ([2, 2], DataType.DT_COMPLEX128, 64),
        ([7], DataType.DT_BOOL, 7),
    ],
)
def test_tensor_size_is_shape_size_times_element_size(
    dims: list[int], data_type: DataType, size: int
) -> None:
    t = Tensor._view(
        0, StorageShape(dims, dims), data_type, StorageFormat(), TensorPlacement.ON_HOST
    )
    assert t.size == size


def test_tensor_explicit_size() -> None:
    t = _nc1hwc0_tensor(size=4096)
    assert t.size == 4096
    assert t.shape_size == 256
    s = Tensor._view(
        0,
        StorageShape([2], [2]),
        DataType.DT_STRING,
        StorageFormat(),
        TensorPlacement.ON_HOST,
        size=64,
    )
    assert s.size == 64


def test_tensor_view_needs_a_size_it_cannot_compute() -> None:
    with pytest.raises(GeValueError, match="pass size="):
        Tensor._view(
            0, StorageShape([2], [2]), DataType.DT_STRING, StorageFormat(), TensorPlacement.ON_HOST
        )
    with pytest.raises(GeValueError, match="pass size="):
        Tensor._view(
            0, StorageShape([-1], [-1]), DataType.DT_FLOAT, StorageFormat(), TensorPlacement.ON_HOST
        )


def test_tensor_view_checks_its_arguments() -> None:
    ok: dict[str, Any] = {
        "addr": 0,
        "desc_shape": StorageShape([1], [1]),
        "data_type": DataType.DT_FLOAT,
        "fmt": StorageFormat(),
        "placement": TensorPlacement.ON_HOST,
    }
    assert Tensor._view(**ok).addr == 0
    cases: list[tuple[str, Any, type[Exception], str]] = [
        ("addr", -1, GeValueError, "non-negative"),
        ("addr", 1.0, GeTypeError, "addr must be an integer"),
        ("addr", True, GeTypeError, "addr must be an integer"),
        ("desc_shape", [1], GeTypeError, "StorageShape"),
        ("data_type", 0, GeTypeError, "Data type must be a DataType"),
        ("data_type", DataType.DT_MAX, GeValueError, "DT_MAX"),
        ("fmt", Format.FORMAT_ND, GeTypeError, "StorageFormat"),
        ("placement", 1, GeTypeError, "TensorPlacement"),
    ]
    for name, value, error, text in cases:
        with pytest.raises(error, match=text):
            Tensor._view(**{**ok, name: value})
    with pytest.raises(GeValueError, match="non-negative"):
        Tensor._view(**ok, size=-1)
    with pytest.raises(GeTypeError, match="size must be an integer"):
        Tensor._view(**ok, size=1.5)  # type: ignore[arg-type]


def test_tensor_repr() -> None:
    t = _nc1hwc0_tensor()
    text = repr(t)
    assert text.startswith("Tensor(addr=0x1000, size=512, ")
    assert "DataType.DT_FLOAT16" in text
    assert "StorageShape(origin_shape=[1, 16, 4, 4], storage_shape=[1, 1, 4, 4, 16])" in text
    assert "TensorPlacement.ON_DEVICE_HBM" in text
    assert "ExpandDimsType('1000')" in text


def test_tensor_cannot_be_copied() -> None:
    t = _nc1hwc0_tensor()
    with pytest.raises(GeError, match="does not support copy"):
        copy.copy(t)
    with pytest.raises(RuntimeError, match="does not support deepcopy"):
        copy.deepcopy(t)


# --- borrowing and invalidation --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TENSOR_PROPERTIES))
def test_invalidated_tensor_properties_raise(name: str) -> None:
    t = _nc1hwc0_tensor()
    getattr(t, name)  # fine while lent
    t._invalidate()
    with pytest.raises(GeError, match=BORROWED) as info:
        getattr(t, name)
    assert RETURNED in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_invalidation_reaches_every_view() -> None:
    t = _nc1hwc0_tensor()
    shape, origin, storage = t.shape, t.origin_shape, t.storage_shape
    fmt, rule = t.format, t.expand_dims_type
    dims = storage.dims  # plain values copied out stay usable
    data_type, origin_format = t.data_type, t.origin_format
    t._invalidate()
    uses: list[Callable[[], object]] = [
        lambda: shape.origin_shape,
        lambda: shape.storage_shape,
        lambda: shape.set_origin_shape([1]),
        lambda: shape.set_storage_shape([1]),
        lambda: origin.dims,
        lambda: origin.dim_num,
        lambda: origin.size,
        origin.is_scalar,
        lambda: origin.get_dim(0),
        lambda: origin.set_dim(0, 1),
        lambda: origin.append_dim(1),
        origin.set_scalar,
        lambda: storage.dims,
        lambda: fmt.origin_format,
        lambda: fmt.storage_format,
        lambda: fmt.expand_dims_type,
        lambda: fmt.set_origin_format(Format.FORMAT_ND),
        lambda: fmt.set_storage_format(Format.FORMAT_ND),
        lambda: fmt.set_expand_dims_type(ExpandDimsType()),
        lambda: rule.full_size,
        lambda: rule.is_expand_index(0),
        lambda: rule.set_expand_index(0),
        lambda: int(rule),
        lambda: origin == Shape(),
        lambda: shape == StorageShape(),
        lambda: copy.copy(shape),
        lambda: copy.deepcopy(fmt),
        lambda: TensorDesc(shape, DataType.DT_FLOAT),
        lambda: StorageShape(origin, [1]),
        lambda: StorageShape().set_storage_shape(storage),
        lambda: StorageFormat(Format.FORMAT_ND, Format.FORMAT_ND, rule),
    ]
    for use in uses:
        with pytest.raises(RuntimeError, match=BORROWED):
            use()
    assert dims == [1, 1, 4, 4, 16]
    assert data_type is DataType.DT_FLOAT16
    assert origin_format is Format.FORMAT_NCHW


def test_invalidated_objects_still_repr() -> None:
    t = _nc1hwc0_tensor()
    views = [t.shape, t.origin_shape, t.format, t.expand_dims_type]
    t._invalidate()
    assert repr(t) == "Tensor(<expired borrowed view>)"
    assert [repr(v) for v in views] == [
        "StorageShape(<expired borrowed view>)",
        "Shape(<expired borrowed view>)",
        "StorageFormat(<expired borrowed view>)",
        "ExpandDimsType(<expired borrowed view>)",
    ]


def test_invalidation_is_per_tensor() -> None:
    a = _nc1hwc0_tensor()
    b = _nc1hwc0_tensor()
    a._invalidate()
    assert b.shape_size == 256
    a._invalidate()  # idempotent
    with pytest.raises(RuntimeError, match=RETURNED):
        a.addr  # noqa: B018


def test_a_copy_taken_while_lent_outlives_the_loan() -> None:
    t = _nc1hwc0_tensor()
    desc = TensorDesc(t.shape, t.data_type)
    fmt = copy.copy(t.format)
    t._invalidate()
    assert desc.shape.storage_shape.dims == [1, 1, 4, 4, 16]
    assert fmt.storage_format is Format.FORMAT_NC1HWC0


# --- property tests --------------------------------------------------------------------------

_dims = st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=25)
_small_dims = st.lists(st.integers(min_value=-2, max_value=64), max_size=25)


def _expected_size(dims: list[int]) -> int:
    if any(d < 0 for d in dims):
        return -1
    count = 1
    for d in dims:
        count *= d
    return count if count <= INT64_MAX else -1


@settings(max_examples=60, deadline=None)
@given(_dims)
def test_shape_round_trip(dims: list[int]) -> None:
    s = Shape(dims)
    assert s.dims == dims
    assert s.dim_num == len(dims)
    assert s.is_scalar() == (not dims)
    assert s.size == _expected_size(dims)
    built = Shape()
    for d in dims:
        assert built.append_dim(d) is built
    assert built == s
    assert [s.get_dim(i) for i in range(s.dim_num)] == dims
    assert Shape(s) == s
    assert copy.deepcopy(s) == s


@settings(max_examples=60, deadline=None)
@given(_small_dims, _small_dims)
def test_storage_shape_round_trip(origin: list[int], storage: list[int]) -> None:
    s = StorageShape(origin, storage)
    assert s.origin_shape.dims == origin
    assert s.storage_shape.dims == storage
    assert StorageShape(s.origin_shape, s.storage_shape) == s
    t = StorageShape()
    t.set_origin_shape(origin)
    t.set_storage_shape(Shape(storage))
    assert t == s
    desc = TensorDesc(s, DataType.DT_INT32)
    assert desc.shape == s
    desc.shape = origin
    assert desc.shape == StorageShape(origin, origin)
    assert TensorDesc(origin, DataType.DT_INT32).shape == StorageShape(origin, origin)
