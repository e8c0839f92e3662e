"""numpy's statistics on traced values (``np.var``, ``np.std``, ``np.any``/``np.all``,
``np.count_nonzero``, ``np.ptp``, ``np.average``), registered into ``_numpy_api``'s table.

Decisions: ``var``/``std`` take the mean first, then the mean square deviation, in
``np.mean``'s type; ``any``/``all`` count (an empty axis gives numpy's False/True, which
``ReduceMax``/``ReduceMin`` would not).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ge.error import GeValueError
from ge.es._numpy_common import (
    FUNCTIONS,
    Rule,
    _as_bool,
    _axes,
    _base,
    _h,
    _known,
    _reshape,
    rule_registrar,
)
from ge.es.tensor_holder import TensorHolder

__all__: list[str] = []  # the rules register into _numpy_common.FUNCTIONS

_register = rule_registrar(FUNCTIONS)


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
