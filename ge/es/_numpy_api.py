"""numpy functions on traced values built from existing ops (``np.swapaxes``, ``np.flip``, ...).

``FUNCTIONS`` maps a numpy function's ``__name__`` to a rule ``rule(anchor, *args, **kwargs)``
(``anchor`` is a TensorHolder among the arguments); ``TensorHolder.__array_function__`` looks
rules up here after its own table.

Every rule gives numpy's result shape and dtype (inside ``ge.jit`` its arithmetic follows
numpy's NEP 50 rules through the holders' operators). Decisions where numpy is silent or a
graph cannot follow it:

- A keyword numpy takes but a rule does not (``out=``, ``where=``, ``casting=``, ...) raises
  ``GeTypeError`` naming it; a bad axis raises ``GeValueError`` naming the axis and the rank.
- Shapes must be known at trace time (every rule reads ``holder.shape``); functions whose
  output size depends on values (``np.where(cond)``, ``np.nonzero``, ``np.unique``) raise
  ``GeValueError`` saying so.
- ``flip`` builds ``ReverseV2`` (one node); ``roll``/``split`` build ``StridedSlice``/
  ``ConcatV2``; ``diagonal``/``take`` build ``GatherV2`` with constant indices;
  ``triu``/``tril`` a constant mask and ``SelectV2``;
  ``einsum`` broadcasts every operand to one axis order, multiplies and ``ReduceSum``s (no
  contraction-order optimisation, so large contractions use more memory than numpy's).
- ``np.linalg.norm`` (dispatched by its ``__name__`` ``"norm"``) supports ``ord`` None, 'fro',
  1, 2 (vectors only), inf, -inf; a matrix ``ord=2``/'nuc' needs an SVD and raises.
- ``pad`` supports ``mode='constant'`` (with ``constant_values``), ``'edge'``, ``'reflect'`` and
  ``'symmetric'`` (``reflect_type='even'``; ``MirrorPad`` where every pad fits one reflection,
  else per-axis ``GatherV2`` of the positions numpy's ``np.pad`` picks, so pads larger than
  the axis repeat the reflection exactly as numpy does) and ``'wrap'`` (slices joined by
  ``ConcatV2`` within one period, the gather beyond).
- ``empty_like`` gives zeros (a graph has no uninitialised memory).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es.tensor_holder import TensorHolder, _index, innermost

__all__ = ["FUNCTIONS"]

FUNCTIONS: dict[str, Callable[..., Any]] = {}

Rule = Callable[..., Any]
F = TypeVar("F", bound=Rule)


def rule_registrar(table: dict[str, Rule]) -> Callable[..., Callable[[F], F]]:
    """A decorator factory registering rules into ``table`` (each rule family has its own):
    ``@register("name", ...)`` puts the rule under those names, and a keyword it lacks raises
    ``GeTypeError`` naming it."""

    def register(*names: str) -> Callable[[F], F]:
        return functools.partial(_checked_into, table, names)

    return register


def _checked_into(table: dict[str, Rule], names: tuple[str, ...], rule: F) -> F:
    signature = inspect.signature(rule)
    label = names[0]

    @functools.wraps(rule)
    def checked(anchor: TensorHolder, *args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(anchor, *args, **kwargs)
        except TypeError as error:
            unknown = sorted(k for k in kwargs if k not in signature.parameters)
            if unknown:
                raise GeTypeError(
                    f"np.{label} of a traced value does not take "
                    f"{', '.join(repr(k) for k in unknown)}"
                ) from None
            raise GeTypeError(f"np.{label} of a traced value: {error}") from None
        return rule(anchor, *args, **kwargs)

    for name in names:
        table[name] = checked
    return rule


_register = rule_registrar(FUNCTIONS)


# --- helpers -------------------------------------------------------------------------------------
def _h(anchor: TensorHolder, value: Any) -> TensorHolder:
    """``value`` as a holder of ``anchor``'s graph (numpy's dtype for a Python scalar/list)."""
    if isinstance(value, TensorHolder):
        return innermost(anchor, value)._operand(value)
    array = np.asarray(value)
    if array.dtype == np.float64 and not isinstance(value, np.ndarray) and array.ndim == 0:
        array = np.asarray(value)
    return anchor._operand(array)


def _known(x: TensorHolder, what: str) -> tuple[int, ...]:
    shape = x.shape
    if any(d < 0 for d in shape):
        raise GeValueError(f"np.{what} of a traced value needs a known shape, got {shape}")
    return shape


def _axis(axis: Any, ndim: int, what: str) -> int:
    """``axis`` normalised to ``[0, ndim)``; out of range raises numpy's message as GeValueError."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise GeTypeError(f"np.{what}: axis must be an int, got {axis!r}")
    if not -ndim <= int(axis) < ndim:
        raise GeValueError(
            f"np.{what}: axis {int(axis)} is out of bounds for an array of dimension {ndim}"
        )
    return int(axis) % ndim


