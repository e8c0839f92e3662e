"""The pass base classes users subclass, and the context a pass runs with.

* ``FusionBasePass``: ``run(graph, context)`` edits the graph directly.
* ``PatternFusionPass``: patterns (``patterns()`` or ``@pattern`` methods), then per match
  ``meet_requirements`` and ``replacement``; the runner (``ge.passes._run``) does the rest, so
  defining ``run`` is refused.
* ``DecomposePass``: per node of one of its ``op_types``, ``meet_requirements`` and
  ``replacement``; defining ``run`` is refused too.
* ``PassContext``: made by the runner (``PassContext._create``), never by users.

The class-definition checks (GE_ERRORS.md §9.2) run in ``__init_subclass__`` and look only at
the class's own ``__dict__``, in GE's order: ``run``, then mixing ``@pattern`` with
``patterns()``, then the hook arities (``ge.passes._hooks``), whose accepted hooks are then
wrapped as ``(self, value, context=None)``, so both ``p.replacement(node)`` and
``p.replacement(node, context)`` work whatever form the user wrote.

    >>> class Twice(DecomposePass):
    ...     def meet_requirements(self, node):
    ...         return node == "Add"
    >>> Twice().meet_requirements("Add", None)
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ge.error import GeError, GeTypeError
from ge.passes import _hooks

if TYPE_CHECKING:
    from ge.graph import Graph, Node

__all__ = ["DecomposePass", "FuseRecord", "FusionBasePass", "PassContext", "PatternFusionPass"]


class FuseRecord(NamedTuple):
    """One rewrite a pass reported: the names of the nodes it replaced and of those it made
    (empty ``nodes_after``: the nodes were only deleted)."""

    nodes_before: list[str]
    nodes_after: list[str]


def _require_str(method: str, arg: str, value: object) -> str:
    if not isinstance(value, str):
        raise GeTypeError(f"{method} expects {arg} to be a str, got {type(value).__name__}")
    return value


class PassContext:
    """What a pass sees of its run: its name, the compile options, an error message it may
    leave for the engine, and (internal) the rewrites it reported.

    Only the runner makes one: ``PassContext()`` raises ``TypeError`` "No constructor
    defined!" as GE's native class does."""

    __slots__ = ("_error_message", "_fuse_records", "_options", "_pass_name")

    _pass_name: str
    _error_message: str
    _options: dict[str, str]
    _fuse_records: list[FuseRecord]

    def __init__(self) -> None:
        raise GeTypeError("No constructor defined!")

    @classmethod
    def _create(cls, pass_name: str, options: Mapping[str, str]) -> PassContext:
        """A context for the pass ``pass_name`` run under the compile ``options`` (copied)."""
        ctx = cls.__new__(cls)
        ctx._pass_name = pass_name
        ctx._error_message = ""
        ctx._options = dict(options)
        ctx._fuse_records = []
        return ctx

    def get_pass_name(self) -> str:
        return self._pass_name

    def set_pass_name(self, pass_name: str) -> None:
        self._pass_name = _require_str("set_pass_name", "pass_name", pass_name)

    def get_error_message(self) -> str:
        return self._error_message

    def set_error_message(self, error_message: str) -> None:
        self._error_message = _require_str("set_error_message", "error_message", error_message)

    def get_option_value(self, option_key: str) -> str:
        """The compile option ``option_key``; ``RuntimeError`` if it was not given."""
        _require_str("get_option_value", "option_key", option_key)
        value = self._options.get(option_key)
        if value is None:
            raise GeError(f"Failed to get option value for key: {option_key}")
        return value

    @property
    def pass_name(self) -> str:
        return self._pass_name

    @pass_name.setter
    def pass_name(self, pass_name: str) -> None:
        self.set_pass_name(pass_name)

    @property
    def error_message(self) -> str:
        return self._error_message

    @error_message.setter
    def error_message(self, error_message: str) -> None:
        self.set_error_message(error_message)

    def _record_fuse(self, nodes_before: Iterable[str], nodes_after: Iterable[str]) -> None:
        """Note that the pass replaced the nodes named ``nodes_before`` by ``nodes_after``."""
        self._fuse_records.append(FuseRecord(list(nodes_before), list(nodes_after)))

    def __repr__(self) -> str:
        return f"PassContext(pass_name={self._pass_name!r})"


class FusionBasePass:
    """A pass that edits the graph itself in ``run``.

    ``run`` returns ``None`` or ``True`` (success), ``False`` (failure) or an ``int`` status
    (0 is success); raising fails the pass with the exception's text on the context."""

    def run(self, graph: Graph, context: PassContext) -> bool | int | None:
        raise NotImplementedError("FusionBasePass.run must be implemented")


def _refuse_run(cls: type, base: str, hooks: str) -> None:
    if "run" in vars(cls):
        raise GeTypeError(
            f"{cls.__name__} overrides run(), which is never invoked by the {base} execution "
            f"path. Implement {hooks} instead."
        )


class PatternFusionPass(FusionBasePass):
    """A pass that replaces every match of its patterns.

    Declare the patterns either with ``patterns()`` (returning ``Pattern``s or ``Graph``s) or
    with ``@pattern`` methods ``def name(self, inputs)``, not both. Per match the runner asks
    ``meet_requirements(match_result[, context])`` and then builds
    ``replacement(match_result[, context])`` (a ``Graph``) or, expression style,
    ``replacement(self, inputs[, match_result][, context])``."""

    _matcher_config: Any = None  # a subclass __init__ that skips super() still reads None

    def __init__(self, matcher_config: Any = None) -> None:
        self._matcher_config = matcher_config

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _refuse_run(cls, "PatternFusionPass", "patterns()/replacement()")
        if _hooks.own_pattern_methods(cls) and "patterns" in vars(cls):
            raise GeTypeError(
                f"{cls.__name__} cannot combine @pattern methods with patterns(). "
                f"Use one style for declaring patterns."
            )
        _hooks.check_pattern_fusion_hooks(cls)

    @property
    def matcher_config(self) -> Any:
        """The ``PatternMatcherConfig`` given at construction, or ``None`` (the runner checks
        its type when the pass runs, as GE's bridge does)."""
        return self._matcher_config

    @_hooks.normalized_hook()
    def patterns(self) -> Any:
        raise NotImplementedError("PatternFusionPass.patterns must be implemented")

    @_hooks.normalized_hook()
    def meet_requirements(self, match_result: Any, context: PassContext | None = None) -> bool:
        return True

    @_hooks.normalized_hook()
    def replacement(self, match_result: Any, context: PassContext | None = None) -> Graph:
        raise NotImplementedError("PatternFusionPass.replacement must be implemented")


class DecomposePass(FusionBasePass):
    """A pass that replaces single nodes whose type is one of ``op_types`` (set by
    ``register_decompose_pass``) by the graph ``replacement(node[, context])`` returns, when
    ``meet_requirements(node[, context])`` agrees."""

    op_types: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _refuse_run(cls, "DecomposePass", "meet_requirements()/replacement()")
        _hooks.check_decompose_hooks(cls)

    @_hooks.normalized_hook()
    def meet_requirements(self, node: Node, context: PassContext | None = None) -> bool:
        return True

    @_hooks.normalized_hook()
    def replacement(self, node: Node, context: PassContext | None = None) -> Graph:
        raise NotImplementedError("DecomposePass.replacement must be implemented")
