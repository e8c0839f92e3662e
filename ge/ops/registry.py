"""The one operator registry: op type string -> ``OpDef``.

Built-in ops register themselves when ``ge.ops`` is imported; Python custom ops register at run
time through the same ``register`` with the same power. Registration is all-or-nothing: a
malformed definition, or one that conflicts with a registered op of the same type, raises
``ge.error.RegistryError`` and changes nothing. Re-registering an identical prototype is a
no-op that returns the existing definition.

Listeners (``ge.es`` uses one to publish ``ge.es.custom.<OpType>``) are told about every new op;
if a listener fails, the registration is rolled back. Resolvers are asked about an op type that
is not registered before a look-up gives up: ``ge.custom_op`` installs one that loads the
plugins on ``ASCEND_CUSTOM_OPP_PATH`` not loaded yet, so a graph naming an op from a newly added
path finds it (the registry never imports upward; the resolver is handed in).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator

from ge.error import GeError, GeTypeError, GeValueError, RegistryError
from ge.graph._attr import make_attr_value
from ge.ops.schema import REQUIRED, OpDef, PortKind, ScalarBody

__all__ = ["OpRegistry", "find_op", "get_op", "list_ops", "register_op_def", "registry"]

Listener = Callable[[OpDef], None]
Resolver = Callable[[str], bool]  # op type -> whether it may have registered something


def _duplicates(names: list[str]) -> list[str]:
    return sorted({n for n in names if names.count(n) > 1})


def _validate(op: OpDef) -> None:
    if not isinstance(op, OpDef):
        raise GeTypeError(f"op: expected an OpDef, got {type(op).__name__}")
    if not isinstance(op.type, str) or not op.type.isidentifier():
        raise RegistryError(f"op type {op.type!r} must be a non-empty identifier")
    for role, names in (
        ("input", [s.name for s in op.inputs]),
        ("output", [s.name for s in op.outputs]),
        ("attribute", [a.name for a in op.attrs]),
        ("subgraph", [g.name for g in op.subgraphs]),
    ):
        bad = _duplicates(names) or [n for n in names if not isinstance(n, str) or not n]
        if bad:
            raise RegistryError(
                f"op type '{op.type}': {role} names must be unique, non-empty "
                f"strings; offending: {bad}"
            )
    if any(s.kind is PortKind.OPTIONAL for s in op.outputs):
        raise RegistryError(f"op type '{op.type}': outputs cannot be optional")
    for attr in op.attrs:
        if attr.default is REQUIRED:
            continue
        try:
            make_attr_value(attr.default, attr.type)
        except GeError as e:
            raise RegistryError(
                f"op type '{op.type}': default of attribute '{attr.name}' does "
                f"not fit {attr.type.name}: {e}"
            ) from None
    if op.infer is None:
        raise RegistryError(f"op type '{op.type}' needs an infer rule")
    if op.scalar is not None and not isinstance(op.scalar, ScalarBody):
        raise RegistryError(
            f"op type '{op.type}': scalar must be a ge.ops.schema.ScalarBody, got "
            f"{type(op.scalar).__name__}"
        )
    if op.scalar is not None and not op.elementwise:
        raise RegistryError(
            f"op type '{op.type}' has a scalar body but is not elementwise: set "
            f"elementwise=True (a scalar body computes each output element from the same "
            f"element of every input)"
        )


def _check_ufunc(op: OpDef, ops: dict[str, OpDef]) -> None:
    if not op.ufunc:
        return
    if not op.elementwise:
        raise RegistryError(f"op type '{op.type}': ufunc {op.ufunc!r} needs elementwise=True")
    other = next((o for o in ops.values() if o.ufunc == op.ufunc and o.type != op.type), None)
    if other is not None:
        raise RegistryError(
            f"op type '{op.type}': numpy ufunc {op.ufunc!r} is already op '{other.type}'"
        )


# packages that add resolvers for op types registered at run time (ge.custom_op looks them up on
# ASCEND_CUSTOM_OPP_PATH). They sit above ge.ops, so they are imported by name on the first
# miss, never at import time: ge.runtime loads models without ge.ops or ge.custom_op imported.
RESOLVER_PACKAGES = ("ge.custom_op",)
_RESOLVERS_IMPORTED: list[bool] = []


def _import_resolver_packages() -> None:
    if not _RESOLVERS_IMPORTED:
        _RESOLVERS_IMPORTED.append(True)
        for name in RESOLVER_PACKAGES:
            importlib.import_module(name)


class OpRegistry:
    """Thread-safe map of op type -> ``OpDef``."""

    def __init__(self) -> None:
        self._ops: dict[str, OpDef] = {}
        self._listeners: list[Listener] = []
        self._resolvers: list[Resolver] = []
        self._lock = threading.RLock()

    def register(self, op: OpDef) -> OpDef:
        """Add ``op``; returns the registered definition (the existing one if identical)."""
        _validate(op)
        with self._lock:
            existing = self._ops.get(op.type)
            if existing is not None:
                if existing.signature_key() == op.signature_key() and existing.source == op.source:
                    return existing
                raise RegistryError(
                    f"op type '{op.type}' is already registered from "
                    f"{existing.source!r} with a different prototype"
                )
            _check_ufunc(op, self._ops)
            self._ops[op.type] = op
            try:
                for listener in list(self._listeners):
                    listener(op)
            except Exception:
                del self._ops[op.type]
                raise
        return op

    def unregister(self, op_type: str) -> None:
        """Remove a run-time registered op (built-in ops cannot be removed)."""
        with self._lock:
            op = self._ops.get(op_type)
            if op is None:
                raise GeValueError(f"op type '{op_type}' is not registered")
            if op.source == "ge":
                raise GeValueError(f"op type '{op_type}' is built in and cannot be removed")
            del self._ops[op_type]

    def find(self, op_type: str) -> OpDef | None:
        op = self._ops.get(op_type)
        if op is None:  # a miss only: hits never pay for resolvers
            _import_resolver_packages()
            for resolver in list(self._resolvers):
                if resolver(op_type):
                    op = self._ops.get(op_type)
                    if op is not None:
                        break
        return op

    def get(self, op_type: str) -> OpDef:
        """The definition of ``op_type``; ``GeValueError`` naming close matches if unknown."""
        op = self.find(op_type)
        if op is None:
            import difflib  # noqa: PLC0415  (error path only)

            close = difflib.get_close_matches(str(op_type), self._ops, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise GeValueError(f"unknown op type {op_type!r}{hint}")
        return op

    def add_listener(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def add_resolver(self, resolver: Resolver) -> None:
        """Ask ``resolver(op_type)`` on every look-up of an unregistered op type; it returns
        whether it may have registered ops (errors it raises reach the caller)."""
        with self._lock:
            if resolver not in self._resolvers:
                self._resolvers.append(resolver)

    def __iter__(self) -> Iterator[OpDef]:
        return iter(list(self._ops.values()))

    def __contains__(self, op_type: object) -> bool:
        return op_type in self._ops

    def __len__(self) -> int:
        return len(self._ops)


_REGISTRY = OpRegistry()


def registry() -> OpRegistry:
    """The process-wide registry."""
    return _REGISTRY


def register_op_def(op: OpDef) -> OpDef:
    return _REGISTRY.register(op)


_OPS = _REGISTRY._ops  # the hit path of the two below, a dict read (compile makes ~10 per node)


def get_op(op_type: str) -> OpDef:
    op = _OPS.get(op_type)
    return op if op is not None else _REGISTRY.get(op_type)


def find_op(op_type: str) -> OpDef | None:
    op = _OPS.get(op_type)
    return op if op is not None else _REGISTRY.find(op_type)


def list_ops() -> list[str]:
    """Registered op types, sorted."""
    return sorted(op.type for op in _REGISTRY)
