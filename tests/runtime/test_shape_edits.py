"""Every mutator of a leased ``Shape`` / ``StorageShape`` / ``StorageFormat`` /
``ExpandDimsType`` view marks its lease ``edited`` (what lets ``ge.custom_op._loan`` skip
putting back shapes and formats after a run that edited nothing); readers never mark it; a
mutator of an expired view raises and marks nothing; views with no lease are unaffected."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ge.graph import DataType, Format
from ge.runtime import ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor
from ge.runtime.types import TensorPlacement

# each mutator of a view, given the Tensor's StorageShape and StorageFormat views
MUTATORS: dict[str, Callable[[StorageShape, StorageFormat], object]] = {
    "Shape.set_dim": lambda s, f: s.storage_shape.set_dim(0, 5),
    "Shape.append_dim": lambda s, f: s.origin_shape.append_dim(5),
    "Shape.set_scalar": lambda s, f: s.origin_shape.set_scalar(),
    "StorageShape.set_origin_shape": lambda s, f: s.set_origin_shape([6]),
    "StorageShape.set_storage_shape": lambda s, f: s.set_storage_shape([3, 2]),
    "StorageFormat.set_origin_format": lambda s, f: f.set_origin_format(Format.FORMAT_NCHW),
    "StorageFormat.set_storage_format": lambda s, f: f.set_storage_format(Format.FORMAT_NHWC),
    "StorageFormat.set_expand_dims_type": lambda s, f: f.set_expand_dims_type(ExpandDimsType("11")),
    "ExpandDimsType.set_expand_index": lambda s, f: f.expand_dims_type.set_expand_index(3),
}

READERS: list[Callable[[Tensor], object]] = [
    lambda t: t.shape.origin_shape.dims,
    lambda t: t.storage_shape.get_dim(0),
    lambda t: t.storage_shape.size,
    lambda t: t.origin_shape == t.storage_shape,
    repr,
    lambda t: t.format.expand_dims_type.is_expand_index(0),
    lambda t: int(t.expand_dims_type),
    lambda t: t.shape_size,
]


def _lent() -> Tensor:
    fmt = StorageFormat(Format.FORMAT_ND, Format.FORMAT_ND, ExpandDimsType())
    where = TensorPlacement.ON_DEVICE_HBM
    return Tensor._lend(64, [2, 3], [2, 3], DataType.DT_FLOAT, fmt, where, 24)


def _state(shape: StorageShape, form: StorageFormat) -> tuple[object, ...]:
    return (
        list(shape._origin._dims),
        list(shape._storage._dims),
        form._origin,
        form._storage,
        form._expand._size,
        form._expand._mask,
    )


@pytest.mark.parametrize("name", sorted(MUTATORS))
def test_a_mutator_marks_the_lease_edited(name: str) -> None:
    tensor = _lent()
    for read in READERS:
        read(tensor)
    assert not tensor._lease.edited, "a reader marked the lease"
    shape, form = tensor.shape, tensor.format
    before = _state(shape, form)
    MUTATORS[name](shape, form)
    assert tensor._lease.edited
    assert _state(shape, form) != before  # the mutator did edit


@pytest.mark.parametrize("name", sorted(MUTATORS))
def test_a_mutator_of_an_expired_view_raises_and_marks_nothing(name: str) -> None:
    tensor = _lent()
    shape, form = tensor.shape, tensor.format  # views taken while live
    origin, storage, rule = shape.origin_shape, shape.storage_shape, form.expand_dims_type
    before = _state(shape, form)
    tensor._invalidate()
    edit = MUTATORS[name]
    with pytest.raises(RuntimeError, match="borrowed for a custom-op callback"):
        if name.startswith("Shape."):  # the Shape itself, not through the expired parent
            calls = {
                "set_dim": lambda: storage.set_dim(0, 5),
                "append_dim": lambda: origin.append_dim(5),
                "set_scalar": origin.set_scalar,
            }
            calls[name[len("Shape.") :]]()
        elif name.startswith("ExpandDimsType."):
            rule.set_expand_index(3)
        else:
            edit(shape, form)
    assert not tensor._lease.edited
    assert _state(shape, form) == before


def test_views_with_no_lease_mutate_as_before() -> None:
    shape = Shape([2, 3])
    shape.set_dim(1, 4)
    shape.append_dim(5)
    assert shape.dims == [2, 4, 5]
    storage = StorageShape([1], [1])
    storage.set_storage_shape([7, 8])
    assert storage.storage_shape.dims == [7, 8]
    form = StorageFormat(Format.FORMAT_ND, Format.FORMAT_ND, ExpandDimsType())
    form.set_expand_dims_type(ExpandDimsType("101"))
    form.expand_dims_type.set_expand_index(1)
    assert int(form.expand_dims_type) == int(ExpandDimsType("111"))
    with pytest.raises(ValueError):
        shape.set_dim(7, 1)  # the checks are unchanged
