"""``ge.graph.Tensor``: a tensor's description plus its bytes, on the host or on the device.

Construction follows GE-PY (``Tensor(data, file_path, data_type, format, shape, placement)``),
errors included. The data is kept as raw bytes and read through the description, so
``set_data_type`` reinterprets bytes exactly as GE does.

Decisions where GE-PY is silent or undefined:

- ``data`` may also be a numpy array (cast to ``data_type``; ``shape=None`` takes the array's
  shape) or ``bytes`` (raw little-endian elements, like a file). ``Tensor.from_numpy(a)`` keeps
  the array's own dtype and shape.
- A list longer than ``prod(shape)`` is cut to it; a shorter one is zero-filled (GE's C side
  would read past the end of the buffer). As in GE-PY, a tuple is not a list (``TypeError``
  "data should be List") and a nested list's elements do not convert (Python's
  ``float()``/``int()`` text, as a ``GeTypeError``): nested data comes as a numpy array.
- ``get_data()`` on a device tensor copies the data back for reading; the tensor stays on the
  device.
- A device tensor whose memory was freed behind its back (``ge.runtime.free`` on its address)
  raises ``GeError`` naming that when read, copied or moved; printing shows
  ``<freed device memory>``, and collecting it does not free the address a second time.
- A tensor whose desc has unknown dims (``-1``, as a file may hold) raises ``GeValueError``
  when its data is read; printing shows ``<N bytes>``.

    >>> t = Tensor([1, 2, 3, 4], None, DataType.DT_INT32, Format.FORMAT_ND, [2, 2])
    >>> t.get_data(), t.shape, t.data_type.name
    ([[1, 2], [3, 4]], [2, 2], 'DT_INT32')
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np
from typing_extensions import Self

from ge._device import device_memory
from ge._device.memory import DeviceMemory, DeviceMemoryError
from ge.error import GeError, GeTypeError, GeValueError
from ge.graph._dtypes import (
    data_type_from_numpy,
    dtype_info,
    numpy_dtype,
)
from ge.graph.tensor_desc import Shape, TensorDesc
from ge.graph.types import DataType, Format, Placement

__all__ = ["Tensor"]

_PREVIEW = 8


def _element_count(shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def _free_device_block(memory: DeviceMemory, addr: int, generation: int = 0) -> None:
    """A device tensor's finalizer: free its block, unless that was done behind its back
    (a finalizer that raises only prints a traceback, at collection or at exit). The block's
    generation keeps it from freeing a newer allocation that got the same address."""
    with contextlib.suppress(DeviceMemoryError):
        memory.free(addr, generation)


_INT_ITEM = re.compile(r"-?[0-9]+")


def _parse_item(item: str) -> int | float:
    """One element of GE's C text: an int if all digits (an optional ``-``), else a float."""
    if _INT_ITEM.fullmatch(item):
        return int(item)
    try:
        return float(item)
    except ValueError:
        raise GeValueError(f"Invalid item: '{item}'") from None


def _check_shape_type(shape: object) -> None:
    """GE's first check: ``shape`` is ``None`` or a list of ints (bools pass, as GE-PY's
    ``isinstance`` takes them; numpy ints are ours)."""
    if shape is None:
        return
    if not isinstance(shape, list) or not all(isinstance(d, (int, np.integer)) for d in shape):
        what = type(shape).__name__ if not isinstance(shape, list) else "a list with non-integers"
        raise GeTypeError(f"Shape must be a list of integers, got {what}")


def _check_shape(shape: object) -> Shape:
    if shape is None:
        return Shape()
    dims = Shape(shape)  # type: ignore[arg-type]  # checked by _check_shape_type
    if any(d < 0 for d in dims):
        raise GeValueError(f"shape: a tensor with data needs known dims >= 0, got {list(dims)}")
    return dims


def _converted(data: list[Any], convert: Callable[[Any], Any]) -> list[Any]:
    """``convert(x)`` (GE-PY's ``int`` or ``float``) per element of a flat list; an element
    that does not convert raises Python's own error text first, as GE-PY lets it escape (a
    nested list included: GE packs flat lists), as a ``GeTypeError``/``GeValueError``."""
    try:
        return [convert(x) for x in data]
    except (TypeError, ValueError) as e:
        index, bad = next((i, x) for i, x in enumerate(data) if not _converts(convert, x))
        hint = "; for nested data pass a numpy array" if isinstance(bad, (list, tuple)) else ""
        kind = GeTypeError if isinstance(e, TypeError) else GeValueError
        raise kind(f"{e}: data[{index}] is {bad!r}{hint}") from None


