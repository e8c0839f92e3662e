"""``Graph.verify()``: structural checks, every problem reported at once with what to fix."""

from __future__ import annotations

import importlib
import itertools
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from ge.error import GraphError

if TYPE_CHECKING:
    from ge.graph.graph import Graph
    from ge.graph.node import Node

__all__ = [
    "current_verify_pass",
    "describe_cycle",
    "find_cycle",
    "register_graph_check",
    "register_node_check",
    "topological_order",
    "verify_graph",
]


def _ownership(graph: Graph) -> Iterator[str]:
    for key, node in graph._nodes.items():
        if node._graph is not graph:
            yield f"node {key} is listed in graph '{graph._name}' but does not belong to it"
        if node._name != key:
            yield f"node {node._name} is listed under the name {key}; names must match"


def _ports(node: Node) -> Iterator[str]:
    sizes = {len(node._in_edges), len(node._input_descs), len(node._input_names)}
    if len(sizes) != 1:
        yield f"node {node._name}: input edges, descs and names disagree in count {sorted(sizes)}"
    sizes = {len(node._out_edges), len(node._output_descs), len(node._output_names)}
    if len(sizes) != 1:
        yield f"node {node._name}: output edges, descs and names disagree in count {sorted(sizes)}"


def _is_member(graph: Graph, node: Node) -> bool:
    return node._graph is graph and graph._nodes.get(node._name) is node


_Consumers = dict[tuple[int, int], set[tuple[int, int]]]


def _recorded(src: Node, src_port: int, node: Node, port: int, sets: _Consumers) -> bool:
    """Whether ``src:src_port`` lists ``node:port`` among its consumers. A long list is made a
    set once per verify (a node feeding k consumers would cost k * k list scans)."""
    consumers = src._out_edges[src_port]
    if len(consumers) <= 16:
        return (node, port) in consumers
    known = sets.get((id(src), src_port))
    if known is None:
        known = sets[(id(src), src_port)] = {(id(dst), dst_port) for dst, dst_port in consumers}
    return (id(node), port) in known


def _data_links(graph: Graph, node: Node, sets: _Consumers) -> Iterator[str]:
    for port, edge in enumerate(node._in_edges):
        if edge is None:
            continue
        src, src_port = edge
        if not _is_member(graph, src):
            yield (
                f"node {node._name} input {port} is fed by {src._name}, which is not in graph "
                f"'{graph._name}'; remove the edge or the node"
            )
        elif not 0 <= src_port < len(src._out_edges):
            yield f"node {node._name} input {port} reads {src._name}:{src_port}, past its outputs"
        elif not _recorded(src, src_port, node, port, sets):
            yield (
                f"edge {src._name}:{src_port} -> {node._name}:{port} is recorded only at its "
                f"consumer; re-add it with Graph.add_data_edge"
            )
    for port, consumers in enumerate(node._out_edges):
        for dst, dst_port in consumers:
            if not _is_member(graph, dst):
                yield f"node {node._name} output {port} feeds {dst._name}, not in the graph"
            elif not (
                0 <= dst_port < len(dst._in_edges) and dst._in_edges[dst_port] == (node, port)
            ):
                yield (
                    f"edge {node._name}:{port} -> {dst._name}:{dst_port} is recorded only at "
                    f"its producer; re-add it with Graph.add_data_edge"
                )


def _control_links(graph: Graph, node: Node) -> Iterator[str]:
    for src in node._in_ctrl:
        if not _is_member(graph, src) or node not in src._out_ctrl:
            yield f"control edge {src._name} -> {node._name} is dangling"
    for dst in node._out_ctrl:
        if not _is_member(graph, dst) or node not in dst._in_ctrl:
            yield f"control edge {node._name} -> {dst._name} is dangling"


def _subgraph_refs(graph: Graph, node: Node) -> Iterator[str]:
    root = graph._root()
    for i, name in enumerate(node._subgraph_names):
        if not name:
            continue  # an empty slot (op-level checks say whether the op needs it)
        sub = root._subgraphs.get(name)
        if sub is None:
            yield (
                f"node {node._name} subgraph {i} refers to {name!r}, which is "
                f"not registered; use Graph.set_node_subgraph"
            )
        elif sub._parent_node is not node:
            yield f"subgraph '{name}' is used by node {node._name} but its parent node differs"


def _outputs(graph: Graph) -> Iterator[str]:
    for node, port in graph._outputs:
        if not _is_member(graph, node):
            yield f"graph output {node._name}:{port} is not a node of the graph"
        elif not 0 <= port < len(node._out_edges):
            yield f"graph output {node._name}:{port} is past the node's outputs"


