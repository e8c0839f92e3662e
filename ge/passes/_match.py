"""The pattern matcher: where a ``Pattern`` occurs in one level of a graph.

``find_matches(graph, pattern, config)`` returns non-overlapping ``Match``es in topological
order; ``explain_match`` says why a pattern does not match (the candidate that got furthest
and its first mismatch). The rules (GE_REFERENCE.md §6, "Matching semantics"):

* pattern op nodes match graph nodes of the same op type, with the same data edges, output
  port to input port; every input port is connected in both or in neither, and the port counts
  are equal ("exactly the real node's input count"); the output ports the pattern uses exist;
* pattern inputs (``Data``-like nodes) are wildcards for any tensor produced outside the match;
  one pattern input read twice binds to one graph tensor;
* every tensor of a matched node that is used outside the match (by another node or as a graph
  output) must be a pattern output;
* a match is skipped when replacing its nodes by one node would make a cycle: a path leaving
  the match and coming back into it through outside nodes (control edges count here, as a
  replacement inherits them);
* Const values (``enable_const_value_match``) and IR attributes (``enable_ir_attr_match``:
  the op's registered attributes, defaults filled in, never ``_``-prefixed private ones, and
  not a Const's ``value``, which is the first switch's business) are compared only when
  enabled; control edges are otherwise ignored, and subgraphs are not entered.

How it stays near-linear: one pass indexes the graph's nodes by op type; the search is
anchored at the pattern node whose type is rarest in the graph and grows along edges (the
producer of a known node's input, a consumer of its output, or another reader of a bound
pattern input), backtracking on mismatch. Each check first compares the op type and the
consumer counts of unexported outputs, which reject most candidates at once. Topological
positions are computed only once a candidate passes every structural check, and a cycle
walk visits only nodes whose position lies between the match's first and last node.
The pattern's preprocessed form and the search order are ``ge.passes._pattern_plan``'s.
Measured (``benchmarks/pass_matching.py``): 10k nodes x 20 patterns, 8k matches, in 0.19 s
(18.5 µs per node for all 20 patterns).

Matches are taken greedily, anchor candidates in graph order, so of two overlapping
occurrences the one whose anchor node comes first wins. Every match is acyclic with the
earlier matches of the same call replaced too: a pattern with one output whose nodes all lead
to it cannot close a cycle through another match that the individual check misses; for other
patterns the walk treats earlier matches as single nodes.

    >>> from ge.es import GraphBuilder
    >>> import ge.es as es
    >>> from ge.passes.pattern import Pattern
    >>> b = GraphBuilder("p")
    >>> p = Pattern(b.build_and_reset([es.Relu(es.Abs(b.create_input(0)))]))
    >>> g = GraphBuilder("g")
    >>> x = g.create_input(0)
    >>> graph = g.build_and_reset([es.Relu(es.Abs(x)) + es.Relu(es.Abs(x))])
    >>> [[n.name for n in m.nodes] for m in find_matches(graph, p, None)]
    [['Abs_0', 'Relu_1'], ['Abs_2', 'Relu_3']]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ge.error import GeTypeError
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.passes._pattern_plan import (
    OP,
    CompiledPattern,
    PatternOp,
    Step,
    compiled_pattern,
    search_plan,
)
from ge.passes.pattern import MatchResult, NodeIo, Pattern, PatternMatcherConfig

__all__ = ["Match", "explain_match", "find_matches"]

Port = tuple[Node, int]


# Mismatch codes, in check order (explain_match turns them into sentences).
_TYPE = "op type"
_INPUTS = "input count"
_OUTPUTS = "output count"
_EDGE = "edge"
_SAME_INPUT = "same input"
_EXTERNAL = "external use"
_CONST = "const value"
_ATTR = "attr"
_INNER_INPUT = "input produced inside"
_CYCLE = "cycle"
_TAKEN = "taken"
_MISSING = "no candidate"


# --- matches -----------------------------------------------------------------------------------
class Match:
    """One occurrence of a pattern: ``nodes[i]`` matched pattern op ``i`` (pattern-graph
    order), ``bound[w]`` is the graph tensor bound to pattern input ``w``."""

    __slots__ = ("_compiled", "_config", "bound", "graph", "nodes")

    def __init__(
        self,
        graph: Graph,
        compiled: CompiledPattern,
        config: PatternMatcherConfig | None,
        nodes: list[Node],
        bound: list[Port],
    ) -> None:
        self.graph = graph
        self._compiled = compiled
        self._config = config
        self.nodes = nodes
        self.bound = bound

    @property
    def pattern_graph_name(self) -> str:
        return self._compiled.name

    def inputs(self) -> list[list[Port]]:
        """Per pattern input, the matched nodes' input anchors ``(node, in_index)`` reading it."""
        return [[(self.nodes[op], k) for op, k in r] for r in self._compiled.readers]

    def outputs(self) -> list[Port]:
        """Per pattern output, the matched graph output port ``(node, out_index)``."""
        return [(self.nodes[op], p) for op, p in self._compiled.outputs]

    def captures(self, pattern: Pattern) -> list[NodeIo]:
        """``pattern``'s captures as graph tensors, in capture order."""
        found = []
        for io in pattern.get_captured_tensors():
            kind, at = self._compiled.roles[io.node]
            if kind == OP:
                found.append(NodeIo(self.nodes[at], io.index))
            else:
                node, k = self.inputs()[at][0]
                edge = node.inputs[k]
                found.append(NodeIo(*(edge if edge is not None else self.bound[at])))
        return found

    def result(self, pattern: Pattern) -> MatchResult:
        """The ``MatchResult`` a pass callback sees."""
        return MatchResult._create(
            self._compiled.name, self.nodes, self.captures(pattern), self.inputs(), self.outputs()
        )

    def still_valid(self) -> bool:
        """Whether the match still holds in the graph as it is now: every node still there
        with the same inner edges, every input still read from outside, one tensor per
        pattern input, and no inner tensor used outside. (Producers of the inputs may have
        been replaced by an earlier rewrite; that is fine.)"""
        if any(n.graph is not self.graph for n in self.nodes):
            return False
        search = _Search(self.graph, self._compiled, self._config, set())
        search.assign = list(self.nodes)
        search.used = set(self.nodes)
        for i, node in enumerate(self.nodes):
            if search.check(i, node, []) is not None:
                return False
        return search.inner_input() is None

    def __repr__(self) -> str:
        names = ", ".join(n.name for n in self.nodes)
        return f"<Match {self._compiled.name}: {names}>"


