"""``Shape`` and ``TensorDesc`` against GE_REFERENCE.md §4.2 and §10.4."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ge.graph import DataType, Format, Shape, TensorDesc

# --- Shape -----------------------------------------------------------------------------------


def test_shape_is_a_list() -> None:
    s = Shape([1, 2, 3])
    assert isinstance(s, list)
    assert s == [1, 2, 3]
    assert list(s) == [1, 2, 3]
    assert len(s) == 3
    assert s[1] == 2


def test_shape_default_is_empty() -> None:
    assert Shape() == []
    assert Shape(None) == []


def test_shape_constants() -> None:
    assert Shape.UNKNOWN_DIM == -1
    assert Shape.UNKNOWN_DIM_NUM == -2


@pytest.mark.parametrize(
    ("dims", "size"),
    [
        ([], 0),  # GE's rule: an empty shape has size 0, not 1
        ([7], 7),
        ([2, 3, 4], 24),
        ([0], 0),
        ([3, 0, 5], 0),
        ([-1], -1),
        ([-2], -1),
        ([2, -1, 3], -1),
        ([0, -1], -1),
        ([1, 1, 1, 1], 1),
    ],
)
def test_get_shape_size(dims: list[int], size: int) -> None:
    assert Shape(dims).get_shape_size() == size


@pytest.mark.parametrize(
    ("dims", "unknown"),
    [([], False), ([0], False), ([3, 4], False), ([-1], True), ([-2], True), ([2, -1], True)],
)
def test_is_unknown_shape(dims: list[int], unknown: bool) -> None:
    assert Shape(dims).is_unknown_shape() is unknown


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=12), max_size=6))
def test_get_shape_size_matches_numpy_prod(dims: list[int]) -> None:
    expected = 0 if not dims else int(np.prod(np.array(dims, dtype=object)))
    assert Shape(dims).get_shape_size() == expected
    assert expected == (0 if not dims else math.prod(dims))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=12), max_size=5),
    st.sampled_from([-1, -2]),
    st.integers(min_value=0, max_value=5),
)
def test_any_unknown_dim_gives_minus_one(dims: list[int], unknown: int, where: int) -> None:
    dims = list(dims)
    dims.insert(min(where, len(dims)), unknown)
    s = Shape(dims)
    assert s.get_shape_size() == -1
    assert s.is_unknown_shape()


@pytest.mark.parametrize("dims", [[1.0], [1, 2.5], ["3"], [None], [1, [2]]])
def test_shape_rejects_non_int_dims(dims: list[object]) -> None:
    with pytest.raises(TypeError, match="dims must be a list of integers"):
        Shape(dims)  # type: ignore[arg-type]


def test_shape_accepts_numpy_integers_as_ints() -> None:
    s = Shape([np.int64(2), np.int32(3)])
    assert s == [2, 3]
    assert all(type(d) is int for d in s)


# --- TensorDesc ------------------------------------------------------------------------------


def test_tensor_desc_defaults() -> None:
    d = TensorDesc()
    assert d.get_shape() == []
    assert isinstance(d.get_shape(), Shape)
    assert d.get_format() is Format.FORMAT_ND
    assert d.get_data_type() is DataType.DT_FLOAT
    assert d.get_origin_shape() == []
    assert d.get_origin_format() is Format.FORMAT_ND


def test_tensor_desc_positional_order_is_shape_format_data_type() -> None:
    d = TensorDesc([2, 3], Format.FORMAT_NCHW, DataType.DT_INT32)
    assert d.get_shape() == [2, 3]
    assert d.get_format() is Format.FORMAT_NCHW
    assert d.get_data_type() is DataType.DT_INT32


def test_tensor_desc_properties_mirror_getters() -> None:
    d = TensorDesc([4], Format.FORMAT_NHWC, DataType.DT_INT8)
    d.set_origin_shape([2, 2]).set_origin_format(Format.FORMAT_NCHW)
    assert d.shape == d.get_shape() == [4]
    assert isinstance(d.shape, Shape)
    assert d.format is Format.FORMAT_NHWC
    assert d.data_type is DataType.DT_INT8
    assert d.origin_shape == [2, 2]
    assert isinstance(d.origin_shape, Shape)
    assert d.origin_format is Format.FORMAT_NCHW


@pytest.mark.parametrize("attr", ["shape", "origin_shape", "format", "origin_format", "data_type"])
def test_tensor_desc_properties_are_read_only(attr: str) -> None:
    d = TensorDesc()
    with pytest.raises(AttributeError):
        setattr(d, attr, getattr(d, attr))


def test_setters_return_self_and_chain() -> None:
    d = TensorDesc()
    out = (
        d.set_shape([1, 2])
        .set_origin_shape([2, 1])
        .set_format(Format.FORMAT_NCHW)
        .set_origin_format(Format.FORMAT_NHWC)
        .set_data_type(DataType.DT_FLOAT16)
    )
    assert out is d
    assert d.shape == [1, 2]
    assert d.origin_shape == [2, 1]
    assert d.format is Format.FORMAT_NCHW
    assert d.origin_format is Format.FORMAT_NHWC
    assert d.data_type is DataType.DT_FLOAT16


@pytest.mark.parametrize(
    "setter",
    ["set_shape", "set_origin_shape", "set_format", "set_origin_format", "set_data_type"],
)
def test_each_setter_returns_self(setter: str) -> None:
    d = TensorDesc()
    arg = {
        "set_shape": [3],
        "set_origin_shape": [3],
        "set_format": Format.FORMAT_NCHW,
        "set_origin_format": Format.FORMAT_NCHW,
        "set_data_type": DataType.DT_INT64,
    }[setter]
    assert getattr(d, setter)(arg) is d


def test_origin_shape_is_independent_of_shape() -> None:
    d = TensorDesc([1, 2])
    d.set_origin_shape([5, 6, 7])
    assert d.shape == [1, 2]
    d.set_shape([9])
    assert d.origin_shape == [5, 6, 7]
    assert d.shape == [9]


def test_origin_format_is_independent_of_format() -> None:
    d = TensorDesc([1], Format.FORMAT_NCHW)
    d.set_format(Format.FORMAT_NHWC)
    assert d.format is Format.FORMAT_NHWC
    assert d.origin_format is Format.FORMAT_NCHW
    d.set_origin_format(Format.FORMAT_ND)
    assert d.format is Format.FORMAT_NHWC
    assert d.origin_format is Format.FORMAT_ND


def test_setting_shape_leaves_origin_format_and_data_type() -> None:
    d = TensorDesc([1], Format.FORMAT_NCHW, DataType.DT_INT16)
    d.set_shape([4, 4])
    assert d.format is Format.FORMAT_NCHW
    assert d.data_type is DataType.DT_INT16


def test_returned_shape_is_a_copy() -> None:
    d = TensorDesc([1, 2])
    s = d.get_shape()
    s.append(3)
    assert d.get_shape() == [1, 2]
    given = [4, 5]
    d.set_shape(given)
    given.append(6)
    assert d.shape == [4, 5]


def test_none_is_a_scalar_shape_only_in_the_constructor() -> None:
    """GE's default ``shape=None`` is a scalar; its setters take a list only."""
    assert TensorDesc(None).shape == []
    d = TensorDesc([2])
    with pytest.raises(TypeError, match=r"^shape must be a list of integers"):
        d.set_shape(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^origin shape must be a list of integers"):
        d.set_origin_shape(None)  # type: ignore[arg-type]
    assert d.shape == [2]


def test_repr() -> None:
    text = repr(TensorDesc([1, 2]))
    assert "TensorDesc(" in text
    assert "shape=[1, 2]" in text
    assert f"format={Format.FORMAT_ND}" in text
    assert f"data_type={DataType.DT_FLOAT}" in text


@pytest.mark.parametrize("bad", [0, 1, "DT_FLOAT", None, Format.FORMAT_ND])
def test_data_type_must_be_a_data_type(bad: object) -> None:
    with pytest.raises(TypeError, match="Data type must be a DataType"):
        TensorDesc([1], Format.FORMAT_ND, bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Data type must be a DataType"):
        TensorDesc().set_data_type(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [2, "ND", None, DataType.DT_FLOAT])
def test_format_must_be_a_format(bad: object) -> None:
    with pytest.raises(TypeError):
        TensorDesc([1], bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TensorDesc().set_format(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TensorDesc().set_origin_format(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [[1.5], ["a"], [1, None]])
def test_shape_setters_reject_non_int_dims(bad: list[object]) -> None:
    with pytest.raises(TypeError, match=r"^shape must be a list of integers"):
        TensorDesc(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^shape must be a list of integers"):
        TensorDesc().set_shape(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^origin shape must be a list of integers"):
        TensorDesc().set_origin_shape(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^dims must be a list of integers"):
        Shape(bad)  # type: ignore[arg-type]


def test_failed_setter_leaves_desc_unchanged() -> None:
    d = TensorDesc([3], Format.FORMAT_NCHW, DataType.DT_INT32)
    with pytest.raises(TypeError):
        d.set_data_type(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        d.set_shape([1.0])  # type: ignore[list-item]
    assert d.data_type is DataType.DT_INT32
    assert d.shape == [3]


def test_copy_is_refused() -> None:
    d = TensorDesc([1])
    with pytest.raises(RuntimeError, match="does not support copy"):
        copy.copy(d)


def test_deepcopy_is_refused() -> None:
    d = TensorDesc([1])
    with pytest.raises(RuntimeError, match="does not support deepcopy"):
        copy.deepcopy(d)


# --- shared shapes and the fast constructor (build cost per node) ------------------------------


def test_a_clone_shares_its_shape_yet_stays_independent() -> None:
    """``_clone`` shares the shape lists (no list per clone); every write replaces them, so
    neither side sees the other's edits."""
    d = TensorDesc([2, 3]).set_origin_shape([6])
    twin = d._clone()
    assert twin._shape is d._shape and twin._origin_shape is d._origin_shape
    twin.set_shape([7]).set_origin_shape([7, 1])
    assert (d.shape, d.origin_shape) == ([2, 3], [6])
    d.get_shape().append(9)
    assert (twin.shape, d.shape) == ([7], [2, 3])


@pytest.mark.parametrize(
    "dims",
    [[2, 3], (), (d for d in (4, -1)), [np.int64(5), 0], [True, 2]],
    ids=["list", "empty tuple", "generator", "numpy int", "bool"],
)
def test_fast_constructor_matches_the_checked_one(dims: object) -> None:
    dims = list(dims)  # type: ignore[call-overload]
    fast = TensorDesc._of(iter(dims), Format.FORMAT_NCHW, DataType.DT_INT8)
    assert fast == TensorDesc(dims, Format.FORMAT_NCHW, DataType.DT_INT8)
    assert all(type(d) is int for d in fast._shape) and type(fast._shape) is Shape


@pytest.mark.parametrize(
    ("dims", "fmt", "dtype", "message"),
    [
        ([1.5], Format.FORMAT_ND, DataType.DT_FLOAT, "shape must be a list of integers"),
        ([1], 2, DataType.DT_FLOAT, "Format must be a Format"),
        ([1], Format.FORMAT_ND, "float32", "Data type must be a DataType"),
    ],
)
def test_fast_constructor_refuses_what_the_checked_one_refuses(
    dims: list[object], fmt: object, dtype: object, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        TensorDesc._of(dims, fmt, dtype)  # type: ignore[arg-type]


def test_fast_constructor_shares_a_desc_shape() -> None:
    """What an elementwise rule passes on (``rules.desc(x._shape, ...)``) is not copied."""
    source = TensorDesc([3, 1])
    made = TensorDesc._of(source._shape, Format.FORMAT_ND, DataType.DT_INT32)
    assert made._shape is source._shape
    source.set_shape([5])
    assert made.shape == [3, 1]
