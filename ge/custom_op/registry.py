"""``register_op_impl``: the implementation class of a Python custom op, and its registry.

The class needs no base: its callable methods are reflected into capabilities, in a fixed
order (GE_REFERENCE.md §7.3, GE_ERRORS.md §10.2): ``execute`` -> ``"eager_execute"``,
``compile`` -> ``"compilable"``, ``declare_launch_args`` -> ``"annotated_args"``. The
schema-bound signatures are checked against the op's IR (its ``ge.ops`` definition: a
``register_op`` prototype or an op registered through ``ge.ops.register_op_def``) when the
class registers; for a class registered before its prototype, when the prototype registers
(and a plugin batch that ends with an implementation still lacking its IR fails as a whole:
see ``ge.custom_op.bootstrap``). Unlike ``register_op``, registering the same class twice
raises. Nothing is recorded unless every check passed.

    >>> from ge.runtime import Tensor, TensorDesc
    >>> from ge.custom_op import register_op
    >>> @register_op(op_type="DocNegCustom")
    ... def neg(x: TensorDesc) -> TensorDesc:
    ...     return TensorDesc(x.shape, x.data_type)
    >>> @register_op_impl(op_type="DocNegCustom")
    ... class Neg:
    ...     def execute(self, x: Tensor) -> None: ...
    >>> Neg.__ge_op_impl_descriptor__.interfaces
    ['eager_execute']
    >>> from ge.custom_op import proto
    >>> _unregister("DocNegCustom"); proto._unregister("DocNegCustom")

Decision (ours): an implementation for a built-in ge op type is refused (GE accepts a Python
implementation for a C++ prototype; ge's built-ins run their own compiled kernels, so the
Python one would never run).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ge.custom_op._signature import is_legacy_execute, validate_method
from ge.custom_op._state import LOCK
from ge.error import GeTypeError, GeValueError
from ge.ops.registry import registry as ops_registry
from ge.ops.schema import OpDef

__all__ = [
    "OpImplDescriptor",
    "clear_registered_op_impls",
    "get_registered_op_impl_by_descriptor_key",
    "get_registered_op_impl_dicts",
    "get_registered_op_impl_for_type",
    "get_registered_op_impls",
    "register_op_impl",
]

C = TypeVar("C", bound=type)

# method -> capability, in the fixed order the interfaces are listed
_CAPABILITIES = (
    ("execute", "eager_execute"),
    ("compile", "compilable"),
    ("declare_launch_args", "annotated_args"),
)


@dataclass(frozen=True)
class OpImplDescriptor:
    """A registered implementation class. ``descriptor_key`` is
    ``"<module>:<class qualname>:<op_type>"``; ``interfaces`` lists its capabilities."""

    descriptor_key: str
    op_type: str
    module_name: str
    class_name: str
    interfaces: list[str]
    cls: type = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The plain fields (``cls`` left out), as ``get_registered_op_impl_dicts`` lists."""
        return {
            "descriptor_key": self.descriptor_key,
            "op_type": self.op_type,
            "module_name": self.module_name,
            "class_name": self.class_name,
            "interfaces": list(self.interfaces),
        }


_IMPLS: dict[str, OpImplDescriptor] = {}  # descriptor key -> descriptor, in order
_KEY_OF_TYPE: dict[str, str] = {}  # op type -> descriptor key


def _interfaces(cls: type) -> list[str]:
    compile_method = getattr(cls, "compile", None)
    if compile_method is not None and not callable(compile_method):
        raise GeTypeError("compile must be callable")
    found = [cap for method, cap in _CAPABILITIES if callable(getattr(cls, method, None))]
    if "eager_execute" not in found and "annotated_args" not in found:
        raise GeTypeError(
            f"register_op_impl class '{cls.__module__}.{cls.__qualname__}' must implement at "
            f"least one supported method: execute, declare_launch_args"
        )
    return found


def _methods(desc: OpImplDescriptor) -> list[str]:
    return [m for m, cap in _CAPABILITIES if cap in desc.interfaces]


def validate_impl(desc: OpImplDescriptor, op: OpDef) -> None:
    """Check every schema-bound callback of ``desc`` against ``op``'s IR (``TypeError``)."""
    for method in _methods(desc):
        if method == "execute" and is_legacy_execute(desc.cls):
            continue
        validate_method(desc.cls, method, op, desc.descriptor_key)


def check_impl_fits(op: OpDef) -> None:
    """Called as ``op``'s prototype registers: an implementation registered earlier for its
    type must fit it, or the prototype is refused."""
    with LOCK:
        key = _KEY_OF_TYPE.get(op.type)
        if key is not None:
            validate_impl(_IMPLS[key], op)


