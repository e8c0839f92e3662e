"""Patterns: the graphs a ``PatternFusionPass`` looks for, and what a match reports.

Owns ``Pattern`` (a pattern graph plus its captured tensors), ``create_pattern``, ``NodeIo``,
the matcher configuration (``PatternMatcherConfigBuilder`` -> ``PatternMatcherConfig``),
``MatchResult`` (what ``meet_requirements``/``replacement`` see), the lazy ``PatternInputs`` of
expression-style passes and ``build_expression_pattern``, which runs one ``@pattern`` method
(GE_REFERENCE.md §6, GE_ERRORS.md §9.3). The matcher itself is ``ge.passes._match``.

Decisions where GE is silent:

* A pattern graph's inputs are its ``Data``-like nodes (``Data``, ``RefData``, ``AippData``,
  ``AnyData``; the ``index`` attribute is the pattern input index) and its outputs are the
  graph outputs (``Graph.get_outputs()``, which ``build_and_reset`` sets); the builder's
  ``NetOutput`` node is not a node to match.
* GE's "handles" are Python objects here: ``Pattern(graph)`` accepts a ``ge.graph.Graph``
  (anything else has no handle: "Graph object must carry _handle"); the move leaves the old
  ``Graph`` raising "Failed to get Graph name" (``Graph._move_out``) and a second move of it
  reads "Pattern graph handle is empty". ``release()`` returns ``id()`` of the pattern graph.
* ``capture_tensor`` checks at once that the node is in the pattern graph and the output
  index exists (GE would fail later, at match time).
* ``ge`` is imported lazily: ``import ge.passes`` loads this module and must stay cheap.

    >>> from ge.es import GraphBuilder
    >>> import ge.es as es
    >>> b = GraphBuilder("relu_pattern")
    >>> x = b.create_input(0)
    >>> y = es.Relu(x)
    >>> p = Pattern(b.build_and_reset([y])).capture_tensor(x).capture_tensor(y)
    >>> [(io.node.name, io.index) for io in p.get_captured_tensors()]
    [('input_0', 0), ('Relu_0', 0)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ge.error import GeError, GeTypeError, GeValueError, GraphError
from ge.passes._hooks import pattern

if TYPE_CHECKING:
    from ge.es.graph_builder import GraphBuilder
    from ge.es.tensor_holder import TensorHolder
    from ge.graph.graph import Graph
    from ge.graph.node import Node
    from ge.graph.tensor_desc import TensorDesc

__all__ = [
    "MatchResult",
    "NodeIo",
    "Pattern",
    "PatternInputs",
    "PatternMatcherConfig",
    "PatternMatcherConfigBuilder",
    "build_expression_pattern",
    "create_pattern",
    "ensure_pattern",
    "pattern",
    "replacement_inputs",
]

_NO_CONSTRUCTOR = "No constructor defined!"
_RELEASED = "Pattern handle has been released"
_EXPIRED = "MatchResult handle has expired"


def _graph_type() -> type[Graph]:
    from ge.graph.graph import Graph  # noqa: PLC0415  (import ge.passes stays cheap)

    return Graph


def _holder_type() -> type[TensorHolder]:
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415

    return TensorHolder


@dataclass(frozen=True)
class NodeIo:
    """An output position: output ``index`` of ``node``."""

    node: Node
    index: int = 0


# --- Pattern -----------------------------------------------------------------------------------
class Pattern:
    """A pattern graph (moved in from ``graph``) and the tensors captured from it, in order."""

    __slots__ = ("__weakref__", "_captures", "_compiled", "_graph")

    def __init__(self, graph: Graph) -> None:
        if not isinstance(graph, _graph_type()):
            raise GeError("Graph object must carry _handle")
        try:
            graph._nodes  # noqa: B018  (a moved graph raises here)
        except GraphError:
            raise GeError("Pattern graph handle is empty") from None
        self._graph: Graph | None = graph._move_out()
        self._captures: list[NodeIo] = []
        self._compiled: Any = None  # the matcher's preprocessed form, made on first match

    def _live_graph(self) -> Graph:
        if self._graph is None:
            raise GeError(_RELEASED)
        return self._graph

    def capture_tensor(self, source: Any, index: int | None = None) -> Pattern:
        """Capture a tensor of the pattern graph; ``source`` is a ``NodeIo``, a
        ``TensorHolder`` (its producer, output ``index or 0``) or a ``Node`` (``index or 0``).
        Returns ``self``, so calls chain."""
        graph = self._live_graph()
        node, port = _resolve_source(source, index)
        if node.graph is not graph:
            raise GeValueError(
                f"capture_tensor: node {node.name} is not in pattern graph "
                f"'{graph.name}'; capture a tensor of the graph given to Pattern()"
            )
        if not 0 <= port < len(node.users_by_port):
            raise GeValueError(
                f"capture_tensor: index must be an output of {node.name} "
                f"(0..{len(node.users_by_port) - 1}), got {port}"
            )
        self._captures.append(NodeIo(node, port))
        return self

    def get_captured_tensors(self) -> list[NodeIo]:
        """The captured tensors, in capture order."""
        self._live_graph()
        return list(self._captures)

    def is_valid(self) -> bool:
        return self._graph is not None

    def release(self) -> int:
        """Give up the pattern graph (at most once); returns its former handle (an ``id``)."""
        graph = self._live_graph()
        self._graph = None
        self._compiled = None
        return id(graph)

    def __repr__(self) -> str:
        if self._graph is None:
            return "<Pattern (released)>"
        return f"<Pattern {self._graph.name!r}: {len(self._captures)} captures>"


def _resolve_source(source: Any, index: int | None) -> tuple[Node, int]:
    """GE's rule (binding_utils.h): a NodeIo with ``index=None`` uses its own node and index;
    a TensorHolder its producer and ``index or 0``; anything else is a Node, ``index or 0``."""
    from ge.graph.node import Node  # noqa: PLC0415

    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise GeTypeError(f"capture_tensor: index must be an int or None, got {index!r}")
    if isinstance(source, NodeIo) and index is None:
        node: object = source.node
        port = source.index
    elif isinstance(source, _holder_type()):
        node, port = source._node, index or 0
    else:
        node, port = source, index or 0
    if not isinstance(node, Node):
        raise GeError("Node object must carry _handle")
    if node.graph is None:
        raise GeError("Node handle is empty")
    return node, port


def create_pattern(graph: Graph) -> Pattern:
    """``Pattern(graph)``: moves ``graph`` into a new pattern."""
    return Pattern(graph)


def ensure_pattern(value: object) -> Pattern:
    """A ``patterns()`` item as a ``Pattern``: a Pattern as is, a Graph wrapped (moved)."""
    if isinstance(value, Pattern):
        return value
    if isinstance(value, _graph_type()):
        return create_pattern(value)
    raise GeTypeError("PatternFusionPass.patterns must return Pattern or Graph objects")


# --- matcher configuration ---------------------------------------------------------------------
class PatternMatcherConfig:
    """What the matcher compares beyond op types and edges. Made by
    ``PatternMatcherConfigBuilder().build()``."""

    __slots__ = ("_const_value", "_ir_attr")

    def __init__(self) -> None:
        raise GeTypeError(_NO_CONSTRUCTOR)

    @classmethod
    def _create(cls, const_value: bool = False, ir_attr: bool = False) -> PatternMatcherConfig:
        config = cls.__new__(cls)
        config._const_value = const_value
        config._ir_attr = ir_attr
        return config

    _const_value: bool
    _ir_attr: bool

    def is_enable_const_value_match(self) -> bool:
        return self._const_value

    def is_enable_ir_attr_match(self) -> bool:
        return self._ir_attr

    def __repr__(self) -> str:
        return (
            f"PatternMatcherConfig(const_value_match={self._const_value}, "
            f"ir_attr_match={self._ir_attr})"
        )


class PatternMatcherConfigBuilder:
    """``PatternMatcherConfigBuilder().enable_const_value_match().build()``."""

    __slots__ = ("_const_value", "_ir_attr")

    def __init__(self) -> None:
        self._const_value = False
        self._ir_attr = False

    def enable_const_value_match(self) -> PatternMatcherConfigBuilder:
        self._const_value = True
        return self

    def enable_ir_attr_match(self) -> PatternMatcherConfigBuilder:
        self._ir_attr = True
        return self

    def build(self) -> PatternMatcherConfig:
        return PatternMatcherConfig._create(self._const_value, self._ir_attr)


# --- MatchResult -------------------------------------------------------------------------------
Anchor = tuple["Node", int]


class MatchResult:
    """One match of a pattern, valid only during the pass callback it is given to."""

    __slots__ = ("_captures", "_inputs_", "_nodes", "_outputs_", "_pattern_name", "_valid")

    def __init__(self) -> None:
        raise GeTypeError(_NO_CONSTRUCTOR)

    @classmethod
    def _create(
        cls,
        pattern_graph_name: str,
        matched_nodes: Sequence[Node],
        captures: Sequence[NodeIo],
        inputs: Sequence[Sequence[Anchor]],
        outputs: Sequence[Anchor],
    ) -> MatchResult:
        """``inputs[i]``: the matched nodes' input anchors ``(node, in_index)`` reading the
        tensor bound to pattern input ``i``; ``outputs[j]``: the graph output port
        ``(node, out_index)`` of pattern output ``j``; ``captures``: graph tensors in capture
        order."""
        result = cls.__new__(cls)
        result._pattern_name = pattern_graph_name
        result._nodes = list(matched_nodes)
        result._captures = list(captures)
        result._inputs_ = [list(anchors) for anchors in inputs]
        result._outputs_ = list(outputs)
        result._valid = True
        return result

    _pattern_name: str
    _nodes: list[Node]
    _captures: list[NodeIo]
    _inputs_: list[list[Anchor]]
    _outputs_: list[Anchor]
    _valid: bool

    def _check(self) -> None:
        if not self._valid:
            raise GeError(_EXPIRED)

    def _invalidate(self) -> None:
        self._valid = False

    def get_matched_nodes(self) -> list[Node]:
        """The graph nodes matched by the pattern's op nodes, in pattern-graph order."""
        self._check()
        return list(self._nodes)

    def get_captured_tensor(self, capture_index: int) -> NodeIo:
        """The graph tensor matched by the pattern's ``capture_index``-th capture."""
        self._check()
        if (
            isinstance(capture_index, bool)
            or not isinstance(capture_index, int)
            or not 0 <= capture_index < len(self._captures)
        ):
            raise GeError("Failed to get captured tensor from MatchResult")
        return self._captures[capture_index]

    def get_pattern_graph_name(self) -> str:
        self._check()
        return self._pattern_name

    def _inputs(self) -> list[list[Anchor]]:
        self._check()
        return [list(anchors) for anchors in self._inputs_]

    def _input_ports(self) -> list[Anchor]:
        """The graph output port feeding each pattern input, read now (an earlier rewrite may
        have replaced the producer a match first saw)."""
        self._check()
        ports: list[Anchor] = []
        for anchors in self._inputs_:
            node, in_index = anchors[0]
            edge = node.inputs[in_index]
            if edge is None:
                raise GeError(
                    f"MatchResult of '{self._pattern_name}': input {in_index} of "
                    f"{node.name} is no longer connected"
                )
            ports.append(edge)
        return ports

    def _outputs(self) -> list[Anchor]:
        self._check()
        return list(self._outputs_)

    def __str__(self) -> str:
        self._check()
        nodes = ", ".join(f"{n.name}({n.type})" for n in self._nodes)
        captures = ", ".join(f"{io.node.name}:{io.index}" for io in self._captures)
        return f"MatchResult(pattern={self._pattern_name}, nodes=[{nodes}], captures=[{captures}])"

    def __repr__(self) -> str:
        if not self._valid:
            return "<MatchResult (expired)>"
        return f"<{self}>"


