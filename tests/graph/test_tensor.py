"""``ge.graph.Tensor`` against GE_REFERENCE.md §4.1 and §10.3, checked with numpy references."""

from __future__ import annotations

import copy
import gc
import struct
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ge._device import device_memory
from ge.error import GeTypeError
from ge.graph import DataType, Format, Placement, Shape, Tensor, TensorDesc

DT = DataType
HOST = Placement.PLACEMENT_HOST
DEVICE = Placement.PLACEMENT_DEVICE
ND = Format.FORMAT_ND

# Independent references: the numpy type of each DataType that Tensor claims to hold.
CLAIMED = {
    DT.DT_FLOAT: np.float32,
    DT.DT_FLOAT16: np.float16,
    DT.DT_INT8: np.int8,
    DT.DT_INT16: np.int16,
    DT.DT_INT32: np.int32,
    DT.DT_INT64: np.int64,
    DT.DT_UINT8: np.uint8,
    DT.DT_UINT16: np.uint16,
    DT.DT_UINT32: np.uint32,
    DT.DT_UINT64: np.uint64,
    DT.DT_BOOL: np.bool_,
    DT.DT_BF16: ml_dtypes.bfloat16,
}
# Sample values each type represents exactly (the extremes of the integer types included).
SAMPLES: dict[DataType, list[Any]] = {
    DT.DT_FLOAT: [0.0, -1.5, 3.25, 1e30, -(2.0**-126)],
    DT.DT_FLOAT16: [0.0, -1.5, 3.25, 65504.0, 2.0**-24],
    DT.DT_INT8: [0, -128, 127, 5, -7],
    DT.DT_INT16: [0, -32768, 32767, 300, -301],
    DT.DT_INT32: [0, -(2**31), 2**31 - 1, 70000, -1],
    DT.DT_INT64: [0, -(2**63), 2**63 - 1, 2**40, -1],
    DT.DT_UINT8: [0, 255, 1, 128, 7],
    DT.DT_UINT16: [0, 65535, 1, 40000, 7],
    DT.DT_UINT32: [0, 2**32 - 1, 1, 2**31, 7],
    DT.DT_UINT64: [0, 2**64 - 1, 1, 2**63, 7],
    DT.DT_BOOL: [True, False, True, True, False],
    DT.DT_BF16: [0.0, -1.5, 3.25, 256.0, 2.0**-126],
}


def ge_text_values(array: np.ndarray) -> list[Any]:
    """What GE-PY's ``get_data`` returns: floats through C's six-decimal text."""
    if array.dtype.kind == "f":
        return np.vectorize(lambda x: float(f"{float(x):f}"), otypes=[object])(array).tolist()
    return array.tolist()


# The types GE-PY's list constructor packs (GE_REFERENCE.md §4.1, "The C switch accepts ...").
LIST_TYPES = [dt for dt in CLAIMED if dt is not DT.DT_BF16]


def live() -> int:
    return device_memory().live_bytes()


def settled_live() -> int:
    """Live device bytes once garbage from earlier tests is gone (a stable starting point)."""
    gc.collect()
    return live()


# --- construction: positional order and call forms -------------------------------------------


def test_positional_order_data_file_path_data_type_format_shape_placement() -> None:
    t = Tensor([1, 2, 3, 4], None, DT.DT_INT32, Format.FORMAT_NCHW, [2, 2], HOST)
    assert t.get_data() == [[1, 2], [3, 4]]
    assert t.get_data_type() is DT.DT_INT32
    assert t.get_format() is Format.FORMAT_NCHW
    assert t.get_shape() == [2, 2]
    assert t.get_placement() is HOST


def test_second_positional_argument_is_file_path() -> None:
    with pytest.raises(RuntimeError, match="either by data or by file"):
        Tensor([1.0], "some_file.bin")  # type: ignore[arg-type]


def test_keyword_construction() -> None:
    t = Tensor(data=[1, 2], data_type=DT.DT_INT8, shape=[2], format=Format.FORMAT_NHWC)
    assert t.data == [1, 2]
    assert t.format is Format.FORMAT_NHWC


def test_defaults() -> None:
    t = Tensor([2.5])
    assert t.data_type is DT.DT_FLOAT
    assert t.format is ND
    assert t.placement is HOST
    assert t.shape == []  # shape None is a scalar
    assert t.get_data() == 2.5


