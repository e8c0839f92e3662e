"""The value types of ``ge.runtime``: what custom-op callbacks receive and return.

``TensorDesc`` is the metadata an ``infer_meta`` function (``ge.custom_op.register_op``) takes
and returns; ``Tensor`` is the view of device memory that ``execute`` and
``declare_launch_args`` receive. ``Shape``, ``StorageShape``, ``ExpandDimsType``,
``StorageFormat`` and ``TensorPlacement`` describe them, mirroring ``gert::Shape``,
``gert::StorageShape``, ``gert::ExpandDimsType``, ``gert::StorageFormat`` and
``gert::TensorPlacement`` of GE's runtime (GE_REFERENCE.md §1.4, §7.6, §10 item 9; seed 004's
``python/ge/runtime/Tensor/*.md`` and ``TensorDesc/*.md`` pages).

    >>> from ge.graph import DataType
    >>> desc = TensorDesc([2, 3], DataType.DT_FLOAT)
    >>> desc.shape.origin_shape.dims, desc.shape.storage_shape.size, desc.data_type.name
    ([2, 3], 6, 'DT_FLOAT')

Decisions where GE-PY's docs are silent (each is ours, not GE's):

* **Views are live.** ``TensorDesc.shape``, ``StorageShape.origin_shape``/``storage_shape``,
  ``StorageFormat.expand_dims_type`` and the shape/format properties of ``Tensor`` return the
  owner's own object, as the C++ binding returns references: editing the view edits the owner,
  and a setter copies the new value *into* that object, so views taken earlier stay attached.
  Python keeps an owner alive while a view refers to it, so GE-PY's "handle has expired" error
  for the view of a collected ``TensorDesc`` cannot happen here. Constructors copy what they are
  given (``TensorDesc(x.shape, ...)`` never aliases ``x``).
* **Borrowed objects.** A ``Tensor`` is made by ge internals with ``Tensor._view`` and lent to a
  callback; ``Tensor._invalidate()`` ends the loan. After that the tensor and every view taken
  from it (its ``StorageShape``, ``Shape``, ``StorageFormat`` and ``ExpandDimsType``) raise
  ``RuntimeError`` on any use, as GE-PY documents for objects used outside their callback.
  Plain values read from them (``int``, ``list``, enum members) stay usable.
* ``Shape.size`` is the element count: 1 for a scalar (the empty product; seed 004 calls
  ``shape_size`` "the element count", and a scalar holds one element), -1 if any dim is
  negative (unknown) or the product overflows int64, as ``gert::Shape::GetShapeSize`` does.
  This differs from ``ge.graph.Shape.get_shape_size()``, where an empty shape gives 0.
* ``Shape(dims=None)`` may be built directly from a list of ints (``gert::Shape`` has an
  initializer-list constructor). Dims are int64 values; -1 and -2 are allowed. ``get_dim`` and
  ``set_dim`` take an index in ``[0, dim_num)``; anything else raises ``ValueError`` (C++ returns
  a sentinel or ignores it silently).
* ``ExpandDimsType(rule: str)``: character ``i`` is ``'1'`` when dim ``i`` of the expanded
  (full) shape is an inserted 1 and ``'0'`` when it is an original dim -- ``"1000"`` turns
  ``[3, 256, 256]`` into ``[1, 3, 256, 256]``, the rule of ``gert::ExpandDimsType``. Only
  ``'0'``/``'1'`` are accepted and at most 56 characters (C++ silently ignores both).
  ``ExpandDimsType(rule: int)`` is the packed form: the rule length in the high 8 bits, the mask
  in the low 56; it must be in ``[0, 2**63)`` with a length of at most 56. ``int(rule)`` gives
  the packed form back (ours). ``set_expand_index(i)`` takes ``0 <= i < 56`` (the mask width;
  it may lie beyond ``full_size``, as in C++); ``is_expand_index(i)`` takes any ``i >= 0``.
* ``StorageFormat()`` starts as ``FORMAT_RESERVED``/``FORMAT_RESERVED`` with an empty
  ``ExpandDimsType``, as ``gert::StorageFormat``'s default constructor; ``expand_dims_type`` may
  be omitted when both formats are given.
* ``TensorDesc`` accepts exactly what its page lists: a ``StorageShape``, a ``list`` of ints or
  ``None``; a tuple or a runtime ``Shape`` is a ``TypeError``. ``copy.copy`` and
  ``copy.deepcopy`` of the value types give independent copies; a ``Tensor`` cannot be copied.
* ``Tensor.size`` is the byte size of the memory the view covers, fixed when the view is made:
  ``_view(..., size=n)`` states it, otherwise it is ``shape_size`` times the element size
  (sub-byte types rounded up to whole bytes). The page notes it need not equal origin elements
  times element size.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any, NoReturn

import numpy as np
from typing_extensions import Self

from ge.error import GeError, GeTypeError, GeValueError
from ge.graph._dtypes import dtype_info
from ge.graph.types import DataType, Format

__all__ = [
    "MAX_DIM_NUM",
    "MAX_EXPAND_SIZE",
    "ExpandDimsType",
    "Shape",
    "StorageFormat",
    "StorageShape",
    "Tensor",
    "TensorDesc",
    "TensorPlacement",
]

MAX_DIM_NUM = 25  # gert kMaxDimNum (inc/external/exe_graph/runtime/shape.h)
MAX_EXPAND_SIZE = 56  # gert ExpandDimsType::kMaxExpandSize: width of the mask bit field
_MASK = (1 << MAX_EXPAND_SIZE) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class TensorPlacement(IntEnum):
    """Where a runtime tensor's data lives (``gert::TensorPlacement``)."""

    ON_DEVICE_HBM = 0
    ON_HOST = 1
    FOLLOWING = 2
    ON_DEVICE_P2P = 3
    END = 4


