"""Argument checks and the borrow lease shared by ``ge.runtime``'s view types."""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from ge.error import GeError, GeTypeError, GeValueError
from ge.graph.types import DataType, Format

__all__ = ["MAX_DIM_NUM", "MAX_EXPAND_SIZE"]

MAX_DIM_NUM = 25  # gert kMaxDimNum (inc/external/exe_graph/runtime/shape.h)
MAX_EXPAND_SIZE = 56  # gert ExpandDimsType::kMaxExpandSize: width of the mask bit field
_MASK = (1 << MAX_EXPAND_SIZE) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


# --- borrowing -------------------------------------------------------------------------------


class _Lease:
    """The loan of a Tensor to one callback; shared by the tensor and every view of it.
    ``edited`` is set by every mutator of a view that holds it (``_edit``): a lender that
    re-lends the same views (``ge.custom_op._loan``) restores shapes and formats only then."""

    __slots__ = ("alive", "edited")

    def __init__(self) -> None:
        self.alive = True
        self.edited = False


def _edit(lease: _Lease | None, what: str) -> None:
    """Before a mutator of a ``what`` view changes it: raise if its lease expired, else mark
    the lease edited."""
    if lease is not None:
        if not lease.alive:
            _expired(what)
        lease.edited = True


def _check_lease(lease: _Lease | None, what: str) -> None:
    if lease is not None and not lease.alive:
        _expired(what)


def _expired(what: str) -> NoReturn:
    """Raise the error for a ``what`` used after the callback it was lent to returned. The
    views' accessors test their lease inline and call this only then (one Python call per
    read instead of three)."""
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