def test_empty_tensor() -> None:
    t = Tensor()
    assert t.get_shape() == []
    assert t.get_data_type() is DT.DT_FLOAT
    assert t.get_placement() is HOST
    with pytest.raises(ValueError, match=r"^Input must start with '\[' and end with '\]'"):
        t.get_data()  # GE_ERRORS.md §2.3: GE's C text of an empty tensor is <empty>
    assert t.numpy().size == 0


def test_properties_mirror_getters() -> None:
    t = Tensor([1, 2, 3], None, DT.DT_INT64, Format.FORMAT_NCHW, [3])
    assert t.format is t.get_format()
    assert t.data_type is t.get_data_type()
    assert t.shape == t.get_shape()
    assert isinstance(t.shape, Shape)
    assert t.placement is t.get_placement()
    assert t.data == t.get_data()


def test_get_tensor_desc() -> None:
    t = Tensor([1, 2, 3, 4, 5, 6], None, DT.DT_INT16, Format.FORMAT_NCHW, [2, 3])
    d = t.get_tensor_desc()
    assert isinstance(d, TensorDesc)
    assert d.shape == [2, 3]
    assert d.format is Format.FORMAT_NCHW
    assert d.data_type is DT.DT_INT16
    d.set_shape([6])  # a copy: editing it leaves the tensor alone
    assert t.shape == [2, 3]


# --- construction from lists -----------------------------------------------------------------


@pytest.mark.parametrize("data_type", LIST_TYPES, ids=lambda d: d.name)
def test_list_values_per_data_type(data_type: DataType) -> None:
    values = SAMPLES[data_type]
    t = Tensor(values, None, data_type, ND, [len(values)])
    expected = np.array(values, dtype=CLAIMED[data_type])
    got = t.numpy()
    assert got.dtype == np.dtype(CLAIMED[data_type])
    assert got.tobytes() == expected.tobytes()
    if data_type is DT.DT_BOOL:
        with pytest.raises(ValueError, match=r"^Invalid item: 'true'"):  # GE's C text: true
            t.get_data()
    else:
        assert t.get_data() == ge_text_values(expected)


@pytest.mark.parametrize("data_type", LIST_TYPES, ids=lambda d: d.name)
def test_nested_data_comes_as_a_numpy_array(data_type: DataType) -> None:
    values = [*SAMPLES[data_type], SAMPLES[data_type][0]]
    expected = np.array(values, dtype=CLAIMED[data_type]).reshape(2, 3)
    t = Tensor(np.array([values[0:3], values[3:6]], dtype=object), None, data_type, ND, [2, 3])
    if data_type is not DT.DT_BOOL:
        assert t.get_data() == ge_text_values(expected)
    assert t.numpy().tobytes() == expected.tobytes()


@pytest.mark.parametrize(
    ("data_type", "text"),
    [
        (DT.DT_FLOAT, "float() argument must be a string or a real number, not 'list'"),
        (
            DT.DT_INT32,
            "int() argument must be a string, a bytes-like object or a real number, not 'list'",
        ),
    ],
)
def test_nested_lists_are_refused_as_ge_does(data_type: DataType, text: str) -> None:
    """GE-PY converts each element with float()/int(): a nested list is Python's TypeError
    (ours is a GeTypeError with that text first, naming the element)."""
    with pytest.raises(TypeError) as info:
        Tensor([[1, 2], [3, 4]], None, data_type, ND, [2, 2])
    assert str(info.value).startswith(f"{text}: data[0] is [1, 2]; for nested data pass a numpy")
    assert isinstance(info.value, GeTypeError)


@pytest.mark.parametrize(
    ("value", "bits"),
    [
        (1.0, 0x3C00),
        (-2.0, 0xC000),
        (65504.0, 0x7BFF),  # largest finite half
        (2.0**-24, 0x0001),  # smallest subnormal
        (1.0 / 3.0, 0x3555),
        (1.0 + 2.0**-10, 0x3C01),
        (1.0 + 2.0**-11, 0x3C00),  # tie -> even
        (1.0 + 3 * 2.0**-11, 0x3C02),  # tie -> even (up)
        (1e6, 0x7C00),  # overflow -> inf
    ],
)
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_float16_list_packs_ieee_half_round_to_nearest_even(value: float, bits: int) -> None:
    t = Tensor([value], None, DT.DT_FLOAT16, ND, [1])
    assert t.numpy().view(np.uint16)[0] == bits


