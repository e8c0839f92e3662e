"""How ``ge.passes`` recognises, checks and calls the hooks users write on pass classes.

Owns three things (GE_ERRORS.md §9.2, "Hook binding facts"):

* the ``@pattern`` marker: ``pattern`` sets ``__ge_pattern__`` on the function; the class checks
  and the runner look for the marker, never at the method's name;
* the class-definition checks of the hooks (``check_pattern_fusion_hooks``,
  ``check_decompose_hooks``, called from ``base``'s ``__init_subclass__``). "Positional count"
  counts ``self`` and leaves out ``*args``/``**kwargs``; a required keyword-only parameter fails
  the arity check as GE's does. Only the class's own ``__dict__`` is looked at;
* hook binding: an accepted ``meet_requirements``/``replacement`` is replaced on its class by a
  wrapper ``(self, value, context=None)`` that passes the context on only when the user's hook
  has three positional parameters; an expression-style ``replacement`` (second positional
  parameter named ``inputs``) by ``(self, inputs, match_result=None, context=None)``, which
  passes on what the user's form asks for. The runner calls hooks through
  ``call_meet_requirements``, ``call_replacement`` and ``call_expression_replacement``, which
  also cope with a hook assigned after the class was made (it is inspected on the call).

Decision (ours; GE is silent): which patterns a class declares follows the MRO. The nearest
class (most derived first) whose own ``__dict__`` declares patterns decides the style: if it
defines ``patterns()`` the class uses ``patterns()`` and ``pattern_method_names`` is empty;
if it has ``@pattern`` methods, the class uses every ``@pattern`` method it sees through its
MRO, base classes' first, each in definition order (a name redefined without ``@pattern`` in a
subclass drops out, one redefined with it keeps its first place).

    >>> class P:
    ...     @pattern
    ...     def add(self, inputs): ...
    >>> pattern_method_names(P)
    ['add']
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ge.error import GeTypeError

__all__ = [
    "PATTERN_MARK",
    "call_expression_replacement",
    "call_meet_requirements",
    "call_replacement",
    "check_decompose_hooks",
    "check_pattern_fusion_hooks",
    "is_expression_replacement",
    "is_pattern_method",
    "normalized_hook",
    "own_pattern_methods",
    "pattern",
    "pattern_method_names",
]

PATTERN_MARK = "__ge_pattern__"
_HOOK_MARK = "__ge_hook__"  # a _HookInfo on every wrapper (and on the base classes' defaults)
_DEFAULT_MARK = "__ge_default_hook__"  # the base classes' own default bodies

F = TypeVar("F", bound=Callable[..., Any])


def pattern(fn: F) -> F:
    """Mark ``def name(self, inputs)`` as one pattern of its ``PatternFusionPass``."""
    setattr(fn, PATTERN_MARK, True)
    return fn


def is_pattern_method(value: object) -> bool:
    return callable(value) and getattr(value, PATTERN_MARK, False) is True


# --- signatures --------------------------------------------------------------------------------

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True)
class _Params:
    """The parts of a signature the checks read: the positional parameter names (``self``
    included, ``*args`` left out) and whether a keyword-only parameter lacks a default (no
    caller of a hook supplies one, so it fails every arity check)."""

    names: tuple[str, ...]
    required_kw_only: bool = False

    def count_in(self, low: int, high: int) -> bool:
        return not self.required_kw_only and low <= len(self.names) <= high


def _params(fn: object) -> _Params | None:
    """``fn``'s ``_Params``, or ``None`` when it has no usable signature (not callable)."""
    try:
        params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    empty = inspect.Parameter.empty
    return _Params(
        names=tuple(p.name for p in params if p.kind in _POSITIONAL),
        required_kw_only=any(
            p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is empty for p in params
        ),
    )


def _fits(fn: object, low: int, high: int) -> _Params | None:
    params = _params(fn)
    return params if params is not None and params.count_in(low, high) else None


# --- hook descriptions and wrappers ------------------------------------------------------------


@dataclass(frozen=True)
class _HookInfo:
    """What a wrapper knows about the user hook it calls: its positional count (``self``
    included), whether it is an expression-style replacement, and then whether its third
    parameter is the context."""

    count: int
    expression: bool = False
    third_is_context: bool = False

    @classmethod
    def of(cls, names: tuple[str, ...]) -> _HookInfo:
        return cls(len(names), names[1:2] == ("inputs",), names[2:3] == ("context",))


