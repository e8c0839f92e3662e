"""Snapshots of a root graph, and putting one back: how a failed edit is undone.

``snapshot(graph)`` is an independent copy (``clone_graph``, or the AIR round trip for what
the cloner does not model). ``restore(graph, snap)`` makes ``graph`` hold the snapshot's
contents again — nodes, edges, attributes, outputs and subgraphs — in the same ``Graph``
object, so callers that hold the graph keep a valid one (nodes taken from it before the
restore are the pre-restore nodes, no longer in it). A snapshot is consumed by ``restore``.

    >>> from ge.graph.graph import Graph
    >>> g = Graph("g"); _ = g.add_node("Data", "x", num_outputs=1)
    >>> snap = snapshot(g); _ = g.add_node("Relu", "y", num_inputs=1, num_outputs=1)
    >>> restore(g, snap); [n.name for n in g.get_direct_nodes()]
    ['x']
"""

from __future__ import annotations

from ge.graph._air import model_from_bytes, model_to_bytes
from ge.graph._clone import clone_graph
from ge.graph.graph import Graph

__all__ = ["restore", "snapshot"]


def snapshot(graph: Graph) -> Graph:
    twin = clone_graph(graph)
    return twin if twin is not None else model_from_bytes(model_to_bytes(graph))


def restore(graph: Graph, snap: Graph) -> None:
    """Give ``graph`` the contents of ``snap`` (a snapshot of a root graph)."""
    graph._nodes = snap._nodes
    for node in graph._nodes.values():
        node._graph = graph
    graph._attrs = snap._attrs
    graph._outputs = snap._outputs
    graph._name_counter = snap._name_counter
    graph._subgraphs = snap._subgraphs
    for sub in graph._subgraphs.values():
        if sub._parent_graph is snap:
            sub._parent_graph = graph
    snap._nodes, snap._attrs, snap._outputs, snap._subgraphs = {}, {}, [], {}
