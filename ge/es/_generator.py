"""One builder function per registered op, generated from its ``OpDef`` by GE-PY's rules.

Parameters, in order (GE_REFERENCE.md §3.5): the IR inputs (required ``T``; optional
``Optional[T] = None`` only when every later positional parameter has a default; dynamic
``List[T]``), then ``owner_graph_builder`` for ops without inputs or ``owner_builder=None`` when
all inputs are optional, then ``<out>_num: int`` per dynamic output, then the subgraphs
(``Graph`` or ``List[Graph]``), then ``*`` and the attributes (required first, then optional
with their IR defaults). ``T`` accepts TensorLike values when the op has more than one input or
only optional ones. Python keywords get ``in_``/``out_``/``subgraph_``/``attr_`` prefixes; an
attribute named like an input becomes ``attr_<name>``, an output named like an input
``ref_<name>``. One output returns a ``TensorHolder``, one dynamic output a list, several
outputs an ``<OpType>Output`` object with one attribute per output.
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es.tensor_holder import TensorHolder, innermost
from ge.es.tensor_like import TensorLike, is_tensor_like, to_const
from ge.graph._attr import AttrValue
from ge.graph.graph import MAX_PORTS, Graph
from ge.graph.tensor import Tensor
from ge.graph.types import AttrValueType, DataType
from ge.ops.schema import OpDef

__all__ = ["make_op_function"]

P = inspect.Parameter
VT = AttrValueType
_ATTR_TYPES: dict[AttrValueType, Any] = {
    VT.VT_INT: int,
    VT.VT_FLOAT: float,
    VT.VT_STRING: str,
    VT.VT_BOOL: bool,
    VT.VT_DATA_TYPE: DataType,
    VT.VT_LIST_INT: list[int],
    VT.VT_LIST_FLOAT: list[float],
    VT.VT_LIST_BOOL: list[bool],
    VT.VT_LIST_STRING: list[str],
    VT.VT_LIST_DATA_TYPE: list[DataType],
    VT.VT_LIST_LIST_INT: list[list[int]],
    VT.VT_TENSOR: Tensor,
}


@dataclass(frozen=True)
class _Param:
    name: str  # Python parameter name
    role: str  # "input", "builder", "count", "subgraph", "attr"
    index: int  # index within its role in the OpDef


def _escape(name: str, prefix: str, taken: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    return f"{prefix}{name}" if keyword.iskeyword(name) or name in taken else name


def _plan(op: OpDef) -> tuple[list[_Param], inspect.Signature]:
    input_names = {s.name for s in op.inputs}
    plan: list[_Param] = []
    params: list[P] = []
    accepts_like = len(op.inputs) > 1 or (op.inputs and all(s.optional for s in op.inputs))
    elem: Any = TensorHolder | TensorLike if accepts_like else TensorHolder

    tail: list[tuple[_Param, P]] = []
    if op.inputs and all(s.optional for s in op.inputs):
        tail.append(
            (
                _Param("owner_builder", "builder", 0),
                P("owner_builder", P.POSITIONAL_OR_KEYWORD, default=None, annotation=Any | None),
            )
        )
    for i, spec in enumerate(op.outputs):
        if spec.dynamic:
            name = _escape(spec.name, "out_")
            name = f"ref_{spec.name}" if spec.name in input_names else name
            tail.append(
                (
                    _Param(f"{name}_num", "count", i),
                    P(f"{name}_num", P.POSITIONAL_OR_KEYWORD, annotation=int),
                )
            )
    for i, graph_spec in enumerate(op.subgraphs):
        name = _escape(graph_spec.name, "subgraph_")
        tail.append(
            (
                _Param(name, "subgraph", i),
                P(
                    name,
                    P.POSITIONAL_OR_KEYWORD,
                    annotation=list[Graph] if graph_spec.dynamic else Graph,
                ),
            )
        )
    if not op.inputs:
        plan.append(_Param("owner_graph_builder", "builder", 0))
        params.append(P("owner_graph_builder", P.POSITIONAL_OR_KEYWORD, annotation=Any))

    for i, spec in enumerate(op.inputs):
        name = _escape(spec.name, "in_")
        later_defaults = all(s.optional for s in op.inputs[i + 1 :]) and all(
            p.default is not P.empty for _, p in tail
        )
        if spec.dynamic:
            param = P(name, P.POSITIONAL_OR_KEYWORD, annotation=list[elem])
        elif spec.optional and later_defaults:
            param = P(name, P.POSITIONAL_OR_KEYWORD, default=None, annotation=elem | None)
        else:
            param = P(
                name, P.POSITIONAL_OR_KEYWORD, annotation=elem | None if spec.optional else elem
            )
        plan.append(_Param(name, "input", i))
        params.append(param)
    for entry, param in tail:
        plan.append(entry)
        params.append(param)

    attrs = sorted(enumerate(op.attrs), key=lambda ia: not ia[1].required)
    for i, attr_spec in attrs:
        name = _escape(attr_spec.name, "attr_", input_names)
        annotation = _ATTR_TYPES.get(attr_spec.type, Any)
        default = P.empty if attr_spec.required else _default(attr_spec.default)
        plan.append(_Param(name, "attr", i))
        params.append(P(name, P.KEYWORD_ONLY, default=default, annotation=annotation))
    return plan, inspect.Signature(params, return_annotation=_return_annotation(op))


def _default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _return_annotation(op: OpDef) -> Any:
    if len(op.outputs) == 1:
        return list[TensorHolder] if op.outputs[0].dynamic else TensorHolder
    if not op.outputs:
        return TensorHolder
    return f"{op.type}Output"


def _output_class(op: OpDef) -> type:
    input_names = {s.name for s in op.inputs}
    fields = [
        f"ref_{s.name}" if s.name in input_names else _escape(s.name, "out_") for s in op.outputs
    ]

    def __init__(self: Any, *values: Any) -> None:  # noqa: N807
        for field, value in zip(fields, values, strict=True):
            setattr(self, field, value)

    def __repr__(self: Any) -> str:  # noqa: N807
        return f"{op.type}Output({', '.join(f'{f}={getattr(self, f)!r}' for f in fields)})"

    return type(
        f"{op.type}Output",
        (),
        {
            "__slots__": tuple(fields),
            "__init__": __init__,
            "__repr__": __repr__,
            "_fields": tuple(fields),
        },
    )


def _resolve_builder(
    op: OpDef, values: dict[str, Any], plan: list[_Param], inputs: list[_Param]
) -> Any:
    """The builder the node joins; ``inputs`` are the plan's input entries."""
    for entry in plan:
        if entry.role == "builder" and values.get(entry.name) is not None:
            return values[entry.name]
    holders = _all_holders(values, inputs)
    if holders:
        return innermost(*holders).get_owner_builder()
    if op.source != "ge":
        if _any_eager_value(values, inputs):
            return None  # a custom op on arrays outside any graph: the caller runs it now
        raise GeValueError(
            f"{op.type}: Please ensure at least one input tensor or an explicit "
            f"owner_builder is provided, so the op knows which graph to join (or pass numpy "
            f"arrays / ge.graph.Tensors to run this custom op at once)"
        )
    raise GeValueError(
        f"{op.type}: Please ensure at least one input tensor or an explicit "
        f"owner_builder is provided, so the op knows which graph to join"
    )


