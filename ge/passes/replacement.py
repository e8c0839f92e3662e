"""Subgraph rewriting for graph passes: name a region by its boundary, put a copy of a replacement
graph in its place (``SubgraphRewriter.replace``), and infer a replacement's descs from what it
replaces (``infer_shape``). GE_REFERENCE.md §6 and GE_ERRORS.md §9.3-9.4.

A boundary has logical slots. Input slot ``i`` is a ``SubgraphInput``: the region's INPUT
anchors ``(inner node, input index)`` that all read one outside tensor (GE's seed calls the index
``out_index``; it is an input index of the inner node, as in GE's ``NodeIo`` for an input).
Output slot ``j`` is a ``SubgraphOutput``: one OUTPUT port ``(inner node, output index)`` whose
readers outside (and graph outputs) move to the replacement's output ``j``. The region is every
node reached backwards from the output ports without crossing an input anchor.

``replace`` copies the replacement in (it is never changed, so it can be used again): each node
but its ``Data`` inputs and ``NetOutput`` gets a name unique in the target graph (its own when
free, else ``<name>_1``, ``<name>_2``, …); readers of ``Data`` index ``i`` read the producer of
input slot ``i``; readers of output slot ``j`` read ``replacement.get_outputs()[j]`` (a
replacement without outputs set uses its ``NetOutput``'s inputs); the region is removed. Control
edges into (out of) the region from outside are inherited by the copied nodes that have no
producer (consumer) among the copies — a replacement of ``Data`` nodes only links them directly.

Everything is checked before the first edit, in this order; a failure returns its status and
leaves the graph exactly as it was:

======  ==========================  ============================================================
status  name                        the boundary or replacement …
======  ==========================  ============================================================
  1     ``EMPTY_BOUNDARY``          has no output slot: nothing to replace
  2     ``NOT_CONTIGUOUS``          input or output slots are not exactly 0..n-1
  3     ``BAD_REPLACEMENT``         is the target graph itself, holds subgraphs or a cycle, or
                                    links to nodes outside itself
  4     ``COUNT_MISMATCH``          replacement ``Data`` count or output count differs from the
                                    boundary's input or output slot count
  5     ``DATA_INDEX``              ``Data`` indexes are not 0..n-1, each once
  6     ``FOREIGN_ANCHOR``          anchors on removed nodes, or on nodes of different graphs
  7     ``BAD_ANCHOR``              an anchor index out of range, an unconnected input anchor, an
                                    empty ``SubgraphInput`` or unset ``SubgraphOutput``, an anchor
                                    given twice, or an input anchor on a node outside the region
  8     ``MIXED_INPUT``             one ``SubgraphInput`` whose anchors read different tensors
  9     ``GRAPH_INPUT_IN_REGION``   the region holds a graph input (``Data``): an input is missing
 10     ``LEAKED_TENSOR``           an inner tensor is read outside (or is a graph output) but is
                                    not an output slot
 11     ``CYCLE``                   the region fused into one node would make a cycle (a path
                                    leaves it and comes back, or it feeds its own input)
 12     ``FUSE_REFUSED``            (``context=`` only) ``can_fuse`` refuses the region
 13     ``REPORT_FAILED``           (``context=`` only) the context's pass name is empty
 14     ``BAD_SLOT``                (``add_input``/``add_output``) a negative or taken slot
======  ==========================  ============================================================

Decisions where GE's texts are silent:

* The cycle check is that of ``can_fuse`` (the region as one node), stricter than needed for a
  replacement that keeps independent parts apart; torch.fx and GE refuse the same regions.
* The replacement must have exactly one ``Data`` per input slot (an unused input still needs
  its ``Data``) and one output per output slot. Copies keep the replacement's descs: call
  ``infer_shape`` first where shapes matter. Replacement nodes with subgraphs are refused.
* Region nodes go as ``Graph.remove_nodes`` removes them: their subgraphs stay registered,
  unattached.
* GE's handle errors map onto our objects: a non-``Node`` anchor → ``RuntimeError("Node object
  must carry _handle")``, a removed one → ``"Node handle is empty"``; a non-``Graph``
  replacement → ``"Graph object must carry _handle"``, a moved one (``Pattern(graph)``) →
  ``"Graph handle is empty"``. Wrong argument kinds raise pybind11's ``TypeError``
  ("…(): incompatible function arguments").
* ``replace(..., context=ctx)`` checks ``can_fuse`` and the pass name before editing, so it too
  leaves the graph unchanged when it raises; on success it records the removed and added node
  names with ``ctx._record_fuse``. Its message is GE's text followed by ``": <reason>"``.
* ``rewrite`` (ours) is ``replace`` returning a ``RewriteOutcome`` (status, reason, removed and
  added names) for the pass runner; ``boundary_from_match`` makes a match's boundary.

    >>> import ge.es as es
    >>> b = es.GraphBuilder("g"); x = b.create_input(0, shape=[2])
    >>> g = b.build_and_reset([es.Neg(es.Neg(x))])
    >>> negs = [n for n in g.get_direct_nodes() if n.type == "Neg"]
    >>> r = es.GraphBuilder("r"); rg = r.build_and_reset([es.Abs(r.create_input(0, shape=[2]))])
    >>> boundary = SubgraphBoundary()
    >>> boundary.add_input(0, SubgraphInput([(negs[0], 0)]))
    0
    >>> boundary.add_output(0, SubgraphOutput(negs[1], 0))
    0
    >>> SubgraphRewriter.replace(boundary, rg), [n.type for n in g.get_direct_nodes()]
    (0, ['Data', 'NetOutput', 'Abs'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, overload

from ge.error import GeError, GeTypeError
from ge.es.graph_builder import InputType
from ge.graph._verify import topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.ops.registry import find_op
from ge.passes._infer_shape import infer_shape  # re-exported: GE-PY's helper, our own module
from ge.passes.fuse_inspector import (
    fuse_creates_cycle,
    fuse_problem,
    incompatible_arguments,
    is_context,
    record_fuse,
)

__all__ = [  # noqa: RUF022  (infer_shape last: re-exported)
    "RewriteOutcome",
    "RewriteStatus",
    "SubgraphBoundary",
    "SubgraphInput",
    "SubgraphOutput",
    "SubgraphRewriter",
    "boundary_from_match",
    "create_replacement",
    "node_boundary",
    "rewrite",
    "infer_shape",
]

Port = tuple[Node, int]

_INPUT_TYPES = frozenset(t.value for t in InputType)  # the graph-input ops a builder makes


class RewriteStatus(IntEnum):
    """Why a rewrite failed (see the module table); ``SUCCESS`` is 0."""

    SUCCESS = 0
    EMPTY_BOUNDARY = 1
    NOT_CONTIGUOUS = 2
    BAD_REPLACEMENT = 3
    COUNT_MISMATCH = 4
    DATA_INDEX = 5
    FOREIGN_ANCHOR = 6
    BAD_ANCHOR = 7
    MIXED_INPUT = 8
    GRAPH_INPUT_IN_REGION = 9
    LEAKED_TENSOR = 10
    CYCLE = 11
    FUSE_REFUSED = 12
    REPORT_FAILED = 13
    BAD_SLOT = 14


class _RefusedError(Exception):
    """A check failed: the status to return and what to tell the user."""

    def __init__(self, status: RewriteStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


# --- boundary descriptions ---------------------------------------------------------------------


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _live_node(node: object) -> Node:
    """GE's handle checks, on our nodes: not a Node, or removed from its graph."""
    if not isinstance(node, Node):
        raise GeError("Node object must carry _handle")
    if node.graph is None:
        raise GeError("Node handle is empty")
    return node