# --- borrowing -------------------------------------------------------------------------------


class _Lease:
    """The loan of a Tensor to one callback; shared by the tensor and every view of it."""

    __slots__ = ("alive",)

    def __init__(self) -> None:
        self.alive = True


def _check_lease(lease: _Lease | None, what: str) -> None:
    if lease is not None and not lease.alive:
        raise GeError(
            f"this {what} was borrowed for a custom-op callback and its callback has returned; "
            f"use it only while the callback runs (copy plain values such as dims out first)"
        )


# --- argument checks -------------------------------------------------------------------------


def _type_name(value: object) -> str:
    return type(value).__name__


def _check_int(value: object, what: str) -> int:
    """An int (or numpy integer), not a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise GeTypeError(f"{what} must be an integer, got {value!r} of type {_type_name(value)}")
    return int(value)


def _check_dim(value: object) -> int:
    dim = _check_int(value, "dim")
    if not _INT64_MIN <= dim <= _INT64_MAX:
        raise GeValueError(f"dim must fit in int64, got {dim}")
    return dim


def _check_dim_count(count: int) -> None:
    if count > MAX_DIM_NUM:
        raise GeValueError(
            f"shape has {count} dims, more than the maximum dimension count ({MAX_DIM_NUM})"
        )


def _dims_from(value: object, what: str) -> list[int]:
    """Dims from a runtime ``Shape`` or a list/tuple of ints."""
    if isinstance(value, Shape):
        return value.dims
    if not isinstance(value, (list, tuple)):
        raise GeTypeError(
            f"{what} must be a Shape or a list of integers, got {value!r} of type "
            f"{_type_name(value)}"
        )
    try:
        dims = [_check_dim(d) for d in value]
    except GeTypeError:
        raise GeTypeError(f"{what} must be a list of integers, got {value!r}") from None
    _check_dim_count(len(dims))
    return dims


def _check_format(value: object, what: str) -> Format:
    if not isinstance(value, Format):
        raise GeTypeError(f"{what} must be a Format, got {value!r} of type {_type_name(value)}")
    return value


def _check_data_type(value: object) -> DataType:
    if not isinstance(value, DataType):
        raise GeTypeError(
            f"Data type must be a DataType, got {value!r} of type {_type_name(value)}"
        )
    if value is DataType.DT_MAX:
        raise GeValueError("Data type must not be DataType.DT_MAX, which marks the enum's end")
    return value


def _check_index(value: object, limit: int, what: str) -> int:
    index = _check_int(value, what)
    if not 0 <= index < limit:
        raise GeValueError(f"{what} {index} is out of range [0, {limit})")
    return index


# --- Shape -----------------------------------------------------------------------------------


class Shape:
    """Dims of a runtime tensor, at most 25 of them (``gert::Shape``).

    A value type with mutators; an empty shape is a scalar.

    >>> s = Shape([2, 3]).append_dim(4)
    >>> s.dims, s.dim_num, s.size, s.is_scalar(), Shape().size
    ([2, 3, 4], 3, 24, False, 1)
    """

    __slots__ = ("_dims", "_lease")

    def __init__(self, dims: Sequence[int] | Shape | None = None) -> None:
        self._dims: list[int] = [] if dims is None else _dims_from(dims, "dims")
        self._lease: _Lease | None = None

    def _live(self) -> list[int]:
        _check_lease(self._lease, "Shape")
        return self._dims

    @property
    def dims(self) -> list[int]:
        """The dims, as a new list."""
        return list(self._live())

    @property
    def dim_num(self) -> int:
        """Number of dims (0 for a scalar)."""
        return len(self._live())

    @property
    def size(self) -> int:
        """Element count: 1 for a scalar, -1 if a dim is negative or the count overflows int64."""
        count = 1
        for dim in self._live():
            if dim < 0:
                return -1
            count *= dim
        return count if count <= _INT64_MAX else -1

    def is_scalar(self) -> bool:
        """Whether the shape has no dims."""
        return not self._live()

    def get_dim(self, index: int) -> int:
        """Dim ``index``; ``ValueError`` unless ``0 <= index < dim_num``."""
        dims = self._live()
        return dims[_check_index(index, len(dims), "dim index")]

    def set_dim(self, index: int, value: int) -> None:
        """Set dim ``index`` (which must already exist) to ``value``."""
        dims = self._live()
        position = _check_index(index, len(dims), "dim index")
        dims[position] = _check_dim(value)

    def append_dim(self, value: int) -> Self:
        """Add a trailing dim and return ``self``; ``ValueError`` past 25 dims."""
        dims = self._live()
        dim = _check_dim(value)
        _check_dim_count(len(dims) + 1)
        dims.append(dim)
        return self

    def set_scalar(self) -> None:
        """Drop every dim."""
        self._live().clear()

    def _assign(self, dims: list[int]) -> None:
        self._live()[:] = dims

    def _bind(self, lease: _Lease) -> None:
        self._lease = lease

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Shape):
            return NotImplemented
        return self._live() == other._live()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        if self._lease is not None and not self._lease.alive:
            return "Shape(<expired borrowed view>)"
        return f"Shape({self._dims})"

    def __copy__(self) -> Shape:
        return Shape(self._live())

    def __deepcopy__(self, memo: dict[int, Any]) -> Shape:
        return self.__copy__()


# --- StorageShape ----------------------------------------------------------------------------


class StorageShape:
    """The origin (logical) shape and the storage (in-memory) shape of a tensor.

    ``StorageShape()`` is a scalar for both; ``StorageShape(origin_shape, storage_shape)``
    takes two lists of ints (or runtime ``Shape`` values), which are copied.

    >>> s = StorageShape([2, 3], [1, 2, 3])
    >>> s.origin_shape.dims, s.storage_shape.dims
    ([2, 3], [1, 2, 3])
    """

    __slots__ = ("_lease", "_origin", "_storage")

    def __init__(
        self,
        origin_shape: Sequence[int] | Shape | None = None,
        storage_shape: Sequence[int] | Shape | None = None,
    ) -> None:
        if (origin_shape is None) != (storage_shape is None):
            raise GeTypeError(
                "StorageShape takes either no arguments or both origin_shape and storage_shape"
            )
        self._origin = Shape()
        self._storage = Shape()
        self._lease: _Lease | None = None
        if origin_shape is not None and storage_shape is not None:
            self._origin._dims = _dims_from(origin_shape, "origin_shape")
            self._storage._dims = _dims_from(storage_shape, "storage_shape")

    def _check(self) -> None:
        _check_lease(self._lease, "StorageShape")

    @property
    def origin_shape(self) -> Shape:
        """The logical shape (a live view)."""
        self._check()
        return self._origin

    @property
    def storage_shape(self) -> Shape:
        """The shape of the data in memory (a live view)."""
        self._check()
        return self._storage

    def set_origin_shape(self, shape: Shape | Sequence[int]) -> None:
        """Copy ``shape`` (a ``Shape`` or a list of ints) into the origin shape."""
        self._check()
        self._origin._assign(_dims_from(shape, "origin_shape"))

    def set_storage_shape(self, shape: Shape | Sequence[int]) -> None:
        """Copy ``shape`` (a ``Shape`` or a list of ints) into the storage shape."""
        self._check()
        self._storage._assign(_dims_from(shape, "storage_shape"))

    def _assign(self, other: StorageShape) -> None:
        self._check()
        self._origin._assign(other.origin_shape.dims)
        self._storage._assign(other.storage_shape.dims)

    def _bind(self, lease: _Lease) -> None:
        self._lease = lease
        self._origin._bind(lease)
        self._storage._bind(lease)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StorageShape):
            return NotImplemented
        return self.origin_shape == other.origin_shape and self.storage_shape == other.storage_shape

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        if self._lease is not None and not self._lease.alive:
            return "StorageShape(<expired borrowed view>)"
        return (
            f"StorageShape(origin_shape={self._origin._dims}, storage_shape={self._storage._dims})"
        )

    def __copy__(self) -> StorageShape:
        return StorageShape(self.origin_shape, self.storage_shape)

    def __deepcopy__(self, memo: dict[int, Any]) -> StorageShape:
        return self.__copy__()


# --- ExpandDimsType --------------------------------------------------------------------------


class ExpandDimsType:
    """Where a format inserts size-1 dims when it turns the origin shape into the storage shape.

    ``full_size`` is the rank after expansion; index ``i`` is an *expand index* when dim ``i``
    of the expanded shape is an inserted 1. ``ExpandDimsType("1000")`` expands ``[3, 256, 256]``
    to ``[1, 3, 256, 256]``. ``ExpandDimsType(n)`` unpacks GE's int form (length in the high 8
    bits, mask in the low 56); ``int(e)`` packs it again.

    >>> e = ExpandDimsType("1010")
    >>> e.full_size, e.is_expand_index(0), e.is_expand_index(1), int(e) == (4 << 56) | 0b0101
    (4, True, False, True)
    """

    __slots__ = ("_lease", "_mask", "_size")

    def __init__(self, rule: str | int | None = None) -> None:
        self._size = 0
        self._mask = 0
        self._lease: _Lease | None = None
        if rule is None:
            return
        if isinstance(rule, str):
            if len(rule) > MAX_EXPAND_SIZE:
                raise GeValueError(
                    f"expand dims rule {rule!r} has {len(rule)} characters, more than "
                    f"{MAX_EXPAND_SIZE}"
                )
            if set(rule) - {"0", "1"}:
                raise GeValueError(
                    f"expand dims rule must contain only '0' and '1' characters, got {rule!r}"
                )
            self._size = len(rule)
            self._mask = sum(1 << i for i, c in enumerate(rule) if c == "1")
            return
        if isinstance(rule, bool) or not isinstance(rule, (int, np.integer)):
            raise GeTypeError(
                f"expand dims rule must be a str, an int or None, got {rule!r} of type "
                f"{_type_name(rule)}"
            )
        packed = int(rule)
        if not 0 <= packed <= _INT64_MAX:
            raise GeValueError(f"expand dims rule must be in [0, 2**63), got {packed}")
        size = packed >> MAX_EXPAND_SIZE
        if size > MAX_EXPAND_SIZE:
            raise GeValueError(
                f"expand dims rule {packed} encodes a length of {size}, more than {MAX_EXPAND_SIZE}"
            )
        self._size = size
        self._mask = packed & _MASK

    def _check(self) -> None:
        _check_lease(self._lease, "ExpandDimsType")

    @property
    def full_size(self) -> int:
        """Rank of the expanded shape (the rule's length); 0 for no rule."""
        self._check()
        return self._size

    def is_expand_index(self, index: int) -> bool:
        """Whether dim ``index`` of the expanded shape is an inserted 1."""
        self._check()
        position = _check_int(index, "expand index")
        if position < 0:
            raise GeValueError(f"expand index must be non-negative, got {position}")
        return bool(self._mask >> position & 1)

    def set_expand_index(self, index: int) -> None:
        """Mark dim ``index`` of the expanded shape as inserted (``0 <= index < 56``)."""
        self._check()
        self._mask |= 1 << _check_index(index, MAX_EXPAND_SIZE, "expand index")

    def _assign(self, other: ExpandDimsType) -> None:
        self._check()
        other._check()
        self._size, self._mask = other._size, other._mask

    def _bind(self, lease: _Lease) -> None:
        self._lease = lease

    def __int__(self) -> int:
        self._check()
        return self._size << MAX_EXPAND_SIZE | self._mask

    def _rule_text(self) -> str | None:
        if self._mask >> self._size:  # marks beyond the rule's length have no str form
            return None
        return "".join("1" if self._mask >> i & 1 else "0" for i in range(self._size))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExpandDimsType):
            return NotImplemented
        self._check()
        other._check()
        return (self._size, self._mask) == (other._size, other._mask)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        if self._lease is not None and not self._lease.alive:
            return "ExpandDimsType(<expired borrowed view>)"
        if self._size == 0 and self._mask == 0:
            return "ExpandDimsType()"
        text = self._rule_text()
        return f"ExpandDimsType({text!r})" if text is not None else f"ExpandDimsType({int(self)})"

    def __copy__(self) -> ExpandDimsType:
        self._check()
        twin = ExpandDimsType()
        twin._size, twin._mask = self._size, self._mask
        return twin

    def __deepcopy__(self, memo: dict[int, Any]) -> ExpandDimsType:
        return self.__copy__()


