"""Reductions over an ``axes`` input: ReduceSum/Mean/Max/Min/Prod, and ArgMaxV2.

``keep_dims`` keeps reduced axes as 1. ``noop_with_empty_axes`` (2026 prototypes; default true)
makes empty ``axes`` return the input unchanged; false reduces over all axes. When the ``axes``
value is not a known constant the output rank is unknown unless ``keep_dims`` is set. Half
types are summed in float32. Decision: ReduceMax/ReduceMin over an empty axis is an error at
inference when the size is known (numpy has no identity for them either).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ge.error import GeValueError, InferError
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import attr, compute_float, inp, out, out_dtype
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__: list[str] = []

VT = AttrValueType


def _axes(ctx: InferContext, rank: int, name: str = "axes") -> list[int] | None:
    value = ctx.values[1]
    if value is None:
        return None
    return rules.normalize_axes(np.asarray(value).reshape(-1).tolist(), rank, name)


def _reduced_shape(shape: list[int], axes: list[int], keep_dims: bool) -> list[int]:
    if keep_dims:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


def _reduce_infer(needs_identity: bool) -> Callable[[InferContext], list[Any]]:
    def infer(ctx: InferContext) -> list[Any]:
        x, axes_desc = ctx.inputs
        rules.check_dtype(axes_desc, rules.INDEX, "axes")
        shape, keep = list(x._shape), bool(ctx.attrs["keep_dims"])
        if rules.is_unknown_rank(shape):
            return [rules.desc(rules.UNKNOWN_RANK, x._data_type, x._format)]
        axes = _axes(ctx, len(shape))
        if axes is None:
            out_shape = [-1] * len(shape) if keep else rules.UNKNOWN_RANK
            return [rules.desc(out_shape, x._data_type, x._format)]
        if not axes:
            if ctx.attrs.get("noop_with_empty_axes", True):
                return [rules.desc(shape, x._data_type, x._format)]
            axes = list(range(len(shape)))
        if needs_identity and shape and any(shape[a] == 0 for a in axes):
            raise InferError(f"cannot reduce over axes {axes} of shape {shape}: an axis is empty")
        return [rules.desc(_reduced_shape(shape, axes, keep), x._data_type, x._format)]

    return infer


def _reduce_reference(fn: Callable[..., np.ndarray]) -> Callable[[ExecContext], list[Any]]:
    def reference(ctx: ExecContext) -> list[Any]:
        x, axes = ctx.inputs
        keep = bool(ctx.attrs["keep_dims"])
        axes_list = rules.normalize_axes(np.asarray(axes).reshape(-1).tolist(), max(x.ndim, 1))
        if not axes_list:
            if ctx.attrs.get("noop_with_empty_axes", True):
                return [x.copy()]
            axes_list = list(range(x.ndim))
        if x.ndim == 0:
            return [x.copy()]
        if fn in (np.max, np.min) and any(x.shape[a] == 0 for a in axes_list):
            raise GeValueError(f"cannot reduce an empty axis of shape {x.shape}")
        y = compute_float(lambda a: fn(a, axis=tuple(axes_list), keepdims=keep), x)
        return [y.astype(out_dtype(ctx), copy=False)]

    return reference


for _name, _fn, _identity in (
    ("ReduceSum", np.sum, False),
    ("ReduceMean", np.mean, False),
    ("ReduceMax", np.max, True),
    ("ReduceMin", np.min, True),
    ("ReduceProd", np.prod, False),
):
    register_op_def(
        OpDef(
            _name,
            inputs=(inp("x", rules.REAL), inp("axes", rules.INDEX)),
            outputs=(out("y", rules.REAL),),
            attrs=(
                attr("keep_dims", VT.VT_BOOL, False),
                attr("noop_with_empty_axes", VT.VT_BOOL, True),
            ),
            infer=_reduce_infer(_identity),
            value_inputs=frozenset({"axes"}),
            reference=_reduce_reference(_fn),
            group="math",
            doc=f"{_name} of x over `axes`.",
        )
    )


def _argmax_infer(ctx: InferContext) -> list[Any]:
    x, dim_desc = ctx.inputs
    rules.check_dtype(dim_desc, rules.INDEX, "dimension")
    dtype = ctx.attrs["dtype"]
    if dtype not in (DataType.DT_INT32, DataType.DT_INT64):
        raise InferError(f"attribute dtype must be DT_INT32 or DT_INT64, got {dtype!r}")
    shape = list(x._shape)
    if rules.is_unknown_rank(shape) or ctx.values[1] is None:
        out_shape = (
            rules.UNKNOWN_RANK if rules.is_unknown_rank(shape) else [-1] * max(len(shape) - 1, 0)
        )
        return [rules.desc(out_shape, dtype, x._format)]
    if not shape:
        raise InferError("x must have at least one dim")
    axis = rules.normalize_axis(rules.one_int(ctx.values[1], "dimension"), len(shape), "dimension")
    if shape[axis] == 0:
        raise InferError(f"cannot take the argmax over empty dimension {axis} of {shape}")
    return [rules.desc(shape[:axis] + shape[axis + 1 :], dtype, x._format)]


def _argmax_reference(ctx: ExecContext) -> list[Any]:
    x, dim = ctx.inputs
    axis = rules.normalize_axis(rules.one_int(dim, "dimension"), x.ndim, "dimension")
    return [np.argmax(x, axis=axis).astype(out_dtype(ctx))]


register_op_def(
    OpDef(
        "ArgMaxV2",
        inputs=(inp("x", rules.REAL), inp("dimension", rules.INDEX)),
        outputs=(out("y", rules.INDEX),),
        attrs=(attr("dtype", VT.VT_DATA_TYPE, DataType.DT_INT64),),
        infer=_argmax_infer,
        value_inputs=frozenset({"dimension"}),
        reference=_argmax_reference,
        group="math",
        doc="Index of the largest value along `dimension` (first one on ties).",
    )
)
