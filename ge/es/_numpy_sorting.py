"""numpy's scans, sorts and selections on traced values (``np.cumsum``, ``np.sort``, ...).

``FUNCTIONS`` maps a numpy function's ``__name__`` to a rule ``rule(anchor, *args, **kwargs)``
in the form of ``ge.es._numpy_api`` (``_numpy_common.rule_registrar`` checks keywords);
``TensorHolder.__array_function__`` looks rules up in both tables. The rules build the
``Cumsum``/``Cumprod``/``Sort`` ops (``ge.ops.sorting``) and give numpy's values, dtype and
shape. Decisions where numpy is silent or a graph cannot follow it:

- ``cumsum``/``cumprod``: ``axis=None`` scans the flattened input; without ``dtype`` the
  scan runs in numpy's accumulator type (bool and ints below 64 bits in int64, unsigned in
  uint64, as ``np.sum``). A 0-d input is one element (numpy ravels it). float16 accumulates
  in float32, rounded once per output (numpy rounds every partial sum to float16, so long
  float16 scans differ by float16 rounding). ``dtype=bool`` is numpy's logical or / and.
  numpy 2's ``cumulative_sum``/``cumulative_prod`` are the same scans (``include_initial``
  puts the identity first; ``axis`` is required above 1-d, as numpy requires it);
  ``nancumsum``/``nancumprod`` scan with NaN taken as 0 / 1, as numpy's.
- ``sort``/``argsort``: ``kind`` is accepted and ignored: every sort is stable (numpy's
  ``kind='stable'``), NaN last; ``argsort`` gives int64 (numpy's intp). ``order`` (fields of
  structured arrays) is refused.
- ``partition``/``argpartition`` return the fully sorted result (resp. its order): it meets
  numpy's contract for every ``kth`` (the kth element in its sorted place, none larger
  before, none smaller after), though numpy's elements away from ``kth`` are in another
  order. ``kth`` is checked as numpy checks it.
- ``median``: a sort, then the mean of the middle one or two elements as ``np.mean`` computes
  it (float16 through float32, ints and bool in float64); a NaN in the slice gives NaN; an
  empty slice gives NaN (numpy warns). ``overwrite_input`` is accepted and ignored.
- ``quantile``/``percentile``: ``method`` ``'linear'`` (numpy's default), ``'lower'``,
  ``'higher'``, ``'nearest'`` (the element at numpy's rounded index, in the input's dtype) or
  ``'midpoint'`` (the other H&F methods and ``weights`` are refused), ``q`` a constant
  (any shape); the positions, weights and interpolation (``_lerp``) are numpy's, so are the
  result types (a Python float ``q`` promotes weakly). An empty slice is refused (numpy
  raises IndexError).
- ``nanmedian``/``nanquantile``/``nanpercentile``: one sort puts each slice's NaNs last, a
  count of the others gives each slice's NaN-free length, and the one or two elements numpy
  reads are gathered at positions computed from that count in the graph (``GatherNd``), with
  numpy's ``(n - 1) * q`` virtual index, ``_get_indexes`` clipping and ``_lerp``. A slice of
  NaN only gives NaN (numpy also warns "All-NaN slice encountered"; a graph cannot). An
  empty input gives ``np.nanmean``'s answer, as numpy's does: NaN over the reduced shape,
  without ``q``'s axes. Inputs without NaN (ints, bools) take the ``median``/``quantile``
  rules, as numpy does. Where numpy's ``apply_along_axis`` would take the result dtype from
  the first slice (an all-NaN first slice with an array ``q`` of another float type), the
  result has the type the other slices give. The same ``method`` values as ``quantile``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es import _numpy_rules
from ge.es._numpy_api import _along_axis_gather
from ge.es._numpy_common import (
    _axes,
    _axis,
    _concatenate,
    _h,
    _index,
    _isnan,
    _known,
    _reshape,
    _transpose,
    rule_registrar,
)
from ge.es.tensor_holder import TensorHolder

__all__ = ["FUNCTIONS"]

FUNCTIONS: dict[str, Callable[..., Any]] = {}

Rule = Callable[..., Any]
F = TypeVar("F", bound=Rule)

_KINDS = frozenset({None, "quicksort", "mergesort", "heapsort", "stable"})


_register = rule_registrar(FUNCTIONS)  # _numpy_api's keyword check, into this table


# --- helpers -------------------------------------------------------------------------------------
def _outputs(x: TensorHolder, op_type: str, attrs: dict[str, Any]) -> list[TensorHolder]:
    """Every output of an ``op_type`` node on ``x`` (``TensorHolder._op`` gives output 0)."""
    node = x._builder._add(op_type, [x._port_of(x)], attrs)
    return [TensorHolder._make(x._builder, node, i) for i in range(node.get_outputs_size())]


def _sorted(x: TensorHolder, axis: int) -> tuple[TensorHolder, TensorHolder]:
    """``x`` sorted stably along ``axis``, and the int64 order."""
    values, order = _outputs(x, "Sort", {"axis": axis, "descending": False})
    return values, order.astype(np.int64)


def _dtype(dtype: Any, what: str) -> np.dtype[Any]:
    try:
        result: np.dtype[Any] = np.dtype(dtype)
    except TypeError:
        raise GeTypeError(f"np.{what}: dtype must be a numpy dtype, got {dtype!r}") from None
    return result


def _line(anchor: TensorHolder, a: Any, axis: Any, what: str) -> tuple[TensorHolder, int]:
    """The input and the axis to work along: flattened for ``axis=None``; a 0-d input is
    one element (numpy ravels it for scans and argsort)."""
    x = _h(anchor, a)
    if axis is None or x.ndim == 0:
        x = _reshape(x, [-1])
        return x, _axis(0 if axis is None else axis, 1, what)
    return x, _axis(axis, x.ndim, what)


def _check_kind(kind: Any, order: Any, what: str) -> None:
    if order is not None:
        raise GeValueError(
            f"np.{what} of a traced value: order= names fields of a structured array, and "
            f"traced values have none; got order={order!r}"
        )
    if kind not in _KINDS:
        raise GeValueError(
            f"np.{what}: kind must be one of 'quicksort', 'mergesort', 'heapsort', 'stable', "
            f"got {kind!r}"
        )


# --- scans ---------------------------------------------------------------------------------------
def _scan_rule(method: str, op_type: str) -> Rule:
    def rule(anchor: TensorHolder, a: Any, axis: Any = None, dtype: Any = None) -> TensorHolder:
        x, ax = _line(anchor, a, axis, method)
        source = x.dtype
        target = (
            _numpy_rules._reduce_dtype(method, source) if dtype is None else _dtype(dtype, method)
        )
        logical = target == np.bool_
        work = x.astype(np.bool_).astype(np.int64) if logical else x.astype(target)
        y = work._op(op_type, work, work._ints([ax]))
        return y != 0 if logical else y

    return rule


_register("cumsum")(_scan_rule("cumsum", "Cumsum"))
_register("cumprod")(_scan_rule("cumprod", "Cumprod"))


def _nan_scan_rule(method: str, identity: int) -> Rule:
    """``np.nancumsum``/``np.nancumprod``: NaN replaced by the identity (numpy's
    ``_replace_nan``; other dtypes have no NaN), then the scan."""
    scan = _scan_rule(method, "Cumsum" if identity == 0 else "Cumprod")

    def rule(anchor: TensorHolder, a: Any, axis: Any = None, dtype: Any = None) -> TensorHolder:
        x = _h(anchor, a)
        if x.dtype.kind == "f":
            x = x._op("SelectV2", _isnan(x), x._operand(np.asarray(identity, x.dtype)), x)
        result: TensorHolder = scan(anchor, x, axis, dtype)
        return result

    return rule


_register("nancumsum")(_nan_scan_rule("cumsum", 0))
_register("nancumprod")(_nan_scan_rule("cumprod", 1))


def _cumulative_rule(method: str, identity: int) -> Rule:
    """numpy 2's ``cumulative_sum``/``cumulative_prod``: ``cumsum``/``cumprod`` with ``axis``
    required above 1-d, and ``include_initial`` putting the identity first."""
    scan = _scan_rule(method, "Cumsum" if identity == 0 else "Cumprod")
    what = "cumulative_sum" if identity == 0 else "cumulative_prod"

    def rule(
        anchor: TensorHolder,
        x: Any,
        /,
        *,
        axis: Any = None,
        dtype: Any = None,
        include_initial: bool = False,
    ) -> TensorHolder:
        holder = _h(anchor, x)
        if axis is None and holder.ndim > 1:
            raise GeValueError(
                f"np.{what}: for arrays which have more than one dimension the axis "
                f"argument is required, got a {holder.ndim}-d array"
            )
        y: TensorHolder = scan(anchor, holder, axis, dtype)
        if not include_initial:
            return y
        ax = _axis(0 if axis is None else axis, y.ndim, what)
        head = [1 if i == ax else d for i, d in enumerate(_known(y, what))]
        first = y._operand(np.full(head, identity, y.dtype))
        return _concatenate(y, [first, y], ax)

    return rule


_register("cumulative_sum")(_cumulative_rule("cumsum", 0))
_register("cumulative_prod")(_cumulative_rule("cumprod", 1))


# --- sorts ---------------------------------------------------------------------------------------
@_register("sort")
def _sort(
    anchor: TensorHolder,
    a: Any,
    axis: Any = -1,
    kind: Any = None,
    order: Any = None,
    *,
    stable: Any = None,
) -> TensorHolder:
    _check_kind(kind, order, "sort")
    x = _h(anchor, a)
    if axis is None:
        return _sorted(_reshape(x, [-1]), 0)[0]
    return _sorted(x, _axis(axis, x.ndim, "sort"))[0]


@_register("argsort")
def _argsort(
    anchor: TensorHolder,
    a: Any,
    axis: Any = -1,
    kind: Any = None,
    order: Any = None,
    *,
    stable: Any = None,
) -> TensorHolder:
    _check_kind(kind, order, "argsort")
    x, ax = _line(anchor, a, axis, "argsort")
    return _sorted(x, ax)[1]


def _check_kth(kth: Any, size: int, what: str) -> None:
    items = list(kth) if isinstance(kth, (list, tuple, np.ndarray)) else [kth]
    for k in items:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise GeTypeError(f"np.{what}: kth must be an int or a sequence of ints, got {k!r}")
        if not -size <= int(k) < size:
            raise GeValueError(f"np.{what}: kth(={int(k)}) out of bounds ({size})")


def _partition_rule(what: str, indices: bool) -> Rule:
    def rule(
        anchor: TensorHolder,
        a: Any,
        kth: Any,
        axis: Any = -1,
        kind: Any = "introselect",
        order: Any = None,
    ) -> TensorHolder:
        if order is not None:
            _check_kind(None, order, what)
        if kind != "introselect":
            raise GeValueError(f"np.{what}: kind must be 'introselect', got {kind!r}")
        x = _h(anchor, a)
        if axis is None:
            x, ax = _reshape(x, [-1]), 0
        else:
            ax = _axis(axis, x.ndim, what)
        _check_kth(kth, _known(x, what)[ax], what)
        return _sorted(x, ax)[1 if indices else 0]

    return rule


_register("partition")(_partition_rule("partition", indices=False))
_register("argpartition")(_partition_rule("argpartition", indices=True))


# --- median / quantile ---------------------------------------------------------------------------
def _rows(x: TensorHolder, axis: Any, what: str) -> tuple[TensorHolder, list[int], list[int]]:
    """``x`` with the reduced ``axis`` merged into one last axis; also the kept shape and
    the shape ``keepdims`` gives."""
    shape = _known(x, what)
    axes = list(range(x.ndim)) if axis is None else _axes(axis, x.ndim, what)
    kept = [i for i in range(x.ndim) if i not in axes]
    n = math.prod(shape[i] for i in axes)
    rows = _reshape(_transpose(x, kept + sorted(axes)), [*(shape[i] for i in kept), n])
    keep_shape = [1 if i in axes else d for i, d in enumerate(shape)]
    return rows, [shape[i] for i in kept], keep_shape


def _at(x: TensorHolder, index: int) -> TensorHolder:
    """``x[..., index]``."""
    return _index(x, (*(slice(None),) * (x.ndim - 1), index))


def _mean_type(dtype: np.dtype[Any]) -> tuple[np.dtype[Any], np.dtype[Any]]:
    """(the type ``np.mean`` adds in, its result type) for ``dtype``."""
    result = np.dtype(np.float64) if dtype.kind in "biu" else dtype
    work = np.dtype(np.float32) if result == np.float16 else result
    return work, result


def _nan_of(value: TensorHolder, last: TensorHolder, source: np.dtype[Any]) -> TensorHolder:
    """``value``, NaN where the slice held one (its sorted ``last`` element is NaN)."""
    if source.kind != "f":
        return value
    return value._op("SelectV2", _isnan(last), last.astype(value.dtype), value)


def _nan_filled(anchor: TensorHolder, shape: Sequence[int], dtype: np.dtype[Any]) -> TensorHolder:
    return anchor._operand(np.full(list(shape), np.nan, dtype))


@_register("median")
def _median(
    anchor: TensorHolder,
    a: Any,
    axis: Any = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> TensorHolder:
    x = _h(anchor, a)
    rows, kept, keep_shape = _rows(x, axis, "median")
    n = rows.shape[-1]
    work, result = _mean_type(x.dtype)
    if n == 0:
        out = _nan_filled(x, kept, result)
    else:
        s = _sorted(rows, rows.ndim - 1)[0]
        lo = _at(s, (n - 1) // 2).astype(work)
        mid = lo if n % 2 else (lo + _at(s, n // 2).astype(work)) / 2
        out = _nan_of(mid.astype(result), _at(s, n - 1), x.dtype)
    return _reshape(out, keep_shape) if keepdims else out


def _q_values(q: Any, percent: bool, what: str) -> tuple[np.ndarray, bool]:
    """numpy's ``q`` (divided by 100 for percentile) and whether it promotes weakly (a
    Python int or float)."""
    if isinstance(q, TensorHolder):
        raise GeValueError(f"np.{what} of a traced value needs q as a constant, got {q!r}")
    weak = type(q) in (int, float)
    values = np.asanyarray(q)
    if values.dtype.kind not in "biuf":
        raise GeTypeError(f"np.{what}: q must be real numbers, got {q!r}")
    if percent:
        values = np.true_divide(values, 100)
    if not np.all((values >= 0) & (values <= 1)):
        name, top = ("Percentiles", 100) if percent else ("Quantiles", 1)
        raise GeValueError(f"np.{what}: {name} must be in the range [0, {top}], got {q!r}")
    return values, weak


def _neighbours(virtual: float, n: int) -> tuple[int, int]:
    """numpy's ``_get_indexes`` for one virtual index (-1: the last element)."""
    if virtual >= n - 1:
        return -1, -1
    if virtual < 0:
        return 0, 0
    below = math.floor(virtual)
    return below, below + 1


