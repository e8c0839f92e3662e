"""Dead-node elimination: remove pure nodes whose results nobody uses.

A node is live if it is impure (graph inputs, NetOutput, control flow), feeds a live node
through a data edge, or is the source of a control edge (kept conservatively), or produces a
graph output. Everything else is removed. Subgraphs are cleaned the same way (their NetOutput
keeps what they return).
"""

from __future__ import annotations

from ge.compiler._graphs import is_removable
from ge.graph.graph import Graph
from ge.graph.node import Node

__all__ = ["eliminate_dead_nodes"]


def eliminate_dead_nodes(graph: Graph) -> bool:
    live: set[int] = set()
    stack: list[Node] = [n for n in graph.get_direct_nodes() if not is_removable(n)]
    stack += [n for n, _ in graph.get_outputs()]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        stack += [e[0] for e in node.inputs if e is not None]
        stack += node.control_inputs
    dead = [n for n in graph.get_direct_nodes() if id(n) not in live]
    graph.remove_nodes(reversed(dead))
    return bool(dead)
