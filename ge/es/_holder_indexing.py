"""``TensorHolder``'s indexing: which keys numpy calls basic (one ``StridedSlice``, a view
inside ge.jit) and which advanced (``ge.es._advanced_index``), and the int checks of indexes,
dims and axes.

Decisions: an int index out of range of its (known) dim is a ``GeValueError`` with numpy's
``IndexError`` text while building, never a ``StridedSlice`` that clamps. A key with one int per
dim (numpy's scalar) and any advanced key (a traced index too, even 0-d: numpy's 0-d integer
array index is advanced) give copies; every other basic key gives a view (``is_view_key``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es import _advanced_index

if TYPE_CHECKING:
    from ge.es.tensor_holder import TensorHolder

__all__ = ["reslice"]


def _index(x: TensorHolder, key: tuple[Any, ...]) -> TensorHolder:
    """``x[key]`` (a new holder; views are recorded by ``__getitem__``): a key numpy calls
    advanced goes to ``ge.es._advanced_index.gather``, a basic one is one ``StridedSlice``."""
    if _advanced_index.is_advanced(key):
        return _advanced_index.gather(x, key)
    return _basic_index(x, key)


def _is_view_key(x: TensorHolder, key: tuple[Any, ...]) -> bool:
    """Whether numpy's ``x[key]`` is a view of ``x``: a basic key, except one int per dim
    (numpy's scalar, a copy). A traced index, even 0-d, is an array (numpy's 0-d integer
    array index is advanced): its result is a copy."""
    if _advanced_index.is_advanced(key):
        return False
    ints = all(isinstance(k, (int, np.integer)) for k in key)
    return not (ints and len(key) == x.ndim)


def _check_int_index(x: TensorHolder, key: tuple[Any, ...]) -> None:
    """numpy's ``IndexError`` (a ``GeValueError``) for an int index out of range of its dim."""
    dim = 0
    for k, item in enumerate(key):
        if item is Ellipsis:
            dim = x.ndim - sum(i is not None and i is not Ellipsis for i in key[k + 1 :])
            continue
        if item is None:
            continue
        if isinstance(item, (int, np.integer)) and dim < x.ndim:
            size = x.shape[dim]
            if size >= 0 and not -size <= int(item) < size:
                raise GeValueError(
                    f"index {int(item)} is out of bounds for axis {dim} with size {size}"
                )
        dim += 1


def _basic_index(x: TensorHolder, key: tuple[Any, ...]) -> TensorHolder:
    _check_int_index(x, key)
    begin, end, strides, masks = _slice_spec(key)
    return x._op("StridedSlice", x, x._ints(begin), x._ints(end), x._ints(strides), attrs=masks)


def reslice(x: TensorHolder, like: TensorHolder, key: tuple[Any, ...]) -> TensorHolder:
    """``x[key]`` again for a view ``like`` whose base ``x`` changed: when ``like`` is still
    the ``StridedSlice`` of that basic key, its begin/end/strides constants serve again (one
    node, not four); otherwise ``_index``."""
    node = like._node
    edges = node._in_edges
    if (
        node.type != "StridedSlice"
        or like._port != 0
        or like._builder is not x._builder
        or len(edges) != 4
        or any(edge is None for edge in edges)
        or _advanced_index.is_advanced(key)
    ):
        return _index(x, key)
    masks = _slice_spec(key)[3]
    builder = x._builder
    return builder._holder(builder._add("StridedSlice", [(x._node, x._port), *edges[1:]], masks))


def _slice_spec(key: tuple[Any, ...]) -> tuple[list[int], list[int], list[int], dict[str, int]]:
    """A basic key as ``StridedSlice``'s begin, end, strides and masks."""
    begin, end, strides = [], [], []
    masks = dict.fromkeys(
        ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"), 0
    )
    for i, item in enumerate(key):
        bit = 1 << i
        b, e, s = 0, 0, 1
        if item is Ellipsis:
            masks["ellipsis_mask"] |= bit
        elif item is None:
            masks["new_axis_mask"] |= bit
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            b = _as_int(item, "an index")
            e = b + 1
            masks["shrink_axis_mask"] |= bit
        elif isinstance(item, slice):
            s = 1 if item.step is None else _as_int(item.step, "a slice step")
            if item.start is None:
                masks["begin_mask"] |= bit
            else:
                b = _as_int(item.start, "a slice start")
            if item.stop is None:
                masks["end_mask"] |= bit
            else:
                e = _as_int(item.stop, "a slice stop")
        else:
            raise GeTypeError(
                f"unsupported index {item!r}: use ints, slices, None, ..., integer arrays or "
                f"boolean masks"
            )
        begin.append(b)
        end.append(e)
        strides.append(s)
    return begin, end, strides, masks


def _as_int(value: Any, what: str) -> int:
    """``value`` as an int64 (numpy's index rule: ints only, no floats or bools)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise GeTypeError(f"{what} must be an int, got {value!r} ({type(value).__name__})")
    if not -(1 << 63) <= int(value) < 1 << 63:
        raise GeValueError(f"{what} must fit int64, got {value}")
    return int(value)