def _any_eager_value(values: dict[str, Any], inputs: list[_Param]) -> bool:
    """Whether some input is a numpy array or a ``ge.graph.Tensor`` (an eager call)."""
    for entry in inputs:
        value = values[entry.name]
        for v in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(v, (np.ndarray, np.generic, Tensor)):
                return True
    return False


def _all_holders(values: dict[str, Any], inputs: list[_Param]) -> list[TensorHolder]:
    found: list[TensorHolder] = []
    for entry in inputs:
        value = values[entry.name]
        found += [
            v
            for v in (value if isinstance(value, list) else [value])
            if isinstance(v, TensorHolder)
        ]
    return found


def _input_ports(
    op: OpDef, inputs: list[_Param], values: dict[str, Any], builder: Any, accepts_like: bool
) -> list[Any]:
    holders = _all_holders(values, inputs) if accepts_like else []
    like = holders[0].data_type if holders else None

    def port(value: Any, name: str) -> Any:
        if isinstance(value, TensorHolder):
            if value.get_owner_builder() is not builder:
                captured = builder._capture(value)  # a value of an enclosing graph
                if captured is None:
                    raise GeValueError(f"{op.type}: input '{name}' comes from another GraphBuilder")
                value = captured
            return (value._node, value._port)
        if accepts_like and is_tensor_like(value):
            spec = op.inputs[next(e.index for e in inputs if e.name == name)]
            fits = like is not None and (spec.dtypes is None or like in spec.dtypes)
            holder = to_const(builder, value, like if fits else None)
            return (holder._node, holder._port)
        expected = "a TensorHolder or a TensorLike" if accepts_like else "a TensorHolder"
        raise GeTypeError(
            f"{op.type}: input '{name}' must be {expected}, got {type(value).__name__}"
        )

    ports: list[Any] = []
    for entry in inputs:
        spec = op.inputs[entry.index]
        value = values[entry.name]
        if spec.dynamic:
            if not isinstance(value, (list, tuple)):
                raise GeTypeError(f"{op.type}: input '{entry.name}' is dynamic; pass a list")
            ports.append([port(v, entry.name) for v in value])
        elif value is None:
            if not spec.optional:
                raise GeValueError(f"{op.type}: input '{entry.name}' is required")
            ports.append(None)
        else:
            ports.append(port(value, entry.name))
    return ports