def test_float_list_rounds_to_single_precision() -> None:
    t = Tensor([0.1], None, DT.DT_FLOAT, ND, [1])
    assert t.numpy().tobytes() == struct.pack("<f", 0.1)


@pytest.mark.parametrize(
    ("data_type", "values"),
    [
        (DT.DT_UINT64, [0, 2**64 - 1]),
        (DT.DT_UINT64, [2**63 + 1, 1]),
        (DT.DT_INT64, [2**53 + 1, 0.5]),
        (DT.DT_INT64, [-(2**63), 2**62 + 3, 1.0]),
    ],
)
def test_integer_list_elements_are_packed_exactly_with_int(
    data_type: DataType, values: list[Any]
) -> None:
    # GE-PY packs each element with int(x) into the C type: no detour through float64.
    t = Tensor(values, None, data_type, ND, [len(values)])
    assert t.get_data() == [int(x) for x in values]


def test_int_list_from_floats_truncates_like_int() -> None:
    t = Tensor([1.7, -1.7, 2.0], None, DT.DT_INT32, ND, [3])
    assert t.get_data() == [int(1.7), int(-1.7), 2]


def test_bool_values_in_int_tensor() -> None:
    t = Tensor([True, False, True], None, DT.DT_INT32, ND, [3])
    assert t.get_data() == [1, 0, 1]


def test_bool_list() -> None:
    t = Tensor([True, False], None, DT.DT_BOOL, ND, [2])
    assert t.numpy().tolist() == [True, False]
    with pytest.raises(ValueError, match=r"^Invalid item: 'true'"):  # GE_ERRORS.md §2.3
        t.get_data()
    with pytest.raises(RuntimeError, match=r"^Failed to create Tensor with data type: 12"):
        Tensor([1, 0], None, DT.DT_BOOL, ND, [2])  # GE: only an all-bool list


def test_longer_list_is_cut_to_the_shape() -> None:
    t = Tensor(list(range(10)), None, DT.DT_INT32, ND, [2, 2])
    assert t.get_data() == [[0, 1], [2, 3]]
    assert t.nbytes == 16


def test_shorter_list_is_accepted_and_zero_filled() -> None:
    # GE_REFERENCE §10.3: 5 values for [1, 2, 3] is accepted.
    t = Tensor([1, 2, 3, 4, 5], None, DT.DT_INT32, ND, [1, 2, 3])
    assert t.get_data() == [[[1, 2, 3], [4, 5, 0]]]


def test_empty_list_for_a_shape_is_zero_filled() -> None:
    t = Tensor([], None, DT.DT_FLOAT, ND, [3])
    assert t.get_data() == [0.0, 0.0, 0.0]


def test_scalar_from_list() -> None:
    t = Tensor([7], None, DT.DT_INT64)
    assert t.shape == []
    data = t.get_data()
    assert data == 7
    assert not isinstance(data, list)


def test_scalar_with_explicit_empty_shape() -> None:
    t = Tensor([1.5], None, DT.DT_FLOAT, ND, [])
    assert t.get_data() == 1.5


@pytest.mark.parametrize(("shape", "expected"), [([0], []), ([2, 0], [[], []]), ([0, 3], [])])
def test_zero_size_shapes(shape: list[int], expected: list[Any]) -> None:
    t = Tensor([], None, DT.DT_FLOAT, ND, shape)
    with pytest.raises(ValueError, match=r"^Input must start with"):  # GE: <empty>
        t.get_data()
    assert t.numpy().tolist() == expected
    assert t.numpy().shape == tuple(shape)
    assert t.nbytes == 0


def test_tuple_data_is_refused_as_ge_does() -> None:
    with pytest.raises(TypeError, match=r"^data should be List"):
        Tensor((1, 2), None, DT.DT_INT32, ND, [2])
    with pytest.raises(TypeError, match=r"^int\(\) argument must be .* not 'tuple'"):
        Tensor([(1, 2), (3, 4)], None, DT.DT_INT32, ND, [2, 2])


# --- construction from numpy arrays and bytes (our additions) --------------------------------


@pytest.mark.parametrize("data_type", list(CLAIMED), ids=lambda d: d.name)
def test_numpy_array_is_cast_to_data_type(data_type: DataType) -> None:
    source = np.array([0.0, 1.5, 2.5, 100.75, 7.0])  # float64, non-negative: a defined cast
    t = Tensor(source, None, data_type, ND, [5])
    expected = source.astype(CLAIMED[data_type])
    assert t.numpy().dtype == np.dtype(CLAIMED[data_type])
    assert t.numpy().tobytes() == expected.tobytes()