def _axes(axis: Any, ndim: int, what: str) -> list[int]:
    if axis is None:
        return list(range(ndim))
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    axes = [_axis(a, ndim, what) for a in items]
    if len(set(axes)) != len(axes):
        raise GeValueError(f"np.{what}: repeated axis in {axis!r}")
    return axes


def _reshape(x: TensorHolder, shape: Sequence[int]) -> TensorHolder:
    return x._op("Reshape", x, x._ints(list(shape)))


def _transpose(x: TensorHolder, perm: Sequence[int]) -> TensorHolder:
    if list(perm) == list(range(x.ndim)):
        return x
    return x._op("Transpose", x, x._ints(list(perm)))


def _slice(x: TensorHolder, axis: int, start: int, stop: int, step: int = 1) -> TensorHolder:
    key: list[Any] = [slice(None)] * x.ndim
    key[axis] = slice(start, stop, step)
    return _index(x, tuple(key))


def _gather(x: TensorHolder, indices: Any, axis: int) -> TensorHolder:
    idx = x._operand(np.asarray(indices, dtype=np.int64))
    return x._op("GatherV2", x, idx, x._ints([axis]), attrs={"negative_index_support": True})


def _isnan(x: TensorHolder) -> TensorHolder:
    return x._op("NotEqual", x, x)


def _as_bool(x: TensorHolder) -> TensorHolder:
    return x if x.dtype == np.bool_ else x != 0


def _base(name: str) -> Callable[..., Any]:
    """A rule of tensor_holder's own table (read at call time: it imports this module)."""
    from ge.es import tensor_holder  # noqa: PLC0415

    return tensor_holder._FUNCTIONS[name]


def _concatenate(anchor: TensorHolder, parts: Sequence[Any], axis: int) -> TensorHolder:
    return _base("concatenate")(anchor, list(parts), axis=axis)  # type: ignore[no-any-return]


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


# --- products ------------------------------------------------------------------------------------
@_register("outer")
def _outer(anchor: TensorHolder, a: Any, b: Any) -> TensorHolder:
    x, y = _reshape(_h(anchor, a), [-1, 1]), _reshape(_h(anchor, b), [1, -1])
    return x * y  # type: ignore[no-any-return]


