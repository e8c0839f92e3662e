"""What numpy ``ge.es`` has rules for on ``TensorHolder`` values, as public records.

``ge.jit.numpy_support()`` builds its table from these queries and from nothing private of
the rule modules; anyone else asking (a linter, a notebook) can use them too:

- ``function_rules()``: numpy function ``__name__`` -> ``RuleInfo(status, keywords, why)``
  for every function ``TensorHolder.__array_function__`` has a rule for (``"supported"``, or
  ``"refused"`` for a rule that always raises, saying why; ``keywords``: those the rule
  takes, ``None`` where it checks its own);
- ``ufunc_rule(name)``: ``UfuncInfo(op_type)`` for a ufunc with a rule (``op_type`` the one
  ``ge.ops`` op it builds, ``None`` for a composite of several ops), else ``None``;
- ``ufunc_method_keywords(method)``: the keywords ``np.<ufunc>.<method>`` takes on traced
  values, ``None`` for a method with no rule; ``ufunc_accumulator(ufunc)``: the numpy
  function its ``.accumulate`` is (``"cumsum"`` for ``add``), or ``None``;
- ``ndarray_method(name)``: ``MethodInfo(forwards_to, always_raises, summary)`` for a
  ``TensorHolder`` method or attribute numpy's ``ndarray`` also has, else ``None``.

Decisions (ours): the records are computed from the live tables at each call (rules and ops
registered later appear); a rule registered without the registrar (``tensor_holder``'s own
table) is described from its signature.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ge.es import _numpy_ufuncs, tensor_holder
from ge.es._numpy_common import RuleInfo, keywords_of
from ge.es.tensor_holder import TensorHolder
from ge.ops.registry import find_op

__all__ = [
    "MethodInfo",
    "RuleInfo",
    "UfuncInfo",
    "function_rules",
    "has_rule",
    "ndarray_method",
    "ufunc_accumulator",
    "ufunc_method_keywords",
    "ufunc_rule",
]


@dataclass(frozen=True)
class UfuncInfo:
    """A ufunc with a rule: ``op_type`` is the one op it builds (``None``: several)."""

    op_type: str | None


@dataclass(frozen=True)
class MethodInfo:
    """A ``TensorHolder`` method or attribute named as numpy's ``ndarray``'s:
    ``forwards_to`` the numpy function it calls (``x.cumsum()`` is ``np.cumsum(x)``), or
    ``None``; ``always_raises`` for those declared ``NoReturn`` (``x.item()``: a traced value
    is only known at run time); ``summary`` the first line of its docstring."""

    forwards_to: str | None
    always_raises: bool
    summary: str


def _info(rule: Any) -> RuleInfo:
    info = getattr(rule, "support", None)
    return info if isinstance(info, RuleInfo) else RuleInfo("supported", keywords_of(rule))


def function_rules() -> dict[str, RuleInfo]:
    """Every numpy function (by ``__name__``) with a rule on traced values."""
    return {name: _info(rule) for name, rule in tensor_holder._FUNCTIONS.items()}


def has_rule(name: str) -> bool:
    """Whether ``np.<name>`` (a function or a ufunc) has a rule on traced values."""
    function = getattr(np, name, None)
    if isinstance(function, np.ufunc):  # np.conj is the ufunc conjugate
        return ufunc_rule(function.__name__) is not None
    return getattr(function, "__name__", name) in tensor_holder._FUNCTIONS


def ufunc_rule(name: str) -> UfuncInfo | None:
    """How ``np.<name>`` builds on traced values, or ``None`` if it has no rule."""
    if tensor_holder._ufunc_rule(name) is None:
        return None
    op_type = tensor_holder._UFUNC_OPS.get(name)
    op = find_op(op_type) if op_type is not None else None
    return UfuncInfo(op.type if op is not None and op.ufunc == name else None)


def ufunc_method_keywords(method: str) -> frozenset[str] | None:
    """The keywords ``np.<ufunc>.<method>`` takes on traced values (``None``: no rule)."""
    return _numpy_ufuncs.METHOD_KEYWORDS.get(method)


def ufunc_accumulator(ufunc: str) -> str | None:
    """The numpy function ``np.<ufunc>.accumulate`` is, or ``None``."""
    return _numpy_ufuncs.ACCUMULATORS.get(ufunc)


def ndarray_method(name: str) -> MethodInfo | None:
    """The ``TensorHolder`` method or attribute ``name``, or ``None`` if it has none."""
    ours = getattr(TensorHolder, name, None)
    if ours is None:
        return None
    returns = getattr(ours, "__annotations__", {}).get("return")
    summary = (inspect.getdoc(ours) or "").split("\n", 1)[0] if callable(ours) else ""
    return MethodInfo(_forwarded(ours), returns in ("NoReturn", NoReturn), summary)


def _forwarded(method: Any) -> str | None:
    """The numpy function a method made by ``tensor_holder._forward`` calls."""
    if "_forward" not in getattr(method, "__qualname__", ""):
        return None
    target = inspect.getclosurevars(method).nonlocals.get("target")
    return target if isinstance(target, str) else None