# --- StorageFormat ---------------------------------------------------------------------------


class StorageFormat:
    """The origin format, the storage format and the expand-dims rule between them.

    ``StorageFormat()`` is ``FORMAT_RESERVED`` for both with no rule, as in GE.

    >>> f = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NC1HWC0, ExpandDimsType())
    >>> f.origin_format.name, f.storage_format.name, f.expand_dims_type.full_size
    ('FORMAT_NCHW', 'FORMAT_NC1HWC0', 0)
    """

    __slots__ = ("_expand", "_lease", "_origin", "_storage")

    def __init__(
        self,
        origin_format: Format | None = None,
        storage_format: Format | None = None,
        expand_dims_type: ExpandDimsType | None = None,
    ) -> None:
        if (origin_format is None) != (storage_format is None) or (
            origin_format is None and expand_dims_type is not None
        ):
            raise GeTypeError(
                "StorageFormat takes either no arguments or origin_format, storage_format and "
                "expand_dims_type"
            )
        self._origin = Format.FORMAT_RESERVED
        self._storage = Format.FORMAT_RESERVED
        self._expand = ExpandDimsType()
        self._lease: _Lease | None = None
        if origin_format is not None:
            self._origin = _check_format(origin_format, "origin_format")
            self._storage = _check_format(storage_format, "storage_format")
        if expand_dims_type is not None:
            self._expand._assign(_check_expand(expand_dims_type))

    def _check(self) -> None:
        _check_lease(self._lease, "StorageFormat")

    @property
    def origin_format(self) -> Format:
        """The logical layout."""
        self._check()
        return self._origin

    @property
    def storage_format(self) -> Format:
        """The layout of the data in memory."""
        self._check()
        return self._storage

    @property
    def expand_dims_type(self) -> ExpandDimsType:
        """The expand-dims rule (a live view)."""
        self._check()
        return self._expand

    def set_origin_format(self, origin_format: Format) -> None:
        """Set the logical layout."""
        self._check()
        self._origin = _check_format(origin_format, "origin_format")

    def set_storage_format(self, storage_format: Format) -> None:
        """Set the layout in memory."""
        self._check()
        self._storage = _check_format(storage_format, "storage_format")

    def set_expand_dims_type(self, expand_dims_type: ExpandDimsType) -> None:
        """Copy ``expand_dims_type`` into this format's rule."""
        self._check()
        self._expand._assign(_check_expand(expand_dims_type))

    def _assign(self, other: StorageFormat) -> None:
        self._check()
        self._origin = other.origin_format
        self._storage = other.storage_format
        self._expand._assign(other.expand_dims_type)

    def _bind(self, lease: _Lease) -> None:
        self._lease = lease
        self._expand._bind(lease)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StorageFormat):
            return NotImplemented
        return (
            self.origin_format == other.origin_format
            and self.storage_format == other.storage_format
            and self.expand_dims_type == other.expand_dims_type
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        if self._lease is not None and not self._lease.alive:
            return "StorageFormat(<expired borrowed view>)"
        return (
            f"StorageFormat(Format.{self._origin.name}, Format.{self._storage.name}, "
            f"{self._expand!r})"
        )

    def __copy__(self) -> StorageFormat:
        twin = StorageFormat()
        twin._assign(self)
        return twin

    def __deepcopy__(self, memo: dict[int, Any]) -> StorageFormat:
        return self.__copy__()


def _check_expand(value: object) -> ExpandDimsType:
    if not isinstance(value, ExpandDimsType):
        raise GeTypeError(
            f"expand_dims_type must be an ExpandDimsType, got {value!r} of type {_type_name(value)}"
        )
    return value


# --- TensorDesc ------------------------------------------------------------------------------


def _storage_shape_from(value: object) -> StorageShape:
    """A new StorageShape from a StorageShape (copied), a list (origin = storage) or None."""
    if value is None:
        return StorageShape()
    if isinstance(value, StorageShape):
        return value.__copy__()
    if isinstance(value, list):
        try:
            dims = [_check_dim(d) for d in value]
        except GeTypeError:
            raise GeTypeError(
                f"Shape must be a StorageShape, a list of integers or None, got {value!r}"
            ) from None
        _check_dim_count(len(dims))
        return StorageShape(dims, dims)
    raise GeTypeError(
        f"Shape must be a StorageShape, a list of integers or None, got {value!r} of type "
        f"{_type_name(value)}"
    )


class TensorDesc:
    """Shape and data type of a custom op's input or output, as ``infer_meta`` sees it.

    ``shape`` is a ``StorageShape`` (copied), a list of ints (used as both the origin and the
    storage shape) or ``None`` (a scalar). Unlike ``ge.graph.TensorDesc`` it has no format.

    >>> from ge.graph import DataType
    >>> d = TensorDesc(None, DataType.DT_INT32)
    >>> d.shape.origin_shape.is_scalar(), d.data_type.name
    (True, 'DT_INT32')
    >>> d.shape = [4]
    >>> d
    TensorDesc(StorageShape(origin_shape=[4], storage_shape=[4]), DataType.DT_INT32)
    """

    __slots__ = ("_data_type", "_shape")

    def __init__(self, shape: StorageShape | list[int] | None, data_type: DataType) -> None:
        self._shape = _storage_shape_from(shape)
        self._data_type = _check_data_type(data_type)

    @property
    def shape(self) -> StorageShape:
        """The origin and storage shape (a live view owned by this desc)."""
        return self._shape

    @shape.setter
    def shape(self, shape: StorageShape | list[int] | None) -> None:
        self._shape._assign(_storage_shape_from(shape))

    @property
    def data_type(self) -> DataType:
        """The element type; setting it checks it as the constructor does."""
        return self._data_type

    @data_type.setter
    def data_type(self, data_type: DataType) -> None:
        self._data_type = _check_data_type(data_type)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorDesc):
            return NotImplemented
        return self._shape == other._shape and self._data_type == other._data_type

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"TensorDesc({self._shape!r}, DataType.{self._data_type.name})"

    def __copy__(self) -> TensorDesc:
        return TensorDesc(self._shape, self._data_type)

    def __deepcopy__(self, memo: dict[int, Any]) -> TensorDesc:
        return self.__copy__()


