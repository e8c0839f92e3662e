"""numpy's shape and data-movement functions on traced values (``np.swapaxes``, ``np.flip``,
``np.pad``, ``np.diagonal``, ...), registered into ``_numpy_api``'s table.

Decisions where numpy is silent or a graph cannot follow it:

- ``flip`` builds ``ReverseV2`` (one node); ``roll``/``split`` build ``StridedSlice``/
  ``ConcatV2``; ``diagonal`` builds ``GatherV2`` with constant indices; ``triu``/``tril`` a
  constant mask and ``SelectV2``.
- ``concatenate``/``stack`` honour numpy's ``dtype=`` and ``casting=`` (a cast numpy's rule
  forbids raises its message as ``GeTypeError``); inside ``ge.jit`` the parts join in numpy's
  result type, an ES holder keeps GE-PY's rule (no cast). ``out=`` is refused.
  ``axis=None`` joins the flattened parts (``concatenate``).
- ``reshape`` takes ``order='C'`` only (``'F'``/``'A'`` would read the elements in another
  order, which a C-ordered traced value does not have) and ``copy=`` (every graph result is
  a new value, so ``copy`` changes nothing).
- ``pad`` supports ``mode='constant'`` (with ``constant_values``), ``'edge'``, ``'reflect'`` and
  ``'symmetric'`` (``reflect_type='even'``; ``MirrorPad`` where every pad fits one reflection,
  else per-axis ``GatherV2`` of the positions numpy's ``np.pad`` picks, so pads larger than
  the axis repeat the reflection exactly as numpy does) and ``'wrap'`` (slices joined by
  ``ConcatV2`` within one period, the gather beyond).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es import _numpy_rules
from ge.es._numpy_common import (
    FUNCTIONS,
    Rule,
    _axes,
    _axis,
    _cast_to,
    _check_order,
    _concatenate,
    _dtype_arg,
    _gather,
    _h,
    _known,
    _reshape,
    _slice,
    _transpose,
    rule_registrar,
)
from ge.es.tensor_holder import TensorHolder, innermost

__all__: list[str] = []  # the rules register into _numpy_common.FUNCTIONS

_register = rule_registrar(FUNCTIONS)


# --- shape manipulation --------------------------------------------------------------------------
@_register("swapaxes")
def _swapaxes(anchor: TensorHolder, a: Any, axis1: int, axis2: int) -> TensorHolder:
    x = _h(anchor, a)
    i, j = _axis(axis1, x.ndim, "swapaxes"), _axis(axis2, x.ndim, "swapaxes")
    perm = list(range(x.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose(x, perm)


@_register("moveaxis")
def _moveaxis(anchor: TensorHolder, a: Any, source: Any, destination: Any) -> TensorHolder:
    x = _h(anchor, a)
    src = _axes(source, x.ndim, "moveaxis")
    dst = _axes(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise GeValueError(
            "np.moveaxis: source and destination must have the same number of elements, "
            f"got {len(src)} and {len(dst)}"
        )
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return _transpose(x, order)


@_register("ravel")
def _ravel(anchor: TensorHolder, a: Any, order: str = "C") -> TensorHolder:
    if order != "C":
        raise GeValueError(f"np.ravel of a traced value supports order='C' only, got {order!r}")
    return _reshape(_h(anchor, a), [-1])


@_register("flip")
def _flip(anchor: TensorHolder, m: Any, axis: Any = None) -> TensorHolder:
    x = _h(anchor, m)
    axes = _axes(axis, x.ndim, "flip")
    if not axes:
        return x
    return x._op("ReverseV2", x, x._ints(axes))


@_register("fliplr")
def _fliplr(anchor: TensorHolder, m: Any) -> TensorHolder:
    x = _h(anchor, m)
    if x.ndim < 2:
        raise GeValueError(f"np.fliplr: the input must be >= 2-d, got {x.ndim}-d")
    return _flip(x, x, 1)


@_register("flipud")
def _flipud(anchor: TensorHolder, m: Any) -> TensorHolder:
    x = _h(anchor, m)
    if x.ndim < 1:
        raise GeValueError("np.flipud: the input must be >= 1-d, got 0-d")
    return _flip(x, x, 0)


@_register("roll")
def _roll(anchor: TensorHolder, a: Any, shift: Any, axis: Any = None) -> TensorHolder:
    x = _h(anchor, a)
    if axis is None:
        shape = _known(x, "roll")
        return _reshape(_roll(x, _reshape(x, [-1]), shift, 0), shape)
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    shifts = list(shift) if isinstance(shift, (list, tuple)) else [shift] * len(axes)
    if len(shifts) != len(axes):
        raise GeValueError(
            f"np.roll: shift and axis must match, got {len(shifts)} shifts for {len(axes)} axes"
        )
    shape = _known(x, "roll")
    for ax, s in zip(axes, shifts, strict=True):
        n = _axis(ax, x.ndim, "roll")
        size = shape[n]
        k = int(s) % size if size else 0
        if k:
            x = _concatenate(x, [_slice(x, n, size - k, size), _slice(x, n, 0, size - k)], n)
    return x


def _atleast(x: TensorHolder, n: int) -> TensorHolder:
    """numpy's atleast_{n}d: 0-d -> (1,)*n; 1-d (k,) -> (1, k) or (1, k, 1); 2-d -> (r, c, 1)."""
    shape = list(_known(x, f"atleast_{n}d"))
    if x.ndim >= n:
        return x
    if x.ndim == 0:
        return _reshape(x, [1] * n)
    if n == 2:
        return _reshape(x, [1, *shape])
    return _reshape(x, [1, *shape, 1] if x.ndim == 1 else [*shape, 1])