def normalized_hook(*, expression: bool = False) -> Callable[[F], F]:
    """Mark a base class's default hook as already in the normalised form, so that the
    ``call_*`` functions call it directly and ``pattern_method_names`` knows it for a default."""
    info = _HookInfo(count=4 if expression else 3, expression=expression)

    def mark(fn: F) -> F:
        setattr(fn, _HOOK_MARK, info)
        setattr(fn, _DEFAULT_MARK, True)
        return fn

    return mark


def _wrap_graph_hook(fn: Callable[..., Any], count: int) -> Callable[..., Any]:
    if count == 3:

        @functools.wraps(fn)
        def wrapper(self: Any, value: Any, context: Any = None) -> Any:
            return fn(self, value, context)
    else:

        @functools.wraps(fn)
        def wrapper(self: Any, value: Any, context: Any = None) -> Any:
            return fn(self, value)

    setattr(wrapper, _HOOK_MARK, _HookInfo(count=count))
    return wrapper


def _expression_args(
    info: _HookInfo, inputs: Any, match_result: Any, context: Any
) -> tuple[Any, ...]:
    if info.count <= 2:
        return (inputs,)
    if info.count == 3:
        return (inputs, context if info.third_is_context else match_result)
    return (inputs, match_result, context)


def _wrap_expression_hook(fn: Callable[..., Any], names: tuple[str, ...]) -> Callable[..., Any]:
    info = _HookInfo.of(names)

    @functools.wraps(fn)
    def wrapper(self: Any, inputs: Any, match_result: Any = None, context: Any = None) -> Any:
        return fn(self, *_expression_args(info, inputs, match_result, context))

    setattr(wrapper, _HOOK_MARK, info)
    return wrapper


# --- class-definition checks -------------------------------------------------------------------

_PATTERN_ARITY = "@pattern methods only support method(self, inputs)"
_EXPRESSION_ARITY = (
    "Expression-style replacement only supports replacement(self, inputs), "
    "replacement(self, inputs, match_result), replacement(self, inputs, context), or "
    "replacement(self, inputs, match_result, context)"
)
_EXPRESSION_FOURTH = (
    "Expression-style replacement with four arguments must use "
    "replacement(self, inputs, match_result, context)"
)


@dataclass(frozen=True)
class _HookRule:
    """A hook of one pass kind: accepted graph-style with 2..3 positional parameters, and
    (``expression``) also expression-style when its second parameter is named ``inputs``."""

    name: str
    message: str
    expression: bool = False


_PATTERN_FUSION_RULES = (
    _HookRule(
        "meet_requirements",
        "meet_requirements only supports meet_requirements(self, match_result) or "
        "meet_requirements(self, match_result, context)",
    ),
    _HookRule(
        "replacement",
        "replacement only supports replacement(self, match_result) or "
        "replacement(self, match_result, context)",
        expression=True,
    ),
)
_DECOMPOSE_RULES = (
    _HookRule(
        "meet_requirements",
        "meet_requirements only supports meet_requirements(self, node) or "
        "meet_requirements(self, node, context)",
    ),
    _HookRule(
        "replacement",
        "replacement only supports replacement(self, node) or replacement(self, node, context)",
    ),
)


def _checked_graph_hook(fn: Callable[..., Any], rule: _HookRule) -> Callable[..., Any]:
    """The wrapper of an accepted graph-style hook; ``TypeError`` with the rule's text when
    its arity does not fit."""
    params = _fits(fn, 2, 3)
    if params is None:
        raise GeTypeError(rule.message)
    return _wrap_graph_hook(fn, len(params.names))


def _checked_expression_replacement(fn: Callable[..., Any], params: _Params) -> Callable[..., Any]:
    if not params.count_in(2, 4):
        raise GeTypeError(_EXPRESSION_ARITY)
    if len(params.names) == 4 and params.names[3] != "context":
        raise GeTypeError(_EXPRESSION_FOURTH)
    return _wrap_expression_hook(fn, params.names)


def _checked_hooks(cls: type, rules: tuple[_HookRule, ...]) -> dict[str, Callable[..., Any]]:
    """The wrappers of the hooks ``cls`` itself defines (``hook = None`` counts as defining
    it), all checked before any is made part of the class."""
    wrappers: dict[str, Callable[..., Any]] = {}
    for rule in rules:
        if rule.name not in vars(cls):
            continue
        fn = vars(cls)[rule.name]
        params = _params(fn)
        if rule.expression and params is not None and params.names[1:2] == ("inputs",):
            wrappers[rule.name] = _checked_expression_replacement(fn, params)
        else:
            wrappers[rule.name] = _checked_graph_hook(fn, rule)
    return wrappers


