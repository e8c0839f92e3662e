"""``ge.runtime.ExpandDimsType`` and ``StorageFormat`` (see ``ge.runtime.types``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.graph.types import Format
from ge.runtime._checks import (
    _INT64_MAX,
    _MASK,
    MAX_EXPAND_SIZE,
    _check_format,
    _check_index,
    _check_int,
    _check_lease,
    _edit,
    _expired,
    _Lease,
    _type_name,
)

__all__ = ["ExpandDimsType", "StorageFormat"]


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
        if self._lease is not None and not self._lease.alive:
            _expired("ExpandDimsType")
        return self._size

    def is_expand_index(self, index: int) -> bool:
        """Whether dim ``index`` of the expanded shape is an inserted 1."""
        if self._lease is not None and not self._lease.alive:
            _expired("ExpandDimsType")
        position = _check_int(index, "expand index")
        if position < 0:
            raise GeValueError(f"expand index must be non-negative, got {position}")
        return bool(self._mask >> position & 1)

    def set_expand_index(self, index: int) -> None:
        """Mark dim ``index`` of the expanded shape as inserted (``0 <= index < 56``)."""
        _edit(self._lease, "ExpandDimsType")
        self._mask |= 1 << _check_index(index, MAX_EXPAND_SIZE, "expand index")

    def _assign(self, other: ExpandDimsType) -> None:
        _edit(self._lease, "ExpandDimsType")
        other._check()
        self._size, self._mask = other._size, other._mask

    def _bind(self, lease: _Lease) -> None:
        self._lease = lease

    def __int__(self) -> int:
        if self._lease is not None and not self._lease.alive:
            _expired("ExpandDimsType")
        return self._size << MAX_EXPAND_SIZE | self._mask

    def _rule_text(self) -> str | None:
        if self._mask >> self._size:  # marks beyond the rule's length have no str form
            return None
        return "".join("1" if self._mask >> i & 1 else "0" for i in range(self._size))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExpandDimsType):
            return NotImplemented
        if self._lease is not None and not self._lease.alive:
            _expired("ExpandDimsType")
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
        if self._lease is not None and not self._lease.alive:
            _expired("ExpandDimsType")
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
        if self._lease is not None and not self._lease.alive:
            _expired("StorageFormat")
        return self._origin

    @property
    def storage_format(self) -> Format:
        """The layout of the data in memory."""
        if self._lease is not None and not self._lease.alive:
            _expired("StorageFormat")
        return self._storage

    @property
    def expand_dims_type(self) -> ExpandDimsType:
        """The expand-dims rule (a live view)."""
        if self._lease is not None and not self._lease.alive:
            _expired("StorageFormat")
        return self._expand

    def set_origin_format(self, origin_format: Format) -> None:
        """Set the logical layout."""
        _edit(self._lease, "StorageFormat")
        self._origin = _check_format(origin_format, "origin_format")

    def set_storage_format(self, storage_format: Format) -> None:
        """Set the layout in memory."""
        _edit(self._lease, "StorageFormat")
        self._storage = _check_format(storage_format, "storage_format")

    def set_expand_dims_type(self, expand_dims_type: ExpandDimsType) -> None:
        """Copy ``expand_dims_type`` into this format's rule."""
        _edit(self._lease, "StorageFormat")
        self._expand._assign(_check_expand(expand_dims_type))

    def _assign(self, other: StorageFormat) -> None:
        _edit(self._lease, "StorageFormat")
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