def _atleast_rule(n: int) -> Rule:
    def rule(anchor: TensorHolder, *arys: Any) -> Any:
        out = [_atleast(_h(anchor, a), n) for a in arys]
        return out[0] if len(out) == 1 else tuple(out)

    return rule


for _n in (1, 2, 3):
    _register(f"atleast_{_n}d")(_atleast_rule(_n))


def _sequence(anchor: TensorHolder, tup: Any, what: str) -> list[TensorHolder]:
    if not isinstance(tup, (list, tuple)) or not tup:
        raise GeValueError(f"np.{what} needs a non-empty sequence of arrays, got {tup!r}")
    return [_h(anchor, t) for t in tup]


@_register("hstack")
def _hstack(anchor: TensorHolder, tup: Any, dtype: Any = None) -> TensorHolder:
    parts = [_atleast(p, 1) for p in _sequence(anchor, tup, "hstack")]
    out = _concatenate(anchor, parts, 0 if parts[0].ndim == 1 else 1)
    return out if dtype is None else out.astype(dtype)


@_register("vstack", "row_stack")
def _vstack(anchor: TensorHolder, tup: Any, dtype: Any = None) -> TensorHolder:
    parts = [_atleast(p, 2) for p in _sequence(anchor, tup, "vstack")]
    out = _concatenate(anchor, parts, 0)
    return out if dtype is None else out.astype(dtype)


@_register("dstack")
def _dstack(anchor: TensorHolder, tup: Any) -> TensorHolder:
    return _concatenate(anchor, [_atleast(p, 3) for p in _sequence(anchor, tup, "dstack")], 2)


@_register("column_stack")
def _column_stack(anchor: TensorHolder, tup: Any) -> TensorHolder:
    parts = []
    for p in _sequence(anchor, tup, "column_stack"):
        parts.append(_reshape(p, [_known(p, "column_stack")[0], 1]) if p.ndim < 2 else p)
    return _concatenate(anchor, parts, 1)