def missing_ir_error(desc: OpImplDescriptor) -> RuntimeError:
    """The error for an implementation whose op type has no IR (GE's bridge text)."""
    from ge.error import GeError  # noqa: PLC0415

    methods = _methods(desc)
    if methods == ["execute"] and is_legacy_execute(desc.cls):
        return GeError(f"canonical IR not found for execute: {desc.op_type}")
    method = next(m for m in methods if m != "execute" or not is_legacy_execute(desc.cls))
    return GeError(f"canonical IR not found for schema-bound {method}: {desc.op_type}")


def _ir_of(op_type: str) -> OpDef | None:
    ops = ops_registry()
    return ops.get(op_type) if op_type in ops else None  # membership: no discovery


def register_op_impl(*, op_type: str) -> Callable[[C], C]:
    """Register the decorated class as the implementation of ``op_type``; returns the class
    with ``cls.__ge_op_impl_descriptor__`` set."""
    if not isinstance(op_type, str) or not op_type:
        raise GeTypeError("register_op_impl op_type must be a non-empty string")

    def decorate(cls: C) -> C:
        if not inspect.isclass(cls):
            raise GeTypeError("register_op_impl expects a class")
        if inspect.isabstract(cls):
            raise GeTypeError("register_op_impl expects a concrete class")
        interfaces = _interfaces(cls)
        desc = OpImplDescriptor(
            descriptor_key=f"{cls.__module__}:{cls.__qualname__}:{op_type}",
            op_type=op_type,
            module_name=cls.__module__,
            class_name=cls.__qualname__,
            interfaces=interfaces,
            cls=cls,
        )
        with LOCK:
            if desc.descriptor_key in _IMPLS:
                raise GeValueError(
                    f"python op impl descriptor_key already exists: {desc.descriptor_key}"
                )
            if op_type in _KEY_OF_TYPE:
                raise GeValueError(f"python op impl type already exists: {op_type}")
            op = _ir_of(op_type)
            if op is not None and op.source == "ge":
                raise GeValueError(
                    f"python op impl op type '{op_type}' is a built-in ge op, which runs its own "
                    f"compiled kernels; register a prototype under another op_type"
                )
            if op is not None:
                validate_impl(desc, op)
            _IMPLS[desc.descriptor_key] = desc
            _KEY_OF_TYPE[op_type] = desc.descriptor_key
        cls.__ge_op_impl_descriptor__ = desc  # type: ignore[attr-defined]
        return cls

    return decorate


def clear_registered_op_impls() -> None:
    """Forget every registered implementation (prototypes stay)."""
    with LOCK:
        _IMPLS.clear()
        _KEY_OF_TYPE.clear()


def get_registered_op_impls() -> list[OpImplDescriptor]:
    """The registered implementations, in registration order."""
    with LOCK:
        return list(_IMPLS.values())


def get_registered_op_impl_dicts() -> list[dict[str, Any]]:
    """``get_registered_op_impls()`` as plain dicts (``OpImplDescriptor.to_dict``)."""
    return [d.to_dict() for d in get_registered_op_impls()]


def get_registered_op_impl_by_descriptor_key(descriptor_key: str) -> OpImplDescriptor:
    """The implementation registered under ``descriptor_key``; ``KeyError`` if none."""
    with LOCK:
        desc = _IMPLS.get(descriptor_key)
    if desc is None:
        raise KeyError(f"python op impl descriptor_key not found: {descriptor_key}")
    return desc


def get_registered_op_impl_for_type(op_type: str) -> OpImplDescriptor | None:
    """The implementation of ``op_type``, or ``None``."""
    with LOCK:
        key = _KEY_OF_TYPE.get(op_type)
        return None if key is None else _IMPLS[key]


# --- transactions (bootstrap's batches, tests) ------------------------------------------------
Snapshot = tuple[dict[str, OpImplDescriptor], dict[str, str]]


def _snapshot() -> Snapshot:
    with LOCK:
        return dict(_IMPLS), dict(_KEY_OF_TYPE)


def _restore(snapshot: Snapshot) -> None:
    impls, keys = snapshot
    with LOCK:
        _IMPLS.clear()
        _IMPLS.update(impls)
        _KEY_OF_TYPE.clear()
        _KEY_OF_TYPE.update(keys)


def _unregister(op_type: str) -> None:
    """Forget the implementation of ``op_type`` (tests)."""
    with LOCK:
        key = _KEY_OF_TYPE.pop(op_type, None)
        if key is not None:
            del _IMPLS[key]