# --- the search --------------------------------------------------------------------------------
@dataclass(slots=True)
class _Failure:
    depth: int
    code: str
    op: int
    node: Node | None
    assigned: list[Node | None]
    detail: str = ""


class _Search:
    """State of one ``find_matches`` call."""

    __slots__ = (
        "assign",
        "best",
        "bind",
        "by_type",
        "claimed",
        "compiled",
        "config",
        "const",
        "detail",
        "graph",
        "graph_outs",
        "group_of",
        "groups",
        "ir",
        "positions",
        "tracking",
        "used",
    )

    def __init__(
        self,
        graph: Graph,
        compiled: CompiledPattern,
        config: PatternMatcherConfig | None,
        claimed: set[Node],
        *,
        tracking: bool = False,
    ) -> None:
        self.graph = graph
        self.compiled = compiled
        self.config = config
        self.const = config is not None and config.is_enable_const_value_match()
        self.ir = config is not None and config.is_enable_ir_attr_match()
        self.claimed = claimed
        self.assign: list[Node | None] = [None] * len(compiled.ops)
        self.used: set[Node] = set()
        self.bind: list[Port | None] = [None] * len(compiled.readers)
        self.graph_outs: set[Port] = set(graph._outputs)
        self.positions: dict[Node, int] | None = None
        self.groups: list[tuple[int, int, list[Node]]] = []
        self.group_of: dict[Node, int] = {}
        self.by_type: dict[str, list[Node]] = {}
        self.tracking = tracking
        self.best: _Failure | None = None
        self.detail = ""

    # -- one candidate ------------------------------------------------------------------------
    def check(self, i: int, node: Node, bound_now: list[int]) -> str | None:
        """``None`` if ``node`` fits pattern op ``i`` given what is assigned so far (binding
        pattern inputs it reads first, noted in ``bound_now``), else the mismatch code."""
        op = self.compiled.ops[i]
        if node.type != op.type:
            return _TYPE
        edges = node.inputs
        if len(edges) != len(op.ins):
            return _INPUTS
        outs = node.users_by_port
        if len(outs) < op.n_out_used:
            return _OUTPUTS
        code = self._check_inputs(op, edges, bound_now)
        if code is not None:
            return code
        code = self._check_outputs(op, node, outs)
        if code is not None:
            return code
        if self.const and op.const is not None and node.attr_value("value") != op.const:
            return _CONST
        if self.ir:
            return self._check_attrs(op, node)
        return None

    def _check_inputs(
        self, op: PatternOp, edges: Sequence[Port | None], bound_now: list[int]
    ) -> str | None:
        assign = self.assign
        for k, spec in enumerate(op.ins):
            edge = edges[k]
            if spec is None or edge is None:
                if spec is not None or edge is not None:
                    return _INPUTS
                continue
            kind, at, port = spec
            if kind == OP:
                known = assign[at]
                if known is not None and (edge[0] is not known or edge[1] != port):
                    return _EDGE
                continue
            bound = self.bind[at]
            if bound is None:
                self.bind[at] = edge
                bound_now.append(at)
            elif bound[0] is not edge[0] or bound[1] != edge[1]:
                return _SAME_INPUT
        return None

    def _check_outputs(
        self, op: PatternOp, node: Node, outs: Sequence[Sequence[Port]]
    ) -> str | None:
        assign = self.assign
        pattern_outs = op.outs
        for p, consumers in enumerate(outs):
            expected = pattern_outs[p] if p < len(pattern_outs) else ()
            for consumer, k in expected:
                known = assign[consumer]
                if known is not None:
                    edge = known.inputs[k]
                    if edge is None or edge[0] is not node or edge[1] != p:
                        return _EDGE
            if p in op.exported:
                continue
            if len(consumers) != len(expected) or (
                self.graph_outs and (node, p) in self.graph_outs
            ):
                if self.tracking:
                    self.detail = f"output {p}"
                return _EXTERNAL
        return None

    def _check_attrs(self, op: PatternOp, node: Node) -> str | None:
        for name, default, value in op.ir_attrs:
            if node.attr_values.get(name, default) != value:
                if self.tracking:
                    self.detail = name
                return _ATTR
        return None

    # -- whole matches ------------------------------------------------------------------------
    def inner_input(self) -> str | None:
        """A pattern input must be a tensor made outside the match."""
        for bound in self.bind:
            if bound is not None and bound[0] in self.used:
                return _INNER_INPUT
        return None

    def _positions(self) -> dict[Node, int]:
        if self.positions is None:
            self.positions = _topological_positions(self.graph)
        return self.positions

    def makes_cycle(self) -> bool:
        """Whether some path leaves the match and comes back into it. Only nodes placed
        before the match's last node can lie on one; earlier matches (when the pattern is not
        single-exit) count as one node each, their span joined to the window."""
        pos = self._positions()
        used = self.used
        low = min(pos[n] for n in used)
        high = max(pos[n] for n in used)
        contract = not self.compiled.single_exit and self.groups
        if contract:
            low, high = self._widen(low, high)
        seen: set[Node] = set()
        stack: list[Node] = []
        expanded: set[int] = set()
        far = high + 1

        def visit(sources: Iterable[Node]) -> bool:
            for src in sources:
                for succ in _successors(src):
                    if succ in used:
                        if src not in used:
                            return True
                        continue
                    if succ not in seen and pos.get(succ, far) <= high:
                        seen.add(succ)
                        stack.append(succ)
            return False

        if visit(used):
            return True
        while stack:
            node = stack.pop()
            members: Iterable[Node] = (node,)
            group = self.group_of.get(node) if contract else None
            if group is not None and group not in expanded:
                expanded.add(group)
                members = self.groups[group][2]
                seen.update(members)
            if visit(members):
                return True
        return False

    def _widen(self, low: int, high: int) -> tuple[int, int]:
        changed = True
        while changed:
            changed = False
            for g_low, g_high, _ in self.groups:
                if g_low < high and g_high > low and (g_low < low or g_high > high):
                    low, high = min(low, g_low), max(high, g_high)
                    changed = True
        return low, high

    def accept(self) -> Match:
        nodes = [n for n in self.assign if n is not None]
        bound = [b for b in self.bind if b is not None]
        self.claimed.update(nodes)
        if not self.compiled.single_exit:
            pos = self._positions()
            self.group_of.update(dict.fromkeys(nodes, len(self.groups)))
            spots = [pos[n] for n in nodes]
            self.groups.append((min(spots), max(spots), nodes))
        return Match(self.graph, self.compiled, self.config, nodes, bound)

    # -- backtracking -------------------------------------------------------------------------
    def candidates(self, step: Step) -> Iterable[Node]:
        _, how, known_op, port, k = step
        known = self.assign[known_op]
        assert known is not None
        if how == "producer":
            edge = known.inputs[port]
            return () if edge is None else (edge[0],)
        if how == "consumer":
            if port >= len(known.users_by_port):
                return ()
            return [d for d, dk in known.users_by_port[port] if dk == k]
        edge = known.inputs[port]  # sibling
        if edge is None:
            return ()
        return [d for d, dk in edge[0].users_by_port[edge[1]] if dk == k]

    def extend(self, steps: list[Step], depth: int) -> bool:
        if depth == len(steps):
            return self.finish(depth)
        step = steps[depth]
        i = step[0]
        pool = self.by_type.get(self.compiled.ops[i].type, ()) if step[1] == "anchor" else None
        tried = False
        for node in pool if pool is not None else self.candidates(step):
            if node in self.used:
                continue
            tried = True
            if node in self.claimed:
                self._note(depth, _TAKEN, i, node)
                continue
            bound_now: list[int] = []
            code = self.check(i, node, bound_now)
            if code is None:
                self.assign[i] = node
                self.used.add(node)
                if self.extend(steps, depth + 1):
                    return True
                self.assign[i] = None
                self.used.discard(node)
            else:
                self._note(depth, code, i, node)
            for w in bound_now:
                self.bind[w] = None
        if not tried and self.tracking:
            self.detail = _missing(self.compiled, step)
            self._note(depth, _MISSING, i, None)
        return False

    def finish(self, depth: int) -> bool:
        code = self.inner_input()
        if code is None and self.makes_cycle():
            code = _CYCLE
        if code is not None:
            self._note(depth, code, -1, None)
            return False
        return True

    def _note(self, depth: int, code: str, op: int, node: Node | None) -> None:
        if self.tracking and (self.best is None or depth > self.best.depth):
            self.best = _Failure(depth, code, op, node, list(self.assign), self.detail)
        self.detail = ""

    def run(self, steps: list[Step]) -> list[Match]:
        """Greedy: each anchor candidate in graph order, the first full match from it."""
        first, rest = steps[0], steps
        anchor = first[0]
        matches = []
        for node in self.by_type.get(self.compiled.ops[anchor].type, ()):
            if node in self.claimed:
                self._note(0, _TAKEN, anchor, node)
                continue
            bound_now: list[int] = []
            code = self.check(anchor, node, bound_now)
            if code is None:
                self.assign[anchor] = node
                self.used.add(node)
                if self.extend(rest, 1):
                    matches.append(self.accept())
                self.assign = [None] * len(self.compiled.ops)
                self.used = set()
            else:
                self._note(0, code, anchor, node)
            self.bind = [None] * len(self.compiled.readers)
        return matches


