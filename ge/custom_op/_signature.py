"""Binding an implementation's callbacks to the op's IR: the schema-bound signature rules.

``execute(self, <inputs…>, *, <attrs…>)``, ``compile(self, <inputs…>, <outputs…>, *,
<attrs…>) -> None`` and ``declare_launch_args(self, <inputs…>, <outputs…>, *, <attrs…>) ->
None`` (GE_REFERENCE.md §7.3, GE_ERRORS.md §10.3): inputs and outputs positional in IR order
(their names are free), attributes keyword-only, named as in the IR and in IR order. Annotations
are optional on parameters but checked when present: ``Tensor`` for a required input or output,
``Optional[Tensor]`` for an optional input, ``List[Tensor]`` for a dynamic one, and the
attribute's own kind (``int``, ``list[int]``, …); ``Tensor`` is ``ge.runtime.Tensor``.
``execute(self, ctx)`` (one positional parameter named ``ctx``) is GE's legacy form and is not
bound. The method is inspected as bound, so ``self`` does not count; ``staticmethod``,
``classmethod`` and inherited methods are accepted.

Every violation is a ``TypeError``: ``"invalid <method> signature for op type <t>, descriptor
key <key>, method <method>: expected <expected>, actual <actual>"``.

Decision (ours): ``execute`` may omit its return annotation (seed 000's sample does), but one
that is present must be ``None``; ``compile`` and ``declare_launch_args`` require ``-> None``.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

from ge.error import GeTypeError, GeValueError
from ge.graph.types import AttrValueType, DataType
from ge.ops.schema import OpDef, PortKind
from ge.runtime.types import Tensor

__all__ = ["SCHEMA_METHODS", "is_legacy_execute", "validate_method"]

VT = AttrValueType
_NONE = type(None)
SCHEMA_METHODS = ("execute", "compile", "declare_launch_args")

_ATTR_ANNOTATIONS: dict[AttrValueType, Any] = {
    VT.VT_INT: int,
    VT.VT_FLOAT: float,
    VT.VT_BOOL: bool,
    VT.VT_STRING: str,
    VT.VT_DATA_TYPE: DataType,
    VT.VT_TENSOR: Tensor,
    VT.VT_LIST_INT: ("list", (int,)),
    VT.VT_LIST_FLOAT: ("list", (float,)),
    VT.VT_LIST_BOOL: ("list", (bool,)),
    VT.VT_LIST_STRING: ("list", (str,)),
    VT.VT_LIST_DATA_TYPE: ("list", (DataType,)),
    VT.VT_LIST_LIST_INT: ("list", (("list", (int,)),)),
}
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def normalize(annotation: Any) -> Any:
    """``list[X]``/``List[X]`` -> ``('list', (X,))``, a union -> ``('union', frozenset)``,
    ``None`` -> ``NoneType`` (GE_ERRORS.md §10.3)."""
    origin = get_origin(annotation)
    if origin is list:
        return ("list", tuple(normalize(a) for a in get_args(annotation)))
    if origin in (Union, types.UnionType):
        return ("union", frozenset(normalize(a) for a in get_args(annotation)))
    return _NONE if annotation is None else annotation


def _port_annotation(kind: PortKind) -> Any:
    if kind is PortKind.OPTIONAL:
        return ("union", frozenset({Tensor, _NONE}))
    if kind is PortKind.DYNAMIC:
        return ("list", (Tensor,))
    return Tensor


def _bound_callable(cls: type, method: str) -> tuple[Callable[..., Any], list[inspect.Parameter]]:
    """The method as ``cls`` holds it and its parameters without ``self``."""
    fn = getattr(cls, method)
    raw = inspect.getattr_static(cls, method)
    params = list(inspect.signature(fn).parameters.values())
    if inspect.isfunction(raw) and params and params[0].kind in _POSITIONAL:
        params = params[1:]  # a plain method: the instance binds self
    return fn, params


def is_legacy_execute(cls: type) -> bool:
    """``execute(self, ctx)``: GE's legacy form, which is not bound to the IR."""
    _, params = _bound_callable(cls, "execute")
    return len(params) == 1 and params[0].name == "ctx" and params[0].kind in _POSITIONAL


def _check_ir(op: OpDef) -> None:
    if op.subgraphs:
        raise GeValueError(f"unsupported custom op IR subgraph: {op.subgraphs[0].name}")
    for index, attr in enumerate(op.attrs):
        if attr.type not in _ATTR_ANNOTATIONS:
            raise GeValueError(
                f"unsupported custom op runtime attr type: {attr.type.name}, attr index: {index}"
            )


Fail = Callable[[str, str], GeTypeError]


def _check_ports(
    params: list[inspect.Parameter],
    ports: list[tuple[str, PortKind]],
    hints: dict[str, Any],
    fail: Fail,
) -> None:
    counters = {"input": 0, "output": 0}
    for p, (role, kind) in zip(params, ports, strict=False):
        i = counters[role]
        counters[role] += 1
        if p.kind not in _POSITIONAL:
            raise fail(
                f"positional {role} parameter at index {i}",
                f"parameter {p.name} kind {p.kind.name}",
            )
        if p.name in hints:
            expected, actual = _port_annotation(kind), normalize(hints[p.name])
            if actual != expected:
                raise fail(f"{role} parameter at index {i} annotation {expected!r}", f"{actual!r}")


def _check_attrs(
    params: list[inspect.Parameter], op: OpDef, hints: dict[str, Any], fail: Fail
) -> None:
    for j, (p, spec) in enumerate(zip(params, op.attrs, strict=True)):
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise fail(
                f"keyword-only attr parameter {spec.name}", f"parameter {p.name} kind {p.kind.name}"
            )
        if p.name != spec.name:
            raise fail(f"attr name {spec.name} at index {j}", f"attr name {p.name}")
        if p.name in hints:
            expected, actual = _ATTR_ANNOTATIONS[spec.type], normalize(hints[p.name])
            if actual != expected:
                raise fail(f"attr parameter {spec.name} annotation {expected!r}", f"{actual!r}")


def validate_method(cls: type, method: str, op: OpDef, descriptor_key: str) -> None:
    """Check ``cls.<method>`` against ``op``'s IR; raises ``TypeError`` on a mismatch."""
    _check_ir(op)

    def fail(expected: str, actual: str) -> GeTypeError:
        return GeTypeError(
            f"invalid {method} signature for op type {op.type}, descriptor key "
            f"{descriptor_key}, method {method}: expected {expected}, actual {actual}"
        )

    fn, params = _bound_callable(cls, method)
    for p in params:
        if p.kind in _VARIADIC:
            raise fail("no variadic parameters", f"variadic parameter {p.name}")
    ports: list[tuple[str, PortKind]] = [("input", s.kind) for s in op.inputs]
    if method != "execute":
        ports += [("output", s.kind) for s in op.outputs]
    if len(params) != len(ports) + len(op.attrs):
        roles = "input" if method == "execute" else "input/output"
        raise fail(
            f"{len(ports)} positional {roles} parameters followed by "
            f"{len(op.attrs)} keyword-only attrs",
            f"{len(params)} parameters",
        )
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError, AttributeError) as e:
        raise fail("resolvable type annotations", f"type hint resolution failed: {e}") from None
    _check_ports(params, ports, hints, fail)
    _check_attrs(params[len(ports) :], op, hints, fail)
    if "return" not in hints:
        if method != "execute":
            raise fail("None return annotation", "missing return annotation")
    elif normalize(hints["return"]) is not _NONE:
        raise fail("None return annotation", f"{normalize(hints['return'])!r}")