def test_numpy_shape_from_array_when_shape_is_none() -> None:
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    t = Tensor(a)  # default data_type DT_FLOAT
    assert t.shape == [2, 3]
    assert t.data_type is DT.DT_FLOAT
    assert t.get_data() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_numpy_float_to_int_cast() -> None:
    t = Tensor(np.array([1.7, -2.2, 3.9]), None, DT.DT_INT32)
    np.testing.assert_array_equal(t.numpy(), np.array([1.7, -2.2, 3.9]).astype(np.int32))


def test_numpy_array_reshaped_to_given_shape() -> None:
    t = Tensor(np.arange(6, dtype=np.float32), None, DT.DT_FLOAT, ND, [3, 2])
    assert t.get_data() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_numpy_array_that_does_not_fit_the_shape() -> None:
    with pytest.raises(ValueError):
        Tensor(np.arange(6, dtype=np.float32), None, DT.DT_FLOAT, ND, [4])


def test_numpy_zero_dim_array_is_scalar() -> None:
    t = Tensor(np.array(3.5, dtype=np.float32))
    assert t.shape == []
    assert t.get_data() == 3.5


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.T,
        lambda a: a[:, ::2],
        lambda a: a[::-1],
        np.asfortranarray,
    ],
    ids=["transpose", "strided", "reversed", "fortran"],
)
def test_non_contiguous_numpy_input(make: Any) -> None:
    view = make(np.arange(24, dtype=np.int32).reshape(4, 6))
    t = Tensor(view, None, DT.DT_INT32)
    assert t.shape == list(view.shape)
    np.testing.assert_array_equal(t.numpy(), view)
    assert t.get_data() == view.tolist()


def test_numpy_input_is_copied() -> None:
    a = np.arange(4, dtype=np.float32)
    t = Tensor(a)
    a[:] = -1
    assert t.get_data() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("data_type", list(CLAIMED), ids=lambda d: d.name)
def test_from_numpy_keeps_dtype_and_shape(data_type: DataType) -> None:
    a = np.array(SAMPLES[data_type][:4], dtype=CLAIMED[data_type]).reshape(2, 2)
    t = Tensor.from_numpy(a)
    assert t.data_type is data_type
    assert t.shape == [2, 2]
    assert t.format is ND
    out = t.numpy()
    assert out.dtype == a.dtype
    assert out.tobytes() == a.tobytes()


def test_from_numpy_format_and_placement() -> None:
    start = settled_live()
    t = Tensor.from_numpy(np.ones(3, np.float32), Format.FORMAT_NCHW, DEVICE)
    assert t.format is Format.FORMAT_NCHW
    assert t.placement is DEVICE
    t.to_host()
    assert live() == start


def test_from_numpy_accepts_array_likes() -> None:
    t = Tensor.from_numpy([[1, 2], [3, 4]])
    assert t.data_type is DT.DT_INT64
    assert t.get_data() == [[1, 2], [3, 4]]


def test_bf16_reads_back_as_python_floats() -> None:
    a = np.array([1.0, -0.5, 3.0], dtype=ml_dtypes.bfloat16)
    t = Tensor.from_numpy(a)
    assert t.numpy().view(np.uint16).tolist() == [0x3F80, 0xBF00, 0x4040]
    assert t.numpy().astype(np.float32).tolist() == [1.0, -0.5, 3.0]
    with pytest.raises(ValueError, match=r"^Input must start with"):  # GE: <not_supported>
        t.get_data()


def test_bf16_from_float_array_rounds_to_nearest_even() -> None:
    # 1 + 2^-8 is the tie between bf16 1.0 (0x3F80) and 1 + 2^-7 (0x3F81): even wins.
    t = Tensor(np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8], np.float32), None, DT.DT_BF16)
    assert t.numpy().view(np.uint16).tolist() == [0x3F80, 0x3F82]


