"""``Tensor``'s plain accessors and ``Shape.dims`` read with no Python call (the execute path
reads a dozen per run) and still raise GE's borrowed-object ``RuntimeError`` once the tensor
is invalidated; they stay read-only, and other missing names are ``AttributeError``."""

from __future__ import annotations

import copy
import cProfile
import pstats
import random

import pytest

from ge.graph import DataType, Format
from ge.runtime import ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor
from ge.runtime.types import TensorPlacement

ACCESSORS = [
    "addr",
    "size",
    "shape",
    "origin_shape",
    "storage_shape",
    "format",
    "origin_format",
    "storage_format",
    "expand_dims_type",
    "data_type",
    "placement",
]


def _tensor() -> Tensor:
    fmt = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND, ExpandDimsType("1010"))
    where = TensorPlacement.ON_DEVICE_HBM
    return Tensor._view(4096, StorageShape([2, 3], [6]), DataType.DT_FLOAT, fmt, where, size=24)


def test_accessors_read_the_fields() -> None:
    t = _tensor()
    assert (t.addr, t.size, t.data_type, t.placement) == (
        4096,
        24,
        DataType.DT_FLOAT,
        TensorPlacement.ON_DEVICE_HBM,
    )
    assert t.shape.origin_shape is t.origin_shape and t.shape.storage_shape is t.storage_shape
    assert (t.origin_shape.dims, t.storage_shape.dims, t.shape_size) == ([2, 3], [6], 6)
    assert t.format.expand_dims_type is t.expand_dims_type
    assert (t.origin_format, t.storage_format, t.expand_dims_type.full_size) == (
        Format.FORMAT_NCHW,
        Format.FORMAT_ND,
        4,
    )
    assert Tensor.addr.__doc__ == "Address of the data in device memory."


def test_accessors_make_no_python_call() -> None:
    t = _tensor()
    profile = cProfile.Profile()
    profile.enable()
    for name in ACCESSORS:
        getattr(t, name)
    profile.disable()
    called = {
        f"{where}:{fn}"
        for (where, _, fn) in pstats.Stats(profile).stats  # type: ignore[attr-defined]
        if where != "~"
    }
    assert called == set()


@pytest.mark.parametrize("name", [*ACCESSORS, "shape_size"])
def test_an_invalidated_tensor_refuses_every_accessor(name: str) -> None:
    t = _tensor()
    t._invalidate()
    t._invalidate()  # twice: no error
    with pytest.raises(RuntimeError, match="borrowed for a custom-op callback"):
        getattr(t, name)
    assert repr(t) == "Tensor(<expired borrowed view>)"


def test_accessors_are_read_only_and_other_names_missing() -> None:
    t = _tensor()
    for name in ACCESSORS:
        with pytest.raises(AttributeError):
            setattr(t, name, 1)
    assert t.addr == 4096
    assert not hasattr(t, "nbytes")
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'nope'"):
        t.nope  # type: ignore[attr-defined]  # noqa: B018
    t._invalidate()
    assert not hasattr(t, "nbytes")  # what launch_kernel probes a device tensor with
    with pytest.raises(RuntimeError, match="borrowed"):
        hasattr(t, "addr")


def test_shape_dims_makes_no_python_call_and_is_a_fresh_copy() -> None:
    t = _tensor()
    storage = t.storage_shape
    profile = cProfile.Profile()
    profile.enable()
    dims = storage.dims
    profile.disable()
    assert [k for k in pstats.Stats(profile).stats if k[0] != "~"] == []  # type: ignore[attr-defined]
    assert dims == [6]
    dims.append(1)  # a copy: the shape is unchanged
    assert storage.dims == [6]
    # every mutator changes the list dims copies, in place
    storage.set_dim(0, 3)
    storage.append_dim(2)
    assert storage.dims == [3, 2]
    t.shape.set_storage_shape([4, 5, 6])
    assert t.storage_shape.dims == [4, 5, 6] and storage.dims == [4, 5, 6]
    storage.set_scalar()
    assert storage.dims == []
    plain = Shape([1, 2])
    twin = copy.deepcopy(plain)
    plain.set_dim(0, 9)
    assert (plain.dims, twin.dims, Shape().dims) == ([9, 2], [1, 2], [])
    with pytest.raises(AttributeError, match="'Shape' object has no attribute 'nope'"):
        plain.nope  # type: ignore[attr-defined]  # noqa: B018


def test_an_invalidated_tensors_shapes_refuse_dims() -> None:
    t = _tensor()
    origin, storage = t.origin_shape, t.storage_shape
    t._invalidate()
    for view in (origin, storage):
        with pytest.raises(RuntimeError, match="this Shape was borrowed for a custom-op"):
            view.dims  # noqa: B018
    with pytest.raises(RuntimeError, match="borrowed"):
        storage.get_dim(0)
    assert repr(storage) == "Shape(<expired borrowed view>)"


def _reference_size(dims: list[int]) -> int:
    if any(d < 0 for d in dims):
        return -1
    count = 1
    for d in dims:
        count *= d
    return count if count < 2**63 else -1


def test_sizes_follow_every_edit() -> None:
    """``Shape.size`` and ``Tensor.shape_size`` read a count the mutators keep: after any
    sequence of edits it is the element count of the dims (-1 for an unknown dim or an int64
    overflow), for a plain shape and for a tensor's views."""
    rng = random.Random(0)
    t = _tensor()
    plain = Shape([3])
    for step in range(400):
        target = rng.choice([plain, t.storage_shape, t.origin_shape])
        dims = target.dims
        op = rng.randrange(6)
        if op == 0 and dims:
            target.set_dim(rng.randrange(len(dims)), rng.choice([-1, 0, 1, 7, 2**40]))
        elif op == 1 and len(dims) < 25:
            target.append_dim(rng.choice([-2, 0, 3, 2**31]))
        elif op == 2:
            target.set_scalar()
        elif op == 3:
            t.shape.set_storage_shape([rng.randrange(1, 9) for _ in range(rng.randrange(4))])
        elif op == 4:
            t.shape.set_origin_shape(Shape([2**62, rng.choice([1, 2, 0])]))
        else:
            copied = copy.copy(target)
            assert (copied.dims, copied.size) == (target.dims, target.size)
        for shape in (plain, t.storage_shape, t.origin_shape):
            assert shape.size == _reference_size(shape.dims), (step, shape.dims)
        assert t.shape_size == _reference_size(t.storage_shape.dims)


def test_size_and_shape_size_make_no_python_call() -> None:
    t = _tensor()
    storage = t.storage_shape
    profile = cProfile.Profile()
    profile.enable()
    values = (t.shape_size, storage.size)
    profile.disable()
    assert [k for k in pstats.Stats(profile).stats if k[0] != "~"] == []  # type: ignore[attr-defined]
    assert values == (6, 6)
    t._invalidate()
    with pytest.raises(RuntimeError, match="this Shape was borrowed"):
        storage.size  # noqa: B018