def _port_name(port: Port) -> str:
    return f"{port[0].name}:{port[1]}"


class SubgraphInput:
    """One input slot of a region: its input anchors ``(node, input index)`` that read the same
    outside tensor. ``SubgraphInput()`` or ``SubgraphInput([(node, index), …])``."""

    __slots__ = ("_anchors",)

    def __init__(self, inputs: Iterable[tuple[Node, int]] | None = None) -> None:
        self._anchors: list[Port] = []
        if inputs is None:
            return
        if not isinstance(inputs, Iterable):
            raise GeTypeError(
                "__init__(): incompatible constructor arguments. The following argument types "
                "are supported:\n    1. SubgraphInput()\n    2. SubgraphInput(inputs: "
                f"Iterable[tuple[ge.graph.Node, int]])\n\nInvoked with: {inputs!r}"
            )
        for item in inputs:
            if not (isinstance(item, (tuple, list)) and len(item) == 2 and _is_index(item[1])):
                raise GeError("SubgraphInput expects iterable of (node, index)")
            self._anchors.append((_live_node(item[0]), item[1]))

    def add_input(self, node: Node, index: int) -> int:
        """Add the input anchor ``(node, index)``; returns 0."""
        if not _is_index(index):
            raise incompatible_arguments(
                "add_input", "(self: SubgraphInput, node: ge.graph.Node, index: int) -> int",
                node, index,
            )  # fmt: skip
        self._anchors.append((_live_node(node), index))
        return 0

    @property
    def anchors(self) -> list[Port]:
        """The input anchors, in the order given (ours)."""
        return list(self._anchors)

    def __repr__(self) -> str:
        return f"SubgraphInput([{', '.join(_port_name(a) for a in self._anchors)}])"