def _successors(node: Node) -> Iterator[Node]:
    for consumers in node.users_by_port:
        for dst, _ in consumers:
            yield dst
    yield from node.control_outputs


def _topological_positions(graph: Graph) -> dict[Node, int]:
    """Kahn's order over data and control edges of one graph level; nodes left on a cycle
    (an invalid graph) come last, in creation order."""
    nodes = graph._nodes.values()
    waiting: dict[Node, int] = {}
    ready: list[Node] = []
    for node in nodes:
        count = sum(1 for e in node.inputs if e is not None) + len(node.control_inputs)
        waiting[node] = count
        if count == 0:
            ready.append(node)
    positions: dict[Node, int] = {}
    at = 0
    while at < len(ready):  # first in, first out: creation order where it is topological
        node = ready[at]
        at += 1
        positions[node] = len(positions)
        for succ in _successors(node):
            left = waiting.get(succ)
            if left is not None:
                waiting[succ] = left - 1
                if left == 1:
                    ready.append(succ)
    for node in nodes:
        positions.setdefault(node, len(positions))
    return positions


def _index_by_type(graph: Graph, types: set[str]) -> dict[str, list[Node]]:
    by_type: dict[str, list[Node]] = {t: [] for t in types}
    for node in graph._nodes.values():
        found = by_type.get(node.type)
        if found is not None:
            found.append(node)
    return by_type


