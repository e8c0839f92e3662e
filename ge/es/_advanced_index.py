"""numpy's integer-array ("advanced") indexing of traced values with *traced* index arrays.

``coordinates(x, key)`` turns a key of ints, slices, ``...`` and integer index arrays (traced
values or constants; at least one traced) into one traced ``[*result_shape, x.ndim]`` int64
tensor of the coordinates of every selected element, in numpy's order. Reading is then
``GatherNd(x, coords)`` (``gather``) and writing ``TensorScatterUpdate(x, coords, v)``
(``ge.es._inplace``).

numpy's rules, followed here: the index arrays and ints broadcast together (ints count as
0-d index arrays once an array is present); the broadcast dims replace the indexed dims where
they are adjacent in the key, and go first otherwise; slices keep their dims; negative indices
count from the end. Decisions: ``None`` (new axes) and boolean arrays are not supported in such
a key (``GeTypeError``); an index still out of range after the wrap is refused when the graph
runs (``GeValueError`` from GatherNd / TensorScatterUpdate naming the bad value), as numpy's
``IndexError`` — never a stray read or write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeTypeError, GeValueError

if TYPE_CHECKING:
    from ge.es.tensor_holder import TensorHolder

__all__ = ["coordinates", "gather", "has_traced_array"]


def _holder_type() -> type[TensorHolder]:
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415  (it imports us, indirectly)

    return TensorHolder


def has_traced_array(key: Any) -> bool:
    """Whether ``key`` (a tuple or one item) holds a traced value."""
    holder = _holder_type()
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, holder) for k in items)


def _is_array(item: Any) -> bool:
    return isinstance(item, (_holder_type(), np.ndarray, list)) or (
        isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))
    )


def _expand(key: tuple[Any, ...], ndim: int, x: TensorHolder) -> list[Any]:
    """``key`` with ``...`` expanded and missing trailing dims filled with ``:``."""
    if any(k is None for k in key):
        raise GeTypeError(f"indexing {x!r} with a traced index array does not take None: {key!r}")
    ellipses = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(ellipses) > 1:
        raise GeValueError("an index can only have a single ellipsis ('...')")
    items = list(key)
    if ellipses:
        at = ellipses[0]
        items[at : at + 1] = [slice(None)] * (ndim - len(key) + 1)
    if len(items) > ndim:
        raise GeValueError(
            f"too many indices for {x!r}: it is {ndim}-dimensional, but {len(items)} were indexed"
        )
    return items + [slice(None)] * (ndim - len(items))


def _index_holder(x: TensorHolder, item: Any, size: int) -> TensorHolder:
    """``item`` as a traced int64 index array into a dim of ``size``, negatives wrapped."""
    holder = _holder_type()
    if isinstance(item, holder):
        value = x._operand(item)
        if value.dtype.kind not in "iu":
            raise GeTypeError(
                f"arrays used as indices must be of integer type, got {value.dtype} ({item!r})"
            )
        value = value.astype(np.int64)
        return value._op("SelectV2", value < 0, value + size, value)
    array = np.asarray(item)
    if array.size and array.dtype.kind not in "iu":
        raise GeTypeError(f"arrays used as indices must be of integer type, got {array.dtype}")
    array = array.astype(np.int64)
    bad = (array < -size) | (array >= size)
    if bad.any():
        raise GeValueError(
            f"index {int(array[bad].reshape(-1)[0])} is out of bounds for axis with size {size}"
        )
    return x._operand(np.where(array < 0, array + size, array))


def coordinates(x: TensorHolder, key: Any) -> TensorHolder:
    """The traced ``[*result_shape, x.ndim]`` int64 coordinates ``x[key]`` selects."""
    shape = tuple(x.shape)
    if any(d < 0 for d in shape):
        raise GeValueError(f"indexing {x!r} with a traced index array needs a known shape")
    items = _expand(key if isinstance(key, tuple) else (key,), len(shape), x)
    advanced = [k for k, item in enumerate(items) if _is_array(item)]
    if not all(_is_array(i) or isinstance(i, slice) for i in items):
        raise GeTypeError(
            f"unsupported index {key!r}: with a traced index array use ints, slices, ... and "
            f"integer arrays"
        )
    arrays = {k: _index_holder(x, items[k], shape[k]) for k in advanced}
    try:
        adv_shape = tuple(np.broadcast_shapes(*(tuple(a.shape) for a in arrays.values())))
    except ValueError:
        shapes = " ".join(str(tuple(a.shape)) for a in arrays.values())
        raise GeValueError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}"
        ) from None
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


def gather(x: TensorHolder, key: Any) -> TensorHolder:
    """``x[key]`` with a traced integer index array in ``key`` (``GatherNd``)."""
    coords = coordinates(x, key)
    return x._op("GatherNd", x, coords)
