"""``ge.runtime.Shape`` and ``StorageShape`` (see ``ge.runtime.types`` for the decisions)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from operator import attrgetter, methodcaller
from typing import TYPE_CHECKING, Any, NoReturn

from typing_extensions import Self

from ge.error import GeTypeError
from ge.runtime._checks import (
    _INT64_MAX,
    _check_dim,
    _check_dim_count,
    _check_index,
    _check_lease,
    _edit,
    _expired,
    _Lease,
    _type_name,
)

__all__ = ["Shape", "StorageShape"]


class Shape:
    """Dims of a runtime tensor, at most 25 of them (``gert::Shape``).

    A value type with mutators; an empty shape is a scalar.

    >>> s = Shape([2, 3]).append_dim(4)
    >>> s.dims, s.dim_num, s.size, s.is_scalar(), Shape().size
    ([2, 3, 4], 3, 24, False, 1)
    """

    __slots__ = ("_copy", "_count", "_dims", "_lease")

    def __init__(self, dims: Sequence[int] | Shape | None = None) -> None:
        self._adopt([] if dims is None else _dims_from(dims, "dims"))
        self._lease: _Lease | None = None

    def _adopt(self, dims: list[int]) -> None:
        """Make ``dims`` (not copied) this shape's dims: the only way ``_dims`` is bound (its
        ``copy`` is what ``dims`` calls; mutators change the list in place and then
        ``_recount``, so ``_count`` is always ``dims``' element count)."""
        self._dims = dims
        self._copy = dims.copy
        self._count = _element_count(dims)

    def _recount(self) -> None:
        self._count = _element_count(self._dims)

    def _expire(self) -> None:
        """After the lease ended (``Tensor._invalidate``): ``dims`` and ``size`` raise from
        now on."""
        with contextlib.suppress(AttributeError):  # expired before
            del self._copy, self._count

    # The other readers test the lease inline (one Python call per read).
    def _live(self) -> list[int]:
        if self._lease is not None and not self._lease.alive:
            _expired("Shape")
        return self._dims

    def _edited(self) -> list[int]:
        """The dims, for a mutator to change (the lease is marked edited)."""
        _edit(self._lease, "Shape")
        return self._dims

    # ``dims`` and ``size``, read many times per run by the execute path's callbacks, run no
    # Python: ``dims`` calls ``_copy`` (the dims list's bound ``copy``) through
    # ``operator.methodcaller``, ``size`` reads ``_count``. An expired leased shape has
    # neither (``_expire``), so a read falls back to ``__getattr__``, which raises the
    # borrowed-object error.
    if TYPE_CHECKING:

        @property
        def dims(self) -> list[int]: ...
        @property
        def size(self) -> int: ...

    else:
        dims = property(methodcaller("_copy"), doc="The dims, as a new list.")
        size = property(
            attrgetter("_count"),
            doc="Element count: 1 for a scalar, -1 if a dim is negative or the count "
            "overflows int64.",
        )

        def __getattr__(self, name: str) -> NoReturn:
            if name in _EXPIRING and self._lease is not None and not self._lease.alive:
                _expired("Shape")
            raise AttributeError(f"'Shape' object has no attribute {name!r}")

    @property
    def dim_num(self) -> int:
        """Number of dims (0 for a scalar)."""
        if self._lease is not None and not self._lease.alive:
            _expired("Shape")
        return len(self._dims)

    def is_scalar(self) -> bool:
        """Whether the shape has no dims."""
        if self._lease is not None and not self._lease.alive:
            _expired("Shape")
        return not self._dims

    def get_dim(self, index: int) -> int:
        """Dim ``index``; ``ValueError`` unless ``0 <= index < dim_num``."""
        if self._lease is not None and not self._lease.alive:
            _expired("Shape")
        dims = self._dims
        if type(index) is int and 0 <= index < len(dims):
            return dims[index]
        return dims[_check_index(index, len(dims), "dim index")]

    def set_dim(self, index: int, value: int) -> None:
        """Set dim ``index`` (which must already exist) to ``value``."""
        dims = self._edited()
        position = _check_index(index, len(dims), "dim index")
        dims[position] = _check_dim(value)
        self._recount()

    def append_dim(self, value: int) -> Self:
        """Add a trailing dim and return ``self``; ``ValueError`` past 25 dims."""
        dims = self._edited()
        dim = _check_dim(value)
        _check_dim_count(len(dims) + 1)
        dims.append(dim)
        self._recount()
        return self

    def set_scalar(self) -> None:
        """Drop every dim."""
        self._edited().clear()
        self._count = 1

    def _assign(self, dims: list[int]) -> None:
        self._edited()[:] = dims
        self._recount()

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
            self._origin._adopt(_dims_from(origin_shape, "origin_shape"))
            self._storage._adopt(_dims_from(storage_shape, "storage_shape"))

    def _check(self) -> None:
        _check_lease(self._lease, "StorageShape")

    @property
    def origin_shape(self) -> Shape:
        """The logical shape (a live view)."""
        if self._lease is not None and not self._lease.alive:
            _expired("StorageShape")
        return self._origin

    @property
    def storage_shape(self) -> Shape:
        """The shape of the data in memory (a live view)."""
        if self._lease is not None and not self._lease.alive:
            _expired("StorageShape")
        return self._storage

    def set_origin_shape(self, shape: Shape | Sequence[int]) -> None:
        """Copy ``shape`` (a ``Shape`` or a list of ints) into the origin shape."""
        if self._lease is not None and not self._lease.alive:
            _expired("StorageShape")
        self._origin._assign(_dims_from(shape, "origin_shape"))

    def set_storage_shape(self, shape: Shape | Sequence[int]) -> None:
        """Copy ``shape`` (a ``Shape`` or a list of ints) into the storage shape."""
        if self._lease is not None and not self._lease.alive:
            _expired("StorageShape")
        self._storage._assign(_dims_from(shape, "storage_shape"))

    def _assign(self, other: StorageShape) -> None:
        if self._lease is not None and not self._lease.alive:
            _expired("StorageShape")
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


_EXPIRING = frozenset({"_copy", "_count"})  # what _expire removes


def _element_count(dims: list[int]) -> int:
    """``Shape.size`` of ``dims``: 1 for none, -1 if one is negative or the count overflows
    int64."""
    count = 1
    for dim in dims:
        if dim < 0:
            return -1
        count *= dim
    return count if count <= _INT64_MAX else -1


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