def _in_creation_order(nodes: list[Node]) -> bool:
    """Whether every node of ``nodes`` comes after all its producers (data and control, links
    outside the list ignored): true of every graph a builder made, whose nodes are created
    from their inputs. One dict and one compare per edge, far cheaper than the sort."""
    position = {node: i for i, node in enumerate(nodes)}
    get = position.get
    for i, node in enumerate(nodes):
        for edge in node._in_edges:
            if edge is not None and get(edge[0], -1) >= i:
                return False
        for src in node._in_ctrl:
            if get(src, -1) >= i:
                return False
    return True


def topological_order(graph: Graph) -> tuple[list[Node], list[Node]]:
    """Nodes in an order where producers come first (creation order breaks ties: a graph whose
    creation order already puts producers first is returned in it), and the nodes that could
    not be placed because they are on or behind a cycle (empty for a valid graph).
    Data and control edges both count, as recorded at the consumer; links to nodes outside the
    graph are ignored (``verify`` reports them)."""
    nodes = list(graph._nodes.values())
    if _in_creation_order(nodes):
        return nodes, []
    # Keyed by the nodes themselves (identity hashing, no id() calls); successors doubles as
    # the membership test.
    successors: dict[Node, list[Node]] = {n: [] for n in nodes}
    pending: dict[Node, int] = {}
    for node in nodes:
        edges = node._in_edges
        if len(edges) == 1 and not node._in_ctrl:  # the common case: one producer at most
            edge = edges[0]
            succ = successors.get(edge[0]) if edge is not None else None
            if succ is not None:
                succ.append(node)
            pending[node] = succ is not None
            continue
        preds = {e[0] for e in edges if e is not None}
        preds.update(node._in_ctrl)
        count = 0
        for pred in preds:
            succ = successors.get(pred)
            if succ is not None:
                succ.append(node)
                count += 1
        pending[node] = count
    ready = deque(n for n in nodes if not pending[n])
    order: list[Node] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for succ_node in successors[node]:
            left = pending[succ_node] - 1
            pending[succ_node] = left
            if not left:
                ready.append(succ_node)
    if len(order) == len(nodes):
        return order, []
    placed = set(order)
    return order, [n for n in nodes if n not in placed]


def _predecessors(node: Node) -> Iterator[tuple[Node, bool]]:
    """What ``node`` waits for, as recorded at the consumer: ``(producer, by data)``."""
    for edge in node._in_edges:
        if edge is not None:
            yield edge[0], True
    for src in node._in_ctrl:
        yield src, False


def find_cycle(stuck: Sequence[Node]) -> list[tuple[Node, bool]]:
    """One cycle among ``stuck`` (the nodes ``topological_order`` could not place), in edge
    order: ``(node, whether the edge into it from the entry before is a data edge)``, the
    last entry feeding the first. Empty when ``stuck`` is. Every stuck node waits for another
    stuck node, so walking back from one comes round; linear in what it walks."""
    if not stuck:
        return []
    left = {id(n) for n in stuck}
    at: dict[int, int] = {}
    walk: list[tuple[Node, bool]] = []  # (node, whether its edge to the entry before is data)
    node, data = stuck[0], True
    while id(node) not in at:
        at[id(node)] = len(walk)
        walk.append((node, data))
        node, data = next((p, d) for p, d in _predecessors(node) if id(p) in left)
    loop = walk[at[id(node)] :]  # each entry feeds the one before it; the first feeds the last
    cycle = [(loop[-1][0], data)]
    cycle += [(loop[k][0], loop[k + 1][1]) for k in range(len(loop) - 2, -1, -1)]
    return cycle


def describe_cycle(graph: Graph, stuck: Sequence[Node]) -> str:
    """``graph 'g' has a cycle: a -> b -(control)-> a``, naming only the nodes of one cycle
    among ``stuck`` (and how many more nodes wait on it)."""
    cycle = find_cycle(stuck)
    if not cycle:
        return f"graph '{graph._name}' has no cycle"
    text = cycle[-1][0]._name
    for node, data in cycle:
        text += f" {'->' if data else '-(control)->'} {node._name}"
    rest = len(stuck) - len(cycle)
    after = f" ({rest} more {'node waits' if rest == 1 else 'nodes wait'} on it)" if rest else ""
    return f"graph '{graph._name}' has a cycle: {text}{after}"