# --- expression-style patterns -----------------------------------------------------------------
class PatternInputs:
    """The ``inputs`` of a ``@pattern`` method (or of an expression ``replacement``):
    ``inputs[i]`` makes builder inputs ``0..i`` on first use; ``inputs[a:b]`` a list.

    Decision: our builder infers every op as it is made, so an input gets the desc in
    ``descs`` (a replacement: the matched tensors') or else unknown rank (``[-2]``, dtype
    float), which every op accepts; a pattern compares no shapes. ``limit`` (replacements:
    the match's input count) bounds the indexes."""

    __slots__ = ("_builder", "_created", "_descs", "_limit")

    def __init__(
        self,
        builder: GraphBuilder,
        limit: int | None = None,
        descs: Sequence[TensorDesc] | None = None,
    ) -> None:
        self._builder = builder
        self._created: list[TensorHolder] = []
        self._limit = limit
        self._descs = list(descs) if descs is not None else None

    def _upto(self, stop: int) -> None:
        if self._limit is not None and stop > self._limit:
            raise GeValueError(
                f"inputs[{stop - 1}]: the match has {self._limit} inputs, so indexes "
                f"0..{self._limit - 1} exist"
            )
        while len(self._created) < stop:
            k = len(self._created)
            desc = self._descs[k] if self._descs is not None else None
            if desc is None:
                holder = self._builder.create_input(k, shape=[-2])
            else:
                holder = self._builder.create_input(
                    k,
                    shape=list(desc.get_shape()),
                    data_type=desc.get_data_type(),
                    format=desc.get_format(),
                )
            self._created.append(holder)

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            start, stop = _slice_bounds(key)
            if stop > start:
                self._upto(stop)
            return self._created[start:stop]
        if not isinstance(key, int):
            raise GeTypeError("PatternInputs index must be an integer or slice")
        if key < 0:
            raise GeValueError("PatternInputs index must be non-negative")
        self._upto(key + 1)
        return self._created[key]

    def _refuse(self) -> NoReturn:
        raise GeTypeError(
            "PatternInputs cannot be iterated because the input count is unknown; use inputs[:N]"
        )

    def __iter__(self) -> NoReturn:
        self._refuse()

    def __contains__(self, item: object) -> NoReturn:
        self._refuse()

    def _holders(self) -> list[TensorHolder]:
        """The inputs created so far, in index order."""
        return list(self._created)

    def __repr__(self) -> str:
        return f"<PatternInputs: {len(self._created)} created>"


