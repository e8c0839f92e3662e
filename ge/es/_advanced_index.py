"""numpy's integer-array ("advanced") indexing of traced values and ES holders.

``gather(x, key)`` is ``x[key]`` for every key numpy calls advanced: one holding an integer
index array (a traced value, a numpy array, a list or a tuple), a boolean mask, mixed with ints,
slices, ``...`` and ``None``. ``coordinates(x, key)`` turns such a key (without ``None``) into
one ``[*result_shape, x.ndim]`` int64 tensor of the coordinates of every selected element, in
numpy's order; reading is ``GatherNd(x, coords)`` and writing ``TensorScatterUpdate(x, coords,
v)`` (``ge.es._inplace``).

numpy's rules, followed here: the index arrays and ints broadcast together (ints count as 0-d
index arrays once an array is present); the broadcast dims replace the indexed dims where they
are adjacent in the key, and go first otherwise (``None`` and slices separate them); slices keep
their dims; ``None`` adds a dim of 1; negative indices count from the end; a constant boolean
mask of ``k`` dims stands for its ``k`` ``np.nonzero`` index arrays (its shape must match the
dims it indexes). Decisions:

* A key with exactly one index array and slices elsewhere is one ``GatherV2`` (after the
  slices' ``StridedSlice``); every other key, and one selecting nothing (a ``GatherV2`` with
  an empty output fails in the runtime today), is one ``GatherNd``.
* Constant indices are checked while building: one out of range is a ``GeValueError`` with
  numpy's ``IndexError`` text ("index 7 is out of bounds for axis 1 with size 4"), as are
  numpy's other index errors (too many indices, arrays that do not broadcast, a mask of the
  wrong shape). A traced index out of range after the wrap is refused when the graph runs
  (``GeValueError`` from GatherV2 / GatherNd / TensorScatterUpdate naming the bad value), as
  numpy's ``IndexError`` — never a stray read or write.
* A *traced* boolean mask (``x[x > 0]``) selects a number of elements only known when the graph
  runs: reading with it is a ``GeValueError`` suggesting ``np.where(mask, x, fill)``. A boolean
  scalar index (``x[True]``) is a ``GeTypeError`` (use ``x[None]``).
* ``coordinates`` (the setitem path) takes ``None`` too: the selection has numpy's size-1
  dims there, and the value broadcasts to it as numpy's setitem does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeTypeError, GeValueError

if TYPE_CHECKING:
    from ge.es.tensor_holder import TensorHolder

__all__ = ["coordinates", "gather", "has_traced_array", "is_advanced"]


def _holder_type() -> type[TensorHolder]:
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415  (it imports us, indirectly)

    return TensorHolder


def has_traced_array(key: Any) -> bool:
    """Whether ``key`` (a tuple or one item) holds a traced value."""
    holder = _holder_type()
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, holder) for k in items)


def _is_advanced_item(item: Any) -> bool:
    return isinstance(item, (_holder_type(), np.ndarray, list, tuple, bool, np.bool_))


def is_advanced(items: tuple[Any, ...]) -> bool:
    """Whether numpy indexes with ``items`` (a key as a tuple) by its advanced rules: an item
    is a traced value, an array, a list or tuple (an array), or a boolean."""
    return any(_is_advanced_item(item) for item in items)


def _is_bool(item: Any) -> bool:
    if isinstance(item, _holder_type()):
        return bool(item.dtype == np.bool_)
    return isinstance(item, (bool, np.bool_)) or (
        isinstance(item, (np.ndarray, list, tuple)) and np.asarray(item).dtype == np.bool_
    )


def _const_array(item: Any) -> np.ndarray:
    """A constant index item as an int64 array (numpy's rule: integers only)."""
    array = np.asarray(item)
    if array.size and array.dtype.kind not in "iuO":
        raise GeTypeError(
            f"arrays used as indices must be of integer (or boolean) type, got {array.dtype}: "
            f"{item!r}"
        )
    try:
        return np.asarray(array, dtype=np.int64)  # an object array: Python ints, or not
    except OverflowError:
        raise GeValueError(f"an index array must hold int64 values, got {item!r}") from None
    except (TypeError, ValueError):
        raise GeTypeError(f"an index array must hold integers, got {item!r}") from None


def _dims_taken(item: Any) -> int:
    """How many dims of ``x`` an item (not ``...`` or ``None``) indexes."""
    if _is_bool(item) and not isinstance(item, (bool, np.bool_)):
        return item.ndim if isinstance(item, _holder_type()) else int(np.ndim(item))
    return 1


def _mask_arrays(x: TensorHolder, mask: Any, first: int) -> list[np.ndarray]:
    """A boolean mask indexing dims ``first...`` of ``x`` as numpy's ``np.nonzero`` arrays."""
    if isinstance(mask, _holder_type()):
        raise GeValueError(
            f"x[mask] with a traced boolean mask of {x!r}: the number of selected elements "
            f"depends on the mask's values, only known when the graph runs; use "
            f"np.where(mask, x, fill) to keep the shape"
        )
    if isinstance(mask, (bool, np.bool_)) or np.ndim(mask) == 0:
        raise GeTypeError(f"a boolean scalar index ({mask!r}) is not supported; use x[None]")
    array = np.asarray(mask)
    for k, (got, size) in enumerate(zip(array.shape, x.shape[first:], strict=False)):
        if got != size:
            raise GeValueError(
                f"boolean index did not match indexed array along axis {first + k}; size of "
                f"axis is {size} but size of corresponding boolean axis is {got}"
            )
    return [a.astype(np.int64) for a in np.nonzero(array)]


def _check_count(key: tuple[Any, ...], ndim: int) -> int:
    """How many dims ``key`` indexes; numpy's error when more than ``ndim``."""
    taken = sum(_dims_taken(k) for k in key if k is not Ellipsis and k is not None)
    if taken > ndim:
        raise GeValueError(
            f"too many indices for array: array is {ndim}-dimensional, but {taken} were indexed"
        )
    return taken


def _expand(key: tuple[Any, ...], x: TensorHolder) -> list[Any]:
    """``key`` with ``...`` expanded, masks replaced by their index arrays and missing
    trailing dims filled with ``:``: one item per dim of ``x``."""
    if any(k is None for k in key):  # (callers widen ``x`` first: ``_new_axes``)
        raise GeTypeError(f"indexing {x!r} with an index array: unexpected None in {key!r}")
    ndim = len(x.shape)
    if sum(k is Ellipsis for k in key) > 1:
        raise GeValueError("an index can only have a single ellipsis ('...')")
    taken = _check_count(key, ndim)
    items: list[Any] = []
    for k in key:
        if k is Ellipsis:
            items += [slice(None)] * (ndim - taken)
        elif _is_bool(k):
            items += _mask_arrays(x, k, len(items))
        else:
            items.append(k)
    return items + [slice(None)] * (ndim - len(items))


def _index_holder(x: TensorHolder, item: Any, axis: int, wrap: bool = True) -> TensorHolder:
    """``item`` as an int64 index array into ``axis`` of ``x``, negatives wrapped: a traced one
    by a ``SelectV2`` (unless not ``wrap``), a constant one checked here (numpy's
    ``IndexError`` text)."""
    size = x.shape[axis]
    if isinstance(item, _holder_type()):
        value = x._operand(item)
        if value.dtype.kind not in "iu":
            raise GeTypeError(
                f"arrays used as indices must be of integer (or boolean) type, got "
                f"{value.dtype} ({item!r})"
            )
        value = value.astype(np.int64)
        return _wrapped(value, size) if wrap else value
    if isinstance(item, (bool, np.bool_)) or not isinstance(
        item, (int, np.integer, np.ndarray, list, tuple)
    ):
        raise GeTypeError(f"unsupported index {item!r}: use ints, slices, None, ... or arrays")
    array = _const_array(item)
    bad = (array < -size) | (array >= size)
    if bad.any():
        raise GeValueError(
            f"index {int(array[bad].reshape(-1)[0])} is out of bounds for axis {axis} with "
            f"size {size}"
        )
    return x._operand(np.where(array < 0, array + size, array))


def _wrapped(value: TensorHolder, size: int) -> TensorHolder:
    """A traced index array with its negative indices counted from the end of ``size``."""
    return value._op("SelectV2", value < 0, value + size, value)


def _known_shape(x: TensorHolder) -> tuple[int, ...]:
    shape = tuple(x.shape)
    if any(d < 0 for d in shape):
        raise GeValueError(f"indexing {x!r} with an index array needs a known shape")
    return shape


def _prepare(
    x: TensorHolder, key: Any, wrap: bool = True
) -> tuple[list[Any], dict[int, TensorHolder]]:
    """The key's items, one per dim (slices, or index items), and its index arrays by dim."""
    _known_shape(x)
    items = _expand(key if isinstance(key, tuple) else (key,), x)
    if any(item is Ellipsis or item is None for item in items):
        raise GeTypeError(f"unsupported index {key!r}")
    arrays = {
        k: _index_holder(x, item, k, wrap) for k, item in enumerate(items) if not _is_slice(item)
    }
    return items, arrays


def _is_slice(item: Any) -> bool:
    return isinstance(item, slice)


def _broadcast_shape(arrays: dict[int, TensorHolder]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*(tuple(a.shape) for a in arrays.values())))
    except ValueError:
        shapes = " ".join(str(tuple(a.shape)) for a in arrays.values())
        raise GeValueError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}"
        ) from None