def _count(op: OpDef, name: str, value: Any) -> int:
    """A ``<out>_num`` argument: an int from 0 to ``MAX_PORTS``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise GeTypeError(f"{op.type}: {name} must be an int, got {type(value).__name__}")
    if not 0 <= value <= MAX_PORTS:
        raise GeValueError(f"{op.type}: {name} must be in 0..{MAX_PORTS}, got {value}")
    return value


def make_op_function(op: OpDef) -> Callable[..., Any]:
    """The ``ge.es.<OpType>`` function of ``op``."""
    plan, signature = _plan(op)
    inputs = [e for e in plan if e.role == "input"]
    input_names = [e.name for e in inputs]
    accepts_like = len(op.inputs) > 1 or bool(op.inputs and all(s.optional for s in op.inputs))
    output_class = _output_class(op) if len(op.outputs) > 1 else None

    def build(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise GeTypeError(f"{op.type}{signature}: {e}") from None
        bound.apply_defaults()
        values = bound.arguments
        builder = _resolve_builder(op, values, plan, inputs)
        if builder is None:  # ge.custom_op.eager_call: build a one-node graph, run it
            from ge.custom_op.eager_call import call  # noqa: PLC0415

            return call(op, build, values, input_names)
        return builder._atomically(_build_node, builder, values)

    def _build_node(builder: Any, values: dict[str, Any]) -> Any:
        ports = _input_ports(op, inputs, values, builder, accepts_like)
        counts = [1] * len(op.outputs)
        subgraphs: list[Any] = [None] * len(op.subgraphs)
        attrs: dict[str, Any] = {}
        for entry in plan:
            if entry.role == "count":
                counts[entry.index] = _count(op, entry.name, values[entry.name])
            elif entry.role == "subgraph":
                subgraphs[entry.index] = values[entry.name]
            elif entry.role == "attr":
                value = values[entry.name]
                attrs[op.attrs[entry.index].name] = (
                    value.value if isinstance(value, AttrValue) else value
                )
        node = builder._add(op.type, ports, attrs, output_counts=counts, subgraphs=subgraphs)
        return _results(op, builder, node, counts, output_class)

    build.__signature__ = signature  # type: ignore[attr-defined]
    build.__name__ = build.__qualname__ = op.type
    build.__module__ = "ge.es.custom" if op.source != "ge" else f"ge.es.{op.group}"
    build.__doc__ = f"{op.doc}\n\nGenerated from the {op.type} prototype.\n{op.type}{signature}"
    return build


def _results(
    op: OpDef, builder: Any, node: Any, counts: list[int], output_class: type | None
) -> Any:
    groups: list[Any] = []
    port = 0
    for spec, count in zip(op.outputs, counts, strict=True):
        holders = [TensorHolder._make(builder, node, port + k) for k in range(count)]
        groups.append(holders if spec.dynamic else holders[0])
        port += count
    if not op.outputs:
        return TensorHolder._make(builder, node, 0)
    if output_class is None:
        return groups[0]
    return output_class(*groups)
