"""numpy functions on traced values built from existing ops: ``FUNCTIONS``, the table of the
``_numpy_api`` family, and its indexing, creation and comparison rules (``np.take``,
``np.full_like``, ``np.isclose``, ...).

``FUNCTIONS`` maps a numpy function's ``__name__`` to a rule ``rule(anchor, *args, **kwargs)``
(``anchor`` is a TensorHolder among the arguments); ``TensorHolder.__array_function__`` looks
rules up here after its own table. The family's rules live by concept in ``_numpy_shape``
(shape and data movement), ``_numpy_linalg`` (products, einsum, norms) and ``_numpy_stats``
(moments and logical reductions), which this module imports so that its table is whole; the
registrar and the helpers they share are ``_numpy_common``'s.

Every rule gives numpy's result shape and dtype (inside ``ge.jit`` its arithmetic follows
numpy's NEP 50 rules through the holders' operators). Decisions where numpy is silent or a
graph cannot follow it:

- A keyword numpy takes but a rule does not (``out=``, ``where=``, ``casting=``, ...) raises
  ``GeTypeError`` naming it; a bad axis raises ``GeValueError`` naming the axis and the rank.
- Shapes must be known at trace time (every rule reads ``holder.shape``); functions whose
  output size depends on values (``np.where(cond)``, ``np.nonzero``, ``np.unique``) raise
  ``GeValueError`` saying so.
- ``take`` builds ``GatherV2`` with constant indices, ``take_along_axis`` with traced indices
  one ``GatherNd``.
- ``empty_like`` gives zeros (a graph has no uninitialised memory).
- ``zeros_like``/``ones_like``/``full_like``/``empty_like`` and ``copy`` honour ``dtype=`` and
  ``shape=``; ``order='C'``/``'K'``/``'A'`` are accepted (each names only the result's memory
  layout, and a traced value's is C), ``'F'`` is refused; ``subok`` changes nothing (traced
  values have no subclasses); ``device`` must be None or 'cpu', as numpy's.
- ``clip`` takes ``a_min``/``a_max`` or ``min``/``max``, and ``dtype=``/``casting=`` (numpy's
  ufunc keywords; the others, ``out=``, ``where=``..., are refused).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es import _numpy_linalg, _numpy_rules, _numpy_shape, _numpy_stats
from ge.es._numpy_common import (
    FUNCTIONS,
    Rule,
    _axis,
    _base,
    _cast_to,
    _check_device,
    _check_order,
    _dtype_arg,
    _gather,
    _h,
    _isnan,
    _known,
    _reshape,
    refused,
    rule_registrar,
)
from ge.es.tensor_holder import TensorHolder

__all__ = ["FUNCTIONS", "rule_registrar"]

_FAMILY = (_numpy_linalg, _numpy_shape, _numpy_stats)  # imported for their rules

_register = rule_registrar(FUNCTIONS)


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
def _like(
    anchor: TensorHolder,
    a: Any,
    dtype: Any,
    order: Any,
    shape: Any,
    device: Any,
    what: str,
) -> tuple[TensorHolder, np.dtype[Any]]:
    """A holder of the ``*_like`` result's shape (``a``, or ``a`` broadcast to ``shape``) and
    the result's dtype; ``order`` and ``device`` checked as numpy's."""
    _check_order(order, what)
    _check_device(device, what)
    x = _h(anchor, a)
    target = _dtype_arg(dtype, what)
    if shape is None:
        return x, x.dtype if target is None else target
    zero = x._op("ZerosLike", _reshape(x, [-1])[:0].sum())
    dims = [int(d) for d in np.atleast_1d(shape)]
    return _base("broadcast_to")(x, zero, dims), x.dtype if target is None else target


def _filled_like(op_type: str, what: str) -> Rule:
    """``np.zeros_like``/``np.ones_like``: ``ZerosLike``/``OnesLike`` of ``a``'s shape, in
    ``dtype``."""

    def rule(
        anchor: TensorHolder,
        a: Any,
        dtype: Any = None,
        order: Any = "K",
        subok: bool = True,
        shape: Any = None,
        *,
        device: Any = None,
    ) -> TensorHolder:
        base, target = _like(anchor, a, dtype, order, shape, device, what)
        return base._op(op_type, base).astype(target)

    return rule


_register("zeros_like")(_filled_like("ZerosLike", "zeros_like"))
_register("ones_like")(_filled_like("OnesLike", "ones_like"))


@_register("full_like")
def _full_like(
    anchor: TensorHolder,
    a: Any,
    fill_value: Any,
    dtype: Any = None,
    order: Any = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Any = None,
) -> TensorHolder:
    base, target = _like(anchor, a, dtype, order, shape, device, "full_like")
    zeros = base._op("ZerosLike", base).astype(target)
    if isinstance(fill_value, TensorHolder):
        return zeros + fill_value.astype(target)  # type: ignore[no-any-return]
    fill = np.asarray(fill_value).astype(target)
    return zeros + fill if fill.ndim else zeros + zeros._operand(fill)  # type: ignore[no-any-return]


@_register("empty_like")
def _empty_like(
    anchor: TensorHolder,
    prototype: Any,
    /,
    dtype: Any = None,
    order: Any = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Any = None,
) -> TensorHolder:
    return _full_like(anchor, prototype, 0, dtype, order, subok, shape, device=device)


@_register("copy")
def _copy(anchor: TensorHolder, a: Any, order: Any = "K", subok: bool = False) -> TensorHolder:
    _check_order(order, "copy")
    x = _h(anchor, a)
    return x._op("Identity", x)


_NO_VALUE = object()  # numpy's <no value> default of clip's bounds


@_register("clip")
def _clip(
    anchor: TensorHolder,
    a: Any,
    a_min: Any = _NO_VALUE,
    a_max: Any = _NO_VALUE,
    *,
    min: Any = _NO_VALUE,
    max: Any = _NO_VALUE,
    dtype: Any = None,
    casting: Any = "same_kind",
) -> TensorHolder:
    """numpy's ``np.clip``: ``a_min``/``a_max`` or their numpy 2 aliases ``min``/``max``
    (not both); ``dtype`` computes and returns in that type (``casting`` checked)."""
    if (min is not _NO_VALUE or max is not _NO_VALUE) and (
        a_min is not _NO_VALUE or a_max is not _NO_VALUE
    ):
        raise GeValueError(
            "np.clip: passing `min` or `max` keyword argument when `a_min` and `a_max` are "
            "provided is forbidden"
        )
    low = a_min if min is _NO_VALUE else min
    high = a_max if max is _NO_VALUE else max
    x = _h(anchor, a)
    target = _dtype_arg(dtype, "clip")
    if target is not None:
        x = _cast_to(x, target, casting, "clip")
    numpy_rules = x._builder._numpy_semantics
    for bound, ufunc, op_type in ((low, "maximum", "Maximum"), (high, "minimum", "Minimum")):
        if bound is _NO_VALUE or bound is None:
            continue
        limit = (
            _cast_to(bound, target, casting, "clip")
            if isinstance(bound, TensorHolder) and target is not None
            else bound
        )
        x = (
            _numpy_rules.binary(x, ufunc, op_type, x, limit)
            if numpy_rules
            else x._op(op_type, x, limit)
        )
    return x if target is None else x.astype(target)


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

    return refused(rule, f"output size depends on the values; {hint}")


for _name, _hint in (
    ("nonzero", "use a mask with np.where(mask, x, y) instead"),
    ("argwhere", "use a mask with np.where(mask, x, y) instead"),
    ("flatnonzero", "use a mask with np.where(mask, x, y) instead"),
    ("unique", "compute it outside ge.jit"),
    ("extract", "use np.where(mask, x, 0) instead"),
    ("compress", "use np.where(mask, x, 0) instead"),
):
    FUNCTIONS[_name] = _data_dependent(_name, _hint)