def _converts(convert: Callable[[Any], Any], value: object) -> bool:
    try:
        convert(value)
    except (TypeError, ValueError):
        return False
    return True


# GE-PY packs lists for these types only (GE_ERRORS.md §2.3 rule 6); a list of bools is packed
# whatever the type (as bools in GE; ours converts them to the type, DT_BOOL and DT_DOUBLE too).
_LIST_TYPES = frozenset(
    {
        DataType.DT_INT64,
        DataType.DT_UINT64,
        DataType.DT_INT32,
        DataType.DT_UINT32,
        DataType.DT_INT16,
        DataType.DT_UINT16,
        DataType.DT_INT8,
        DataType.DT_UINT8,
        DataType.DT_FLOAT,
        DataType.DT_FLOAT16,
    }
)
_BOOL_LIST_TYPES = _LIST_TYPES | {DataType.DT_BOOL, DataType.DT_DOUBLE}
# The host->device and device->host copy failures carry GE's "ret=<ret>"; ge's device memory
# has no runtime status code, so it is -1 (ours), with the reason after it.
_NO_RET = -1


def _pack_ints(values: list[Any], np_dtype: np.dtype[Any]) -> np.ndarray:
    """``int(x)`` per element, wrapped to the type's width like a C cast (exact for 64 bits)."""
    bits = 8 * np_dtype.itemsize
    wrapped = [int(x) % (1 << bits) for x in values]
    packed: np.ndarray = np.array(wrapped, dtype=f"u{np_dtype.itemsize}").view(np_dtype)
    return packed


def _as_data_type(data_type: object) -> DataType:
    """A ``DataType``; a plain int naming one is taken as it (GE-PY passes ints on to C)."""
    if isinstance(data_type, DataType):
        return data_type
    if isinstance(data_type, int) and data_type in DataType._value2member_map_:
        return DataType(data_type)
    raise GeTypeError(f"Data_type must be a DataType, got {data_type!r}")


def _check_list_type(data: list[Any], data_type: object) -> bool:
    """GE's rules 5 and 6 for list data; whether the list is all bools (which skips them)."""
    all_bool = all(isinstance(x, bool) for x in data)
    if all_bool:
        return True
    if data_type == DataType.DT_DOUBLE:
        raise GeError("DT_DOUBLE is not supported in python Tensor constructor")
    if not isinstance(data_type, int) or data_type not in _LIST_TYPES:  # an int 0 is DT_FLOAT
        shown = int(data_type) if isinstance(data_type, DataType) else data_type
        raise GeError(f"Failed to create Tensor with data type: {shown}")
    return False


def _list_to_bytes(data: list[Any], data_type: DataType, count: int) -> np.ndarray:
    """Pack a flat list as GE-PY does: ``int(x)`` (integer types, wrapped to the width like a
    C cast) or ``float(x)`` per element, Python's own error text for one that does not
    convert (a nested list too, as in GE-PY)."""
    if data_type not in _BOOL_LIST_TYPES:  # a list of bools of another type (ours)
        raise GeError(f"Failed to create Tensor: a list of bools as {data_type.name}")
    np_dtype = numpy_dtype(data_type)
    convert: Callable[[Any], Any] = int if np_dtype.kind in "iub" else float
    flat = _converted(data, convert)
    try:
        values = np.zeros(count, dtype=np_dtype)
    except (ValueError, MemoryError):
        raise GeValueError(
            f"Failed to create Tensor: {count} elements of {data_type.name} are more than "
            f"can be allocated; check the shape"
        ) from None
    n = min(count, len(flat))
    if n:
        head = flat[:n]
        try:
            if np_dtype.kind in "iu":
                values[:n] = _pack_ints(head, np_dtype)
            elif np_dtype.kind == "b":
                values[:n] = np.asarray(head, dtype=np.int64) != 0
            else:
                values[:n] = np.asarray(head, dtype=np.float64).astype(np_dtype)
        except (OverflowError, ValueError) as e:
            raise GeError(f"Failed to create Tensor: {e}") from None
    return values.view(np.uint8)