def _slice_bounds(key: slice) -> tuple[int, int]:
    if key.step not in (None, 1):
        raise GeValueError("PatternInputs slice step must be 1")
    if key.stop is None:
        raise GeValueError("PatternInputs slice must provide a stop index, for example inputs[:3]")
    start = 0 if key.start is None else key.start
    stop = key.stop
    if not isinstance(start, int) or not isinstance(stop, int):
        raise GeTypeError("PatternInputs index must be an integer or slice")
    if start < 0 or stop < 0:
        raise GeValueError("PatternInputs slice indices must be non-negative")
    if stop < start:
        raise GeValueError("PatternInputs slice stop must be greater than or equal to start")
    return start, stop


def _is_pattern_like(value: object) -> bool:
    return isinstance(value, (Pattern, _graph_type()))


def _pattern_outputs(value: object) -> list[TensorHolder] | None:
    """The outputs a ``@pattern`` method returned, or ``None`` for a Pattern/Graph result."""
    if _is_pattern_like(value):
        return None
    if isinstance(value, (list, tuple)) and value and all(_is_pattern_like(v) for v in value):
        raise GeTypeError(
            "A @pattern method supports a single pattern only. For multiple patterns, declare "
            "several @pattern methods or use legacy patterns(self)."
        )
    outputs = holder_outputs(value)
    if outputs is None:
        raise GeTypeError(
            "Expression-style patterns must return a TensorHolder or a non-empty list/tuple of "
            "TensorHolder"
        )
    return outputs