def _prepare(
    graph: Graph, pattern: Pattern, config: PatternMatcherConfig | None, *, tracking: bool
) -> tuple[_Search, list[Step]]:
    if not isinstance(graph, Graph):
        raise GeTypeError(f"graph must be a ge.graph.Graph, got {type(graph).__name__}")
    if not isinstance(pattern, Pattern):
        raise GeTypeError(f"pattern must be a ge.passes.Pattern, got {type(pattern).__name__}")
    if config is not None and not isinstance(config, PatternMatcherConfig):
        raise GeTypeError(
            f"config must be a PatternMatcherConfig or None, got {type(config).__name__}"
        )
    compiled = compiled_pattern(pattern)
    search = _Search(graph, compiled, config, set(), tracking=tracking)
    search.by_type = _index_by_type(graph, {op.type for op in compiled.ops})
    return search, search_plan(compiled, search.by_type)


def find_matches(
    graph: Graph, pattern: Pattern, config: PatternMatcherConfig | None = None
) -> list[Match]:
    """The non-overlapping matches of ``pattern`` among ``graph``'s own nodes (subgraphs are
    the caller's business), in topological order of their first node."""
    search, steps = _prepare(graph, pattern, config, tracking=False)
    matches = search.run(steps)
    if len(matches) > 1:
        pos = search._positions()
        matches.sort(key=lambda m: min(pos[n] for n in m.nodes))
    return matches