class SubgraphOutput:
    """One output slot of a region: an output port ``(node, output index)``.
    ``SubgraphOutput()`` or ``SubgraphOutput(node, index)``."""

    __slots__ = ("_port",)

    def __init__(self, node: Node | None = None, index: int | None = None) -> None:
        self._port: Port | None = None
        if node is None and index is None:
            return
        if not _is_index(index):
            raise GeTypeError(
                "__init__(): incompatible constructor arguments. The following argument types "
                "are supported:\n    1. SubgraphOutput()\n    2. SubgraphOutput(node: "
                f"ge.graph.Node, index: int)\n\nInvoked with: {node!r}, {index!r}"
            )
        self.set_output(node, index)  # type: ignore[arg-type]  # _live_node checks it

    def set_output(self, node: Node, index: int) -> int:
        """Make ``(node, index)`` the output port; returns 0."""
        if not _is_index(index):
            raise incompatible_arguments(
                "set_output", "(self: SubgraphOutput, node: ge.graph.Node, index: int) -> int",
                node, index,
            )  # fmt: skip
        self._port = (_live_node(node), index)
        return 0

    @property
    def anchor(self) -> Port | None:
        """The output port, ``None`` until set (ours)."""
        return self._port

    def __repr__(self) -> str:
        return f"SubgraphOutput({'' if self._port is None else _port_name(self._port)})"