def coordinates(x: TensorHolder, key: Any) -> TensorHolder:
    """The ``[*result_shape, x.ndim]`` int64 coordinates ``x[key]`` selects (``None`` in
    ``key``: numpy's size-1 dims in ``result_shape``)."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(k is None for k in items):
        prepared, arrays = _prepare(x, items)
        return _coordinates(x, prepared, arrays)
    widened, widened_key = _new_axes(x, items)
    prepared, arrays = _prepare(widened, widened_key)
    coords = _coordinates(widened, prepared, arrays)
    if 0 in coords.shape:
        return x._operand(np.zeros([*coords.shape[:-1], len(x.shape)], np.int64))
    new = _new_axis_dims(items, len(x.shape))
    keep = np.asarray([d for d in range(len(widened.shape)) if d not in new], np.int64)
    last = coords.ndim - 1  # drop the new axes' coordinates (always 0)
    return coords._op("GatherV2", coords, x._operand(keep), coords._ints([last]), attrs={})


def _new_axis_dims(key: tuple[Any, ...], ndim: int) -> list[int]:
    """The dims ``None`` adds, as dims of ``x[key's None and ...]``."""
    taken = _check_count(key, ndim)
    dims: list[int] = []
    at = 0
    for k in key:
        if k is None:
            dims.append(at)
            at += 1
        else:
            at += ndim - taken if k is Ellipsis else _dims_taken(k)
    return dims


def _coordinates(
    x: TensorHolder, items: list[Any], arrays: dict[int, TensorHolder]
) -> TensorHolder:
    shape = tuple(x.shape)
    advanced = sorted(arrays)
    adv_shape = _broadcast_shape(arrays)
    ranges = {k: range(*items[k].indices(shape[k])) for k in range(len(shape)) if k not in arrays}
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    at = advanced[0] if adjacent else 0
    # result dims: the sliced dims before the broadcast block, the block, the other slices
    before = [k for k in ranges if k < at] if adjacent else []
    after = [k for k in ranges if k not in before]
    out_shape = [len(ranges[k]) for k in before] + list(adv_shape) + [len(ranges[k]) for k in after]
    lead, nadv = len(before), len(adv_shape)
    if 0 in out_shape:  # nothing selected: no coordinates to build (nor kernels to run)
        return x._operand(np.zeros([*out_shape, len(shape)], np.int64))
    parts = []
    for k in range(len(shape)):
        if k in arrays:
            a = arrays[k]
            a = a.reshape([*([1] * (nadv - a.ndim)), *a.shape]) if a.ndim != nadv else a
            view = [1] * lead + list(a.shape) + [1] * len(after)
            coord = a.reshape(view) if view != list(a.shape) else a
        else:
            pos = before.index(k) if k in before else lead + nadv + after.index(k)
            view = [1] * len(out_shape)
            view[pos] = len(ranges[k])
            coord = x._operand(np.asarray(list(ranges[k]), np.int64).reshape(view))
        if list(coord.shape) != out_shape:
            coord = coord._op("BroadcastTo", coord, coord._ints(out_shape))
        parts.append(coord.reshape([*out_shape, 1]))
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    return first._op("ConcatV2", parts, first._ints([len(out_shape)]), attrs={"N": len(parts)})


def _new_axes(x: TensorHolder, key: tuple[Any, ...]) -> tuple[TensorHolder, tuple[Any, ...]]:
    """``x`` with the new axes ``None`` asks for, and ``key`` indexing it (``None`` -> ``:``):
    numpy's result, as ``None`` counts as a slice between advanced indices."""
    if not any(k is None for k in key):
        return x, key
    from ge.es.tensor_holder import _index  # noqa: PLC0415  (it imports us)

    _check_count(key, len(x.shape))
    spread: list[Any] = []
    for k in key:  # a mask of ``k`` dims stands for ``k`` slices
        spread += [k] if k is None or k is Ellipsis else [slice(None)] * _dims_taken(k)
    return _index(x, tuple(spread)), tuple(slice(None) if k is None else k for k in key)


def gather(x: TensorHolder, key: Any) -> TensorHolder:
    """``x[key]`` for a key numpy calls advanced (see the module docstring)."""
    x, items_key = _new_axes(x, key if isinstance(key, tuple) else (key,))
    items, arrays = _prepare(x, items_key, wrap=False)  # GatherV2 counts negatives itself
    if len(arrays) == 1:
        ((axis, indices),) = arrays.items()
        if 0 not in indices.shape and 0 not in x.shape:  # (an empty GatherV2 fails to run)
            return _gather_one(x, items, axis, indices)
    holder = _holder_type()
    for k, item in enumerate(items):
        if isinstance(item, holder):
            arrays[k] = _wrapped(arrays[k], x.shape[k])
    return x._op("GatherNd", x, _coordinates(x, items, arrays))


def _gather_one(
    x: TensorHolder, items: list[Any], axis: int, indices: TensorHolder
) -> TensorHolder:
    """One index array and slices: the slices' ``StridedSlice``, then one ``GatherV2``."""
    from ge.es.tensor_holder import _index  # noqa: PLC0415  (it imports us)

    slices = tuple(slice(None) if k == axis else item for k, item in enumerate(items))
    if any(s != slice(None) for s in slices):
        x = _index(x, slices)
    # negatives count from the end (constants are wrapped already); a traced index out of
    # range is GatherV2's error when the graph runs, naming numpy's range [-size, size)
    attrs = {"negative_index_support": True}
    return x._op("GatherV2", x, indices, x._ints([axis]), attrs=attrs)
