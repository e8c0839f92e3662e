"""The numpy functions ``TensorHolder.__array_function__`` builds itself (reductions, ``where``,
shape functions); ``concatenate``, ``stack``, ``reshape``, ``clip``, ``zeros_like`` and
``ones_like`` are the numpy rule families' (which take numpy's keywords); the families
(``_numpy_api``, ``_numpy_sorting``, ``_numpy_ufuncs``) add theirs to ``_FUNCTIONS`` in
``ge.es.tensor_holder``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ge.error import GeTypeError, GeValueError
from ge.es import _numpy_rules
from ge.es._holder_operators import _matmul
from ge.es.tensor_holder import TensorHolder, innermost

__all__: list[str] = []


def _anchor(self: TensorHolder, *values: Any) -> TensorHolder:
    return innermost(self, *values)


def _reduction(method: str) -> Callable[..., TensorHolder]:
    def rule(
        self: TensorHolder,
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        **unsupported: Any,
    ) -> TensorHolder:
        if out is not None or unsupported:
            names = (["out"] if out is not None else []) + sorted(unsupported)
            raise GeTypeError(f"np.{method} of a TensorHolder does not take {', '.join(names)}")
        x = self._operand(a)
        if dtype is None:
            return getattr(x, method)(axis=axis, keepdims=keepdims)  # type: ignore[no-any-return]
        if method in ("max", "min"):
            raise GeTypeError(f"np.{method} of a TensorHolder does not take dtype")
        return getattr(x, method)(axis=axis, keepdims=keepdims, dtype=dtype)  # type: ignore[no-any-return]

    return rule


def _where(self: TensorHolder, cond: Any, *values: Any) -> TensorHolder:
    if len(values) != 2:
        raise GeValueError(
            "np.where(condition) with one argument gives the indexes where condition "
            "holds, whose count depends on the values; use np.where(mask, x, y)"
            if not values
            else f"np.where takes a condition and two values (x, y), got {len(values)} values"
        )
    a, b = values
    anchor = _anchor(self, a, b, cond)
    if anchor._builder._numpy_semantics:
        return _numpy_rules.where(anchor, cond, a, b)
    return anchor._op("SelectV2", anchor._operand(cond), anchor._operand(a), anchor._operand(b))


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sum": _reduction("sum"),
    "mean": _reduction("mean"),
    "max": _reduction("max"),
    "amax": _reduction("max"),
    "min": _reduction("min"),
    "amin": _reduction("min"),
    "prod": _reduction("prod"),
    "argmax": lambda self, a, axis=None: self._operand(a).argmax(axis),
    "where": _where,
    "transpose": lambda self, a, axes=None: self._operand(a).transpose(*(axes or ())),
    "expand_dims": lambda self, a, axis: self._operand(a)._op(
        "ExpandDims", self._operand(a), self._ints([axis])
    ),
    "squeeze": lambda self, a, axis=None: self._operand(a)._op(
        "Squeeze",
        self._operand(a),
        attrs={
            "axis": []
            if axis is None
            else (list(axis) if isinstance(axis, (list, tuple)) else [axis])
        },
    ),
    "matmul": lambda self, a, b: _matmul(self._operand(a), self._operand(b)),
    "dot": lambda self, a, b: _matmul(self._operand(a), self._operand(b)),
    "broadcast_to": lambda self, a, shape: self._operand(a)._op(
        "BroadcastTo", self._operand(a), self._ints(list(shape))
    ),
    "tile": lambda self, a, reps: self._operand(a)._op(
        "Tile",
        self._operand(a),
        self._ints(list(reps) if isinstance(reps, (list, tuple)) else [reps]),
    ),
}


_REDUCE_OPS: dict[str, str] = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}