def _raw_to_bytes(raw: bytes, data_type: DataType, count: int, source: str) -> np.ndarray:
    size = dtype_info(data_type).size
    if size <= 0 or size > 1000:
        raise GeError(f"Failed to create Tensor: {data_type!r} has no fixed byte size")
    need = count * size
    if not raw or len(raw) < need:
        raise GeError(
            f"Failed to create Tensor: {source} holds {len(raw)} bytes, "
            f"need {need} for shape and {data_type.name}"
        )
    out: np.ndarray = np.frombuffer(raw, dtype=np.uint8, count=need).copy()
    return out


class Tensor:
    """A GE tensor: ``TensorDesc`` plus data. See the module docstring for the rules."""

    __slots__ = (
        "__weakref__",
        "_bytes",
        "_desc",
        "_device_addr",
        "_device_nbytes",
        "_donated",
        "_finalizer",
        "_owner_builder",
        "_placement",
        "_release",
    )

    def __init__(
        self,
        data: list[Any] | np.ndarray | bytes | None = None,
        file_path: str | os.PathLike[str] | None = None,
        data_type: DataType = DataType.DT_FLOAT,
        format: Format = Format.FORMAT_ND,
        shape: list[int] | None = None,
        placement: Placement = Placement.PLACEMENT_HOST,
    ) -> None:
        # GE's order (GE_ERRORS.md §2.3): shape, placement, data-or-file, data, data type;
        # then ours: the data type and format types, known dims.
        _check_shape_type(shape)
        if not isinstance(placement, Placement):
            raise GeTypeError(f"Placement must be a Placement, got {placement!r}")
        if data is not None and file_path is not None:
            raise GeError("Tensor should be created either by data or by file")
        if data is not None and not isinstance(
            data, (list, np.ndarray, bytes, bytearray, memoryview)
        ):
            raise GeTypeError(
                f"data should be List (or, ours, a numpy array or bytes), got {type(data).__name__}"
            )
        if isinstance(data, list):
            _check_list_type(data, data_type)
        data_type = _as_data_type(data_type)
        if not isinstance(format, Format):
            raise GeTypeError(f"Format must be a Format, got {format!r}")
        if isinstance(data, np.ndarray) and shape is None:
            shape = list(data.shape)
        dims = _check_shape(shape)
        self._desc = TensorDesc(dims, format, data_type)
        self._placement = Placement.PLACEMENT_HOST
        self._device_addr: int | None = None
        self._device_nbytes = 0
        self._finalizer: weakref.finalize[Any, Tensor] | None = None
        self._donated: str | None = None
        self._release: Callable[[], None] | None = None
        self._bytes: np.ndarray | None = self._initial_bytes(data, file_path, data_type, dims)
        if placement == Placement.PLACEMENT_DEVICE:
            self.to_device()

    @staticmethod
    def _initial_bytes(
        data: object, file_path: object, data_type: DataType, dims: Shape
    ) -> np.ndarray | None:
        count = _element_count(dims)
        if isinstance(data, np.ndarray):
            try:
                return np.ascontiguousarray(
                    data.reshape(count).astype(numpy_dtype(data_type))
                ).view(np.uint8)
            except ValueError as e:
                raise GeValueError(
                    f"data: array of shape {data.shape} does not fit shape {list(dims)}: {e}"
                ) from None
            except TypeError as e:  # e.g. an object array holding non-numbers
                raise GeTypeError(
                    f"data: array of {data.dtype} cannot be converted to {data_type.name}: {e}"
                ) from None
        if isinstance(data, (bytes, bytearray, memoryview)):
            return _raw_to_bytes(bytes(data), data_type, count, "data")
        if isinstance(data, list):
            return _list_to_bytes(data, data_type, count)
        if file_path is not None:
            if not isinstance(file_path, (str, os.PathLike)):
                raise GeTypeError(f"file_path should be a str, got {type(file_path).__name__}")
            try:
                with open(file_path, "rb") as f:
                    raw = f.read()
            except OSError as e:
                raise GeError(
                    f"Failed to create Tensor: cannot read {file_path!r}: {e.strerror}"
                ) from None
            return _raw_to_bytes(raw, data_type, count, f"file {os.fspath(file_path)!r}")
        return None

    @classmethod
    def from_numpy(
        cls,
        array: np.ndarray | Any,
        format: Format = Format.FORMAT_ND,
        placement: Placement = Placement.PLACEMENT_HOST,
    ) -> Tensor:
        """A tensor with the array's own dtype and shape (ours; GE-PY has no numpy path).

        >>> Tensor.from_numpy(np.arange(3, dtype=np.int64)).data_type.name
        'DT_INT64'
        """
        array = np.asarray(array)
        data_type = data_type_from_numpy(array.dtype)
        if (
            type(format) is Format
            and placement is Placement.PLACEMENT_HOST
            and numpy_dtype(data_type) == array.dtype
        ):
            # What the constructor makes of it (a private C-order copy of the elements, as
            # bytes, under a desc of the array's shape) without its checks of list data and
            # argument types, which such an array passes: a builder makes every constant here.
            raw = np.ascontiguousarray(array.reshape(array.size).astype(array.dtype))
            return cls._adopt(TensorDesc._of(array.shape, format, data_type), raw.view(np.uint8))
        return cls(array, None, data_type, format, list(array.shape), placement)

    # --- description -------------------------------------------------------------------------
    def set_format(self, format: Format) -> Self:
        if not isinstance(format, Format):
            raise GeTypeError(f"Format must be a Format, got {format!r}")
        self._desc = self._desc._clone().set_format(format)  # descs may be shared: see _adopt
        return self

    def get_format(self) -> Format:
        return self._desc.get_format()

    def set_data_type(self, data_type: DataType) -> Self:
        if not isinstance(data_type, DataType):
            raise GeTypeError(f"Data_type must be a DataType, got {data_type!r}")
        self._desc = self._desc._clone().set_data_type(data_type)
        return self

    def get_data_type(self) -> DataType:
        return self._desc.get_data_type()

    def get_shape(self) -> Shape:
        return self._desc.get_shape()

    def get_tensor_desc(self) -> TensorDesc:
        return self._desc._clone()

    def get_placement(self) -> Placement:
        return self._placement

    format = property(get_format)
    data_type = property(get_data_type)
    shape = property(get_shape)
    placement = property(get_placement)

    @property
    def addr(self) -> int:
        """Device address of the data (ours); only for ``PLACEMENT_DEVICE`` tensors."""
        self._check_not_donated()
        if self._device_addr is None:
            raise GeValueError(
                "Tensor is on the host and has no device address; call to_device() first"
            )
        return self._device_addr

    @property
    def nbytes(self) -> int:
        """Bytes of data held (0 for an empty ``Tensor()``)."""
        if self._device_addr is not None:
            return self._device_nbytes
        return 0 if self._bytes is None else int(self._bytes.size)

    # --- data ----------------------------------------------------------------------------------
    def _raw(self) -> np.ndarray | None:
        self._check_not_donated()
        if self._device_addr is not None:
            try:
                out: np.ndarray = device_memory().view(self._device_addr, self.nbytes).copy()
            except DeviceMemoryError as e:
                raise GeError(
                    f"this Tensor's device memory ({self.nbytes} bytes at "
                    f"{self._device_addr:#x}) is no longer live: it was freed while the tensor "
                    f"still used it ({e}); keep the memory until the tensor is done with it"
                ) from None
            return out
        return self._bytes

    def numpy(self) -> np.ndarray:
        """A fresh numpy array with the tensor's dtype and shape (ours)."""
        return self._as_array(self._raw())

    def _as_array(self, raw: np.ndarray | None) -> np.ndarray:
        shape = tuple(self._desc._shape)
        np_dtype = numpy_dtype(self._desc._data_type)
        if raw is None:
            return np.zeros((0,), dtype=np_dtype)
        if any(d < 0 for d in shape):
            raise GeValueError(
                f"Tensor shape {list(shape)} has unknown dims, so its {raw.size} bytes cannot "
                f"be read as an array; set a known shape first"
            )
        need = _element_count(shape) * np_dtype.itemsize
        if raw.size < need:
            raise GeValueError(
                f"Tensor holds {raw.size} bytes, but shape {list(shape)} of "
                f"{self._desc.get_data_type().name} needs {need}"
            )
        array: np.ndarray = raw[:need].view(np_dtype).reshape(shape).copy()
        return array

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def get_data(self) -> Any:
        """Data as GE-PY returns it: nested lists shaped by ``shape``, a number for a scalar.

        As GE-PY, it parses GE's C text of the elements (GE_ERRORS.md §2.3): floats come back
        through six decimals (``0.1`` reads ``0.1``, ``1e-7`` reads ``0.0``); an empty tensor,
        a dtype GE does not print (bf16, complex, ...) and a DT_BOOL tensor (``true``) raise
        ``ValueError``, as does an element count that does not match the shape. ``numpy()``
        (ours) reads every tensor exactly.
        """
        from ge.graph._readable import tensor_elements  # noqa: PLC0415  (it imports us)

        items = tensor_elements(self)
        if isinstance(items, str):
            raise GeValueError(f"Input must start with '[' and end with ']' (GE's text: {items})")
        values = [_parse_item(item) for item in items]
        shape = list(self._desc._shape)
        if not shape:
            if len(values) != 1:
                raise GeValueError(
                    f"Scalar tensor should contain exactly one element, got {len(values)}"
                )
            return values[0]
        size = _element_count(shape)
        if len(values) != size:
            raise GeValueError(f"Length of list {len(values)} does not match shape {size}")
        nested: list[Any] = np.array(values, dtype=object).reshape(shape).tolist()
        return nested

    data = property(get_data)

    # --- placement -----------------------------------------------------------------------------
    def to_device(self) -> Self:
        """Move the data into device memory. Only from the host (``ValueError`` otherwise)."""
        self._check_not_donated()
        if self._placement != Placement.PLACEMENT_HOST:
            raise GeValueError("to_device() only supports host tensors: this one is on the device")
        raw = self._bytes if self._bytes is not None else np.zeros(0, np.uint8)
        memory = device_memory()
        try:
            addr, generation = memory.allocate(int(raw.size), owner="ge.graph.Tensor")
        except DeviceMemoryError as e:
            raise GeError(
                f"Failed to move tensor from host to device, ret={_NO_RET}: cannot allocate "
                f"{raw.size} bytes of device memory: {e}"
            ) from None
        memory.view(addr, int(raw.size))[:] = raw
        self._device_addr = addr
        self._device_nbytes = int(raw.size)
        self._finalizer = weakref.finalize(self, _free_device_block, memory, addr, generation)
        self._bytes = None
        self._placement = Placement.PLACEMENT_DEVICE
        return self

    def to_host(self) -> Self:
        """Copy the data back to host memory and free the device copy (``ValueError`` on host)."""
        self._check_not_donated()
        if self._placement != Placement.PLACEMENT_DEVICE:
            raise GeValueError("to_host() only supports device tensors: this one is on the host")
        try:
            self._bytes = self._raw()
        except GeError as e:
            raise GeError(
                f"Failed to move tensor from device to host, ret={_NO_RET}: {e}"
            ) from None
        if self._finalizer is not None:
            self._finalizer()  # frees the device memory exactly once
        self._finalizer = None
        self._device_addr = None
        self._device_nbytes = 0
        self._placement = Placement.PLACEMENT_HOST
        return self

    # --- donation (ge.jit's donate_argnums) -------------------------------------------------------
    def _donate(self, to: str) -> Callable[[], None] | None:
        """Give the data up to ``to`` (a ``ge.jit`` call): every later use of this tensor
        raises an error naming it. Returns the function that frees the device memory, which
        the caller now owns (``None`` for host data, or memory ge does not own)."""
        self._check_not_donated()
        release: Callable[[], None] | None = None
        if self._finalizer is not None:
            detached = self._finalizer.detach()
            if detached is not None:
                _, func, args, kwargs = detached
                release = functools.partial(func, *args, **kwargs)
        self._finalizer = None
        self._device_addr = None
        self._device_nbytes = 0
        self._bytes = None
        self._donated = to
        return release

    def _check_not_donated(self) -> None:
        if self._donated is not None:
            raise GeError(
                f"this Tensor was donated to {self._donated}: its memory now holds that "
                f"call's results, so it cannot be used again; use the results instead"
            )

    # --- helpers for the IR --------------------------------------------------------------------
    def _host_bytes(self) -> bytes:
        raw = self._raw()
        return b"" if raw is None else raw.tobytes()

    @classmethod
    def _from_parts(cls, desc: TensorDesc, raw: bytes) -> Tensor:
        """A host tensor holding ``raw`` under ``desc`` (used by the AIR reader)."""
        return cls._adopt(desc, np.frombuffer(raw, dtype=np.uint8).copy())

    @classmethod
    def _adopt(
        cls, desc: TensorDesc, raw: np.ndarray, release: Callable[[], None] | None = None
    ) -> Tensor:
        """A host tensor that takes ``raw`` (uint8, owned by nobody else) without copying;
        ``release()`` runs when the tensor is collected (a pooled block going back: the
        tensor never hands ``raw`` itself out, only copies). ``desc`` is shared, not copied:
        a tensor never changes its desc in place (its setters put a changed copy in its
        place), so many tensors can share one, such as every result of a compiled output."""
        t = cls.__new__(cls)
        t._desc = desc
        t._placement = Placement.PLACEMENT_HOST
        t._device_addr = None
        t._device_nbytes = 0
        t._finalizer = None
        t._donated = None
        t._release = release
        t._bytes = raw
        return t

    def __del__(self) -> None:
        release = getattr(self, "_release", None)  # unset if __init__ raised early
        if release is not None:
            release()

    @classmethod
    def _on_device(
        cls, desc: TensorDesc, addr: int, nbytes: int, release: Callable[[], None] | None
    ) -> Tensor:
        """A device tensor over ``nbytes`` at ``addr`` (memory ge did not allocate through
        ``to_device``, e.g. an external allocator's block); ``release()`` runs once when the
        tensor is collected or moved to the host."""
        t = cls.__new__(cls)
        t._desc = desc._clone()
        t._placement = Placement.PLACEMENT_DEVICE
        t._bytes = None
        t._device_addr = addr
        t._device_nbytes = nbytes
        t._finalizer = weakref.finalize(t, release) if release is not None else None
        t._donated = None
        t._release = None
        return t

    def _clone(self) -> Tensor:
        raw = self._bytes
        if raw is not None and self._release is None and self._donated is None:
            # Host bytes are never written in place (every change puts new bytes in place), so
            # a copy can share them: made read-only, so that stays true (set only once: the
            # setter costs ~4x the getter, and a builder constant is cloned per Const node).
            flags = raw.flags
            if flags.writeable:
                flags.writeable = False
            return Tensor._adopt(self._desc, raw)
        twin = Tensor._from_parts(self._desc, self._host_bytes())
        if self._bytes is None and self._device_addr is None:
            twin._bytes = None
        if self._placement == Placement.PLACEMENT_DEVICE:
            twin.to_device()
        return twin

    def _same_as(self, other: Tensor) -> bool:
        return (
            self._desc == other._desc
            and self._placement == other._placement
            and self._host_bytes() == other._host_bytes()
        )

    def _preview(self) -> str:
        if self._donated is not None:
            return "<donated>"
        if self._bytes is None and self._device_addr is None:
            return "<empty>"
        try:
            raw = self._raw()
        except GeError:
            return "<freed device memory>"
        try:
            flat = self._as_array(raw).reshape(-1)
        except GeError:
            return f"<{self.nbytes} bytes>"
        items = ", ".join(str(x) for x in flat[:_PREVIEW])
        return f"[{items}{', ...' if flat.size > _PREVIEW else ''}]"

    def __str__(self) -> str:
        """GE-PY's text (GE_ERRORS.md §12.2), enums as integers; raises where ``get_data``
        does (an empty, DT_BOOL or unsupported-dtype tensor). ``repr`` is ours."""
        return (
            f"\n        Tensor format is {int(self.format)},\n"
            f"        data_type is {int(self.data_type)},\n"
            f"        shape is {list(self.shape)},\n"
            f"        data is {self.get_data()}\n        "
        )

    def __repr__(self) -> str:
        return (
            f"Tensor(shape={list(self.shape)}, data_type={self.data_type.name}, "
            f"placement={self._placement.name}, data={self._preview()})"
        )

    def _transfer_ownership_when_pass_as_attr(self, builder: object) -> None:
        """GE-PY's step for a ``Tensor`` given as a tensor attribute of a generated op: from
        then on it belongs to that op's builder (``builder``: it or its name), so giving it
        again, to any op of any builder, is GE's ``RuntimeError``. Decision: ours keeps the
        tensor usable otherwise (GE's C side takes it over); the node holds its own copy.

        >>> t = Tensor([1.0])
        >>> t._transfer_ownership_when_pass_as_attr("g")
        >>> try:
        ...     t._transfer_ownership_when_pass_as_attr("h")
        ... except RuntimeError as e:
        ...     print(e)
        Tensor already has an new owner builder :g, cannot transfer ownership again
        """
        owner = getattr(self, "_owner_builder", None)  # unset on tensors made by _adopt etc.
        if owner is not None:
            raise GeError(
                f"Tensor already has an new owner builder :{owner}, cannot transfer ownership again"
            )
        name = getattr(builder, "name", builder)
        self._owner_builder = name if isinstance(name, str) else str(name)

    def __copy__(self) -> NoReturn:
        raise GeError("Tensor does not support copy")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise GeError("Tensor does not support deepcopy")