class SubgraphBoundary:
    """The input and output slots of a region. Slots are copied when bound, and must be
    0..n-1 when the boundary is used."""

    __slots__ = ("_inputs", "_outputs")

    def __init__(self) -> None:
        self._inputs: dict[int, list[Port]] = {}
        self._outputs: dict[int, Port | None] = {}

    def add_input(self, index: int, input: SubgraphInput) -> int:
        """Bind input slot ``index``; returns 0, or ``BAD_SLOT`` for a negative or taken slot."""
        if not _is_index(index) or not isinstance(input, SubgraphInput):
            raise incompatible_arguments(
                "add_input", "(self: SubgraphBoundary, index: int, input: SubgraphInput) -> int",
                index, input,
            )  # fmt: skip
        if index < 0 or index in self._inputs:
            return RewriteStatus.BAD_SLOT
        self._inputs[index] = input.anchors
        return 0

    def add_output(self, index: int, output: SubgraphOutput) -> int:
        """Bind output slot ``index``; returns 0, or ``BAD_SLOT`` for a negative or taken slot."""
        if not _is_index(index) or not isinstance(output, SubgraphOutput):
            raise incompatible_arguments(
                "add_output",
                "(self: SubgraphBoundary, index: int, output: SubgraphOutput) -> int",
                index, output,
            )  # fmt: skip
        if index < 0 or index in self._outputs:
            return RewriteStatus.BAD_SLOT
        self._outputs[index] = output.anchor
        return 0

    @property
    def inputs(self) -> dict[int, list[Port]]:
        """Input slot -> its anchors (ours)."""
        return {i: list(a) for i, a in sorted(self._inputs.items())}

    @property
    def outputs(self) -> dict[int, Port | None]:
        """Output slot -> its port, ``None`` if unset (ours)."""
        return dict(sorted(self._outputs.items()))

    def __repr__(self) -> str:
        inputs = {i: [_port_name(a) for a in anchors] for i, anchors in self.inputs.items()}
        outputs = {j: p and _port_name(p) for j, p in self.outputs.items()}
        return f"SubgraphBoundary(inputs={inputs}, outputs={outputs})"


def boundary_from_match(match: Any) -> SubgraphBoundary:
    """The boundary of a match (``_inputs()`` and ``_outputs()`` of a ``MatchResult`` or a
    matcher's match): input slot i reads pattern input i, output slot j is pattern output j."""
    boundary = SubgraphBoundary()
    for i, anchors in enumerate(match._inputs()):
        boundary.add_input(i, SubgraphInput(anchors))
    for j, (node, index) in enumerate(match._outputs()):
        boundary.add_output(j, SubgraphOutput(node, index))
    return boundary


def node_boundary(node: Node) -> SubgraphBoundary:
    """The boundary of one node: input slot i is its i-th connected input (in port order),
    output slot j its output j — how a decomposed node's replacement lines up."""
    boundary = SubgraphBoundary()
    slot = 0
    for port, producer in enumerate(node.inputs):
        if producer is not None:
            boundary.add_input(slot, SubgraphInput([(node, port)]))
            slot += 1
    for port in range(len(node.output_descs)):
        boundary.add_output(port, SubgraphOutput(node, port))
    return boundary


# --- the plan: everything checked, nothing changed ---------------------------------------------


def _is_graph_input(node: Node) -> bool:
    return node.type in _INPUT_TYPES


def _is_net_output(node: Node) -> bool:
    op = find_op(node.type)
    return op is not None and op.io == "output"


def _data_index(node: Node) -> int:
    value = node.get_attr("index") if node.has_attr("index") else 0
    return value if _is_index(value) else -1


@dataclass(frozen=True)
class _Replacement:
    """A replacement graph read once: the nodes to copy (producers first), its inputs by slot
    and its outputs."""

    copied: list[Node]
    data_slot: dict[Node, int]
    outputs: list[Port]


@dataclass(frozen=True)
class _Plan:
    graph: Graph
    region: list[Node]  # in the graph's node order
    producers: list[Port]  # per input slot: the outside tensor it reads
    outputs: list[Port]  # per output slot: the region port it replaces
    replacement: _Replacement
    names: dict[Node, str]  # replacement node -> its name in the graph


def _slots(mapping: Mapping[int, Any], what: str) -> list[Any]:
    if sorted(mapping) != list(range(len(mapping))):
        raise _RefusedError(
            RewriteStatus.NOT_CONTIGUOUS,
            f"{what} slots are {sorted(mapping)}; they must be 0..{len(mapping) - 1}",
        )
    return [mapping[i] for i in range(len(mapping))]


