"""``Shape`` and ``TensorDesc``: what a tensor looks like, without its data.

A ``TensorDesc`` is a value: nodes store their own copy (``Node.update_output_desc`` copies in,
``Node.get_output_desc`` copies out), so editing a desc you hold never edits a graph behind
your back.

    >>> d = TensorDesc([2, 3], data_type=DataType.DT_INT32)
    >>> d.shape, d.shape.get_shape_size(), d.data_type.name
    ([2, 3], 6, 'DT_INT32')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from typing_extensions import Self

from ge.error import GeError, GeTypeError
from ge.graph.types import DataType, Format

if TYPE_CHECKING:
    from ge.graph._attr import AttrValue

__all__ = ["Shape", "TensorDesc"]


def _check_dims(dims: Iterable[Any], what: str = "dims") -> list[int]:
    fast = list(dims)
    for d in fast:
        if type(d) is not int:  # a bool, numpy int or other value: the checked path below
            break
    else:
        return fast  # plain ints, the common case (shapes are built and copied per node)
    out = []
    for d in fast:  # a bool is an int, as GE-PY's isinstance check takes it; numpy ints: ours
        if not isinstance(d, (int, np.integer)):
            raise GeTypeError(
                f"{what} must be a list of integers, got element {d!r} of type {type(d).__name__}"
            )
        out.append(int(d))
    return out


def _shape(value: object, what: str, none_ok: bool = True) -> Shape:
    """``value`` as a ``Shape``, refused with GE's ``"<what> must be a list of integers"``.
    ``None`` is a scalar where GE takes it (the constructor's default), else refused. Tuples
    and numpy ints are accepted (ours: numpy shapes are tuples)."""
    if value is None and none_ok:
        return Shape()
    if not isinstance(value, (list, tuple)):
        raise GeTypeError(f"{what} must be a list of integers, got {type(value).__name__}")
    shape = Shape.__new__(Shape)
    list.extend(shape, _check_dims(value, what))
    return shape


class Shape(list[int]):
    """A list of dims with GE's helpers. ``-1`` is an unknown dim, ``[-2]`` an unknown rank.

    >>> Shape([2, -1]).get_shape_size(), Shape([]).get_shape_size(), Shape([0]).is_unknown_shape()
    (-1, 0, False)
    """

    UNKNOWN_DIM = -1
    UNKNOWN_DIM_NUM = -2

    def __init__(self, dims: Iterable[int] | None = None) -> None:
        if dims is None:
            return
        if not isinstance(dims, (list, tuple, Shape)):
            raise GeTypeError(f"dims must be a list of integers, got {type(dims).__name__}")
        for d in dims:
            if type(d) is not int:  # a bool, numpy int or other value: checked and converted
                list.extend(self, _check_dims(dims))
                return
        list.extend(self, dims)

    def get_shape_size(self) -> int:
        """Element count; 0 for an empty shape (GE's rule), -1 if any dim is unknown.

        Never raises, wraps or goes negative other than -1. Decisions where GE differs: a
        product past int64 is exact (a Python int; GE logs an overflow and returns 0, which
        reads as "empty"), and any other negative dim (invalid, e.g. ``[3, -5]``) also
        gives -1, "no known size" (GE multiplies it in and returns -15).

        >>> Shape([2**40, 2**40]).get_shape_size() == 2**80, Shape([3, -5]).get_shape_size()
        (True, -1)
        """
        if not self:
            return 0
        size = 1
        for d in self:
            if d < 0:
                return -1
            size *= d
        return size

    def is_unknown_shape(self) -> bool:
        """Whether any dim is -1 (unknown dim) or -2 (unknown rank)."""
        return any(d in (self.UNKNOWN_DIM, self.UNKNOWN_DIM_NUM) for d in self)


def _check_enum(value: object, enum: type[DataType] | type[Format], message: str) -> None:
    if not isinstance(value, enum):
        raise GeTypeError(f"{message}, got {value!r}")


class TensorDesc:
    """Shape, origin shape, format, origin format and data type of a tensor.

    ``TensorDesc(shape=None, format=Format.FORMAT_ND, data_type=DataType.DT_FLOAT)``;
    ``shape=None`` is a scalar. Setters return ``self`` so they chain. The origin shape and
    origin format are independent of shape and format; the origin format starts equal to
    ``format`` and the origin shape starts unset (read as ``[]``), as in GE.
    """

    __slots__ = ("_attrs", "_data_type", "_format", "_origin_format", "_origin_shape", "_shape")

    def __init__(
        self,
        shape: list[int] | None = None,
        format: Format = Format.FORMAT_ND,
        data_type: DataType = DataType.DT_FLOAT,
    ) -> None:
        if type(format) is not Format:
            _check_enum(format, Format, "Format must be a Format")
        if type(data_type) is not DataType:
            _check_enum(data_type, DataType, "Data type must be a DataType")
        self._shape = _shape(shape, "shape")
        self._origin_shape: Shape | None = None
        self._format = format
        self._origin_format = format
        self._data_type = data_type
        self._attrs: dict[str, AttrValue] = {}

    @classmethod
    def _scalar(cls) -> TensorDesc:
        """``TensorDesc()``, without the argument checks (nodes make one per port)."""
        desc = cls.__new__(cls)
        desc._shape = Shape.__new__(Shape)
        desc._origin_shape = None
        desc._format = Format.FORMAT_ND
        desc._origin_format = Format.FORMAT_ND
        desc._data_type = DataType.DT_FLOAT
        desc._attrs = {}
        return desc

    @classmethod
    def _of(cls, dims: Iterable[int], format: Format, data_type: DataType) -> TensorDesc:
        """``TensorDesc(list(dims), format, data_type)`` with one copy of ``dims`` instead of
        three (infer rules make one per node output), and none when ``dims`` is a ``Shape``:
        that is an input desc's ``_shape`` (what an elementwise rule passes on), which nothing
        changes in place, so it is shared as ``_clone`` shares it; the caller must not change
        a ``Shape`` it passes later. Anything but plain ints and enum members takes the checked
        constructor, which converts or refuses it."""
        if type(dims) is Shape:  # checked when made: plain ints
            shape = dims
        else:
            shape = Shape.__new__(Shape)
            list.extend(shape, dims)
            for d in shape:
                if type(d) is not int:
                    return cls(list(shape), format, data_type)
        if type(format) is not Format or type(data_type) is not DataType:
            return cls(list(shape), format, data_type)
        desc = cls.__new__(cls)
        desc._shape = shape
        desc._origin_shape = None
        desc._format = format
        desc._origin_format = format
        desc._data_type = data_type
        desc._attrs = {}
        return desc

    # GE-PY getters/setters
    def get_shape(self) -> Shape:
        return Shape(self._shape)

    def set_shape(self, shape: list[int]) -> Self:
        self._shape = _shape(shape, "shape", none_ok=False)
        return self

    def get_origin_shape(self) -> Shape:
        return Shape(self._origin_shape or [])

    def set_origin_shape(self, shape: list[int]) -> Self:
        self._origin_shape = _shape(shape, "origin shape", none_ok=False)
        return self

    def get_format(self) -> Format:
        return self._format

    def set_format(self, format: Format) -> Self:
        _check_enum(format, Format, "Format must be a Format")
        self._format = format
        return self

    def get_origin_format(self) -> Format:
        return self._origin_format

    def set_origin_format(self, format: Format) -> Self:
        _check_enum(format, Format, "Format must be a Format")
        self._origin_format = format
        return self

    def get_data_type(self) -> DataType:
        return self._data_type

    def set_data_type(self, data_type: DataType) -> Self:
        _check_enum(data_type, DataType, "Data type must be a DataType")
        self._data_type = data_type
        return self

    shape = property(get_shape)
    origin_shape = property(get_origin_shape)
    format = property(get_format)
    origin_format = property(get_origin_format)
    data_type = property(get_data_type)

    def _clone(self) -> TensorDesc:
        """A copy that shares the shape lists: no code changes ``_shape`` or ``_origin_shape``
        in place (every setter stores a new ``Shape``, getters return copies), so sharing
        them is invisible and saves a GC-tracked list per desc (clones are made per edge)."""
        twin = TensorDesc.__new__(TensorDesc)
        twin._shape = self._shape
        twin._origin_shape = self._origin_shape
        twin._format = self._format
        twin._origin_format = self._origin_format
        twin._data_type = self._data_type
        twin._attrs = dict(self._attrs) if self._attrs else {}
        return twin

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorDesc):
            return NotImplemented
        return (
            self._shape == other._shape
            and self._origin_shape == other._origin_shape
            and self._format == other._format
            and self._origin_format == other._origin_format
            and self._data_type == other._data_type
            and self._attrs == other._attrs
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        """GE-PY's form, enums as integers: ``TensorDesc(shape=[1, 3], format=2, data_type=0)``
        (also ``str()``)."""
        return (
            f"TensorDesc(shape={list(self._shape)}, format={int(self._format)}, "
            f"data_type={int(self._data_type)})"
        )

    def __copy__(self) -> NoReturn:
        raise GeError("TensorDesc does not support copy")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise GeError("TensorDesc does not support deepcopy")