def holder_outputs(value: object) -> list[TensorHolder] | None:
    """What an expression-style hook returned as a list of outputs: a TensorHolder, or a
    non-empty list/tuple of them; ``None`` for anything else."""
    holder = _holder_type()
    if isinstance(value, holder):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, holder) for v in value):
        return list(value)
    return None


def build_expression_pattern(pass_obj: object, method_name: str) -> Pattern:
    """Run ``@pattern`` method ``method_name`` of ``pass_obj`` in a fresh
    ``GraphBuilder("<Class>_<method>_pattern")`` and make its Pattern: the inputs it used are
    captured in index order, then the outputs in return order. A method returning a Pattern
    or Graph itself gets it back as a Pattern, without automatic captures."""
    from ge.es.graph_builder import GraphBuilder  # noqa: PLC0415

    builder = GraphBuilder(f"{type(pass_obj).__name__}_{method_name}_pattern")
    inputs = PatternInputs(builder)
    value = getattr(pass_obj, method_name)(inputs)
    outputs = _pattern_outputs(value)
    if outputs is None:
        return ensure_pattern(value)
    result = Pattern(builder.build_and_reset(outputs))
    for holder in (*inputs._holders(), *outputs):
        result.capture_tensor(holder)
    return result


def replacement_inputs(
    class_name: str, count: int, descs: Sequence[TensorDesc] | None = None
) -> tuple[GraphBuilder, PatternInputs]:
    """The builder ``"<Class>_replacement"`` and the lazy inputs (``count`` of them at most;
    input ``i`` with ``descs[i]`` when given, e.g. the descs of ``MatchResult._input_ports()``)
    an expression-style ``replacement`` builds in."""
    from ge.es.graph_builder import GraphBuilder  # noqa: PLC0415

    if descs is not None and len(descs) != count:
        raise GeValueError(f"descs: expected {count} input descs, got {len(descs)}")
    builder = GraphBuilder(f"{class_name}_replacement")
    return builder, PatternInputs(builder, count, descs)