# --- Tensor ----------------------------------------------------------------------------------


def _byte_size(element_count: int, data_type: DataType) -> int | None:
    """Bytes of ``element_count`` elements; None when unknown (dynamic shape or dtype size)."""
    unit = dtype_info(data_type).size
    if element_count < 0 or unit < 0:
        return None
    if unit > 1000:  # a sub-byte type of (unit - 1000) bits, packed
        return -(-element_count * (unit - 1000) // 8)
    return element_count * unit


class Tensor:
    """A view of a tensor in device memory, lent by GE to one custom-op callback.

    Users never construct one (``Tensor()`` raises ``RuntimeError``); ``execute`` and
    ``declare_launch_args`` receive them, and ``EagerOpExecutionContext.malloc_output_tensor``
    returns them. A Tensor and its ``Shape``/``StorageShape``/``StorageFormat``/
    ``ExpandDimsType`` views are usable only until the callback returns. ``addr`` is for
    building launch arguments; never read, write or free memory through it from Python.
    """

    __slots__ = ("_addr", "_data_type", "_format", "_lease", "_placement", "_shape", "_size")

    _addr: int
    _data_type: DataType
    _format: StorageFormat
    _lease: _Lease
    _placement: TensorPlacement
    _shape: StorageShape
    _size: int

    def __init__(self) -> None:
        raise GeError(
            "Tensor objects should not be created directly; GE lends them to custom-op "
            "callbacks (execute, declare_launch_args)"
        )

    @classmethod
    def _view(
        cls,
        addr: int,
        desc_shape: StorageShape,
        data_type: DataType,
        fmt: StorageFormat,
        placement: TensorPlacement,
        *,
        size: int | None = None,
    ) -> Tensor:
        """Lend a view of ``addr`` (ge internals only). Shape and format are copied in.

        ``size`` is the byte size of the memory at ``addr``; by default the storage shape's
        element count times the element size, which must then be known.
        """
        address = _check_int(addr, "addr")
        if address < 0:
            raise GeValueError(f"addr must be non-negative, got {address}")
        if not isinstance(desc_shape, StorageShape):
            raise GeTypeError(f"desc_shape must be a StorageShape, got {_type_name(desc_shape)}")
        if not isinstance(fmt, StorageFormat):
            raise GeTypeError(f"fmt must be a StorageFormat, got {_type_name(fmt)}")
        if not isinstance(placement, TensorPlacement):
            raise GeTypeError(f"placement must be a TensorPlacement, got {placement!r}")
        dtype = _check_data_type(data_type)
        shape = desc_shape.__copy__()
        if size is None:
            computed = _byte_size(shape.storage_shape.size, dtype)
            if computed is None:
                raise GeValueError(
                    f"Tensor size is unknown for storage shape {shape.storage_shape.dims} and "
                    f"{dtype.name}; pass size= explicitly"
                )
            nbytes = computed
        else:
            nbytes = _check_int(size, "size")
            if nbytes < 0:
                raise GeValueError(f"size must be non-negative, got {nbytes}")
        view = cls.__new__(cls)
        view._lease = _Lease()
        view._addr = address
        view._data_type = dtype
        view._shape = shape
        view._format = fmt.__copy__()
        view._placement = placement
        view._size = nbytes
        view._shape._bind(view._lease)
        view._format._bind(view._lease)
        return view

    def _invalidate(self) -> None:
        """End the loan: this tensor and every view taken from it raise from now on."""
        self._lease.alive = False

    def _check(self) -> None:
        _check_lease(self._lease, "Tensor")

    @property
    def addr(self) -> int:
        """Address of the data in device memory."""
        self._check()
        return self._addr

    @property
    def size(self) -> int:
        """Bytes of memory the data occupies."""
        self._check()
        return self._size

    @property
    def shape_size(self) -> int:
        """Element count of the storage shape (not a byte count; see ``size``)."""
        self._check()
        return self._shape.storage_shape.size

    @property
    def shape(self) -> StorageShape:
        """Origin and storage shape (a borrowed live view)."""
        self._check()
        return self._shape

    @property
    def origin_shape(self) -> Shape:
        """The logical shape (a borrowed live view)."""
        self._check()
        return self._shape.origin_shape

    @property
    def storage_shape(self) -> Shape:
        """The shape of the data in memory (a borrowed live view)."""
        self._check()
        return self._shape.storage_shape

    @property
    def format(self) -> StorageFormat:
        """Origin format, storage format and expand-dims rule (a borrowed live view)."""
        self._check()
        return self._format

    @property
    def origin_format(self) -> Format:
        """The logical layout."""
        self._check()
        return self._format.origin_format

    @property
    def storage_format(self) -> Format:
        """The layout of the data in memory."""
        self._check()
        return self._format.storage_format

    @property
    def expand_dims_type(self) -> ExpandDimsType:
        """The rule from origin to storage shape (a borrowed live view)."""
        self._check()
        return self._format.expand_dims_type

    @property
    def data_type(self) -> DataType:
        """The element type."""
        self._check()
        return self._data_type

    @property
    def placement(self) -> TensorPlacement:
        """Where the data lives."""
        self._check()
        return self._placement

    def __repr__(self) -> str:
        if not self._lease.alive:
            return "Tensor(<expired borrowed view>)"
        return (
            f"Tensor(addr={self._addr:#x}, size={self._size}, shape={self._shape!r}, "
            f"data_type=DataType.{self._data_type.name}, format={self._format!r}, "
            f"placement=TensorPlacement.{self._placement.name})"
        )

    def __copy__(self) -> NoReturn:
        raise GeError("Tensor does not support copy")

    def __deepcopy__(self, memo: dict[int, Any]) -> NoReturn:
        raise GeError("Tensor does not support deepcopy")
