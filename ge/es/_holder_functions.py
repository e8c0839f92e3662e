"""The numpy functions ``TensorHolder.__array_function__`` builds itself (reductions, ``where``,
``concatenate``/``stack``, ``clip``, shape functions); the numpy rule families
(``_numpy_api``, ``_numpy_sorting``, ``_numpy_ufuncs``) add theirs to ``_FUNCTIONS`` in
``ge.es.tensor_holder``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def _parts(anchor: TensorHolder, seq: Sequence[Any]) -> list[TensorHolder]:
    """The holders to join; inside ge.jit, cast to their numpy result type."""
    parts = [anchor._operand(x) for x in seq]
    if anchor._builder._numpy_semantics and parts:
        dtype = _numpy_rules.concat_dtype(parts)
        parts = [p.astype(dtype) for p in parts]
    return parts


def _concatenate(self: TensorHolder, seq: Sequence[Any], axis: int = 0, **_: Any) -> TensorHolder:
    anchor = _anchor(self, *seq)
    parts = _parts(anchor, seq)
    return anchor._op("ConcatV2", parts, anchor._ints([axis]), attrs={"N": len(parts)})


def _stack(self: TensorHolder, seq: Sequence[Any], axis: int = 0, **_: Any) -> TensorHolder:
    anchor = _anchor(self, *seq)
    parts = _parts(anchor, seq)
    expanded = [p._op("ExpandDims", p, p._ints([axis])) for p in parts]
    return anchor._op("ConcatV2", expanded, anchor._ints([axis]), attrs={"N": len(parts)})


def _clip(self: TensorHolder, a: Any, a_min: Any, a_max: Any, **_: Any) -> TensorHolder:
    x = self._operand(a)
    if x._builder._numpy_semantics:
        if a_min is not None:
            x = _numpy_rules.binary(x, "maximum", "Maximum", x, a_min)
        if a_max is not None:
            x = _numpy_rules.binary(x, "minimum", "Minimum", x, a_max)
        return x
    if a_min is not None:
        x = x._op("Maximum", x, a_min)
    if a_max is not None:
        x = x._op("Minimum", x, a_max)
    return x


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
    "concatenate": _concatenate,
    "stack": _stack,
    "reshape": lambda self, a, shape=None, newshape=None, **_: self._operand(a).reshape(
        shape if shape is not None else newshape
    ),
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
    "clip": _clip,
    "zeros_like": lambda self, a, **_: self._operand(a)._op("ZerosLike", self._operand(a)),
    "ones_like": lambda self, a, **_: self._operand(a)._op("OnesLike", self._operand(a)),
}


_REDUCE_OPS: dict[str, str] = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}