def _replacement_outputs(replacement: Graph, nodes: list[Node]) -> list[Port]:
    outputs = replacement.get_outputs()
    if outputs:
        return outputs
    sinks = [n for n in nodes if _is_net_output(n)]
    if len(sinks) != 1:
        return []
    return [e for e in sinks[0].inputs if e is not None]


def _read_replacement(replacement: Graph, anchors: list[Node]) -> _Replacement:
    if any(n.graph is replacement for n in anchors):
        raise _RefusedError(RewriteStatus.BAD_REPLACEMENT, "the replacement is the target graph")
    nodes = replacement.get_direct_nodes()
    order, cyclic = topological_order(replacement)
    bad = ""
    if cyclic:
        bad = f"it has a cycle through {cyclic[0].name}"
    elif any(n.get_subgraph_names() for n in nodes):
        bad = "a node has subgraphs, which a rewrite does not copy"
    else:
        outside = [
            n.name
            for n in nodes
            for e in n.inputs
            if e is not None and e[0].graph is not replacement
        ]
        bad = f"node {outside[0]} reads a node of another graph" if outside else ""
    if bad:
        raise _RefusedError(RewriteStatus.BAD_REPLACEMENT, f"bad replacement graph: {bad}")
    data = {n: _data_index(n) for n in order if _is_graph_input(n)}
    copied = [n for n in order if n not in data and not _is_net_output(n)]
    return _Replacement(copied, data, _replacement_outputs(replacement, nodes))


def _check_counts(rep: _Replacement, inputs: int, outputs: int) -> None:
    if len(rep.data_slot) != inputs or len(rep.outputs) != outputs:
        raise _RefusedError(
            RewriteStatus.COUNT_MISMATCH,
            f"the replacement has {len(rep.data_slot)} inputs and {len(rep.outputs)} outputs; "
            f"the boundary has {inputs} and {outputs}",
        )
    if sorted(rep.data_slot.values()) != list(range(inputs)):
        raise _RefusedError(
            RewriteStatus.DATA_INDEX,
            f"the replacement's Data indexes are {sorted(rep.data_slot.values())}; "
            f"they must be 0..{inputs - 1}, each once",
        )


def _target_graph(inputs: list[list[Port]], outputs: list[Port | None]) -> Graph:
    nodes = [n for anchors in inputs for n, _ in anchors]
    nodes += [p[0] for p in outputs if p is not None]
    graphs = {id(n.graph): n.graph for n in nodes}
    removed = [n.name for n in nodes if n.graph is None]
    if removed or len(graphs) != 1:
        why = f"node {removed[0]} was removed" if removed else "they are in different graphs"
        raise _RefusedError(RewriteStatus.FOREIGN_ANCHOR, f"bad boundary anchors: {why}")
    graph = next(iter(graphs.values()))
    assert graph is not None
    return graph


def _bad_anchor(reason: str) -> _RefusedError:
    return _RefusedError(RewriteStatus.BAD_ANCHOR, f"bad boundary anchor: {reason}")


def _check_outputs(outputs: list[Port | None]) -> list[Port]:
    ports: list[Port] = []
    for j, port in enumerate(outputs):
        if port is None:
            raise _bad_anchor(f"output slot {j} was never set")
        node, index = port
        if not 0 <= index < node.get_outputs_size():
            raise _bad_anchor(f"{node.name} has {node.get_outputs_size()} outputs, not {index}")
        if port in ports:
            raise _bad_anchor(f"output {_port_name(port)} is given twice")
        ports.append(port)
    return ports


