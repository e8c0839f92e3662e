"""``Tensor.from_numpy``'s direct path (a host tensor of an array whose dtype is a GE type's own)
makes what the checked constructor makes: desc, bytes and their flags, a private copy."""

from __future__ import annotations

import numpy as np
import pytest

from ge.graph import Tensor
from ge.graph._dtypes import data_type_from_numpy
from ge.graph.types import Format, Placement

ARRAYS = {
    "f32-0d": np.float32(1.5),
    "i64-2x3": np.arange(6, dtype=np.int64).reshape(2, 3),
    "f16-empty": np.ones((2, 0, 3), np.float16),
    "f64-strided": np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2],
    "bool": np.array([True, False]),
    "u8-0d": np.array(7, np.uint8),
    "i32-transposed": np.arange(8, dtype=np.int32).reshape(2, 4).T,
    "c64": np.array([1 + 2j], np.complex64),
    "f32-read-only": np.arange(3, dtype=np.float32),  # made read-only below
}
ARRAYS["f32-read-only"].flags.writeable = False


def _checked(array: np.ndarray, fmt: Format) -> Tensor:
    array = np.asarray(array)
    dtype = data_type_from_numpy(array.dtype)
    return Tensor(array, None, dtype, fmt, list(array.shape), Placement.PLACEMENT_HOST)


@pytest.mark.parametrize("name", list(ARRAYS))
@pytest.mark.parametrize("fmt", [Format.FORMAT_ND, Format.FORMAT_NCHW], ids=["nd", "nchw"])
def test_from_numpy_is_the_checked_constructor(name: str, fmt: Format) -> None:
    array = ARRAYS[name]
    fast, checked = Tensor.from_numpy(array, fmt), _checked(array, fmt)
    assert fast.get_tensor_desc() == checked.get_tensor_desc()
    assert fast._bytes is not None and checked._bytes is not None
    assert fast._bytes.dtype == checked._bytes.dtype and fast._bytes.shape == checked._bytes.shape
    assert fast._bytes.tobytes() == checked._bytes.tobytes()
    assert fast._bytes.flags.writeable and fast._bytes.flags.c_contiguous
    assert not np.shares_memory(fast._bytes, array)
    np.testing.assert_array_equal(fast.numpy(), array)
    assert fast.get_placement() == Placement.PLACEMENT_HOST


def test_from_numpy_refuses_what_the_constructor_refuses() -> None:
    with pytest.raises(TypeError):
        Tensor.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError, match="no GE DataType"):
        Tensor.from_numpy(np.arange(3, dtype=">f4"))
    with pytest.raises(TypeError):
        Tensor.from_numpy(np.ones(2, np.float32), format="ND")  # type: ignore[arg-type]