_HYP_DTYPES = [
    np.float32,
    np.float16,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
    np.float64,
]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(_HYP_DTYPES).flatmap(
        lambda dtype: hnp.arrays(
            dtype,
            hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
            elements=hnp.from_dtype(np.dtype(dtype), allow_nan=False)
            if np.dtype(dtype).kind == "f"
            else None,
        )
    )
)
def test_from_numpy_round_trip(a: np.ndarray) -> None:
    t = Tensor.from_numpy(a)
    assert t.shape == list(a.shape)
    out = t.numpy()
    assert out.dtype == a.dtype
    assert out.shape == a.shape
    assert out.tobytes() == a.tobytes()
    if a.size and a.dtype.kind in "iuf":  # GE prints these (not bool, bf16, an empty tensor)
        assert t.get_data() == ge_text_values(a)


@settings(max_examples=30, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
        elements=st.floats(-1e4, 1e4, width=32),
    )
)
def test_bf16_round_trip_via_from_numpy(a: np.ndarray) -> None:
    b = a.astype(ml_dtypes.bfloat16)
    t = Tensor.from_numpy(b)
    assert t.data_type is DT.DT_BF16
    assert t.numpy().tobytes() == b.tobytes()


def test_bytes_are_raw_little_endian_elements() -> None:
    raw = struct.pack("<3i", 1, -2, 3)
    t = Tensor(raw, None, DT.DT_INT32, ND, [3])
    assert t.get_data() == [1, -2, 3]


def test_bytes_too_short() -> None:
    with pytest.raises(RuntimeError, match="Failed to create Tensor"):
        Tensor(b"\x00" * 7, None, DT.DT_INT32, ND, [2])


# --- construction from a file -------------------------------------------------------------


def test_raw_binary_file(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32) * 1.5
    path = tmp_path / "data.bin"
    path.write_bytes(a.tobytes())
    t = Tensor(None, str(path), DT.DT_FLOAT, ND, [2, 3])
    assert t.get_data() == a.reshape(2, 3).tolist()