def _lerp(lo: TensorHolder, hi: TensorHolder, t: Any, upper: bool) -> TensorHolder:
    """numpy's ``_lerp``: ``a + (b - a) * t``, or from ``t = 0.5`` ``b - (b - a) * (1 - t)``
    in the first one's type."""
    diff = hi - lo
    result: TensorHolder = lo + diff * t
    if upper:
        result = (hi - diff * (1 - t)).astype(result.dtype)
    return result


# numpy's discrete methods: the virtual index rounded to an element (no interpolation)
_DISCRETE: dict[str, Callable[..., Any]] = {
    "lower": np.floor,
    "higher": np.ceil,
    "nearest": np.rint,
}
_METHODS = ("linear", "midpoint", *_DISCRETE)


def _check_method(method: Any, what: str) -> None:
    if method not in _METHODS:
        raise GeValueError(
            f"np.{what} of a traced value supports method {', '.join(map(repr, _METHODS))}, "
            f"got {method!r}"
        )


def _virtual(n: int, qs: np.ndarray, method: str) -> np.ndarray:
    """numpy's virtual indexes of ``qs`` in ``n`` sorted elements for ``method``."""
    virtual = np.asanyarray((n - 1) * qs)
    rounding = _DISCRETE.get(method)
    return virtual if rounding is None else rounding(virtual).astype(np.intp)


