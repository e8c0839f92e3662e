"""The operators and ufuncs ``TensorHolder`` builds: GE-PY's ``+ - * /`` with GE's checks in
GE's order (GE_ERRORS.md §3.3), ``@``, numpy's bitwise operators, ``divmod`` and true division,
and how a numpy ufunc finds its op (``OpDef.ufunc``, or a composite rule of ``_UFUNCS``).
Inside ge.jit the numpy rules (``ge.es._numpy_rules``) decide dtypes; see
``ge.es.tensor_holder`` for the split between ES holders and traced values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ge.error import GeAttributeError, GeValueError
from ge.es import _numpy_rules
from ge.es.tensor_holder import TensorHolder, innermost
from ge.es.tensor_like import check_tensor_like, to_const  # (a function-level import: ~1 µs)
from ge.ops.registry import find_op, registry
from ge.ops.schema import OpDef

__all__: list[str] = []


# GE-PY's four arithmetic ops, by the GE op they build: the verb of their error texts
_GE_VERBS: dict[str, str] = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}


def _ge_arithmetic(self: TensorHolder, op_type: str, other: Any, reflected: bool) -> TensorHolder:
    """GE-PY's ``+ - * /`` on an ES holder, with GE's checks in GE's order (GE_ERRORS.md §3.3,
    §13.1): convert ``other`` (its type, then the builder's state as the constant is made),
    the builders' mismatch, then their state. ``1 + x`` and ``1 * x`` build ``Op(x, 1)`` as
    GE does; ``1 - x`` and ``1 / x`` build ``Op(1, x)``. Ours: numpy arrays and scalars are
    operands too, and a Python number takes ``self``'s dtype where its kind fits
    (``ge.es.tensor_like``), not GE's int64 / float32 scalar."""
    verb = _GE_VERBS[op_type]
    operand = _ge_operand(self, other, verb)
    if reflected and op_type in ("Sub", "Div"):
        return self._op(op_type, operand, self)
    return self._op(op_type, self, operand)


def _ge_operand(self: TensorHolder, other: Any, verb: str) -> TensorHolder:
    if other is None:  # GE converts None to None, then reads its ``_builder``
        raise GeAttributeError(
            f"'NoneType' object has no attribute '_builder' (the other operand of {verb} is None)"
        )
    if isinstance(other, TensorHolder):
        mine, theirs = self._builder, other._builder
        if mine is not theirs and not (mine._encloses(theirs) or theirs._encloses(mine)):
            raise GeValueError(
                f"Cannot perform {verb}: tensors from different GraphBuilders "
                f"('{mine.name}' vs '{theirs.name}'); build each graph with one GraphBuilder"
            )
        if theirs._built:  # GE checks the other operand's builder first (_check_live refuses
            theirs._check_live(verb)  # only a built one: most calls need no call)
        if mine._built:
            mine._check_live(verb)
        return other  # (one of a nested graph: ``_op`` builds there, capturing the outer one)
    if type(other) is not float and type(other) is not int:  # (a number passes at once)
        check_tensor_like(other)
    if self._builder._built:  # (what _check_live refuses; most calls need no call)
        self._builder._check_live(
            "create scalar" if isinstance(other, (int, float)) else "create constant"
        )
    return to_const(self._builder, other, like=self._node._output_descs[self._port]._data_type)


# --- helpers the operators and numpy rules share --------------------------------------------------
def _matmul(a: TensorHolder, b: TensorHolder) -> TensorHolder:
    if a._builder._numpy_semantics:
        a, b = _numpy_rules.matmul_operands(a, b)
    a2 = a._op("ExpandDims", a, a._ints([0])) if a.ndim == 1 else a
    b2 = b._op("ExpandDims", b, b._ints([-1])) if b.ndim == 1 else b
    op = "MatMulV2" if a2.ndim == 2 and b2.ndim == 2 else "BatchMatMulV2"
    y = a._op(op, a2, b2, None, None)
    if a.ndim == 1:
        y = y._op("Squeeze", y, attrs={"axis": [-2]})
    if b.ndim == 1:
        y = y._op("Squeeze", y, attrs={"axis": [-1]})
    return y


def _bitwise(self: TensorHolder, ufunc: str, a: Any, b: Any) -> TensorHolder:
    """numpy's bitwise operator inside ge.jit; ``NotImplemented`` (Python's TypeError) on
    GE-PY holders, which have no such operator."""
    anchor = innermost(self, a, b)
    if not anchor._builder._numpy_semantics:
        return NotImplemented  # type: ignore[no-any-return]
    return _numpy_rules.binary(anchor, ufunc, _UFUNC_OPS[ufunc], a, b)  # the op of ge.ops


def _unary(op_type: str, ufunc: str) -> Callable[..., TensorHolder]:
    def build(self: TensorHolder, x: Any) -> TensorHolder:
        holder = self._operand(x)
        if holder._builder._numpy_semantics and _numpy_rules.is_ufunc(ufunc):
            return _numpy_rules.unary(holder, ufunc, op_type, holder)
        return holder._op(op_type, x)

    return build


def _binary(op_type: str, ufunc: str) -> Callable[..., TensorHolder]:
    def build(self: TensorHolder, a: Any, b: Any) -> TensorHolder:
        anchor = innermost(a if isinstance(a, TensorHolder) else b, a, b)
        if anchor._builder._numpy_semantics and _numpy_rules.is_ufunc(ufunc):
            return _numpy_rules.binary(anchor, ufunc, op_type, a, b)
        return anchor._op(op_type, anchor._operand(a), anchor._operand(b))

    return build


def _numpy_only(ufunc: str) -> Callable[..., Any]:
    """A ufunc GE-PY's holders do not have (numpy raises its ``TypeError``); ge.jit's do."""

    def build(self: TensorHolder, a: Any, b: Any) -> Any:
        anchor = innermost(a if isinstance(a, TensorHolder) else b, a, b)
        if not anchor._builder._numpy_semantics:
            return NotImplemented
        if ufunc == "divmod":
            return _divmod(anchor, a, b)
        return _numpy_rules.binary(anchor, ufunc, "", a, b)

    return build


def _divmod(self: TensorHolder, a: Any, b: Any) -> Any:
    anchor = innermost(self, a, b)
    if not anchor._builder._numpy_semantics:
        return NotImplemented
    dtype = _numpy_rules.loop_dtypes("floor_divide", _numpy_rules.key(a), _numpy_rules.key(b))[0]
    return _numpy_rules.floor_divmod(anchor, a, b, dtype)


def _true_divide(self: TensorHolder, a: Any, b: Any) -> TensorHolder:
    anchor = a if isinstance(a, TensorHolder) else b
    if anchor._builder._numpy_semantics:
        return _numpy_rules.binary(innermost(anchor, a, b), "divide", "Div", a, b)
    x, y = anchor._operand(a), anchor._operand(b)
    if x.dtype.kind in "biu" and y.dtype.kind in "biu":
        x, y = x.astype(np.float32), y.astype(np.float32)
    return anchor._op("RealDiv", x, y)


# numpy ufuncs that are one op are found through the op's ``OpDef.ufunc`` (its row in ge.ops,
# built in or registered at run time); these are the ufuncs that build more than one op.
_UFUNCS: dict[str, Callable[..., Any]] = {
    "divide": _true_divide,
    "true_divide": _true_divide,
    "matmul": lambda self, a, b: _matmul(self._operand(a), self._operand(b)),
    "floor_divide": _numpy_only("floor_divide"),
    "remainder": _numpy_only("remainder"),
    "divmod": _numpy_only("divmod"),
}


_UFUNC_OPS: dict[str, str] = {op.ufunc: op.type for op in registry() if op.ufunc}


def _note_ufunc(op: OpDef) -> None:
    if op.ufunc:
        _UFUNC_OPS[op.ufunc] = op.type


registry().add_listener(_note_ufunc)


def _ufunc_rule(name: str) -> Callable[..., Any] | None:
    """How ``np.<name>`` builds on holders: the op whose ``OpDef.ufunc`` it is (unary or
    binary by its inputs), else a composite rule of ``_UFUNCS``."""
    op_type = _UFUNC_OPS.get(name)
    op = find_op(op_type) if op_type is not None else None
    if op is None or op.ufunc != name:
        return _UFUNCS.get(name)
    return _unary(op.type, name) if len(op.inputs) == 1 else _binary(op.type, name)
