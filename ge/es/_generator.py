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
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ge.error import GeError, GeIndexError, GeTypeError, GeValueError
from ge.es._errors import AttributeTypeError, AttributeValueError, no_attribute
from ge.es.tensor_holder import TensorHolder, innermost
from ge.es.tensor_like import TensorLike, check_tensor_like, to_const
from ge.graph._attr import AttrValue
from ge.graph.graph import MAX_PORTS, Graph
from ge.graph.tensor import Tensor
from ge.graph.types import AttrValueType, DataType
from ge.ops.schema import AttrSpec, OpDef, SubgraphSpec

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


_NO_BUILDER = (
    "Please ensure at least one input tensor or an explicit owner_builder is provided when "
    "supported"
)


def _resolve_builder(
    op: OpDef, values: dict[str, Any], plan: list[_Param], inputs: list[_Param], like: bool
) -> Any:
    """The builder the node joins, as GE-PY's generated code finds it (GE_ERRORS.md §3.5
    step 1): the first ``TensorHolder`` among the inputs (dynamic lists expanded), left to
    right, else the explicit builder argument. Ours: of holders of nested builders (a
    ``ge.jit`` branch using an outer value) the innermost builder; ``None`` for a custom op
    called on numpy arrays (the caller runs it at once)."""
    if not like and inputs:
        _single_input_holder(op, values, inputs[0], op.inputs[inputs[0].index].dynamic)
    holders = _all_holders(values, inputs)
    if holders:
        return innermost(*holders).get_owner_builder()
    for entry in plan:
        if entry.role == "builder":
            return _explicit_builder(op, entry.name, values[entry.name], bool(inputs))
    if op.source != "ge" and _any_eager_value(values, inputs):
        return None
    hint = " (or pass numpy arrays / ge.graph.Tensors to run this custom op at once)"
    raise GeValueError(
        f"{_NO_BUILDER} ({op.type}: the op needs to know which graph to join"
        f"{hint if op.source != 'ge' else ''})"
    )


def _explicit_builder(op: OpDef, name: str, value: Any, optional: bool) -> Any:
    """An ``owner_builder``/``owner_graph_builder`` argument. GE-PY's ``resolve_builder``
    skips a non-builder ``owner_builder`` (then finds none); a required
    ``owner_graph_builder`` that is not a ``GraphBuilder`` is a ``TypeError`` (ours)."""
    from ge.es.graph_builder import GraphBuilder  # noqa: PLC0415  (cycle: builder uses holders)

    if isinstance(value, GraphBuilder):
        return value
    if optional or value is None:
        raise GeValueError(f"{_NO_BUILDER} ({op.type}: {name} is {value!r})")
    raise GeTypeError(f"{op.type}: {name} must be a GraphBuilder, got {type(value).__name__}")


def _single_input_holder(op: OpDef, values: dict[str, Any], entry: _Param, dynamic: bool) -> None:
    """GE-PY's step 1' for an op with one required or dynamic input: the builder is read
    from it (``x.get_owner_builder()``, ``x[0]...`` for a dynamic input)."""
    value = values[entry.name]
    if dynamic and isinstance(value, (list, tuple)):
        if not value:  # GE-PY reads x[0] for the builder
            raise GeIndexError(
                f"list index out of range ({op.type}: the dynamic input '{entry.name}' is "
                f"empty, so no builder can be read from it)"
            )
        value = value[0]
    if isinstance(value, TensorHolder) or (
        op.source != "ge" and isinstance(value, (np.ndarray, np.generic, Tensor))
    ):
        return
    raise AttributeTypeError(
        f"{no_attribute(value, 'get_owner_builder')} ({op.type}: input '{entry.name}' must "
        f"be a TensorHolder, got {type(value).__name__})"
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
            for v in (value if isinstance(value, (list, tuple)) else [value])
            if isinstance(v, TensorHolder)
        ]
    return found