def _quantile_at(
    s: TensorHolder, virtual: Any, weak: bool, n: int, method: str = "linear"
) -> TensorHolder:
    """The quantile at ``virtual`` of the sorted last axis of ``s`` (``_quantile``'s steps;
    ``midpoint`` fixes gamma at 0.5, or 0 on an element)."""
    if np.asarray(virtual).dtype.kind in "iu":  # an integer index: no interpolation
        return _at(s, int(virtual) % n)
    below, above = _neighbours(float(virtual), n)
    gamma = np.asarray(virtual - below, np.asarray(virtual).dtype)  # numpy keeps q's type
    if method == "midpoint":
        gamma = np.asarray(0.0 if virtual % 1 == 0 else 0.5, gamma.dtype)
    t: Any = float(gamma) if weak else gamma
    return _lerp(_at(s, below % n), _at(s, above % n), t, bool(gamma >= 0.5))


def _quantile_rule(what: str, percent: bool) -> Rule:
    def rule(
        anchor: TensorHolder,
        a: Any,
        q: Any,
        axis: Any = None,
        overwrite_input: bool = False,
        method: str = "linear",
        keepdims: bool = False,
    ) -> TensorHolder:
        _check_method(method, what)
        qs, weak = _q_values(q, percent, what)
        x = _h(anchor, a)
        rows, kept, keep_shape = _rows(x, axis, what)
        n = rows.shape[-1]
        if n == 0:
            raise GeValueError(f"np.{what}: cannot take a quantile of an empty slice")
        shape = keep_shape if keepdims else kept
        s = _sorted(rows, rows.ndim - 1)[0]
        parts = [
            _nan_of(_quantile_at(s, v, weak, n, method), _at(s, n - 1), x.dtype)
            for v in _virtual(n, qs, method).reshape(-1)
        ]
        return _stack_q(parts, qs.shape, shape)

    return rule