def test_raw_binary_file_as_path_object(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(np.array([7, 8], np.int16).tobytes())
    t = Tensor(None, path, DT.DT_INT16, ND, [2])  # type: ignore[arg-type]
    assert t.get_data() == [7, 8]


def test_longer_file_reads_the_prefix(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(np.arange(10, dtype=np.int32).tobytes())
    t = Tensor(None, str(path), DT.DT_INT32, ND, [4])
    assert t.get_data() == [0, 1, 2, 3]


def test_scalar_file(tmp_path: Path) -> None:
    path = tmp_path / "scalar.bin"
    path.write_bytes(struct.pack("<d", 2.75))
    t = Tensor(None, str(path), DT.DT_DOUBLE)
    assert t.get_data() == 2.75


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="Failed to create Tensor"):
        Tensor(None, str(tmp_path / "absent.bin"), DT.DT_FLOAT, ND, [1])


def test_too_short_file(tmp_path: Path) -> None:
    path = tmp_path / "short.bin"
    path.write_bytes(b"\x00" * 11)
    with pytest.raises(RuntimeError, match="Failed to create Tensor"):
        Tensor(None, str(path), DT.DT_FLOAT, ND, [3])


@pytest.mark.parametrize("shape", [[1], [0], None])
def test_empty_file(tmp_path: Path, shape: list[int] | None) -> None:
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    with pytest.raises(RuntimeError, match="Failed to create Tensor"):
        Tensor(None, str(path), DT.DT_FLOAT, ND, shape)


# --- construction errors -----------------------------------------------------------------------


@pytest.mark.parametrize("bad", [1, 1.5, "abc", {"a": 1}])
def test_data_must_be_a_list(bad: object) -> None:
    with pytest.raises(TypeError, match="data should be List"):
        Tensor(bad)  # type: ignore[arg-type]


def test_double_list_is_refused() -> None:
    with pytest.raises(
        RuntimeError, match="DT_DOUBLE is not supported in python Tensor constructor"
    ):
        Tensor([1.0, 2.0], None, DT.DT_DOUBLE, ND, [2])


@pytest.mark.parametrize(
    "data_type",
    [DT.DT_STRING, DT.DT_COMPLEX64, DT.DT_QINT8, DT.DT_FLOAT8_E5M2, DT.DT_UNDEFINED],
    ids=lambda d: d.name,
)
def test_list_of_unsupported_data_type(data_type: DataType) -> None:
    # GE_REFERENCE §4.1: only FLOAT, FLOAT16, (U)INT8..64 and BOOL are packed from a list;
    # any other type raises RuntimeError("Failed to create Tensor with data type: ...").
    with pytest.raises(RuntimeError, match="Failed to create Tensor with data type"):
        Tensor([1], None, data_type, ND, [1])


def test_data_and_file_path_together() -> None:
    with pytest.raises(RuntimeError, match="Tensor should be created either by data or by file"):
        Tensor([1.0], "x.bin", DT.DT_FLOAT, ND, [1])


@pytest.mark.parametrize("bad", [1, 0, "PLACEMENT_DEVICE", None])
def test_placement_must_be_a_placement(bad: object) -> None:
    with pytest.raises(TypeError):
        Tensor([1.0], None, DT.DT_FLOAT, ND, [1], bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [(2,), 2, "2", [2.0], [1, "a"]])
def test_shape_must_be_a_list_of_int(bad: object) -> None:
    with pytest.raises(TypeError):
        Tensor([1.0, 2.0], None, DT.DT_FLOAT, ND, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("junk", "error"),
    [
        (["a"], ValueError),
        ([None], TypeError),
        ([1, {}], TypeError),
        ([1, object()], TypeError),
        ([[1], "x"], TypeError),  # float([1]) fails first, as in GE-PY (no flattening)
        ([1 + 2j], TypeError),
    ],
)
def test_junk_list_elements(junk: list[Any], error: type[Exception]) -> None:
    """GE_ERRORS.md §2.3 rule 7: ``float(x)`` per element, Python's own error text first."""
    with pytest.raises(error) as info:
        Tensor(junk, None, DT.DT_FLOAT, ND, [2])
    index = next(i for i, x in enumerate(junk) if not isinstance(x, (int, float)))
    with pytest.raises(error) as python:
        float(junk[index])
    assert str(info.value).startswith(f"{python.value}: data[{index}] is {junk[index]!r}")
    assert Tensor(["1.5", "2"], None, DT.DT_FLOAT, ND, [2]).get_data() == [1.5, 2.0]


def test_data_type_must_be_a_data_type() -> None:
    assert Tensor([1.0], None, 0, ND, [1]).data_type is DT.DT_FLOAT  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match=r"^Failed to create Tensor with data type: f"):
        Tensor([1.0], None, "f", ND, [1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Data_type must be a DataType"):
        Tensor(None, None, "f", ND, [1])  # type: ignore[arg-type]


# --- placement ---------------------------------------------------------------------------------


def test_to_device_and_back() -> None:
    start = settled_live()
    t = Tensor([1.0, 2.0, 3.0], None, DT.DT_FLOAT, ND, [3])
    assert t.to_device() is t
    assert t.placement is DEVICE
    assert isinstance(t.addr, int)
    assert device_memory().contains(t.addr, 12)
    assert live() == start + 12
    assert bytes(device_memory().view(t.addr, 12)) == np.array([1, 2, 3], np.float32).tobytes()
    assert t.get_data() == [1.0, 2.0, 3.0]  # readable while on the device
    assert t.placement is DEVICE
    assert t.to_host() is t
    assert t.placement is HOST
    assert live() == start
    assert t.get_data() == [1.0, 2.0, 3.0]


def test_device_placement_in_constructor() -> None:
    start = settled_live()
    t = Tensor([1, 2, 3, 4], None, DT.DT_INT32, ND, [2, 2], DEVICE)
    assert t.get_placement() is DEVICE
    assert device_memory().size_of(t.addr) == 16
    np.testing.assert_array_equal(np.asarray(t), [[1, 2], [3, 4]])
    t.to_host()
    assert live() == start


def test_to_device_twice_is_a_value_error() -> None:
    t = Tensor([1.0], None, DT.DT_FLOAT, ND, [1], DEVICE)
    with pytest.raises(ValueError):
        t.to_device()
    t.to_host()


def test_to_host_on_host_is_a_value_error() -> None:
    t = Tensor([1.0])
    with pytest.raises(ValueError):
        t.to_host()
    t.to_device().to_host()
    with pytest.raises(ValueError):
        t.to_host()


def test_host_tensor_has_no_addr() -> None:
    with pytest.raises(ValueError):
        _ = Tensor([1.0]).addr


def test_device_tensor_is_freed_when_collected() -> None:
    start = settled_live()
    t = Tensor.from_numpy(np.arange(100, dtype=np.float64), placement=DEVICE)
    addr = t.addr
    assert live() == start + 800
    del t
    gc.collect()
    assert live() == start
    assert not device_memory().contains(addr, 1)


def test_device_tensors_in_a_cycle_are_freed() -> None:
    start = settled_live()
    t = Tensor.from_numpy(np.ones(16, np.float32), placement=DEVICE)
    holder: list[Any] = [t]
    holder.append(holder)
    del t, holder
    gc.collect()
    assert live() == start


def test_device_round_trip_of_zero_size_and_empty_tensors() -> None:
    start = settled_live()
    for t in (Tensor([], None, DT.DT_FLOAT, ND, [0]), Tensor()):
        t.to_device()
        assert t.placement is DEVICE
        t.to_host()
        assert t.placement is HOST
    assert Tensor([], None, DT.DT_FLOAT, ND, [0]).to_device().to_host().numpy().size == 0
    gc.collect()
    assert live() == start


# --- reading, reinterpreting, printing ----------------------------------------------------------


def test_set_data_type_reinterprets_bytes() -> None:
    t = Tensor([1.0, -2.0], None, DT.DT_FLOAT, ND, [2])
    assert t.set_data_type(DT.DT_INT32) is t
    assert t.data_type is DT.DT_INT32
    assert t.get_data() == np.array([1.0, -2.0], np.float32).view(np.int32).tolist()
    assert t.get_data() == [0x3F800000, struct.unpack("<i", struct.pack("<f", -2.0))[0]]


def test_set_data_type_on_device_tensor_reinterprets() -> None:
    t = Tensor([1, 2], None, DT.DT_UINT16, ND, [2], DEVICE)
    t.set_data_type(DT.DT_INT16)
    assert t.get_data() == [1, 2]
    t.set_data_type(DT.DT_FLOAT16)
    assert t.numpy().view(np.uint16).tolist() == [1, 2]
    t.to_host()


def test_set_data_type_rejects_non_data_type() -> None:
    with pytest.raises(TypeError, match="Data_type must be a DataType"):
        Tensor([1.0]).set_data_type(3)  # type: ignore[arg-type]


def test_set_format() -> None:
    t = Tensor([1.0, 2.0], None, DT.DT_FLOAT, ND, [2])
    assert t.set_format(Format.FORMAT_NCHW) is t
    assert t.format is Format.FORMAT_NCHW
    assert t.get_data() == [1.0, 2.0]
    with pytest.raises(TypeError):
        t.set_format(0)  # type: ignore[arg-type]


def test_str_shows_format_and_data_type_as_ints() -> None:
    t = Tensor([1, 2, 3], None, DT.DT_INT32, Format.FORMAT_NCHW, [3])
    text = str(t)
    assert text == (  # GE_ERRORS.md §12.2
        "\n        Tensor format is 0,\n        data_type is 3,\n        shape is [3],\n"
        "        data is [1, 2, 3]\n        "
    )
    assert "[3]" in text
    assert "FORMAT_NCHW" not in text
    assert "DT_INT32" not in text


def test_str_float_default() -> None:
    text = str(Tensor([1.0, 2.0], None, DT.DT_FLOAT, ND, [2]))
    assert "Tensor format is 2,\n" in text
    assert "data_type is 0,\n" in text
    assert "data is [1.0, 2.0]\n" in text


def test_numpy_and_array_protocol() -> None:
    t = Tensor([1, 2, 3, 4, 5, 6], None, DT.DT_INT16, ND, [2, 3])
    a = t.numpy()
    assert a.dtype == np.int16
    np.testing.assert_array_equal(a, np.arange(1, 7, dtype=np.int16).reshape(2, 3))
    b = np.asarray(t)
    np.testing.assert_array_equal(b, a)
    c = np.asarray(t, dtype=np.float64)
    assert c.dtype == np.float64
    np.testing.assert_array_equal(c, a.astype(np.float64))
    a[0, 0] = 100  # a fresh array: the tensor is unchanged
    assert t.get_data()[0][0] == 1


def test_get_data_returns_python_scalars() -> None:
    data = Tensor([1, 2], None, DT.DT_INT64, ND, [2]).get_data()
    assert all(type(x) is int for x in data)
    data = Tensor([1.5], None, DT.DT_FLOAT16, ND, [1]).get_data()
    assert type(data[0]) is float


def test_copy_is_refused() -> None:
    with pytest.raises(RuntimeError, match="does not support copy"):
        copy.copy(Tensor([1.0]))


def test_deepcopy_is_refused() -> None:
    with pytest.raises(RuntimeError, match="does not support deepcopy"):
        copy.deepcopy(Tensor([1.0]))