def _split_rule(strict: bool) -> Rule:
    what = "split" if strict else "array_split"

    def rule(anchor: TensorHolder, ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
        x = _h(anchor, ary)
        n = _axis(axis, x.ndim, what)
        size = _known(x, what)[n]
        if isinstance(indices_or_sections, (list, tuple, np.ndarray)):
            bounds = [int(i) for i in indices_or_sections]
            starts = [0, *bounds]
            stops = [*bounds, size]
        else:
            sections = int(indices_or_sections)
            if sections <= 0:
                raise GeValueError(f"np.{what}: number of sections must be > 0, got {sections}")
            if strict and size % sections:
                raise GeValueError("np.split: array split does not result in an equal division")
            each, extra = divmod(size, sections)
            sizes = [each + 1] * extra + [each] * (sections - extra)
            starts = [sum(sizes[:i]) for i in range(sections)]
            stops = [s + z for s, z in zip(starts, sizes, strict=True)]
        return [_slice(x, n, s, e) for s, e in zip(starts, stops, strict=True)]

    return rule


_register("split")(_split_rule(True))
_register("array_split")(_split_rule(False))


@_register("repeat")
def _repeat(anchor: TensorHolder, a: Any, repeats: Any, axis: Any = None) -> TensorHolder:
    x = _h(anchor, a)
    if axis is None:
        x, n = _reshape(x, [-1]), 0
    else:
        n = _axis(axis, x.ndim, "repeat")
    shape = _known(x, "repeat")
    if isinstance(repeats, TensorHolder):
        raise GeValueError(
            "np.repeat: repeats must be known at trace time (the size depends on it)"
        )
    reps = np.asarray(repeats, dtype=np.int64).reshape(-1)
    if (reps < 0).any():
        raise GeValueError(f"np.repeat: repeats may not be negative, got {repeats!r}")
    if reps.size == 1:
        indices = np.repeat(np.arange(shape[n]), int(reps[0]))
    elif reps.size == shape[n]:
        indices = np.repeat(np.arange(shape[n]), reps)
    else:
        raise GeValueError(
            f"np.repeat: repeats has {reps.size} values for an axis of size {shape[n]}"
        )
    return _gather(x, indices, n)


@_register("pad")
def _pad(
    anchor: TensorHolder, array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any
) -> TensorHolder:
    x = _h(anchor, array)
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    except (TypeError, ValueError) as error:
        raise GeValueError(
            f"np.pad: pad_width {pad_width!r} does not fit an array of {x.ndim} dims: {error}"
        ) from None
    if (widths < 0).any():
        raise GeValueError(f"np.pad: pad_width may not be negative, got {pad_width!r}")
    extra = set(kwargs) - _PAD_KEYWORDS.get(mode, frozenset())
    if extra:
        raise GeTypeError(
            f"np.pad of a traced value with mode={mode!r} does not take {sorted(extra)}"
        )
    if mode == "constant":
        return _pad_constant(x, widths, kwargs.get("constant_values", 0))
    if mode not in _PAD_MODES:
        raise GeValueError(
            f"np.pad of a traced value supports mode 'constant', 'edge', 'reflect', "
            f"'symmetric' or 'wrap', got {mode!r}"
        )
    if kwargs.get("reflect_type", "even") != "even":
        raise GeValueError(
            f"np.pad of a traced value supports reflect_type='even' only, got "
            f"{kwargs['reflect_type']!r}"
        )
    shape = _known(x, "pad")
    pairs = [(int(lo), int(hi)) for lo, hi in widths.tolist()]
    for n, (lo, hi) in enumerate(pairs):
        if (lo or hi) and shape[n] == 0:
            raise GeValueError(
                f"np.pad: can't extend empty axis {n} using modes other than 'constant' or 'empty'"
            )
    slack = _MIRROR_SLACK.get(mode)
    if slack is not None and all(max(p) <= d - slack for d, p in zip(shape, pairs, strict=True)):
        if not any(lo or hi for lo, hi in pairs):
            return x
        return x._op(
            "MirrorPad", x, x._operand(np.asarray(pairs, np.int64)), attrs={"mode": mode.upper()}
        )
    for n, (lo, hi) in enumerate(pairs):
        if lo or hi:
            x = _pad_axis(x, n, shape[n], lo, hi, mode)
    return x


def _pad_constant(x: TensorHolder, widths: np.ndarray, value: Any) -> TensorHolder:
    if np.ndim(value) != 0:
        raise GeValueError("np.pad of a traced value supports a scalar constant_values only")
    y = x._op("Pad", x, x._operand(np.ascontiguousarray(widths)))
    if value == 0:
        return y
    mask = x._op("Pad", x._op("OnesLike", x) > 0, x._operand(np.ascontiguousarray(widths)))
    fill = np.asarray(value).astype(x.dtype)
    return mask._op("SelectV2", mask, y, y._operand(fill))


_PAD_KEYWORDS = {
    "constant": frozenset({"constant_values"}),
    "reflect": frozenset({"reflect_type"}),
    "symmetric": frozenset({"reflect_type"}),
}
# the most a MirrorPad may add on a side: dim - 1 (reflect) or dim (symmetric); numpy reflects
# again past that, which the per-axis gathers of _pad_axis follow
_MIRROR_SLACK = {"reflect": 1, "symmetric": 0}
_PAD_MODES = frozenset({"edge", "reflect", "symmetric", "wrap"})


def _pad_axis(x: TensorHolder, n: int, size: int, lo: int, hi: int, mode: str) -> TensorHolder:
    """Pad axis ``n`` (of ``size``) by ``lo``/``hi`` as numpy's ``mode`` does: ``wrap`` within
    one period as slices joined by ``ConcatV2``; otherwise (``edge``, and pads numpy fills by
    repeated reflection or wrapping) a ``GatherV2`` of the positions numpy's own ``np.pad``
    gives ``np.arange(size)``, so every width follows numpy exactly."""
    if mode == "wrap" and lo <= size and hi <= size:
        parts = [_slice(x, n, size - lo, size)] if lo else []
        parts += [x] + ([_slice(x, n, 0, hi)] if hi else [])
        return _concatenate(x, parts, n)
    index = np.pad(np.arange(size, dtype=np.int64), (lo, hi), mode=mode)  # type: ignore[call-overload]
    return _gather(x, index, n)


def _tri_mask(shape: tuple[int, ...], k: int, upper: bool) -> np.ndarray:
    rows, cols = shape[-2], shape[-1]
    return (
        np.triu(np.ones((rows, cols), bool), k)
        if upper
        else np.tril(np.ones((rows, cols), bool), k)
    )


def _tri_rule(upper: bool) -> Rule:
    what = "triu" if upper else "tril"

    def rule(anchor: TensorHolder, m: Any, k: int = 0) -> TensorHolder:
        x = _h(anchor, m)
        if x.ndim < 2:
            raise GeValueError(f"np.{what} of a traced value needs a >= 2-d input, got {x.ndim}-d")
        mask = x._operand(_tri_mask(_known(x, what), int(k), upper))
        return x._op("SelectV2", mask, x, x._op("ZerosLike", x))

    return rule


_register("triu")(_tri_rule(True))
_register("tril")(_tri_rule(False))


@_register("diagonal")
def _diagonal(
    anchor: TensorHolder, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1
) -> TensorHolder:
    x = _h(anchor, a)
    if x.ndim < 2:
        raise GeValueError(f"np.diagonal: the input must be >= 2-d, got {x.ndim}-d")
    i, j = _axis(axis1, x.ndim, "diagonal"), _axis(axis2, x.ndim, "diagonal")
    if i == j:
        raise GeValueError("np.diagonal: axis1 and axis2 cannot be the same")
    shape = _known(x, "diagonal")
    rows, cols = shape[i], shape[j]
    rest = [n for n in range(x.ndim) if n not in (i, j)]
    moved = _reshape(_transpose(x, [*rest, i, j]), [*(shape[n] for n in rest), rows * cols])
    offset = int(offset)
    r = np.arange(max(0, -offset), rows)
    r = r[r + offset < cols]
    return _gather(moved, r * cols + r + offset, len(rest))


@_register("trace")
def _trace(
    anchor: TensorHolder,
    a: Any,
    offset: int = 0,
    axis1: int = 0,
    axis2: int = 1,
    dtype: Any = None,
) -> TensorHolder:
    d = _diagonal(anchor, a, offset, axis1, axis2)
    return d.sum(axis=-1, dtype=dtype)


@_register("diag")
def _diag(anchor: TensorHolder, v: Any, k: int = 0) -> TensorHolder:
    x = _h(anchor, v)
    if x.ndim == 2:
        return _diagonal(x, x, k)
    if x.ndim != 1:
        raise GeValueError(f"np.diag: the input must be 1-d or 2-d, got {x.ndim}-d")
    n = _known(x, "diag")[0]
    k = int(k)
    size = n + abs(k)
    # Each output element picks a value of x (a zero appended at index n) by a constant index.
    index = np.full((size, size), n, dtype=np.int64)
    r = np.arange(n)
    index[r + max(0, -k), r + max(0, k)] = r
    padded = _concatenate(x, [x, _reshape(x._op("ZerosLike", _slice(x, 0, 0, 1)), [-1])], 0)
    if n == 0:
        padded = x._op("Pad", x, x._ints([0, 1]))
    return _reshape(_gather(padded, index.reshape(-1), 0), [size, size])


# --- joining and reshaping -----------------------------------------------------------------------
def _join_parts(
    anchor: TensorHolder, arrays: Any, dtype: Any, casting: Any, what: str
) -> tuple[TensorHolder, list[TensorHolder]]:
    """The holders to join, in ``dtype`` (checked against ``casting``) or else, inside
    ``ge.jit``, in numpy's result type; also the holder of the innermost graph."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise GeValueError(f"np.{what}: need at least one array to {what}, got {arrays!r}")
    anchor = innermost(anchor, *arrays)
    parts = [_h(anchor, p) for p in arrays]
    target = _dtype_arg(dtype, what)
    if target is None and anchor._builder._numpy_semantics:
        target = _numpy_rules.concat_dtype(parts)  # numpy checks casting against it too
    if target is not None:
        parts = [_cast_to(p, target, casting, what) for p in parts]
    return anchor, parts


def _joined(anchor: TensorHolder, parts: list[TensorHolder], axis: int) -> TensorHolder:
    return anchor._op("ConcatV2", parts, anchor._ints([axis]), attrs={"N": len(parts)})


@_register("concatenate")
def _concatenate_rule(
    anchor: TensorHolder,
    arrays: Any,
    /,
    axis: Any = 0,
    *,
    dtype: Any = None,
    casting: Any = "same_kind",
) -> TensorHolder:
    anchor, parts = _join_parts(anchor, arrays, dtype, casting, "concatenate")
    if axis is None:
        return _joined(anchor, [_reshape(p, [-1]) for p in parts], 0)
    if parts[0].ndim == 0:
        raise GeValueError("np.concatenate: zero-dimensional arrays cannot be concatenated")
    return _joined(anchor, parts, _axis(axis, parts[0].ndim, "concatenate"))


@_register("stack")
def _stack_rule(
    anchor: TensorHolder,
    arrays: Any,
    axis: Any = 0,
    *,
    dtype: Any = None,
    casting: Any = "same_kind",
) -> TensorHolder:
    anchor, parts = _join_parts(anchor, arrays, dtype, casting, "stack")
    if len({p.shape for p in parts}) != 1:
        shapes = ", ".join(str(p.shape) for p in parts)
        raise GeValueError(f"np.stack: all input arrays must have the same shape, got {shapes}")
    n = _axis(axis, parts[0].ndim + 1, "stack")
    return _joined(anchor, [p._op("ExpandDims", p, p._ints([n])) for p in parts], n)


@_register("reshape")
def _reshape_rule(
    anchor: TensorHolder, a: Any, /, shape: Any, order: Any = "C", *, copy: Any = None
) -> TensorHolder:
    _check_order(order, "reshape", ("C",))
    if copy not in (None, True, False):
        raise GeValueError(f"np.reshape: copy must be None, True or False, got {copy!r}")
    dims = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    return _h(anchor, a).reshape(dims)