def _stack_q(parts: list[TensorHolder], q_shape: Sequence[int], shape: list[int]) -> TensorHolder:
    """One result per ``q`` value, stacked in numpy's layout: ``q``'s axes first."""
    parts = [_reshape(part, [1, *shape]) for part in parts]
    if len(parts) == 1:
        return _reshape(parts[0], [*q_shape, *shape])
    joined = parts[0]._op("ConcatV2", parts, parts[0]._ints([0]), attrs={"N": len(parts)})
    return _reshape(joined, [*q_shape, *shape])


_register("quantile")(_quantile_rule("quantile", percent=False))
_register("percentile")(_quantile_rule("percentile", percent=True))


# --- nanmedian / nanquantile ---------------------------------------------------------------------
# A row's NaNs sort last, so its first ``count`` sorted elements are numpy's NaN-free slice; the
# positions inside it depend on ``count``, a traced value, and are gathered (``GatherNd``).
def _pick(s: TensorHolder, index: TensorHolder) -> TensorHolder:
    """``s[..., index]`` with one traced ``index`` per row of ``s``'s last axis."""
    n = s.shape[-1]
    index = cast(TensorHolder, np.clip(index, 0, n - 1))  # a row with no value: NaN later
    picked = _along_axis_gather(s, _reshape(index, [*index.shape, 1]), s.ndim - 1)
    return _reshape(picked, list(index.shape))


