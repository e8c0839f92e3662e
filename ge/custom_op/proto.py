"""``register_op``: a Python custom op's prototype, parsed from its annotated infer-meta function.

The decorated function is the prototype and the ``infer_meta`` rule at once (GE_REFERENCE.md
§7.2). Its positional parameters are the inputs (``TensorDesc`` required,
``Optional[TensorDesc]`` optional, ``List[TensorDesc]`` dynamic), its keyword-only parameters
the attributes (12 kinds, defaults of exactly the declared type), its return annotation the
outputs (``output0``, ``output1``, …). Every check runs in GE-PY's order with GE-PY's texts
(GE_ERRORS.md §10.1), prefixed ``"register_op op_type '<t>' failed: "`` and re-raised with the
same builtin type. ``TensorDesc`` and ``Tensor`` are ``ge.runtime``'s.

The prototype becomes an ``OpDef`` in the one ``ge.ops`` registry, so ``ge.es.custom.<OpType>``
builds it, the builder runs ``infer_meta`` at the user's line, and every later inference
(``GeUtils.infer_shape``, run-time shapes of ``-1`` dims) calls it again. Registration is
all-or-nothing: the descriptor, the ``OpDef`` and ``fn.__ge_op_proto_descriptor__`` appear
together or not at all. Re-registering the same function (module, qualname, op type) with the
same content is a no-op returning the existing descriptor, NaN defaults included.

    >>> from ge.runtime import TensorDesc
    >>> @register_op(op_type="DocScaleCustom")
    ... def scale(x: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    ...     return TensorDesc(x.shape, x.data_type)
    >>> d = scale.__ge_op_proto_descriptor__
    >>> [i.name for i in d.inputs], [(a.name, a.default) for a in d.attrs], d.outputs[0].name
    (['x'], [('alpha', 1.0)], 'output0')
    >>> _unregister("DocScaleCustom")

Decisions where GE-PY's texts are silent (ours):

* ``Optional[T] = None`` declares an attribute of kind ``T`` *without* a default (a required
  attribute): ``None`` is no value of any of the 12 kinds, and GE's IR has required attributes
  and attributes with defaults, nothing else. (On Python 3.10 ``typing.get_type_hints`` turns
  ``a: int = None`` into ``Optional[int]`` by itself, so there it is read the same way; on 3.11+
  it is GE's "must be int, got NoneType".) A ``Tensor`` attribute accepts no default at all.
* A prototype may not take the name of a built-in ge op (GE lets a Python prototype replace a
  built-in one): ge's compiler keys kernels, lowering and fusion rules on built-in op types, so
  a replaced ``Add`` would silently keep the built-in kernel. The error names the built-in.
* Outputs are ``ge.graph.TensorDesc``s in ``FORMAT_ND`` with ``infer_meta``'s storage shape as
  the shape (and its origin shape as the origin shape when the two differ) and its data type.
* An op with ``mutates_args`` is impure (never folded, merged or dropped); one without is pure,
  as ``torch.library`` assumes of custom ops (merged by CSE, dropped when unused), but never
  constant-folded (``foldable=False``): its reference runs its own callbacks
  (``ge.custom_op._reference``), which belong in the plan, not in the compiler.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin

from ge.custom_op._state import LOCK
from ge.error import GeTypeError, GeValueError
from ge.graph.types import AttrValueType, DataType
from ge.ops.registry import registry as ops_registry
from ge.ops.schema import REQUIRED, AttrSpec, OpDef, PortKind, TensorSpec
from ge.runtime.types import Tensor, TensorDesc

__all__ = [
    "AttrProto",
    "InputProto",
    "OpProtoDescriptor",
    "OutputProto",
    "get_registered_op_proto",
    "get_registered_op_proto_by_descriptor_key",
    "get_registered_op_protos",
    "register_op",
]

VT = AttrValueType
_NONE = type(None)
_UNIONS: tuple[Any, ...] = (Union, types.UnionType)

# the 12 attribute annotations: scalar kinds, list element kinds, and List[List[int]]
_SCALARS: dict[Any, AttrValueType] = {
    int: VT.VT_INT,
    float: VT.VT_FLOAT,
    bool: VT.VT_BOOL,
    str: VT.VT_STRING,
    DataType: VT.VT_DATA_TYPE,
    Tensor: VT.VT_TENSOR,
}
_LISTS: dict[Any, AttrValueType] = {
    int: VT.VT_LIST_INT,
    float: VT.VT_LIST_FLOAT,
    bool: VT.VT_LIST_BOOL,
    str: VT.VT_LIST_STRING,
    DataType: VT.VT_LIST_DATA_TYPE,
}


@dataclass(frozen=True)
class InputProto:
    """One IR input: its parameter name and kind (required, optional or dynamic)."""

    name: str
    kind: PortKind


@dataclass(frozen=True)
class AttrProto:
    """One IR attribute: name, annotation, GE attribute kind and default (``REQUIRED`` if
    none). List defaults are frozen to tuples, nested ones too."""

    name: str
    annotation: Any
    value_type: AttrValueType
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class OutputProto:
    """One IR output: ``output<i>`` (or the mutated input's name), its kind, and the input it
    writes in place (``mutates_args``), if any."""

    name: str
    kind: PortKind
    ref_input: str | None = None


@dataclass(frozen=True)
class OpProtoDescriptor:
    """A registered Python prototype (frozen). ``descriptor_key`` is
    ``"<module>:<qualname>:<op_type>"``; ``infer_meta`` is the decorated function."""

    descriptor_key: str
    op_type: str
    module_name: str
    func_name: str
    inputs: tuple[InputProto, ...]
    attrs: tuple[AttrProto, ...]
    outputs: tuple[OutputProto, ...]
    mutates_args: tuple[tuple[str, int], ...]
    infer_meta: Callable[..., Any] = field(compare=False, repr=False)
    # ``register_op(scalar=...)`` (ours): one element as an expression over ``a, b, ...`` and
    # ``p0, ...``, and the attribute each ``p`` reads; "" for an op without a scalar body
    scalar: str = ""
    scalar_params: tuple[str, ...] = ()

    def content_key(self) -> tuple[Any, ...]:
        """What must match for a re-registration to be a no-op (NaN equals NaN here)."""
        return (
            self.op_type,
            self.inputs,
            tuple(
                (a.name, _norm(a.annotation), a.value_type, _nan_safe(a.default))
                for a in self.attrs
            ),
            self.outputs,
            self.mutates_args,
            self.scalar,
            self.scalar_params,
        )

    @property
    def source(self) -> str:
        """``module_name.func_name '<mod>.<func>', descriptor_key '<key>'`` for messages."""
        return (
            f"module_name.func_name '{self.module_name}.{self.func_name}', "
            f"descriptor_key '{self.descriptor_key}'"
        )


def _nan_safe(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_nan_safe(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value


def _norm(annotation: Any) -> Any:
    """A comparable form of an annotation (``List[int]`` and ``list[int]`` are one)."""
    origin = get_origin(annotation)
    if origin is list:
        return ("list", tuple(_norm(a) for a in get_args(annotation)))
    if origin in _UNIONS:
        return ("union", frozenset(_norm(a) for a in get_args(annotation)))
    return _NONE if annotation is None else annotation


# --- annotation parsing -----------------------------------------------------------------------
def _list_element(annotation: Any) -> Any:
    """``X`` of ``List[X]``/``list[X]``, else ``inspect.Parameter.empty``."""
    if get_origin(annotation) is list:
        args = get_args(annotation)
        if len(args) == 1:
            return args[0]
    return inspect.Parameter.empty


def _optional_inner(annotation: Any) -> Any:
    """``T`` of ``Optional[T]``/``T | None``, else ``inspect.Parameter.empty``."""
    if get_origin(annotation) in _UNIONS:
        args = [a for a in get_args(annotation) if a is not _NONE]
        if len(args) == 1 and len(get_args(annotation)) == 2:
            return args[0]
    return inspect.Parameter.empty


def _input_kind(annotation: Any) -> PortKind | None:
    if annotation is TensorDesc:
        return PortKind.REQUIRED
    if _optional_inner(annotation) is TensorDesc:
        return PortKind.OPTIONAL
    if _list_element(annotation) is TensorDesc:
        return PortKind.DYNAMIC
    return None


def _attr_kind(annotation: Any) -> AttrValueType | None:
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    element = _list_element(annotation)
    if element is inspect.Parameter.empty:
        return None
    if element in _LISTS:
        return _LISTS[element]
    if _list_element(element) is int:
        return VT.VT_LIST_LIST_INT
    return None


_SCALAR_OF: dict[AttrValueType, type] = {v: k for k, v in _SCALARS.items()}
_ELEMENT_OF: dict[AttrValueType, type] = {v: k for k, v in _LISTS.items()}


def _check_default(name: str, kind: AttrValueType, value: Any) -> Any:
    """``value`` checked for exactly the declared type; returns it frozen (lists to tuples)."""
    where = f"default value for attr '{name}'"
    if kind in _SCALAR_OF:
        expected = _SCALAR_OF[kind]
        if type(value) is not expected:
            raise GeTypeError(f"{where} must be {expected.__name__}, got {type(value).__name__}")
        if kind is VT.VT_DATA_TYPE and value is DataType.DT_MAX:
            raise GeTypeError(f"{where} must be a valid DataType")
        return value
    if type(value) is not list:
        raise GeTypeError(f"{where} must be list, got {type(value).__name__}")
    if kind is VT.VT_LIST_LIST_INT:
        for row in value:
            if type(row) is not list:
                raise GeTypeError(f"{where} contains {type(row).__name__}, expected list")
            for item in row:
                if type(item) is not int:
                    raise GeTypeError(f"{where} contains {type(item).__name__}, expected int")
        return tuple(tuple(row) for row in value)
    element = _ELEMENT_OF[kind]
    for item in value:
        if type(item) is not element:
            raise GeTypeError(
                f"{where} contains {type(item).__name__}, expected {element.__name__}"
            )
    if kind is VT.VT_LIST_DATA_TYPE and DataType.DT_MAX in value:
        raise GeTypeError(f"{where} must contain valid DataType values")
    return tuple(value)


def _parse_attr(param: inspect.Parameter, hints: dict[str, Any]) -> AttrProto:
    name = param.name
    if name not in hints:
        raise GeTypeError(f"attr '{name}' must have a type annotation")
    annotation = hints[name]
    has_default = param.default is not inspect.Parameter.empty
    declared = annotation
    if has_default and param.default is None:
        inner = _optional_inner(annotation)
        if inner is not inspect.Parameter.empty:
            declared = inner
    kind = _attr_kind(declared)
    if kind is None:
        raise GeTypeError(f"unsupported attr annotation for '{name}': {annotation!r}")
    if kind is VT.VT_TENSOR:
        if has_default:
            raise GeTypeError(f"Tensor attr '{name}' does not support a default value")
        return AttrProto(name, declared, kind)
    if not has_default or (param.default is None and declared is not annotation):
        return AttrProto(name, declared, kind)  # no default, or Optional[T] = None: required
    return AttrProto(name, declared, kind, _check_default(name, kind, param.default))


def _parse_input(param: inspect.Parameter, hints: dict[str, Any]) -> InputProto:
    name = param.name
    if name not in hints:
        raise GeTypeError(f"input '{name}' must have a type annotation")
    if param.default is not inspect.Parameter.empty:
        raise GeTypeError(f"input '{name}' must not have a default value")
    kind = _input_kind(hints[name])
    if kind is None:
        raise GeTypeError(f"unsupported input annotation for '{name}': {hints[name]!r}")
    return InputProto(name, kind)


def _output_kind(annotation: Any) -> PortKind | None:
    if annotation is TensorDesc:
        return PortKind.REQUIRED
    if _list_element(annotation) is TensorDesc:
        return PortKind.DYNAMIC
    return None


def _parse_outputs(hints: dict[str, Any]) -> list[PortKind]:
    if "return" not in hints:
        raise GeTypeError("register_op return type annotation is required")
    annotation = hints["return"]
    if annotation is None or annotation is _NONE:
        return []
    single = _output_kind(annotation)
    if single is not None:
        return [single]
    if get_origin(annotation) is tuple:
        args = get_args(annotation)
        if args and Ellipsis not in args and args != ((),):
            kinds: list[PortKind] = []
            for i, arg in enumerate(args):
                kind = _output_kind(arg)
                if kind is None:
                    raise GeTypeError(f"unsupported return annotation at output index {i}: {arg!r}")
                kinds.append(kind)
            return kinds
    raise GeTypeError(f"unsupported return annotation: {annotation!r}")


def _explicit_pairs(entries: list[Any], n_outputs: int) -> list[tuple[str, int]]:
    """``((input_name, output_index), ...)`` checked entry by entry."""
    pairs: list[tuple[str, int]] = []
    seen: set[int] = set()
    for entry in entries:
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise GeTypeError("mutates_args explicit entries must be (input_name, output_index)")
        name, index = entry
        if not isinstance(name, str) or type(index) is not int:
            raise GeTypeError("mutates_args explicit entries must be (str, int)")
        if not 0 <= index < n_outputs:
            raise GeValueError(f"mutates_args output index out of range: {index}")
        if index in seen:
            raise GeValueError(f"mutates_args output index is duplicated: {index}")
        seen.add(index)
        pairs.append((name, index))
    return pairs


def _parse_mutates(
    mutates_args: Any, inputs: Sequence[InputProto], n_outputs: int
) -> tuple[tuple[str, int], ...]:
    if isinstance(mutates_args, str) or not isinstance(mutates_args, (list, tuple)):
        raise GeTypeError("mutates_args must be a list or tuple")
    entries = list(mutates_args)
    strings = [isinstance(e, str) for e in entries]
    if any(strings) and not all(strings):
        raise GeTypeError("mutates_args sequential and explicit forms cannot be mixed")
    if entries and all(strings):
        if len(entries) > n_outputs:
            raise GeValueError("mutates_args has more entries than outputs")
        pairs = [(name, i) for i, name in enumerate(entries)]
    else:
        pairs = _explicit_pairs(entries, n_outputs)
    input_names = {i.name for i in inputs}
    seen_names: set[str] = set()
    for name, _ in pairs:
        if name not in input_names:
            raise GeValueError(f"mutates_args input does not exist: '{name}'")
        if name in seen_names:
            raise GeValueError(f"mutates_args input is duplicated: '{name}'")
        seen_names.add(name)
    return tuple(pairs)


def _output_names(
    kinds: Sequence[PortKind], inputs: Sequence[InputProto], mutates: Sequence[tuple[str, int]]
) -> tuple[OutputProto, ...]:
    refs = {index: name for name, index in mutates}
    taken = {i.name for i in inputs}
    outputs: list[OutputProto] = []
    for i, kind in enumerate(kinds):
        if i in refs:
            outputs.append(OutputProto(refs[i], kind, refs[i]))
            continue
        name, suffix = f"output{i}", 0
        while name in taken:
            suffix += 1
            name = f"output{i}_{suffix}"
        taken.add(name)
        outputs.append(OutputProto(name, kind))
    return tuple(outputs)


def parse_prototype(fn: Any, op_type: str, mutates_args: Any) -> OpProtoDescriptor:
    """The descriptor of ``fn`` (GE_ERRORS.md §10.1 checks 1-27, in order, unprefixed)."""
    if not inspect.isfunction(fn):
        raise GeTypeError("register_op expects a Python function")
    qualname = fn.__qualname__
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError) as e:
        raise GeTypeError(f"failed to resolve annotations for '{qualname}': {e}") from None
    inputs: list[InputProto] = []
    attrs: list[AttrProto] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise GeTypeError(f"register_op does not support variadic parameter '{param.name}'")
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            inputs.append(_parse_input(param, hints))
        elif param.kind is param.KEYWORD_ONLY:
            attrs.append(_parse_attr(param, hints))
        else:  # pragma: no cover  (Python has no other parameter kind)
            raise GeTypeError(f"unsupported parameter kind for '{param.name}'")
    kinds = _parse_outputs(hints)
    mutates = _parse_mutates(mutates_args, inputs, len(kinds))
    module = fn.__module__
    return OpProtoDescriptor(
        descriptor_key=f"{module}:{qualname}:{op_type}",
        op_type=op_type,
        module_name=module,
        func_name=qualname,
        inputs=tuple(inputs),
        attrs=tuple(attrs),
        outputs=_output_names(kinds, inputs, mutates),
        mutates_args=mutates,
        infer_meta=fn,
    )


# --- the registry -----------------------------------------------------------------------------
_PROTOS: dict[str, OpProtoDescriptor] = {}  # descriptor key -> descriptor, in order
_KEY_OF_TYPE: dict[str, str] = {}  # op type -> descriptor key
_OPS: dict[str, OpDef] = {}  # op type -> the OpDef registered in ge.ops for it


def op_def_of(desc: OpProtoDescriptor) -> OpDef:
    """The ``ge.ops`` definition of a prototype: the same kind of object as a built-in's."""
    from ge.custom_op import _scalar  # noqa: PLC0415
    from ge.custom_op._execution import lower  # noqa: PLC0415
    from ge.custom_op._infer_meta import make_infer  # noqa: PLC0415
    from ge.custom_op._reference import make_reference  # noqa: PLC0415

    infer, reference, scalar = make_infer(desc), make_reference(desc.op_type), None
    if desc.scalar:  # elementwise: the scalar body is its kernel, its fusion and its reference
        scalar = _scalar.scalar_body(desc.scalar, desc.scalar_params)
        infer = _scalar.scalar_infer(infer, desc.op_type)
        reference = _scalar.scalar_reference(desc.scalar, desc.scalar_params, len(desc.inputs))
    return OpDef(
        desc.op_type,
        inputs=tuple(TensorSpec(i.name, i.kind) for i in desc.inputs),
        outputs=tuple(TensorSpec(o.name, o.kind) for o in desc.outputs),
        attrs=tuple(AttrSpec(a.name, a.value_type, a.default) for a in desc.attrs),
        infer=infer,
        reference=reference,
        lowering=lower,
        group="custom",
        pure=not desc.mutates_args,
        elementwise=scalar is not None,
        scalar=scalar,
        foldable=False,
        doc=inspect.getdoc(desc.infer_meta) or f"Python custom op {desc.op_type}.",
        source=f"ge.custom_op:{desc.descriptor_key}",
    )


def _conflict(desc: OpProtoDescriptor) -> OpProtoDescriptor | None:
    """The existing descriptor if ``desc`` is an identical re-registration; raises on a
    conflict (GE_ERRORS.md §10.1 rows 28, 29, then ge's own: a built-in or foreign op)."""
    existing = _PROTOS.get(desc.descriptor_key)
    if existing is not None:
        if existing.content_key() == desc.content_key():
            return existing
        raise GeValueError(
            f"python op proto descriptor content changed for descriptor_key "
            f"'{desc.descriptor_key}'; existing source: {existing.source}; "
            f"current source: {desc.source}"
        )
    owner = _KEY_OF_TYPE.get(desc.op_type)
    if owner is not None:
        raise GeValueError(
            f"python op proto op type '{desc.op_type}' already registered by '{owner}'; "
            f"existing source: {_PROTOS[owner].source}; current source: {desc.source}"
        )
    ops = ops_registry()
    if desc.op_type in ops:  # membership never triggers discovery
        other = ops.get(desc.op_type)
        if other.source == "ge":
            raise GeValueError(
                f"op type '{desc.op_type}' is a built-in ge op; a Python prototype cannot "
                f"replace it (ge compiles built-ins with their own kernels): choose another "
                f"op_type"
            )
        raise GeValueError(
            f"op type '{desc.op_type}' is already registered in ge.ops from "
            f"{other.source!r}; a Python prototype cannot replace it"
        )
    return None


def _commit(desc: OpProtoDescriptor) -> OpProtoDescriptor:
    existing = _conflict(desc)
    if existing is not None:
        return existing
    op = op_def_of(desc)
    from ge.custom_op.registry import check_impl_fits  # noqa: PLC0415  (registry imports us)

    check_impl_fits(op)  # an implementation registered before its prototype must fit it
    ops_registry().register(op)
    _PROTOS[desc.descriptor_key] = desc
    _KEY_OF_TYPE[desc.op_type] = desc.descriptor_key
    _OPS[desc.op_type] = op
    return desc


def register_op(
    *,
    op_type: str,
    mutates_args: Sequence[Any] = (),
    scalar: Callable[..., Any] | str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated infer-meta function as the prototype of ``op_type``.

    Returns the function unchanged, with ``fn.__ge_op_proto_descriptor__`` set to its
    ``OpProtoDescriptor``. ``mutates_args`` names the inputs written in place, either in order
    (``("x",)``: output 0 is ``x``) or explicitly (``(("x", 1),)``: output 1 is ``x``).

    ``scalar`` (ours, not GE-PY's) makes the op elementwise: a function of one element of each
    input (keyword-only parameters read attributes) whose body is one returned expression, or
    that expression as a string. The op is then compiled and fused like a built-in
    elementwise op (``ge.custom_op._scalar``)::

        @register_op(op_type="Softplus", scalar=lambda x: math.log(1.0 + math.exp(x)))
        def softplus(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.data_type)

    >>> from ge.runtime import TensorDesc
    >>> @register_op(op_type="DocPairCustom")
    ... def pair(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
    ...     return TensorDesc(x.shape, x.data_type), TensorDesc(x.shape, x.data_type)
    >>> [o.name for o in pair.__ge_op_proto_descriptor__.outputs]
    ['output0', 'output1']
    >>> _unregister("DocPairCustom")
    """
    if not isinstance(op_type, str) or not op_type:
        raise GeTypeError(f"register_op op_type must be a non-empty string, got {op_type!r}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        try:
            desc = parse_prototype(fn, op_type, mutates_args)
            if scalar is not None:
                desc = _with_scalar(desc, scalar)
            with LOCK:
                registered = _commit(desc)
        except TypeError as e:
            raise GeTypeError(f"register_op op_type '{op_type}' failed: {e}") from None
        except ValueError as e:
            raise GeValueError(f"register_op op_type '{op_type}' failed: {e}") from None
        fn.__ge_op_proto_descriptor__ = registered  # type: ignore[attr-defined]
        return fn

    return decorate


def _with_scalar(desc: OpProtoDescriptor, scalar: Callable[..., Any] | str) -> OpProtoDescriptor:
    """``desc`` with the scalar body ``scalar`` (``TypeError``/``ValueError`` if it cannot
    have one or ``scalar`` is not a valid body)."""
    from ge.custom_op._scalar import parse_scalar  # noqa: PLC0415

    if desc.mutates_args or len(desc.outputs) != 1 or desc.outputs[0].kind is not PortKind.REQUIRED:
        raise ValueError("scalar: only an op with one output and no mutates_args is elementwise")
    if not desc.inputs or any(i.kind is not PortKind.REQUIRED for i in desc.inputs):
        raise ValueError("scalar: every input of an elementwise op must be a required TensorDesc")
    attrs = {a.name: a.value_type for a in desc.attrs}
    expr, params = parse_scalar(scalar, [i.name for i in desc.inputs], attrs)
    return dataclasses.replace(desc, scalar=expr, scalar_params=params)


def get_registered_op_protos() -> list[OpProtoDescriptor]:
    """Every registered Python prototype, in registration order."""
    with LOCK:
        return list(_PROTOS.values())


def get_registered_op_proto(op_type: str) -> OpProtoDescriptor | None:
    """The Python prototype of ``op_type``, or ``None``."""
    with LOCK:
        key = _KEY_OF_TYPE.get(op_type)
        return None if key is None else _PROTOS[key]


def get_registered_op_proto_by_descriptor_key(descriptor_key: str) -> OpProtoDescriptor | None:
    """The Python prototype registered under ``descriptor_key``, or ``None``."""
    with LOCK:
        return _PROTOS.get(descriptor_key)


# --- transactions (bootstrap's batches, tests) ------------------------------------------------
Snapshot = tuple[dict[str, OpProtoDescriptor], dict[str, str], dict[str, OpDef]]


def _snapshot() -> Snapshot:
    with LOCK:
        return dict(_PROTOS), dict(_KEY_OF_TYPE), dict(_OPS)


def _restore(snapshot: Snapshot) -> None:
    """Put the prototype registry and its ``ge.ops`` entries back as in ``snapshot``."""
    protos, keys, ops = snapshot
    with LOCK:
        registry = ops_registry()
        for op_type, op in list(_OPS.items()):
            if ops.get(op_type) is not op and op_type in registry and registry.get(op_type) is op:
                registry.unregister(op_type)
        for op_type, op in ops.items():
            if op_type not in registry:
                registry.register(op)
        _PROTOS.clear()
        _PROTOS.update(protos)
        _KEY_OF_TYPE.clear()
        _KEY_OF_TYPE.update(keys)
        _OPS.clear()
        _OPS.update(ops)


def _unregister(op_type: str) -> None:
    """Remove the Python prototype of ``op_type`` and its ``ge.ops`` entry (tests, rollback)."""
    with LOCK:
        key = _KEY_OF_TYPE.pop(op_type, None)
        if key is not None:
            del _PROTOS[key]
        op = _OPS.pop(op_type, None)
        registry = ops_registry()
        if op is not None and op_type in registry and registry.get(op_type) is op:
            registry.unregister(op_type)
