"""Refining descs after a rewrite: re-infer the nodes whose inputs changed, and their users.

Folding a value input (a Reshape's target shape, a Transpose's perm, a Pad's paddings) into a
Const lets the consumer's infer rule read the value, so its recorded ``-1`` dims become known;
the consumer's users may then learn theirs. ``refine_node`` re-infers one node and says
whether its output shapes or dtypes changed; ``refine_users`` sweeps a graph once in
topological order from some changed nodes (linear in the graph's size). When a subgraph's
results change, its parent node is refined in turn, so control-flow ops see their bodies' new
descs.

Only a change of shape or dtype counts (what ``Graph.verify`` compares), so refining an
up-to-date node changes nothing and the optimiser's fixed point is reached.

    >>> import ge.es
    >>> from ge.es import GraphBuilder
    >>> from ge.compiler.fold import fold_constants
    >>> b = GraphBuilder("g"); x = b.create_input(0, shape=[6])
    >>> g = b.build_and_reset([ge.es.Reshape(x, ge.es.Identity(b.create_vector_int64([2, 3])))])
    >>> [n.get_output_desc(0).get_shape() for n in g.get_direct_nodes() if n.type == "Reshape"]
    [[-1, -1]]
    >>> fold_constants(g)
    True
    >>> [n.get_output_desc(0).get_shape() for n in g.get_direct_nodes() if n.type == "Reshape"]
    [[2, 3]]
"""

from __future__ import annotations

from collections.abc import Iterable

from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.ops.infer import graph_outputs, infer_node, producer_desc

__all__ = ["mark_users", "refine_node", "refine_parent", "refine_users"]


def mark_users(node: Node, stale: set[int]) -> None:
    """Add the ids of every node that reads an output of ``node`` to ``stale``."""
    for consumers in node.users_by_port:
        stale.update(id(dst) for dst, _ in consumers)


def refine_node(node: Node) -> bool:
    """Re-infer ``node`` from its producers' current descs; record and report a change of any
    output's shape or dtype (``Graph.set_output_desc``: its consumers' input descs follow).
    Nodes of unregistered ops are left alone. An ``InferError`` (the refined inputs reveal a
    real mismatch) propagates: it names the node and its place."""
    op = node.op
    graph = node.graph
    if op is None or op.infer is None or graph is None:
        return False
    for port, edge in enumerate(node.inputs):
        if edge is not None:
            node.update_input_desc(port, producer_desc(node, port))
    inferred = infer_node(node, op)
    changed = False
    for port, (have, want) in enumerate(zip(node.output_descs, inferred, strict=True)):
        if list(have._shape) != list(want._shape) or have._data_type != want._data_type:
            graph.set_output_desc(node, port, want)
            changed = True
    return changed


def refine_users(graph: Graph, seeds: Iterable[Node]) -> bool:
    """Refine ``seeds`` (nodes of ``graph``) and, transitively, the users of every node that
    changed, in one topological sweep; then the parent graph if ``graph``'s results changed.
    Returns whether any desc of ``graph`` changed."""
    from ge.graph._verify import topological_order  # noqa: PLC0415  (as fold does)

    stale = {id(node) for node in seeds}
    changed: set[int] = set()
    order, _ = topological_order(graph)
    for node in order:
        if id(node) in stale and refine_node(node):
            changed.add(id(node))
            mark_users(node, stale)
    refine_parent(graph, changed)
    return bool(changed)


def refine_parent(graph: Graph, changed: set[int]) -> None:
    """If a node in ``changed`` (ids) produces one of ``graph``'s results and ``graph`` is a
    subgraph, refine its parent node and the parent's users."""
    parent = graph.parent_node
    if parent is None or parent.graph is None or not changed:
        return
    if any(id(node) in changed for node, _ in graph_outputs(graph)):
        refine_users(parent.graph, [parent])