def own_pattern_methods(cls: type) -> list[str]:
    """The ``@pattern`` methods in ``cls``'s own ``__dict__``, in definition order."""
    return [name for name, value in vars(cls).items() if is_pattern_method(value)]


def check_pattern_fusion_hooks(cls: type) -> None:
    """The hook checks of a ``PatternFusionPass`` subclass (after ``base``'s ``run`` and
    style checks: ``@pattern`` arity, ``meet_requirements``, ``replacement``), then the
    binding of its accepted hooks."""
    for name in own_pattern_methods(cls):
        if _fits(vars(cls)[name], 2, 2) is None:
            raise GeTypeError(_PATTERN_ARITY)
    for name, wrapper in _checked_hooks(cls, _PATTERN_FUSION_RULES).items():
        setattr(cls, name, wrapper)


def check_decompose_hooks(cls: type) -> None:
    """The hook checks of a ``DecomposePass`` subclass, then the binding of its hooks."""
    for name, wrapper in _checked_hooks(cls, _DECOMPOSE_RULES).items():
        setattr(cls, name, wrapper)


# --- what the runner calls ---------------------------------------------------------------------


def _declares_patterns_method(klass: type) -> bool:
    fn = vars(klass).get("patterns")
    return fn is not None and not getattr(fn, _DEFAULT_MARK, False)


def pattern_method_names(cls: type) -> list[str]:
    """The names of the ``@pattern`` methods ``cls`` uses, in definition order along its MRO
    (base classes first); empty when the class uses ``patterns()`` (see the module notes)."""
    for klass in cls.__mro__:
        if own_pattern_methods(klass):
            break
        if _declares_patterns_method(klass):
            return []
    seen: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        seen.update(dict.fromkeys(own_pattern_methods(klass)))
    return [name for name in seen if is_pattern_method(getattr(cls, name, None))]


def _marker(fn: object) -> _HookInfo | None:
    info = getattr(fn, _HOOK_MARK, None)
    return info if isinstance(info, _HookInfo) else None


def _inferred(fn: object, *, bound: bool) -> _HookInfo | None:
    """The form of a hook set after its class was made, read from its signature. ``bound``:
    ``fn`` was looked up on an instance, so its signature lacks ``self`` (a bound method) or
    never had one (a callable set on the instance); it is counted back in."""
    params = _params(fn)
    if params is None:
        return None
    return _HookInfo.of(("self", *params.names) if bound else params.names)


def is_expression_replacement(cls: type) -> bool:
    """Whether ``cls.replacement`` is expression-style (its second positional parameter is
    named ``inputs``)."""
    fn = getattr(cls, "replacement", None)
    info = _marker(fn) or _inferred(fn, bound=False)
    return info is not None and info.expression


def _call_graph_hook(method: Callable[..., Any], value: Any, context: Any) -> Any:
    if _marker(method) is not None:  # a wrapper or a default: already (value, context=None)
        return method(value, context)
    info = _inferred(method, bound=True)
    return method(value, context) if info is not None and info.count >= 3 else method(value)


def call_meet_requirements(pass_obj: Any, value: Any, context: Any) -> bool:
    """``pass_obj.meet_requirements(value[, context])`` as a bool (a truthy result accepts)."""
    return bool(_call_graph_hook(pass_obj.meet_requirements, value, context))


def call_replacement(pass_obj: Any, value: Any, context: Any) -> Any:
    """``pass_obj.replacement(value[, context])`` for a graph-style replacement (a
    ``PatternFusionPass`` given the match result, a ``DecomposePass`` given the node)."""
    return _call_graph_hook(pass_obj.replacement, value, context)


def call_expression_replacement(pass_obj: Any, inputs: Any, match_result: Any, context: Any) -> Any:
    """``pass_obj.replacement(inputs[, match_result][, context])``, the arguments chosen by
    the user's signature (a third parameter named ``context`` gets the context)."""
    method = pass_obj.replacement
    marked = _marker(method)
    if marked is not None and marked.expression:  # the wrapper takes all three
        return method(inputs, match_result, context)
    info = _inferred(method, bound=True) or _HookInfo(count=2, expression=True)
    return method(*_expression_args(info, inputs, match_result, context))
