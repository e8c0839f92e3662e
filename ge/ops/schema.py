"""What an operator is: its prototype, its rules and its flags, in one immutable record.

An ``OpDef`` holds everything every later stage needs to know about one op type, in GE's IR
terms (GE's ``REG_OP``): inputs (required / optional / dynamic), outputs (required / dynamic),
typed attributes with defaults, subgraphs, dtype constraints; the pure ``infer`` rule over
``TensorDesc``s; the numpy ``reference``; the ``scalar`` body of an elementwise op (what one
element computes, which the compiler's elementwise codegen compiles and fuses); and flags such
as ``elementwise``. Built-in ops and ops registered at run time are the same kind of object.

Decision: what an op *means* is data on its ``OpDef`` (so ``ge.ops`` needs no compiler code),
and how the compiler *runs* it beyond that (a kernel lowering, a reduction that can head a
fused epilogue) is a record registered for the ``OpDef`` in ``ge.compiler.kernels``
(``register_kernels``): ge.ops never imports the compiler. Fusibility is derived, never listed:
``OpDef.fusible`` is an elementwise op whose scalar body broadcasts the numpy way.

    >>> from ge.ops.schema import OpDef, TensorSpec, AttrSpec
    >>> from ge.graph import AttrValueType
    >>> op = OpDef("Scale", inputs=(TensorSpec("x"),), outputs=(TensorSpec("y"),),
    ...            attrs=(AttrSpec("alpha", AttrValueType.VT_FLOAT, 1.0),))
    >>> [a.name for a in op.attrs], op.attrs[0].required
    (['alpha'], False)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType

if TYPE_CHECKING:
    from ge.graph.graph import Graph

__all__ = [
    "REQUIRED",
    "AttrSpec",
    "ExecContext",
    "InferContext",
    "OpDef",
    "PortKind",
    "ScalarBody",
    "SubgraphSpec",
    "TensorSpec",
]


class PortKind(Enum):
    """How many tensors an IR input/output takes: exactly one, zero or one (inputs only), or
    any number (GE's ``INPUT``/``OPTIONAL_INPUT``/``DYNAMIC_INPUT``/``DYNAMIC_OUTPUT``)."""

    REQUIRED = "required"
    OPTIONAL = "optional"
    DYNAMIC = "dynamic"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""Default of an attribute that has none (GE's ``REQUIRED_ATTR``)."""


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """One IR input or output; ``dtypes`` is the set of allowed types, ``None`` for any."""

    name: str
    kind: PortKind = PortKind.REQUIRED
    dtypes: frozenset[DataType] | None = None

    @property
    def dynamic(self) -> bool:
        return self.kind is PortKind.DYNAMIC

    @property
    def optional(self) -> bool:
        return self.kind is PortKind.OPTIONAL


@dataclass(frozen=True, slots=True)
class AttrSpec:
    """One IR attribute: name, GE attribute kind, default (``REQUIRED`` if none)."""

    name: str
    type: AttrValueType
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True, slots=True)
class SubgraphSpec:
    """One IR subgraph; a dynamic one (``DYNAMIC_GRAPH``) has instances ``name0, name1, ...``."""

    name: str
    dynamic: bool = False


DescOrList = TensorDesc | list[TensorDesc]
ArrayOrList = np.ndarray | list[np.ndarray] | None


class InferContext:
    """What an ``infer`` rule sees: the input descs per IR input (``None`` for an absent
    optional input, a list for a dynamic one), the attributes with defaults filled in, the
    values of inputs that are known constants, the instance count of each output entry, the
    node's current output descs (what Data and Const nodes declare), and for control-flow ops
    the subgraphs plus ``infer_subgraph(graph, input_descs, parent_offset)``.

    ``values`` may be given as a function returning the list: it is then called on first
    read, so the many rules that never look at values (elementwise ops, most of a graph)
    never pay for reading constants."""

    __slots__ = (
        "_values",
        "attrs",
        "current_outputs",
        "infer_subgraph",
        "inputs",
        "op",
        "output_counts",
        "subgraphs",
    )

    def __init__(
        self,
        op: OpDef,
        inputs: list[Any],
        attrs: dict[str, Any],
        values: list[Any] | Callable[[], list[Any]],
        output_counts: list[int],
        current_outputs: list[TensorDesc] | None = None,
        subgraphs: list[Graph] | None = None,
        infer_subgraph: Callable[[Graph, Sequence[TensorDesc], int], list[TensorDesc]]
        | None = None,
    ) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self._values = values
        self.output_counts = output_counts
        self.current_outputs = [] if current_outputs is None else current_outputs
        self.subgraphs = [] if subgraphs is None else subgraphs
        self.infer_subgraph = infer_subgraph

    @property
    def values(self) -> list[Any]:
        values = self._values
        if callable(values):
            values = self._values = values()
        return values

    @values.setter
    def values(self, values: list[Any]) -> None:
        self._values = values

    def input(self, name: str) -> Any:
        """Desc(s) of the IR input called ``name``."""
        return self.inputs[self.op.input_index(name)]

    def value(self, name: str) -> np.ndarray | None:
        """Known constant value of input ``name`` (``None`` when it is computed at run time)."""
        value: np.ndarray | None = self.values[self.op.input_index(name)]
        return value


@dataclass(slots=True)
class ExecContext:
    """What a ``reference`` implementation sees: numpy inputs per IR input (``None`` / list as
    for infer), attributes with defaults, the inferred output descs, and for control-flow ops
    the subgraphs and a way to run them. ``output_counts`` (instances per IR output; empty when
    the caller does not say) and ``node`` (the node's name, for messages) are given by
    ``eval_graph``."""

    op: OpDef
    inputs: list[Any]
    attrs: dict[str, Any]
    outputs: list[Any] = field(default_factory=list)
    subgraphs: list[Graph] = field(default_factory=list)
    run_subgraph: Callable[[Graph, Sequence[np.ndarray], int], list[np.ndarray]] | None = None
    output_counts: list[int] = field(default_factory=list)
    node: str = ""

    def input(self, name: str) -> Any:
        return self.inputs[self.op.input_index(name)]


InferFn = Callable[[InferContext], Sequence[DescOrList]]
ReferenceFn = Callable[[ExecContext], Sequence[ArrayOrList]]
# (attrs, number of inputs, compute dtype) -> the expression for this node
ScalarExprFn = Callable[[dict[str, Any], int, np.dtype[Any]], str]


@dataclass(frozen=True, slots=True)
class ScalarBody:
    """What one output element of an elementwise op is, as the elementwise codegen writes it
    (``ge.compiler.kernels.elementwise``; a ``FusedElementwise`` kernel chains these).

    ``expr`` is a Python expression over ``a, b, c, ...`` (the inputs, each in the compute
    type) and ``p0, p1, ...`` (float64 parameters), using ``math.*`` / ``np.*`` and ge's kernel
    helpers (``int_div``); the compiler rounds its value to the output type. Where the
    expression depends on the node, ``expr`` is a function of (attrs, input count, compute
    dtype) returning it. ``params`` gives the node's parameter values from its attributes
    (``[]``: none). ``compute`` picks the compute type: ``"promote"`` (every input converted
    to their promoted type, half types held in float32), ``"select"`` (input 0 is a bool
    condition kept as is, the rest promoted), ``"source"`` (input 0's own type: ``Cast``).
    ``numpy_broadcast`` is whether the inputs broadcast to the output as numpy broadcasts them
    (``False`` for ``BiasAdd`` and ``Select``, which broadcast along a chosen axis: they have
    single-op kernels but are not fused).

        >>> ScalarBody("a * a + p0", params=lambda attrs: [attrs["alpha"]]).expr
        'a * a + p0'
    """

    expr: str | ScalarExprFn
    params: Callable[[dict[str, Any]], Sequence[float]] | None = None
    compute: str = "promote"
    numpy_broadcast: bool = True

    def expression(self, attrs: dict[str, Any], arity: int, compute: np.dtype[Any]) -> str:
        """The expression for a node with ``attrs``, ``arity`` inputs and ``compute`` type."""
        expr = self.expr
        return expr if isinstance(expr, str) else expr(attrs, arity, compute)

    def parameters(self, attrs: dict[str, Any]) -> Sequence[float]:
        """The node's ``p0, p1, ...`` values."""
        return () if self.params is None else self.params(attrs)


@dataclass(frozen=True, eq=False)
class OpDef:
    """An operator: prototype, rules and flags. Compare op defs by identity or by ``type``.

    ``group`` names the ``ge.es`` plugin module the op's builder function lives in
    (``"math"``, ``"nn"``, ``"array"``, ``"control"``, ``"custom"``).
    """

    type: str
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    attrs: tuple[AttrSpec, ...] = ()
    subgraphs: tuple[SubgraphSpec, ...] = ()
    infer: InferFn | None = None
    reference: ReferenceFn | None = None
    group: str = "math"
    pure: bool = True
    elementwise: bool = False
    commutative: bool = False
    doc: str = ""
    source: str = "ge"
    io: str = ""  # "input" for graph inputs (Data), "output" for NetOutput, "" otherwise
    # Inputs whose *values* (not just shapes) the infer rule reads: axes, target shapes...
    value_inputs: frozenset[str] = frozenset()
    # How the compiler lowers a node of this op: a function from a
    # ``ge.compiler.lower.LowerContext`` to its tasks (``None`` from it: the numpy reference
    # runs). Ops registered at run time (Python custom ops) carry theirs here; built-ins
    # without one use what ``ge.compiler.kernels.register_kernels`` registered for them.
    lowering: Callable[[Any], Any] | None = None
    # One element of an elementwise op (requires ``elementwise``): with it the compiler gives
    # the op a single-op kernel and, when ``fusible``, fuses it with its neighbours.
    scalar: ScalarBody | None = None
    # The numpy ufunc this op is (``"add"``): ``ge.es`` maps ``np.add(holder, ...)`` onto it.
    ufunc: str = ""

    @property
    def fusible(self) -> bool:
        """Whether a ``FusedElementwise`` body may hold this op: elementwise, with a scalar
        body whose inputs broadcast the numpy way."""
        body = self.scalar
        return self.elementwise and body is not None and body.numpy_broadcast

    # Whether constant folding may run ``reference`` at compile time on Const inputs (False:
    # Python custom ops, whose callbacks may launch kernels, be costly or have side effects)
    foldable: bool = True

    def input_index(self, name: str) -> int:
        for i, spec in enumerate(self.inputs):
            if spec.name == name:
                return i
        raise KeyError(f"{self.type} has no input {name!r}")

    def attr_spec(self, name: str) -> AttrSpec | None:
        return next((a for a in self.attrs if a.name == name), None)

    def signature_key(self) -> tuple[Any, ...]:
        """Everything that makes two definitions the same prototype (used to spot conflicts)."""
        return (
            self.type,
            self.inputs,
            self.outputs,
            tuple((a.name, a.type, _freeze(a.default)) for a in self.attrs),
            self.subgraphs,
        )


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value