def _subgraph_parents(graph: Graph) -> Iterator[str]:
    for sub in graph._subgraphs.values():
        parent = sub._parent_node
        if parent is None:
            continue
        owner = parent._graph
        if owner is None or owner._nodes.get(parent._name) is not parent:
            yield (
                f"subgraph '{sub._name}' names parent node {parent._name}, which is no longer "
                f"in a graph; remove the subgraph or attach it again"
            )
        elif sub._name not in parent._subgraph_names:
            yield f"subgraph '{sub._name}' names parent node {parent._name}, which does not use it"


def _problems(graph: Graph) -> Iterator[str]:
    yield from _ownership(graph)
    sets: _Consumers = {}
    for node in graph._nodes.values():
        yield from _ports(node)
        yield from _data_links(graph, node, sets)
        if node._in_ctrl or node._out_ctrl:  # most nodes have neither: skip the generators
            yield from _control_links(graph, node)
        if node._subgraph_names:
            yield from _subgraph_refs(graph, node)
    yield from _outputs(graph)
    if graph._parent_graph is None:
        yield from _subgraph_parents(graph)
    _, cyclic = topological_order(graph)
    if cyclic:
        yield f"{describe_cycle(graph, cyclic)}; remove one of its edges"


NodeCheck = Callable[["Node"], Iterator[str]]
GraphCheck = Callable[["Graph"], Iterator[str]]
_NODE_CHECKS: list[tuple[NodeCheck, bool]] = []
_GRAPH_CHECKS: list[GraphCheck] = []


def register_node_check(check: NodeCheck, *, infer: bool = False) -> None:
    """Add a per-node check to ``Graph.verify`` (``ge.ops`` adds its op checks this way, so the
    IR layer needs no knowledge of ops). ``infer=True`` marks a check that compares recorded
    descs with what inference gives now: ``Session.add_graph`` skips those, since compiling
    infers every desc again."""
    if all(check is not c for c, _ in _NODE_CHECKS):
        _NODE_CHECKS.append((check, infer))


def register_graph_check(check: GraphCheck) -> None:
    """Add a whole-graph op-level check to ``Graph.verify``, run on the root graph and on each
    subgraph (``ge.ops`` checks graph input indexes this way)."""
    if check not in _GRAPH_CHECKS:
        _GRAPH_CHECKS.append(check)


# the package that registers op-level checks (ge.ops). It sits above ge.graph, so it is
# imported by name the first time a graph is verified, not when ge.graph is imported
CHECK_PACKAGES = ("ge.ops",)


def _op_checks(graph: Graph, infer: bool) -> Iterator[str]:
    if not _GRAPH_CHECKS:
        for name in CHECK_PACKAGES:
            importlib.import_module(name)
    checks = [c for c, needs_infer in _NODE_CHECKS if infer or not needs_infer]
    for node in graph._nodes.values():
        for check in checks:
            yield from check(node)
    for graph_check in _GRAPH_CHECKS:
        yield from graph_check(graph)


_PASSES = itertools.count(1)
_CURRENT_PASS = [0]


def current_verify_pass() -> int:
    """A number for the ``verify_graph`` call running now, new for each call; 0 outside one.
    Op checks use it to trust, within one call, what an earlier check of the same call
    inferred (a fused node's check infers its whole body, so the body's nodes hold what their
    own checks would infer again)."""
    return _CURRENT_PASS[0]


def verify_graph(graph: Graph, *, ops: bool = True, infer: bool = True) -> None:
    """``Graph.verify``; ``infer=False`` leaves out the checks that compare recorded descs with
    inference (what ``Session.add_graph`` checks: everything that would stop a run)."""
    outer, _CURRENT_PASS[0] = _CURRENT_PASS[0], next(_PASSES)
    try:
        _verify_graph(graph, ops=ops, infer=infer)
    finally:
        _CURRENT_PASS[0] = outer


def _verify_graph(graph: Graph, *, ops: bool, infer: bool) -> None:
    graphs = [graph]
    if graph._parent_graph is None:
        graphs += graph._subgraphs.values()
    problems = [f"[{g._name}] {p}" for g in graphs for p in _problems(g)]
    if ops and not problems:  # op-level checks assume the structure is sound
        problems = [f"[{g._name}] {p}" for g in graphs for p in _op_checks(g, infer)]
    if problems:
        raise GraphError(
            f"Graph '{graph._name}' failed verification:\n  - " + "\n  - ".join(problems)
        )
