"""The pass registry: the decorators that register pass classes, and the queries over them.

A registered class is described by a frozen ``PassDescriptor`` (GE_REFERENCE.md §6), also set
on the class as ``__ge_pass_descriptor__``. Passes are kept in registration order, which is the
order the passes of one stage run in. The checks and their order are GE's (GE_ERRORS.md §9.1):

* ``register_decompose_pass`` checks ``op_types`` when the factory is called, before any class;
* the decorator checks the class, then (decompose) sets ``cls.op_types``, then the descriptor
  key (``"<module>:<class>:<name>"``) is checked before the pass name. GE's quirk is kept:
  ``cls.op_types`` stays overwritten when the registration then fails;
* ``name``, ``stage`` and ``kind`` are not validated: a ``stage`` that is not a ``PassStage``
  fails only in ``get_registered_pass_dicts()`` (AttributeError on ``.value``).

Otherwise a failed registration changes nothing. Ours, for the compile pipeline:
``generation()`` grows on every change of the registered set (register, unregister, clear,
a plugin batch rolled back), so compile caches keyed on it see new passes;
``unregister_pass(name)`` removes one pass; ``registered_passes_at(stage)`` lists one stage's.

    >>> from ge.passes.base import FusionBasePass
    >>> from ge.passes.stage import PassStage
    >>> @register_fusion_pass(name="DocNoop", stage=PassStage.BEFORE_INFER_SHAPE)
    ... class DocNoop(FusionBasePass):
    ...     def run(self, graph, context):
    ...         return None
    >>> DocNoop.__ge_pass_descriptor__.kind
    'fusion_base'
    >>> unregister_pass("DocNoop")
    True
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ge.error import GeTypeError, GeValueError
from ge.passes.base import DecomposePass, FusionBasePass, PatternFusionPass
from ge.passes.stage import PassStage

__all__ = [
    "DESCRIPTOR_ATTR",
    "LOCK",
    "PassDescriptor",
    "clear_registered_passes",
    "generation",
    "get_registered_pass_by_descriptor_key",
    "get_registered_pass_dicts",
    "get_registered_passes",
    "register_decompose_pass",
    "register_fusion_pass",
    "registered_passes_at",
    "unregister_pass",
]

C = TypeVar("C", bound=type)

DESCRIPTOR_ATTR = "__ge_pass_descriptor__"
KIND_FUSION_BASE = "fusion_base"
KIND_PATTERN_FUSION = "pattern_fusion"
KIND_DECOMPOSE = "decompose"

# Guards the registry; re-entrant because plugins register while ``bootstrap`` holds it.
LOCK = threading.RLock()


@dataclass(frozen=True)
class PassDescriptor:
    """A registered pass class. ``descriptor_key`` is ``"<module>:<class>:<pass_name>"``;
    ``kind`` is ``fusion_base``, ``pattern_fusion`` or ``decompose``; ``op_types`` is empty
    but for a decompose pass."""

    descriptor_key: str
    pass_name: str
    module_name: str
    class_name: str
    stage: PassStage
    kind: str
    cls: type = field(repr=False)
    op_types: tuple[str, ...] = ()

    def to_bridge_dict(self) -> dict[str, Any]:
        """The plain fields, the stage as its value (``cls`` left out: the engine side knows
        a pass by its descriptor key)."""
        return {
            "descriptor_key": self.descriptor_key,
            "pass_name": self.pass_name,
            "module_name": self.module_name,
            "class_name": self.class_name,
            "stage": self.stage.value,
            "kind": self.kind,
            "op_types": list(self.op_types),
        }

    def remove(self) -> bool:
        """Unregister this pass (ours: the handle a registration leaves, as
        ``cls.__ge_pass_descriptor__``); ``False`` when it is no longer registered."""
        with LOCK:
            if _PASSES.get(self.descriptor_key) is not self:
                return False
            return unregister_pass(self.pass_name)


_PASSES: dict[str, PassDescriptor] = {}  # descriptor key -> descriptor, in registration order
_KEY_OF_NAME: dict[str, str] = {}  # pass name -> descriptor key
_GENERATION = 0


def generation() -> int:
    """A counter that grows whenever the set of registered passes changes."""
    return _GENERATION


def _changed() -> None:
    global _GENERATION  # noqa: PLW0603  (one counter per process, read by compile caches)
    _GENERATION += 1


def _attach(desc: PassDescriptor) -> None:
    setattr(desc.cls, DESCRIPTOR_ATTR, desc)


def _detach(desc: PassDescriptor) -> None:
    if vars(desc.cls).get(DESCRIPTOR_ATTR) is desc:
        delattr(desc.cls, DESCRIPTOR_ATTR)


def _register(desc: PassDescriptor) -> None:
    with LOCK:
        if desc.descriptor_key in _PASSES:
            raise GeValueError(f"python pass descriptor_key already exists: {desc.descriptor_key}")
        if desc.pass_name in _KEY_OF_NAME:
            raise GeValueError(f"python pass name already exists: {desc.pass_name}")
        _attach(desc)
        _PASSES[desc.descriptor_key] = desc
        _KEY_OF_NAME[desc.pass_name] = desc.descriptor_key
        _changed()


def _descriptor(
    cls: type, name: str, stage: PassStage, kind: str, op_types: tuple[str, ...] = ()
) -> PassDescriptor:
    return PassDescriptor(
        descriptor_key=f"{cls.__module__}:{cls.__name__}:{name}",
        pass_name=name,
        module_name=cls.__module__,
        class_name=cls.__name__,
        stage=stage,
        kind=kind,
        cls=cls,
        op_types=op_types,
    )


def _is_subclass(cls: object, base: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, base)


def register_fusion_pass(
    *, name: str, stage: PassStage, kind: str | None = None
) -> Callable[[C], C]:
    """Register the decorated ``FusionBasePass`` subclass as the pass ``name`` run at
    ``stage``. ``kind`` defaults to ``"pattern_fusion"`` for a ``PatternFusionPass`` subclass,
    else ``"fusion_base"``."""

    def decorate(cls: C) -> C:
        if not _is_subclass(cls, FusionBasePass):
            raise GeTypeError("register_fusion_pass expects a FusionBasePass subclass")
        default = KIND_PATTERN_FUSION if issubclass(cls, PatternFusionPass) else KIND_FUSION_BASE
        _register(_descriptor(cls, name, stage, default if kind is None else kind))
        return cls

    return decorate


_OP_TYPES_ITERABLE = "register_decompose_pass op_types must be an iterable of strings"


def _checked_op_types(op_types: object) -> tuple[str, ...]:
    if isinstance(op_types, (str, bytes)):
        raise GeTypeError(_OP_TYPES_ITERABLE)
    try:
        items = tuple(iter(op_types))  # type: ignore[call-overload]
    except TypeError:
        raise GeTypeError(_OP_TYPES_ITERABLE) from None
    if not items:
        raise GeValueError("register_decompose_pass requires at least one op type")
    if not all(isinstance(item, str) and item for item in items):
        raise GeTypeError("register_decompose_pass op_types must contain non-empty strings")
    return items


def register_decompose_pass(
    *, name: str, stage: PassStage, op_types: Iterable[str]
) -> Callable[[C], C]:
    """Register the decorated ``DecomposePass`` subclass as the pass ``name`` run at ``stage``
    on nodes of ``op_types`` (a non-empty iterable of non-empty strings, checked here and set
    as ``cls.op_types``, a tuple)."""
    types = _checked_op_types(op_types)

    def decorate(cls: C) -> C:
        if not _is_subclass(cls, DecomposePass):
            raise GeTypeError("register_decompose_pass expects a DecomposePass subclass")
        cls.op_types = types  # type: ignore[attr-defined]  # before registering, as GE does
        _register(_descriptor(cls, name, stage, KIND_DECOMPOSE, types))
        return cls

    return decorate


def clear_registered_passes() -> None:
    """Forget every registered pass."""
    with LOCK:
        if not _PASSES:
            return
        for desc in _PASSES.values():
            _detach(desc)
        _PASSES.clear()
        _KEY_OF_NAME.clear()
        _changed()


def unregister_pass(name: str) -> bool:
    """Forget the pass ``name``; returns whether one was registered."""
    with LOCK:
        key = _KEY_OF_NAME.pop(name, None)
        if key is None:
            return False
        _detach(_PASSES.pop(key))
        _changed()
        return True


def get_registered_passes() -> list[PassDescriptor]:
    """The registered passes, in registration order."""
    with LOCK:
        return list(_PASSES.values())


def registered_passes_at(stage: PassStage) -> list[PassDescriptor]:
    """The passes registered for ``stage``, in registration order (the order they run in)."""
    return [desc for desc in get_registered_passes() if desc.stage == stage]


def get_registered_pass_dicts() -> list[dict[str, Any]]:
    """``get_registered_passes()`` as plain dicts (``PassDescriptor.to_bridge_dict``)."""
    return [desc.to_bridge_dict() for desc in get_registered_passes()]


def get_registered_pass_by_descriptor_key(descriptor_key: str) -> PassDescriptor:
    """The pass registered under ``descriptor_key``; ``KeyError`` if none (GE's bridge text)."""
    with LOCK:
        desc = _PASSES.get(descriptor_key)
    if desc is None:
        raise KeyError(f"python pass descriptor_key not found: {descriptor_key}")
    return desc


# --- transactions (bootstrap's batches) -------------------------------------------------------


def _snapshot() -> list[PassDescriptor]:
    with LOCK:
        return list(_PASSES.values())


def _restore(snapshot: list[PassDescriptor]) -> None:
    """Put the registry back to ``snapshot``; the generation grows if that changes it."""
    with LOCK:
        current = list(_PASSES.values())
        same = len(current) == len(snapshot)
        if same and all(a is b for a, b in zip(current, snapshot, strict=True)):
            return
        for desc in current:
            _detach(desc)
        _PASSES.clear()
        _KEY_OF_NAME.clear()
        for desc in snapshot:
            _attach(desc)
            _PASSES[desc.descriptor_key] = desc
            _KEY_OF_NAME[desc.pass_name] = desc.descriptor_key
        _changed()