# --- explanations ------------------------------------------------------------------------------
def explain_match(
    graph: Graph, pattern: Pattern, config: PatternMatcherConfig | None = None
) -> str:
    """Why ``pattern`` matches ``graph`` (how often) or not: the candidate that got
    furthest, what it had matched, and its first mismatch."""
    search, steps = _prepare(graph, pattern, config, tracking=True)
    compiled = search.compiled
    matches = search.run(steps)
    if matches:
        first = ", ".join(n.name for n in matches[0].nodes)
        return f"pattern '{compiled.name}' matches {len(matches)} time(s); first: [{first}]"
    anchor = compiled.ops[steps[0][0]]
    head = f"pattern '{compiled.name}' does not match graph '{graph.name}'"
    if not search.by_type.get(anchor.type):
        return f"{head}: the graph has no {anchor.type} node (pattern node {anchor.node.name})"
    failure = search.best
    assert failure is not None  # some anchor candidate was tried and refused
    matched = [
        f"{compiled.ops[i].node.name}->{n.name}"
        for i, n in enumerate(failure.assigned)
        if n is not None
    ]
    where = f"closest candidate matched {len(matched)} of {len(compiled.ops)} pattern ops"
    if matched:
        where += f" ({', '.join(matched)})"
    return f"{head}: {where}; {_describe(compiled, failure)}"


def _missing(compiled: CompiledPattern, step: Step) -> str:
    op, how, known, port, k = step
    name, other = compiled.ops[op].node.name, compiled.ops[known].node.name
    wanted = {
        "anchor": f"no free graph node of type {compiled.ops[op].type} is left",
        "producer": f"no graph node feeds input {port} of the node matched to {other}",
        "consumer": f"no graph node reads output {port} of the node matched to {other} "
        f"at input {k}",
        "sibling": f"no other graph node reads, at input {k}, the tensor bound to input "
        f"{port} of {other}",
    }[how]
    return f"nothing fits pattern node {name}: {wanted}"


def _describe(compiled: CompiledPattern, failure: _Failure) -> str:
    if failure.code == _MISSING:
        return failure.detail
    if failure.op < 0:
        return {
            _CYCLE: "replacing these nodes by one would create a cycle",
            _INNER_INPUT: "a pattern input would read a tensor made inside the match",
        }[failure.code]
    op = compiled.ops[failure.op]
    node = failure.node
    assert node is not None
    pair = f"pattern node {op.node.name} ({op.type}) vs graph node {node.name} ({node.type})"
    if failure.code == _TYPE:
        return f"op type differs: {pair}"
    if failure.code == _INPUTS:
        return (
            f"input count differs: {pair}: pattern inputs {_connected(op.node)}, graph inputs "
            f"{_connected(node)} (connected ports of {len(op.ins)} vs {len(node.inputs)})"
        )
    if failure.code == _ATTR:
        return f"IR attribute '{failure.detail}' differs: {pair}"
    texts = {
        _OUTPUTS: f"graph node has {len(node.users_by_port)} outputs, the pattern uses "
        f"{op.n_out_used}: {pair}",
        _EDGE: f"data edges differ (another producer or port): {pair}",
        _SAME_INPUT: f"one pattern input would bind two different tensors: {pair}",
        _EXTERNAL: f"{failure.detail or 'a tensor'} of {node.name} is used outside the match "
        f"but is not a pattern output: {pair}",
        _CONST: f"Const value differs: {pair}",
        _TAKEN: f"graph node {node.name} is already in another match: {pair}",
    }
    return texts[failure.code]


def _connected(node: Node) -> list[int]:
    return [k for k, e in enumerate(node.inputs) if e is not None]