def _valid_count(rows: TensorHolder) -> TensorHolder:
    """How many elements of each row (its last axis) are not NaN, as int64."""
    return (~_isnan(rows)).sum(axis=-1).astype(np.int64)


def _all_nan_is_nan(value: TensorHolder, count: TensorHolder) -> TensorHolder:
    """``value``, NaN where the row had no value (numpy: "All-NaN slice encountered")."""
    nan = value._operand(np.asarray(np.nan, value.dtype))
    return value._op("SelectV2", count == 0, nan, value)


def _empty_nan(x: TensorHolder, axis: Any, keepdims: bool, what: str) -> TensorHolder:
    """numpy's answer for an empty input: ``np.nanmean``'s (NaN over the reduced shape, whatever
    ``q`` is; float64 for bools and ints)."""
    _, kept, keep_shape = _rows(x, axis, what)
    return _nan_filled(x, keep_shape if keepdims else kept, _mean_type(x.dtype)[1])


@_register("nanmedian")
def _nanmedian(
    anchor: TensorHolder,
    a: Any,
    axis: Any = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> TensorHolder:
    x = _h(anchor, a)
    if math.prod(_known(x, "nanmedian")) == 0:
        return _empty_nan(x, axis, keepdims, "nanmedian")
    if x.dtype.kind != "f":  # no NaN to ignore: numpy gives the median
        return _median(anchor, x, axis, keepdims=keepdims)
    rows, _, keep_shape = _rows(x, axis, "nanmedian")
    s, count = _sorted(rows, rows.ndim - 1)[0], _valid_count(rows)
    work, result = _mean_type(x.dtype)
    low, high = (count - 1) // 2, count // 2
    lo, hi = _pick(s, low).astype(work), _pick(s, high).astype(work)
    mid = lo._op("SelectV2", low == high, lo, (lo + hi) / 2)
    out_value = _all_nan_is_nan(mid.astype(result), count)
    return _reshape(out_value, keep_shape) if keepdims else out_value


def _nan_quantile_at(
    s: TensorHolder, count: TensorHolder, q: Any, weak: bool, dtype: np.dtype[Any], method: str
) -> TensorHolder:
    """numpy's quantile ``q`` by ``method`` of each row's first ``count`` sorted elements
    (``_quantile``'s ``_get_indexes``, ``_get_gamma`` and ``_lerp`` with a traced count)."""
    last = count - 1
    if np.asarray(q).dtype.kind in "biu":  # an integer q (0 or 1): no interpolation
        return _pick(s, last * int(q))
    q_dtype = np.asarray(q).dtype
    virtual = last.astype(q_dtype) * s._operand(np.asarray(q, q_dtype))
    if method in _DISCRETE:  # numpy takes the element at the rounded index
        return _pick(s, cast(TensorHolder, _DISCRETE[method](virtual)).astype(np.int64))
    floor = cast(TensorHolder, np.floor(virtual))
    above = virtual >= last.astype(q_dtype)
    clipped = floor._op("SelectV2", above, floor._operand(np.asarray(-1, q_dtype)), floor)
    gamma = virtual - clipped  # numpy's, from the previous index it clipped to -1
    if method == "midpoint":
        on_element = virtual == floor
        zero, half = (gamma._operand(np.asarray(v, q_dtype)) for v in (0.0, 0.5))
        gamma = gamma._op("SelectV2", on_element, zero, half)
    previous = last._op("SelectV2", above, last, floor.astype(np.int64))
    lo, hi = _pick(s, previous), _pick(s, last._op("SelectV2", above, last, previous + 1))
    t = gamma.astype(dtype) if weak else gamma  # weak: numpy's float(gamma)
    diff = hi - lo
    low_side: TensorHolder = lo + diff * t
    high_side = (hi - diff * (1 - t)).astype(low_side.dtype)
    return low_side._op("SelectV2", t >= 0.5, high_side, low_side)


def _nan_quantile_rule(what: str, percent: bool) -> Rule:
    plain = _quantile_rule(what[3:], percent)

    def rule(
        anchor: TensorHolder,
        a: Any,
        q: Any,
        axis: Any = None,
        overwrite_input: bool = False,
        method: str = "linear",
        keepdims: bool = False,
    ) -> TensorHolder:
        _check_method(method, what)
        qs, weak = _q_values(q, percent, what)
        x = _h(anchor, a)
        if math.prod(_known(x, what)) == 0:
            return _empty_nan(x, axis, keepdims, what)
        if x.dtype.kind != "f":  # no NaN to ignore: numpy gives the quantile
            result: TensorHolder = plain(anchor, x, q, axis, method=method, keepdims=keepdims)
            return result
        rows, kept, keep_shape = _rows(x, axis, what)
        s, count = _sorted(rows, rows.ndim - 1)[0], _valid_count(rows)
        parts = [
            _all_nan_is_nan(_nan_quantile_at(s, count, v, weak, x.dtype, method), count)
            for v in qs.reshape(-1)
        ]
        return _stack_q(parts, qs.shape, keep_shape if keepdims else kept)

    return rule


_register("nanquantile")(_nan_quantile_rule("nanquantile", percent=False))
_register("nanpercentile")(_nan_quantile_rule("nanpercentile", percent=True))