def _input_producers(inputs: list[list[Port]]) -> list[Port]:
    """Per input slot, the one tensor its anchors read."""
    seen: set[Port] = set()
    producers: list[Port] = []
    for i, anchors in enumerate(inputs):
        if not anchors:
            raise _bad_anchor(f"input slot {i} has no anchors")
        read: dict[Port, None] = {}
        for node, index in anchors:
            if not 0 <= index < node.get_inputs_size():
                raise _bad_anchor(f"{node.name} has {node.get_inputs_size()} inputs, not {index}")
            edge = node.inputs[index]
            if edge is None:
                raise _bad_anchor(f"input {index} of {node.name} is not connected")
            if (node, index) in seen:
                raise _bad_anchor(f"input anchor {node.name}:{index} is given twice")
            seen.add((node, index))
            read[edge] = None
        if len(read) > 1:
            raise _RefusedError(
                RewriteStatus.MIXED_INPUT,
                f"input slot {i} reads several tensors: {', '.join(map(_port_name, read))}",
            )
        producers.append(next(iter(read)))
    return producers


def _region(graph: Graph, inputs: list[list[Port]], outputs: list[Port]) -> list[Node]:
    """The nodes reached backwards from ``outputs`` without crossing an input anchor."""
    stops = {anchor for anchors in inputs for anchor in anchors}
    found: set[Node] = set()
    stack = [node for node, _ in outputs]
    while stack:
        node = stack.pop()
        if node in found:
            continue
        found.add(node)
        for port, edge in enumerate(node.inputs):
            if edge is not None and (node, port) not in stops:
                stack.append(edge[0])
    region = [n for n in graph.get_direct_nodes() if n in found]
    for node in region:
        if _is_graph_input(node):
            raise _RefusedError(
                RewriteStatus.GRAPH_INPUT_IN_REGION,
                f"the region reaches graph input {node.name}: an input anchor is missing",
            )
    for node, index in stops:
        if node not in found:
            raise _bad_anchor(f"input anchor {node.name}:{index} is outside the region")
    return region


def _check_leaks(graph: Graph, region: list[Node], outputs: list[Port]) -> None:
    members = set(region)
    exported = set(outputs)
    graph_outputs = set(graph.get_outputs())
    for node in region:
        for port, consumers in enumerate(node.users_by_port):
            if (node, port) in exported:
                continue
            readers = [d.name for d, _ in consumers if d not in members]
            if (node, port) in graph_outputs:
                readers.append("the graph outputs")
            if readers:
                raise _RefusedError(
                    RewriteStatus.LEAKED_TENSOR,
                    f"{node.name}:{port} is read by {readers[0]} outside the region but is "
                    f"not an output slot",
                )


def _check_cycle(region: list[Node], producers: list[Port]) -> None:
    members = set(region)
    inner = [p for p in producers if p[0] in members]
    if inner:
        raise _RefusedError(
            RewriteStatus.CYCLE, f"the region feeds its own input {_port_name(inner[0])}"
        )
    if fuse_creates_cycle(region):
        raise _RefusedError(RewriteStatus.CYCLE, "the replacement would create a cycle")


def _fresh_names(graph: Graph, copied: list[Node]) -> dict[Node, str]:
    taken = {n.name for n in graph.get_direct_nodes()}
    names: dict[Node, str] = {}
    for node in copied:
        name, k = node.name, 0
        while name in taken:
            k += 1
            name = f"{node.name}_{k}"
        taken.add(name)
        names[node] = name
    return names


def _plan(boundary: SubgraphBoundary, replacement: Graph) -> _Plan:
    """Check everything ``replace`` needs, in the module table's order."""
    if not boundary._outputs:
        raise _RefusedError(RewriteStatus.EMPTY_BOUNDARY, "the boundary has no output slot")
    inputs: list[list[Port]] = _slots(boundary._inputs, "input")
    raw_outputs: list[Port | None] = _slots(boundary._outputs, "output")
    rep = _read_replacement(replacement, [p[0] for p in raw_outputs if p is not None])
    _check_counts(rep, len(inputs), len(raw_outputs))
    graph = _target_graph(inputs, raw_outputs)
    outputs = _check_outputs(raw_outputs)
    producers = _input_producers(inputs)
    region = _region(graph, inputs, outputs)
    _check_leaks(graph, region, outputs)
    _check_cycle(region, producers)
    return _Plan(graph, region, producers, outputs, rep, _fresh_names(graph, rep.copied))


