"""The subgraph registry of a root ``Graph``: registering, attaching and removing subgraphs.

Subgraphs are ``Graph`` objects registered by name on the *root* graph (as GE flattens them in
AIR files); a node refers to its subgraphs by instance name. These are the bodies of the
``Graph`` methods of the same names, which check the argument types first; each either
completes or raises ``GraphError`` with every graph unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ge.error import GraphError

if TYPE_CHECKING:
    from ge.graph.graph import Graph
    from ge.graph.node import Node

__all__ = ["add_subgraph", "register_subgraph", "remove_subgraph", "set_node_subgraph"]


def add_subgraph(graph: Graph, subgraph: Graph) -> None:
    """``Graph.add_subgraph``: ``subgraph`` must already hang off a node of its parent."""
    root = graph._root()
    parent, node = subgraph._parent_graph, subgraph._parent_node
    reason = ""
    if parent is None or node is None:
        reason = (
            "it has no parent graph or no parent node; attach it with "
            "set_node_subgraph, or register a standalone graph with register_subgraph"
        )
    elif node._graph is not parent:
        reason = f"its parent node {node._name} is not in its parent graph '{parent._name}'"
    elif subgraph._name in root._subgraphs:
        reason = f"a subgraph named '{subgraph._name}' already exists"
    if reason:
        raise GraphError(
            f"Failed to add subgraph '{subgraph._name}' to graph '{graph._name}': {reason}"
        )
    root._subgraphs[subgraph._name] = subgraph


def register_subgraph(graph: Graph, subgraph: Graph) -> None:
    """``Graph.register_subgraph``: a standalone ``subgraph`` and the subgraphs it holds."""
    root = graph._root()
    incoming = [subgraph, *subgraph._subgraphs.values()]
    taken = [g._name for g in incoming if g._name in root._subgraphs or g._name == root._name]
    names = [g._name for g in incoming]
    reason = ""
    if subgraph is root or subgraph._parent_graph is not None:
        reason = "it already belongs to a graph"
    elif taken:
        reason = f"the name {taken[0]!r} is already used"
    elif len(set(names)) != len(names):
        reason = "it holds two subgraphs of the same name"
    if reason:
        raise GraphError(
            f"Failed to register subgraph '{subgraph._name}' on graph '{graph._name}': {reason}"
        )
    for g in incoming:
        root._subgraphs[g._name] = g
        if g is subgraph or g._parent_graph is None:
            g._parent_graph = graph if g is subgraph else subgraph
    subgraph._subgraphs = {}


def remove_subgraph(graph: Graph, name: str) -> None:
    """``Graph.remove_subgraph``: an unknown ``name`` does nothing, as in GE."""
    root = graph._root()
    sub = root._subgraphs.pop(name, None)
    if sub is None:
        return
    if sub._parent_graph is not None and sub._parent_graph._root() is not root:
        return  # attached to another graph (``add_subgraph``): that one keeps it
    if sub._parent_node is not None:
        names = sub._parent_node._subgraph_names
        assert isinstance(names, list)  # it holds ``name``
        names[names.index(name)] = ""
    sub._parent_graph = None
    sub._parent_node = None


def set_node_subgraph(graph: Graph, node: Node, index: int, subgraph: Graph) -> None:
    """``Graph.set_node_subgraph`` for a ``node`` of ``graph`` and an ``index`` at most one
    past its subgraphs."""
    ancestor: Graph | None = graph
    while ancestor is not None:
        if ancestor is subgraph:
            raise GraphError(
                f"subgraph '{subgraph._name}' contains node {node._name}; "
                f"a graph cannot be its own subgraph"
            )
        ancestor = ancestor._parent_graph
    if subgraph._parent_node is not None and subgraph._parent_node is not node:
        raise GraphError(
            f"subgraph '{subgraph._name}' already belongs to node {subgraph._parent_node._name}"
        )
    slots = node._subgraph_names
    if not slots:
        slots = node._subgraph_names = []  # a node starts with a shared ()
    if subgraph._name in slots and (index == len(slots) or slots[index] != subgraph._name):
        raise GraphError(
            f"subgraph '{subgraph._name}' is already subgraph "
            f"{slots.index(subgraph._name)} of node {node._name}"
        )
    if graph.get_subgraph(subgraph._name) is not subgraph:
        register_subgraph(graph, subgraph)
    subgraph._parent_graph = graph
    subgraph._parent_node = node
    if index == len(slots):
        slots.append(subgraph._name)
    else:
        replaced = graph.get_subgraph(slots[index]) if slots[index] else None
        if replaced is not None and replaced is not subgraph:
            replaced._parent_node = None  # stays registered, now unattached
        slots[index] = subgraph._name
