"""Scans and sorts: Cumsum, Cumprod, Sort, TopKV2.

GE's ``OPS_REFERENCE.md`` has no text for these; the prototypes are GE's / TensorFlow's
well-known ones:

- ``Cumsum(x, axis) -> y`` and ``Cumprod(x, axis) -> y``, attrs ``exclusive=False``,
  ``reverse=False``. ``axis`` is a value input (int32/int64, one value) as in GE. ``exclusive``
  makes ``y[i]`` the sum (product) of the elements before ``i`` (the first is 0, resp. 1);
  ``reverse`` scans from the end. ``y`` has ``x``'s type: integers wrap around in it (as
  numpy's ``cumsum(x, dtype=x.dtype)``); half types (float16, bfloat16) accumulate in float32,
  rounding each output once; float32/float64 accumulate in their own type, in order.
- ``Sort(x) -> y1, y2``, attrs ``axis=-1``, ``descending=False``: ``y1`` the sorted values,
  ``y2`` their int32 positions along ``axis``.
- ``TopKV2(x, k) -> values, indices``, attrs ``sorted=True``, ``dim=-1``, ``largest=True``:
  the ``k`` largest (smallest with ``largest=False``) along ``dim``, ``indices`` int32.

Decisions where GE is silent:

- Sorts are stable (numpy's ``kind='stable'``): equal keys keep their input order, in both
  directions. NaN counts as larger than every number (numpy's NaN-last ascending order), so a
  descending sort puts NaNs first and ``TopKV2`` with ``largest=True`` returns NaNs first;
  ``-0.0`` and ``0.0`` are equal. A descending sort is therefore *not* ``np.flip`` of the
  ascending one: ties stay in input order.
- ``TopKV2`` always returns its ``k`` elements sorted (``sorted=False`` allows any order;
  sorted is one of them) and, among equal keys, the lower index first (TensorFlow's rule).
  ``k`` must lie in ``[0, size of dim]``; ``x`` must have rank >= 1.
- A 0-d ``x`` is one element along axis 0 (or -1): the scans return it (0 or 1 when
  exclusive), ``Sort`` returns it with index 0.
- dtypes: the scans take every integer and floating type (not bool, as in TensorFlow);
  ``Sort``/``TopKV2`` also take bool (False < True).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ge.error import GeValueError, InferError
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import attr, compute_float, inp, out
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__ = ["stable_order"]

VT = AttrValueType
_SCAN_TYPES = rules.REAL
_SORT_TYPES = rules.REAL | rules.BOOL
_INDEX_OUT = frozenset({DataType.DT_INT32})


# --- shared -------------------------------------------------------------------------------------
def _keys(x: np.ndarray) -> np.ndarray:
    """What a sort compares: half types as float32 (exact, order-preserving), bool as uint8."""
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    if x.dtype.itemsize < 4 and x.dtype.kind not in "iu":  # float16, bfloat16
        return x.astype(np.float32)
    return x


def stable_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The int64 positions that sort ``x`` along ``axis`` stably (NaN largest): ascending is
    numpy's stable argsort; descending sorts the reversed axis ascending and reverses that
    order back, which keeps ties in input order and puts NaNs first."""
    keys = _keys(x)
    if not descending:
        return np.argsort(keys, axis=axis, kind="stable")
    n = keys.shape[axis]
    flipped = np.argsort(np.flip(keys, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - flipped, axis)


def _scan_axis(value: Any, rank: int, what: str = "axis") -> int:
    return rules.normalize_axis(rules.one_int(value, what), rank, what)


# --- Cumsum / Cumprod ---------------------------------------------------------------------------
def _scan_infer(ctx: InferContext) -> list[Any]:
    x, axis_desc = ctx.inputs
    rules.check_dtype(axis_desc, rules.INDEX, "axis")
    shape = list(x._shape)
    value = ctx.values[1]
    if value is not None and not rules.is_unknown_rank(shape):
        _scan_axis(value, len(shape))
    return [rules.desc(shape, x._data_type, x._format)]


def _scan_reference(fn: Callable[..., np.ndarray], identity: int) -> Callable[..., list[Any]]:
    def reference(ctx: ExecContext) -> list[Any]:
        x, axis_value = ctx.inputs
        x = np.asarray(x)
        axis = _scan_axis(axis_value, x.ndim)
        line = x.reshape(x.shape or (1,))
        if ctx.attrs["reverse"]:
            line = np.flip(line, axis)
        dtype = x.dtype if x.dtype.kind in "iu" else None
        y = compute_float(lambda a: fn(a, axis=axis, dtype=dtype), line)
        if ctx.attrs["exclusive"] and y.shape[axis]:
            first = np.full_like(np.take(y, [0], axis=axis), identity)
            y = np.concatenate([first, np.take(y, range(y.shape[axis] - 1), axis=axis)], axis)
        if ctx.attrs["reverse"]:
            y = np.flip(y, axis)
        return [y.astype(x.dtype, order="C").reshape(x.shape)]

    return reference


for _name, _fn, _identity, _what in (
    ("Cumsum", np.cumsum, 0, "sum"),
    ("Cumprod", np.cumprod, 1, "product"),
):
    register_op_def(
        OpDef(
            _name,
            inputs=(inp("x", _SCAN_TYPES), inp("axis", rules.INDEX)),
            outputs=(out("y", _SCAN_TYPES),),
            attrs=(attr("exclusive", VT.VT_BOOL, False), attr("reverse", VT.VT_BOOL, False)),
            infer=_scan_infer,
            value_inputs=frozenset({"axis"}),
            reference=_scan_reference(_fn, _identity),
            group="math",
            doc=f"Running {_what} of x along `axis` (exclusive: of the elements before; "
            "reverse: from the end).",
        )
    )


# --- Sort -------------------------------------------------------------------------------------
def _sort_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    shape = list(x._shape)
    if not rules.is_unknown_rank(shape):
        rules.normalize_axis(int(ctx.attrs["axis"]), len(shape), "axis")
    return [
        rules.desc(shape, x._data_type, x._format),
        rules.desc(shape, DataType.DT_INT32, x._format),
    ]


def _sort_reference(ctx: ExecContext) -> list[Any]:
    x = np.asarray(ctx.inputs[0])
    axis = rules.normalize_axis(int(ctx.attrs["axis"]), x.ndim, "axis")
    line = x.reshape(x.shape or (1,))
    order = stable_order(line, axis, bool(ctx.attrs["descending"]))
    values = np.take_along_axis(line, order, axis)
    return [values.reshape(x.shape).copy(), order.astype(np.int32).reshape(x.shape)]


register_op_def(
    OpDef(
        "Sort",
        inputs=(inp("x", _SORT_TYPES),),
        outputs=(out("y1", _SORT_TYPES), out("y2", _INDEX_OUT)),
        attrs=(attr("axis", VT.VT_INT, -1), attr("descending", VT.VT_BOOL, False)),
        infer=_sort_infer,
        reference=_sort_reference,
        group="math",
        doc="x sorted stably along `axis` (y1) and the int32 positions it came from (y2).",
    )
)


# --- TopKV2 -----------------------------------------------------------------------------------
def _topk_k(value: Any, size: int) -> int:
    k = rules.one_int(value, "k")
    if k < 0 or 0 <= size < k:
        raise InferError(f"k must be in [0, {size}] (the size of dim), got {k}")
    return k


def _topk_infer(ctx: InferContext) -> list[Any]:
    x, k_desc = ctx.inputs
    rules.check_dtype(k_desc, rules.INDEX, "k")
    shape = list(x._shape)
    if rules.is_unknown_rank(shape):
        out_shape = rules.UNKNOWN_RANK
    else:
        if not shape:
            raise InferError("x must have at least one dim, got a scalar")
        dim = rules.normalize_axis(int(ctx.attrs["dim"]), len(shape), "dim")
        value = ctx.values[1]
        out_shape = list(shape)
        out_shape[dim] = -1 if value is None else _topk_k(value, shape[dim])
    return [
        rules.desc(out_shape, x._data_type, x._format),
        rules.desc(out_shape, DataType.DT_INT32, x._format),
    ]


def _topk_reference(ctx: ExecContext) -> list[Any]:
    x, k_value = (np.asarray(v) for v in ctx.inputs)
    if x.ndim == 0:
        raise GeValueError("TopKV2 input 'x' must have at least one dim, got a scalar")
    dim = rules.normalize_axis(int(ctx.attrs["dim"]), x.ndim, "dim")
    try:
        k = _topk_k(k_value, x.shape[dim])
    except InferError as e:
        raise GeValueError(f"TopKV2 input {e}") from None
    order = stable_order(x, dim, bool(ctx.attrs["largest"]))
    order = np.take(order, range(k), axis=dim)
    return [np.take_along_axis(x, order, dim).copy(), order.astype(np.int32)]


register_op_def(
    OpDef(
        "TopKV2",
        inputs=(inp("x", _SORT_TYPES), inp("k", rules.INDEX)),
        outputs=(out("values", _SORT_TYPES), out("indices", _INDEX_OUT)),
        attrs=(
            attr("sorted", VT.VT_BOOL, True),
            attr("dim", VT.VT_INT, -1),
            attr("largest", VT.VT_BOOL, True),
        ),
        infer=_topk_infer,
        value_inputs=frozenset({"k"}),
        reference=_topk_reference,
        group="math",
        doc="The k largest (largest=False: smallest) elements of x along `dim`, sorted, with "
        "their int32 positions; ties: the lower index first.",
    )
)