def _input_ports(
    op: OpDef, inputs: list[_Param], values: dict[str, Any], builder: Any, accepts_like: bool
) -> list[Any]:
    """One entry per IR input, in GE-PY's order (GE_ERRORS.md §3.5): every value converted
    first (step 2), then required inputs that are ``None`` refused (step 3). A holder of
    another builder is linked across graphs, as GE-PY's ``AddDataEdge`` does (§13.2; the
    compile step's graph check reports it); one of an enclosing builder (ours, ``ge.jit``)
    becomes an input of this graph."""
    holders = _all_holders(values, inputs) if accepts_like else []
    like = holders[0].data_type if holders else None

    def port(value: Any, name: str, spec: Any) -> Any:
        if isinstance(value, TensorHolder):
            if value._builder is not builder:
                value = builder._capture(value) or value
            return (value._node, value._port)
        if value is None:
            return None
        if not accepts_like:
            raise AttributeTypeError(
                f"{no_attribute(value, '_handle')} ({op.type}: input '{name}' must be a "
                f"TensorHolder, got {type(value).__name__})"
            )
        check_tensor_like(value)
        if builder._built:  # GE-PY's convert_to_tensor_holder makes the constant first
            builder._check_live("create constant" if isinstance(value, list) else "create scalar")
        fits = like is not None and (spec.dtypes is None or like in spec.dtypes)
        holder = to_const(builder, value, like if fits else None)
        return (holder._node, holder._port)

    ports: list[Any] = []
    for entry in inputs:
        spec = op.inputs[entry.index]
        value = values[entry.name]
        if spec.dynamic:
            if not isinstance(value, (list, tuple)):
                raise GeTypeError(
                    f"{op.type}: input '{entry.name}' is dynamic; pass a list, got "
                    f"{type(value).__name__}"
                )
            items = [port(v, entry.name, spec) for v in value]
            if any(item is None for item in items):
                raise GeValueError(f"{op.type}: input '{entry.name}' has a None element")
            ports.append(items)
        else:
            ports.append(port(value, entry.name, spec))
    for entry, got in zip(inputs, ports, strict=True):
        if got is None and not op.inputs[entry.index].optional:
            raise AttributeValueError(
                f"{no_attribute(None, '_handle')} ({op.type}: input '{entry.name}' is "
                f"required, got None)"
            )
    return ports


_DATA_TYPES = frozenset({"Data", "RefData", "AippData", "AnyData"})


# GE-PY's step 4 marks a subgraph as handed to the op's builder before its C call, so a
# Graph handed over once cannot be handed over again, even when that op then failed.
_HANDED_OVER: weakref.WeakKeyDictionary[Graph, str] = weakref.WeakKeyDictionary()


def _hand_over_subgraphs(
    op: OpDef, graphs: list[Any], builder: Any
) -> list[tuple[SubgraphSpec, Graph]]:
    """GE-PY's step 4 (GE_ERRORS.md §3.5), subgraph by subgraph in order: a value that is not
    a Graph (Python's ``AttributeError`` there), or a Graph handed over before, is refused;
    each Graph before it stays handed over."""
    each = [
        (spec, graph)
        for spec, value in zip(op.subgraphs, graphs, strict=True)
        for graph in (value if isinstance(value, (list, tuple)) else [value])
    ]
    for spec, graph in each:
        if not isinstance(graph, Graph):
            raise AttributeTypeError(
                f"{no_attribute(graph, '_transfer_ownership_when_pass_as_subgraph')} "
                f"({op.type}: subgraph '{spec.name}' must be a Graph, got "
                f"{type(graph).__name__})"
            )
        _check_owner(graph)
        _HANDED_OVER[graph] = builder.name
    return each


def _subgraphs_problem(
    op: OpDef, each: list[tuple[SubgraphSpec, Graph]], counts: list[int], ports: list[Any]
) -> str:
    """What GE-PY's generated C function refuses in the subgraphs (step 7), or ``""``: exactly
    one NetOutput, whose input count is the first dynamic output count (``While``'s ``cond``
    is exempt), and Data ``index`` attrs that are unique and below the first dynamic input
    count."""
    out_count = next((c for c, s in zip(counts, op.outputs, strict=True) if s.dynamic), None)
    in_count = next((len(p) for p, s in zip(ports, op.inputs, strict=True) if s.dynamic), None)
    for spec, graph in each:
        exempt = op.type == "While" and spec.name == "cond"
        problem = _subgraph_problem(graph, None if exempt else out_count, in_count)
        if problem:
            return f"{op.type}: subgraph '{graph.name}' ({spec.name}) {problem}"
    return ""