# --- applying a plan ---------------------------------------------------------------------------


def _copy_node(graph: Graph, node: Node, name: str) -> Node:
    copy = graph.add_node(
        node.type,
        name,
        num_inputs=node.get_inputs_size(),
        num_outputs=node.get_outputs_size(),
        input_names=node.get_input_names(),
        output_names=node.get_output_names(),
    )
    for key, stored in node.attr_values.items():
        copy.set_attr(key, stored.to_python(), stored.type)
    for i in range(node.get_inputs_size()):
        copy.update_input_desc(i, node.get_input_desc(i))
    for i in range(node.get_outputs_size()):
        copy.update_output_desc(i, node.get_output_desc(i))
    return copy


def _copy_in(plan: _Plan) -> dict[Node, Node]:
    """Add the copies with their data and control links; on any error remove them again."""
    graph, rep = plan.graph, plan.replacement
    copies: dict[Node, Node] = {}
    try:
        for node in rep.copied:
            copies[node] = _copy_node(graph, node, plan.names[node])
        for node in rep.copied:
            for port, edge in enumerate(node.inputs):
                if edge is not None:
                    src, src_port = _source(plan, copies, edge)
                    graph.add_data_edge(src, src_port, copies[node], port)
            for pred in node.control_inputs:
                if pred in copies:
                    graph.add_control_edge(copies[pred], copies[node])
    except BaseException:  # even a bug's error leaves the graph as it was
        graph.remove_nodes(copies.values())
        raise
    return copies


def _source(plan: _Plan, copies: dict[Node, Node], port: Port) -> Port:
    """What a replacement port becomes in the graph: an input slot's producer or a copy's port."""
    node, index = port
    slot = plan.replacement.data_slot.get(node)
    return plan.producers[slot] if slot is not None else (copies[node], index)


def _rewire_outputs(plan: _Plan, copies: dict[Node, Node]) -> None:
    graph, members = plan.graph, set(plan.region)
    moved: dict[Port, Port] = {}
    for old, rep_port in zip(plan.outputs, plan.replacement.outputs, strict=True):
        new = _source(plan, copies, rep_port)
        moved[old] = new
        for dst, dst_port in old[0].get_out_data_nodes_and_port_indexes(old[1]):
            if dst not in members:
                graph.remove_edge(old[0], old[1], dst, dst_port)
                graph.add_data_edge(new[0], new[1], dst, dst_port)
    outputs = graph.get_outputs()
    if any(p in moved for p in outputs):
        graph.set_outputs([moved.get(p, p) for p in outputs])


def _inherit_control(plan: _Plan, copies: dict[Node, Node]) -> None:
    """Outside control predecessors (successors) of the region come before (after) the copies
    that have no producer (consumer) among the copies; with no copies they link directly."""
    graph, members = plan.graph, set(plan.region)
    preds = dict.fromkeys(p for m in plan.region for p in m.control_inputs if p not in members)
    succs = dict.fromkeys(s for m in plan.region for s in m.control_outputs if s not in members)
    if not preds and not succs:
        return
    ordered = list(copies.values())
    made = set(ordered)
    roots = [n for n in ordered if not any(p in made for p in _predecessors(n))]
    leaves = [n for n in ordered if not any(s in made for s in _successors(n))]
    for pred in preds:
        for node in roots if made else succs:
            graph.add_control_edge(pred, node)
    for node in leaves:
        for succ in succs:
            graph.add_control_edge(node, succ)


def _predecessors(node: Node) -> list[Node]:
    return [e[0] for e in node.inputs if e is not None] + list(node.control_inputs)


def _successors(node: Node) -> list[Node]:
    return [d for consumers in node.users_by_port for d, _ in consumers] + list(
        node.control_outputs
    )


