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
  Plain values read from them (``int``, ``list``, enum members) stay usable. The plain reads
  (``Tensor.addr``, ``shape``, ``shape_size``..., ``Shape.dims`` and ``size``) run no Python
  (properties over ``operator`` getters): invalidating clears the fields they read, and a read
  that finds none raises the borrowed-object error from ``__getattr__``.
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

from enum import IntEnum
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NoReturn

from ge.error import GeError, GeTypeError, GeValueError
from ge.graph._dtypes import dtype_info
from ge.graph.types import DataType, Format
from ge.runtime._checks import (
    MAX_DIM_NUM,
    MAX_EXPAND_SIZE,
    _check_data_type,
    _check_dim,
    _check_dim_count,
    _check_int,
    _check_lease,
    _Lease,
    _type_name,
)
from ge.runtime.format import ExpandDimsType, StorageFormat
from ge.runtime.shape import Shape, StorageShape

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


class TensorPlacement(IntEnum):
    """Where a runtime tensor's data lives (``gert::TensorPlacement``)."""

    ON_DEVICE_HBM = 0
    ON_HOST = 1
    FOLLOWING = 2
    ON_DEVICE_P2P = 3
    END = 4


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

    @classmethod
    def _lend(
        cls,
        addr: int,
        origin_dims: list[int],
        storage_dims: list[int],
        data_type: DataType,
        fmt: StorageFormat,
        placement: TensorPlacement,
        size: int,
    ) -> Tensor:
        """``_view`` for trusted ge internals that lend a view per run (the custom-op execute
        path): the same fresh objects, bound to a new lease, without re-checking arguments
        that were checked once when the plan was built (~1 µs instead of ~10)."""
        lease = _Lease()
        origin = Shape.__new__(Shape)
        origin._adopt(list(origin_dims))
        origin._lease = lease
        storage = Shape.__new__(Shape)
        storage._adopt(list(storage_dims))
        storage._lease = lease
        shape = StorageShape.__new__(StorageShape)
        shape._origin, shape._storage, shape._lease = origin, storage, lease
        src = fmt._expand
        expand = ExpandDimsType.__new__(ExpandDimsType)
        expand._size, expand._mask, expand._lease = src._size, src._mask, lease
        form = StorageFormat.__new__(StorageFormat)
        form._origin, form._storage, form._expand, form._lease = (
            fmt._origin,
            fmt._storage,
            expand,
            lease,
        )
        view = cls.__new__(cls)
        view._lease = lease
        view._addr = addr
        view._data_type = data_type
        view._shape = shape
        view._format = form
        view._placement = placement
        view._size = size
        return view

    def _invalidate(self) -> None:
        """End the loan: this tensor and every view taken from it raise from now on (its
        fields are cleared, which is what makes its C-level accessors raise)."""
        self._lease.alive = False
        try:
            shape = self._shape
        except AttributeError:  # invalidated before
            return
        shape._origin._expire()
        shape._storage._expire()
        del self._addr, self._size, self._shape, self._format, self._data_type, self._placement

    def _check(self) -> None:
        if not self._lease.alive:
            self._expired()

    def _expired(self) -> NoReturn:
        _check_lease(self._lease, "Tensor")
        raise AttributeError("this Tensor has no lease")  # made without _view / _lend

    # The plain accessors run no Python (a property over an ``operator.attrgetter``: the
    # execute path's callbacks read a dozen per run). An invalidated Tensor has no fields,
    # so a read of one falls back to ``__getattr__``, which raises the borrowed-object error.
    # A Tensor whose lease ended without ``_invalidate`` keeps its fields: only
    # ``ge.custom_op._loan`` ends leases so, for Tensors nothing outside the loan refers to
    # (it invalidates the ones a callback kept).
    if TYPE_CHECKING:

        @property
        def addr(self) -> int: ...
        @property
        def size(self) -> int: ...
        @property
        def shape(self) -> StorageShape: ...
        @property
        def origin_shape(self) -> Shape: ...
        @property
        def storage_shape(self) -> Shape: ...
        @property
        def format(self) -> StorageFormat: ...
        @property
        def origin_format(self) -> Format: ...
        @property
        def storage_format(self) -> Format: ...
        @property
        def expand_dims_type(self) -> ExpandDimsType: ...
        @property
        def data_type(self) -> DataType: ...
        @property
        def placement(self) -> TensorPlacement: ...
        @property
        def shape_size(self) -> int: ...

    else:
        addr = property(attrgetter("_addr"), doc="Address of the data in device memory.")
        size = property(attrgetter("_size"), doc="Bytes of memory the data occupies.")
        shape = property(
            attrgetter("_shape"), doc="Origin and storage shape (a borrowed live view)."
        )
        origin_shape = property(
            attrgetter("_shape._origin"), doc="The logical shape (a borrowed live view)."
        )
        storage_shape = property(
            attrgetter("_shape._storage"),
            doc="The shape of the data in memory (a borrowed live view).",
        )
        format = property(
            attrgetter("_format"),
            doc="Origin format, storage format and expand-dims rule (a borrowed live view).",
        )
        origin_format = property(attrgetter("_format._origin"), doc="The logical layout.")
        storage_format = property(
            attrgetter("_format._storage"), doc="The layout of the data in memory."
        )
        expand_dims_type = property(
            attrgetter("_format._expand"),
            doc="The rule from origin to storage shape (a borrowed live view).",
        )
        data_type = property(attrgetter("_data_type"), doc="The element type.")
        placement = property(attrgetter("_placement"), doc="Where the data lives.")
        shape_size = property(
            attrgetter("_shape._storage._count"),
            doc="Element count of the storage shape (not a byte count; see ``size``); -1 if "
            "a dim is unknown or the count overflows int64, as ``Shape.size``.",
        )

        def __getattr__(self, name: str) -> NoReturn:
            """Reached when a read finds a field missing: an accessor of an invalidated
            Tensor raises the borrowed-object error; any other name is missing."""
            if name in _ACCESSORS:
                self._expired()
            raise AttributeError(f"'Tensor' object has no attribute {name!r}")

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


# the accessors of Tensor that read a field (what __getattr__ answers for an invalidated one)
_ACCESSORS = frozenset(name for name, value in vars(Tensor).items() if isinstance(value, property))