def _check_owner(graph: Graph) -> None:
    parent = graph._parent_node
    owner = _HANDED_OVER.get(graph)
    if parent is not None or owner is not None:
        if parent is not None:
            owner = parent._graph._root().name if parent._graph is not None else "?"
            where = f"it is a subgraph of node {parent.name} already"
        else:
            where = "an earlier op call took it, though that call failed"
        raise GeError(
            f"Graph :{graph.name} already has an new owner builder :{owner}, cannot transfer "
            f"ownership again ({where}; build a new Graph for each op)"
        )


def _subgraph_problem(graph: Graph, out_count: int | None, in_count: int | None) -> str:
    outputs = [n for n in graph._nodes.values() if n._type == "NetOutput"]
    if len(outputs) != 1:
        return f"has {len(outputs)} NetOutput nodes; it needs exactly one"
    if out_count is not None and len(outputs[0]._in_edges) != out_count:
        return f"returns {len(outputs[0]._in_edges)} values; the op has {out_count} outputs"
    seen: set[int] = set()
    for node in graph._nodes.values():
        stored = node._attrs.get("index") if node._type in _DATA_TYPES else None
        if stored is None:
            continue
        index = stored.value
        if index in seen or (in_count is not None and not 0 <= index < in_count):
            return (
                f"has Data index {index}: indexes must be unique and below the op's "
                f"{in_count} dynamic inputs"
            )
        seen.add(index)
    return ""


def _hand_over_tensors(op: OpDef, attrs: dict[str, Any], builder: Any) -> None:
    """GE-PY's step 5: each ``Tensor`` given as a tensor attribute now belongs to ``builder``
    and cannot be given again, to any op. That includes the shared default ``Tensor()`` of an
    optional tensor attr (``Const(b)`` twice), as in GE-PY, whose default is made once."""
    for spec in op.attrs:
        value = attrs.get(spec.name)
        if spec.type is AttrValueType.VT_TENSOR and isinstance(value, Tensor):
            value._transfer_ownership_when_pass_as_attr(builder)


# GE-PY's step 6 hands scalar attributes to ctypes, which takes a bool for an int
# (``c_int64(True)``), any object for a bool (its truth) and an int for a float.
_CTYPES_SCALARS: dict[AttrValueType, tuple[type | tuple[type, ...], Callable[[Any], Any]]] = {
    AttrValueType.VT_INT: (bool, int),
    AttrValueType.VT_BOOL: (object, bool),
    AttrValueType.VT_FLOAT: ((bool, int), float),
}


def _marshalled(spec: AttrSpec, value: Any) -> Any:
    """An attribute argument as GE-PY's marshalling reads it (step 6)."""
    if isinstance(value, AttrValue):
        return value.value
    rule = _CTYPES_SCALARS.get(spec.type)
    if rule is not None and isinstance(value, rule[0]):
        try:
            return rule[1](value)
        except (TypeError, ValueError):
            return value  # the attribute check names what is wrong with it
    return value


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
    single_dynamic_output = len(op.outputs) == 1 and op.outputs[0].dynamic

    def build(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise GeTypeError(f"{op.type}{signature}: {e}") from None
        bound.apply_defaults()
        values = bound.arguments
        builder = _resolve_builder(op, values, plan, inputs, accepts_like)
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
                spec = op.attrs[entry.index]
                attrs[spec.name] = _marshalled(spec, values[entry.name])
        each = _hand_over_subgraphs(op, subgraphs, builder) if op.subgraphs else []
        _hand_over_tensors(op, attrs, builder)
        problem = _subgraphs_problem(op, each, counts, ports) if each else ""
        if problem:
            if single_dynamic_output:  # GE-PY's zeroed result struct: an empty list
                print(f"{op.type}: Assert failed: {problem}", file=sys.stderr)
                return []
            raise GeValueError(f"Tensor handle cannot be None: {problem}")
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