def _apply(plan: _Plan) -> list[Node]:
    copies = _copy_in(plan)
    _rewire_outputs(plan, copies)
    _inherit_control(plan, copies)
    plan.graph.remove_nodes(plan.region)
    return list(copies.values())


# --- the rewriter ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RewriteOutcome:
    """What one rewrite did (ours, for the pass runner): the status, why it failed, and the
    names of the nodes removed and added."""

    status: RewriteStatus
    reason: str = ""
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()


_REPLACE_SIGNATURE = (
    "(boundary: SubgraphBoundary, replacement: ge.graph.Graph, *, "
    "context: PassContext | None = None) -> int | None"
)


def _live_graph(graph: object) -> Graph:
    """GE's handle checks, on our graphs: not a Graph, or one moved away (its methods fail)."""
    if not isinstance(graph, Graph):
        raise GeError("Graph object must carry _handle")
    try:
        graph.get_direct_nodes()
        graph.get_outputs()
    except Exception:
        raise GeError("Graph handle is empty") from None
    return graph


def rewrite(boundary: SubgraphBoundary, replacement: Graph, context: Any = None) -> RewriteOutcome:
    """``SubgraphRewriter.replace`` returning what it did instead of a bare status (ours). With
    a ``context`` the region must also pass ``can_fuse`` and the context needs a pass name."""
    if not isinstance(boundary, SubgraphBoundary):
        raise incompatible_arguments("replace", _REPLACE_SIGNATURE, boundary, replacement)
    replacement = _live_graph(replacement)
    if context is not None and not is_context(context):
        raise incompatible_arguments("replace", _REPLACE_SIGNATURE, boundary, replacement, context)
    try:
        plan = _plan(boundary, replacement)
        if context is not None:
            problem = fuse_problem(plan.region)
            if problem:
                raise _RefusedError(RewriteStatus.FUSE_REFUSED, f"can_fuse: {problem}")
            if not context.get_pass_name():
                raise _RefusedError(RewriteStatus.REPORT_FAILED, "the context's pass name is empty")
    except _RefusedError as refused:
        return RewriteOutcome(refused.status, refused.reason)
    removed = tuple(n.name for n in plan.region)
    added = tuple(n.name for n in _apply(plan))
    return RewriteOutcome(RewriteStatus.SUCCESS, "", removed, added)


class SubgraphRewriter:
    """Replaces a region, given by its ``SubgraphBoundary``, by a copy of a replacement graph."""

    @overload
    @staticmethod
    def replace(boundary: SubgraphBoundary, replacement: Graph) -> int: ...

    @overload
    @staticmethod
    def replace(boundary: SubgraphBoundary, replacement: Graph, *, context: Any) -> None: ...

    @staticmethod
    def replace(
        boundary: SubgraphBoundary, replacement: Graph, *, context: Any = None
    ) -> int | None:
        """Replace the region; returns 0 or a ``RewriteStatus`` (graph unchanged). With
        ``context=`` it also checks ``can_fuse`` on the region and reports the rewrite on the
        context; it returns ``None`` or raises ``RuntimeError`` (the message also stored with
        ``context.set_error_message``)."""
        outcome = rewrite(boundary, replacement, context)
        if context is None:
            return int(outcome.status)
        if outcome.status:
            message = (
                f"SubgraphRewriter::Replace with context failed, "
                f"pass_name={context.get_pass_name()}, status={int(outcome.status)}: "
                f"{outcome.reason}"
            )
            context.set_error_message(message)
            raise GeError(message)
        record_fuse(context, outcome.removed, outcome.added)
        return None


def create_replacement(graph: Graph) -> Graph:
    """``graph`` itself, once checked to be a ``Graph`` (GE-PY's helper for typed hooks)."""
    if not isinstance(graph, Graph):
        raise GeTypeError("replacement graph must be a ge.graph.Graph")
    return graph