@_register("inner")
def _inner(anchor: TensorHolder, a: Any, b: Any) -> TensorHolder:
    x, y = _h(anchor, a), _h(anchor, b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y  # type: ignore[no-any-return]
    return _tensordot(anchor, x, y, ([-1], [-1]))


@_register("vdot")
def _vdot(anchor: TensorHolder, a: Any, b: Any) -> TensorHolder:
    x, y = _reshape(_h(anchor, a), [-1]), _reshape(_h(anchor, b), [-1])
    if _known(x, "vdot") != _known(y, "vdot"):
        raise GeValueError(f"np.vdot: the inputs have {x.shape[0]} and {y.shape[0]} elements")
    return _base("matmul")(x, x, y)  # type: ignore[no-any-return]


@_register("tensordot")
def _tensordot(anchor: TensorHolder, a: Any, b: Any, axes: Any = 2) -> TensorHolder:
    x, y = _h(anchor, a), _h(anchor, b)
    xs, ys = _known(x, "tensordot"), _known(y, "tensordot")
    if isinstance(axes, (int, np.integer)):
        k = int(axes)
        if k < 0 or k > min(x.ndim, y.ndim):
            raise GeValueError(f"np.tensordot: axes={k} does not fit ranks {x.ndim} and {y.ndim}")
        ax, bx = list(range(x.ndim - k, x.ndim)), list(range(k))
    else:
        pa, pb = axes
        ax = _axes(pa, x.ndim, "tensordot")
        bx = _axes(pb, y.ndim, "tensordot")
        if len(ax) != len(bx):
            raise GeValueError("np.tensordot: the two axes lists must have the same length")
    for i, j in zip(ax, bx, strict=True):
        if xs[i] != ys[j]:
            raise GeValueError(f"np.tensordot: shape mismatch for sum: {xs[i]} != {ys[j]}")
    free_a = [n for n in range(x.ndim) if n not in ax]
    free_b = [n for n in range(y.ndim) if n not in bx]
    inner = int(np.prod([xs[i] for i in ax], dtype=np.int64))
    m = int(np.prod([xs[i] for i in free_a], dtype=np.int64))
    n = int(np.prod([ys[j] for j in free_b], dtype=np.int64))
    x2 = _reshape(_transpose(x, [*free_a, *ax]), [m, inner])
    y2 = _reshape(_transpose(y, [*bx, *free_b]), [inner, n])
    out = _base("matmul")(x2, x2, y2)
    return _reshape(out, [*(xs[i] for i in free_a), *(ys[j] for j in free_b)])


def _einsum_operand(
    x: TensorHolder, term: str, sizes: dict[str, int], letters: list[str]
) -> TensorHolder:
    """Operand ``x`` of einsum term ``term`` with one axis per letter of ``letters`` (in that
    order; size 1 where ``term`` lacks it); a repeated letter takes that diagonal."""
    if len(term) != x.ndim:
        raise GeValueError(
            f"np.einsum: term {term!r} has {len(term)} subscripts for a {x.ndim}-d operand"
        )
    shape = _known(x, "einsum")
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i, j = term.index(c), term.index(c, term.index(c) + 1)
        x = _diagonal(x, x, 0, i, j)
        term = "".join(t for n, t in enumerate(term) if n not in (i, j)) + c
        shape = x.shape
    for c, d in zip(term, shape, strict=True):
        if sizes.setdefault(c, d) != d:
            raise GeValueError(f"np.einsum: size of {c!r} is {sizes[c]} and {d}")
    present = [c for c in letters if c in term]
    x = _transpose(x, [term.index(c) for c in present])
    return _reshape(x, [sizes[c] if c in term else 1 for c in letters])


@_register("einsum")
def _einsum(anchor: TensorHolder, subscripts: Any, *operands: Any, **kwargs: Any) -> TensorHolder:
    if kwargs:
        raise GeTypeError(f"np.einsum of a traced value does not take {sorted(kwargs)}")
    if not isinstance(subscripts, str):
        raise GeTypeError("np.einsum of a traced value takes a subscripts string first")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise GeValueError("np.einsum of a traced value does not support '...' subscripts")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise GeValueError(f"np.einsum: {len(terms)} subscript terms for {len(operands)} operands")
    if not arrow:
        counts: dict[str, int] = {}
        for c in inputs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    letters = sorted(set(inputs.replace(",", "")))
    if any(c not in letters for c in output) or len(set(output)) != len(output):
        raise GeValueError(f"np.einsum: bad output subscripts {output!r}")
    holders = [_h(anchor, o) for o in operands]
    sizes: dict[str, int] = {}
    product: TensorHolder | None = None
    for term, holder in zip(terms, holders, strict=True):
        x = _einsum_operand(holder, term, sizes, letters)
        product = x if product is None else product * x
    assert product is not None  # at least one operand (terms matched operands)
    full = _base("broadcast_to")(product, product, [sizes[c] for c in letters])
    summed = [n for n, c in enumerate(letters) if c not in output]
    if summed:  # numpy's einsum keeps the operands' result type (no int64 accumulator)
        full = full.sum(axis=summed, dtype=product.dtype)
    kept = [c for c in letters if c in output]
    return _transpose(full, [kept.index(c) for c in output])


# --- statistics ----------------------------------------------------------------------------------
def _moment(
    anchor: TensorHolder, a: Any, axis: Any, dtype: Any, ddof: Any, keepdims: bool, what: str
) -> TensorHolder:
    x = _h(anchor, a)
    axes = _axes(axis, x.ndim, what)
    count = int(np.prod([_known(x, what)[n] for n in axes], dtype=np.int64))
    mean = x.mean(axis=axes, keepdims=True, dtype=dtype)
    src = x.astype(mean.dtype)
    dev = src - mean
    total = (dev * dev).sum(axis=axes, keepdims=keepdims)
    divisor = np.asarray(max(count - ddof, 0)).astype(total.dtype)
    return total / divisor  # type: ignore[no-any-return]


@_register("var")
def _var(
    anchor: TensorHolder,
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    ddof: Any = 0,
    keepdims: bool = False,
) -> TensorHolder:
    return _moment(anchor, a, axis, dtype, ddof, keepdims, "var")


@_register("std")
def _std(
    anchor: TensorHolder,
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    ddof: Any = 0,
    keepdims: bool = False,
) -> TensorHolder:
    v = _moment(anchor, a, axis, dtype, ddof, keepdims, "std")
    return cast(TensorHolder, np.sqrt(v))


def _logical_reduce(method: str) -> Rule:
    def rule(
        anchor: TensorHolder, a: Any, axis: Any = None, keepdims: bool = False
    ) -> TensorHolder:
        x = _as_bool(_h(anchor, a))
        axes = _axes(axis, x.ndim, method)
        # Counted, not ReduceMax/Min: numpy's any/all of an empty axis are False/True.
        if method == "any":
            return x.sum(axis=axes, keepdims=keepdims) > 0  # type: ignore[no-any-return]
        return (~x).sum(axis=axes, keepdims=keepdims) == 0  # type: ignore[no-any-return]

    return rule


_register("any")(_logical_reduce("any"))
_register("all")(_logical_reduce("all"))


@_register("count_nonzero")
def _count_nonzero(
    anchor: TensorHolder, a: Any, axis: Any = None, keepdims: bool = False
) -> TensorHolder:
    x = _as_bool(_h(anchor, a))
    counted = x.sum(axis=_axes(axis, x.ndim, "count_nonzero"), keepdims=keepdims)
    return counted.astype(np.intp)


@_register("ptp")
def _ptp(anchor: TensorHolder, a: Any, axis: Any = None, keepdims: bool = False) -> TensorHolder:
    x = _h(anchor, a)
    axes = _axes(axis, x.ndim, "ptp")
    return x.max(axis=axes, keepdims=keepdims) - x.min(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]


@_register("average")
def _average(
    anchor: TensorHolder,
    a: Any,
    axis: Any = None,
    weights: Any = None,
    returned: bool = False,
    keepdims: bool = False,
) -> Any:
    x = _h(anchor, a)
    axes = _axes(axis, x.ndim, "average")
    if weights is None:
        avg = x.mean(axis=axes, keepdims=keepdims)
        if returned:
            count = int(np.prod([_known(x, "average")[n] for n in axes], dtype=np.int64))
            return avg, _base("broadcast_to")(
                avg, avg._operand(np.asarray(count, avg.dtype)), list(avg.shape)
            )
        return avg
    w = _h(anchor, weights)
    if w.shape != x.shape:
        if axis is None or w.ndim != 1 or len(axes) != 1:
            raise GeValueError(
                f"np.average: weights of shape {w.shape} differ from a's {x.shape}; 1-d weights "
                "need one axis"
            )
        shape = [1] * x.ndim
        shape[axes[0]] = -1
        w = _reshape(w, shape)
    wx = x * w
    total = wx.sum(axis=axes, keepdims=keepdims)
    scale = (
        (_base("broadcast_to")(w, w, list(x.shape)) if w.shape != x.shape else w)
        .sum(axis=axes, keepdims=keepdims)
        .astype(total.dtype)
    )
    avg = total / scale
    return (avg, scale.astype(avg.dtype)) if returned else avg


@_register("norm")
def _norm(  # noqa: PLR0912  (one branch per ord)
    anchor: TensorHolder, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False
) -> TensorHolder:
    v = _h(anchor, x)
    if v.dtype.kind in "biu":
        v = v.astype(np.float64)
    axes = _axes(axis, v.ndim, "linalg.norm")
    vector = len(axes) == 1 or (axis is None and v.ndim == 1)
    mag = np.abs(v)
    if axis is None and ord is None:
        return np.sqrt((v * v).sum(axis=axes, keepdims=keepdims))  # type: ignore[no-any-return]
    if vector:
        if ord is None or ord == 2:
            return np.sqrt((v * v).sum(axis=axes, keepdims=keepdims))  # type: ignore[no-any-return]
        if ord == np.inf:
            return mag.max(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if ord == -np.inf:
            return mag.min(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if ord == 1:
            return mag.sum(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if ord == 0:
            return (v != 0).astype(v.dtype).sum(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if isinstance(ord, (int, float)) and not isinstance(ord, bool):
            p = float(ord)
            return ((mag**p).sum(axis=axes, keepdims=keepdims)) ** (1.0 / p)  # type: ignore[no-any-return]
        raise GeValueError(f"np.linalg.norm: invalid norm order {ord!r} for vectors")
    if len(axes) != 2:
        raise GeValueError(f"np.linalg.norm: improper number of dimensions to norm: {len(axes)}")
    r, c = axes
    if ord in (None, "fro"):
        return np.sqrt((v * v).sum(axis=axes, keepdims=keepdims))  # type: ignore[no-any-return]
    if ord in (1, -1, np.inf, -np.inf):
        sum_axis, then = (r, c) if ord in (1, -1) else (c, r)
        sums = mag.sum(axis=sum_axis, keepdims=True)
        pick = sums.max if ord in (1, np.inf) else sums.min
        out = pick(axis=then, keepdims=True)
        if not keepdims:
            out = _base("squeeze")(out, out, axis=[r, c])
        return out  # type: ignore[no-any-return]
    raise GeValueError(
        f"np.linalg.norm of a traced matrix supports ord None, 'fro', 1, -1, inf, -inf, got {ord!r}"
    )


# --- indexing ------------------------------------------------------------------------------------
@_register("take")
def _take(
    anchor: TensorHolder, a: Any, indices: Any, axis: Any = None, mode: Any = None
) -> TensorHolder:
    if mode is not None:
        raise GeTypeError("np.take of a traced value does not take 'mode'")
    x = _h(anchor, a)
    if axis is None:
        x, n = _reshape(x, [-1]), 0
    else:
        n = _axis(axis, x.ndim, "take")
    if isinstance(indices, TensorHolder):
        idx = x._operand(indices)
    else:
        array = np.asarray(indices)
        if array.size and array.dtype.kind not in "iu":
            raise GeTypeError(f"np.take: indices must be integers, got {array.dtype}")
        size = _known(x, "take")[n]
        if array.size and ((array >= size) | (array < -size)).any():
            raise GeValueError(f"np.take: an index is out of bounds for axis {n} with size {size}")
        idx = x._operand(array.astype(np.int64))
    return x._op("GatherV2", x, idx, x._ints([n]), attrs={"negative_index_support": True})


@_register("take_along_axis")
def _take_along_axis(anchor: TensorHolder, arr: Any, indices: Any, axis: Any) -> TensorHolder:
    x = _h(anchor, arr)
    if axis is None:
        x, n = _reshape(x, [-1]), 0
    else:
        n = _axis(axis, x.ndim, "take_along_axis")
    if isinstance(indices, TensorHolder):
        return _along_axis_gather(x, indices, n)
    idx = np.asarray(indices, dtype=np.int64)
    shape = _known(x, "take_along_axis")
    if idx.ndim != x.ndim:
        raise GeValueError(
            f"np.take_along_axis: indices have {idx.ndim} dims, the array has {x.ndim}"
        )
    out_shape = np.broadcast_shapes(
        tuple(d if i != n else 1 for i, d in enumerate(shape)),
        tuple(d if i != n else 1 for i, d in enumerate(idx.shape)),
    )
    out_shape = tuple(d if i != n else idx.shape[n] for i, d in enumerate(out_shape))
    idx = np.broadcast_to(idx, out_shape) % max(shape[n], 1)
    # A flat index into x for every output element (x broadcast to the other axes).
    grids = np.indices(out_shape)
    grids[n] = idx
    strides = np.cumprod([1, *shape[::-1]])[:-1][::-1]
    bshape = [d if i != n else shape[n] for i, d in enumerate(out_shape)]
    xb = _base("broadcast_to")(x, x, bshape) if list(bshape) != list(shape) else x
    strides = np.cumprod([1, *bshape[::-1]])[:-1][::-1]
    flat = (grids * strides.reshape(-1, *([1] * len(out_shape)))).sum(axis=0)
    return _reshape(_gather(_reshape(xb, [-1]), flat.reshape(-1), 0), list(out_shape))


def _along_axis_key(x: TensorHolder, idx: Any, n: int, what: str) -> tuple[Any, ...]:
    """numpy's fancy key for ``*_along_axis``: ``idx`` on axis ``n``, aranges elsewhere."""
    shape = _known(x, what)
    if idx.ndim != x.ndim:
        raise GeValueError(
            f"np.{what}: `indices` and `arr` must have the same number of dimensions, "
            f"got {idx.ndim} and {x.ndim}"
        )
    return tuple(
        idx if k == n else np.arange(d).reshape([d if j == k else 1 for j in range(x.ndim)])
        for k, d in enumerate(shape)
    )


def _along_axis_gather(x: TensorHolder, indices: TensorHolder, n: int) -> TensorHolder:
    """``take_along_axis`` with traced indices: one ``GatherNd``."""
    from ge.es import _advanced_index  # noqa: PLC0415

    return _advanced_index.gather(x, _along_axis_key(x, indices, n, "take_along_axis"))


@_register("put_along_axis")
def _put_along_axis(anchor: TensorHolder, arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """numpy's in-place ``put_along_axis``: rebinds the traced ``arr`` to the updated value
    (ge.jit writes it back into the caller's array); ``indices`` may be traced."""
    from ge.es import _inplace  # noqa: PLC0415  (tensor_holder imports both)

    if not isinstance(arr, TensorHolder) or not arr._builder._numpy_semantics:
        raise GeTypeError(
            "np.put_along_axis writes into its array: it must be a traced value inside @ge.jit"
        )
    x = arr if axis is not None else _reshape(arr, [-1])
    n = 0 if axis is None else _axis(axis, x.ndim, "put_along_axis")
    idx = indices if isinstance(indices, TensorHolder) else np.asarray(indices)
    if not isinstance(idx, TensorHolder) and idx.size and idx.dtype.kind not in "iu":
        raise GeTypeError(f"np.put_along_axis: `indices` must be an integer array, got {idx.dtype}")
    key = _along_axis_key(x, idx, n, "put_along_axis")
    if axis is None:
        flat = x  # a reshape of arr: update it, then rebind arr to its reshape back
        arr._builder._atomically(_inplace.setitem, flat, key, values)
        arr._rebind(_reshape(flat, list(arr.shape)))
    else:
        arr._builder._atomically(_inplace.setitem, arr, key, values)


@_register("broadcast_arrays")
def _broadcast_arrays(anchor: TensorHolder, *args: Any) -> tuple[TensorHolder, ...]:
    holders = [_h(anchor, a) for a in args]
    try:
        shape = np.broadcast_shapes(*(_known(h, "broadcast_arrays") for h in holders))
    except ValueError as error:
        raise GeValueError(f"np.broadcast_arrays: {error}") from None
    return tuple(
        h if h.shape == shape else _base("broadcast_to")(h, h, list(shape)) for h in holders
    )


# --- creation and elementwise --------------------------------------------------------------------
@_register("full_like")
def _full_like(
    anchor: TensorHolder, a: Any, fill_value: Any, dtype: Any = None, shape: Any = None
) -> TensorHolder:
    x = _h(anchor, a)
    target = np.dtype(dtype) if dtype is not None else x.dtype
    base = (
        x
        if shape is None
        else _base("broadcast_to")(
            x, x._op("ZerosLike", _reshape(x, [-1])[:0].sum()), list(np.atleast_1d(shape))
        )
    )
    zeros = base._op("ZerosLike", base).astype(target)
    fill = np.asarray(fill_value).astype(target)
    return zeros + fill if fill.ndim else zeros + zeros._operand(fill)  # type: ignore[no-any-return]


@_register("empty_like")
def _empty_like(
    anchor: TensorHolder, prototype: Any, dtype: Any = None, shape: Any = None
) -> TensorHolder:
    return _full_like(anchor, prototype, 0, dtype=dtype, shape=shape)


@_register("nan_to_num")
def _nan_to_num(
    anchor: TensorHolder,
    x: Any,
    copy: bool = True,
    nan: float = 0.0,
    posinf: Any = None,
    neginf: Any = None,
) -> TensorHolder:
    v = _h(anchor, x)
    if v.dtype.kind != "f":
        return v
    info = np.finfo(v.dtype)
    big = v._operand(np.asarray(info.max if posinf is None else posinf).astype(v.dtype))
    small = v._operand(np.asarray(info.min if neginf is None else neginf).astype(v.dtype))
    zero = v._operand(np.asarray(nan).astype(v.dtype))
    inf = v._operand(np.asarray(np.inf, v.dtype))
    y = v._op("SelectV2", v._op("NotEqual", v, v), zero, v)
    y = y._op("SelectV2", y._op("Equal", y, inf), big, y)
    return y._op("SelectV2", y._op("Equal", y, -inf), small, y)


@_register("isclose")
def _isclose(
    anchor: TensorHolder,
    a: Any,
    b: Any,
    rtol: float = 1e-05,
    atol: float = 1e-08,
    equal_nan: bool = False,
) -> TensorHolder:
    x, y = _h(anchor, a), _h(anchor, b)
    dtype = np.result_type(x.dtype, y.dtype, np.float16)
    x, y = x.astype(dtype), y.astype(dtype)
    close = np.abs(x - y) <= (np.abs(y) * rtol + atol)
    same = x == y  # equal infinities
    out = close | same
    if equal_nan:
        out = out | (_isnan(x) & _isnan(y))
    return out  # type: ignore[no-any-return]


@_register("allclose")
def _allclose(
    anchor: TensorHolder,
    a: Any,
    b: Any,
    rtol: float = 1e-05,
    atol: float = 1e-08,
    equal_nan: bool = False,
) -> TensorHolder:
    close = _isclose(anchor, a, b, rtol, atol, equal_nan)
    return close.min(axis=list(range(close.ndim)))


@_register("array_equal")
def _array_equal(anchor: TensorHolder, a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    x, y = _h(anchor, a1), _h(anchor, a2)
    if x.shape != y.shape:
        return False
    eq = x == y
    if equal_nan:
        eq = eq | (_isnan(x) & _isnan(y))
    return eq.min(axis=list(range(eq.ndim)))


def _data_dependent(name: str, hint: str) -> Rule:
    def rule(anchor: TensorHolder, *args: Any, **kwargs: Any) -> Any:
        raise GeValueError(
            f"np.{name} of a traced value: its output size depends on the values, which a "
            f"compiled graph cannot have; {hint}"
        )

    return rule


for _name, _hint in (
    ("nonzero", "use a mask with np.where(mask, x, y) instead"),
    ("argwhere", "use a mask with np.where(mask, x, y) instead"),
    ("flatnonzero", "use a mask with np.where(mask, x, y) instead"),
    ("unique", "compute it outside ge.jit"),
    ("extract", "use np.where(mask, x, 0) instead"),
    ("compress", "use np.where(mask, x, 0) instead"),
):
    FUNCTIONS[_name] = _data_dependent(_name, _hint)
