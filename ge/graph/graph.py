"""``ge.graph.Graph``: a mutable graph that owns its nodes, attributes and subgraphs.

Subgraphs are ``Graph`` objects registered by name on the *root* graph (as GE flattens them in
AIR files); a node refers to its subgraphs by instance name. Every edit goes through a method
here, and each method either completes or raises with the graph unchanged.

    >>> g = Graph("demo")
    >>> x = g.add_node("Data", "x", num_outputs=1)
    >>> y = g.add_node("Relu", num_inputs=1, num_outputs=1)
    >>> g.add_data_edge(x, 0, y, 0)
    >>> [n.name for n in g.get_direct_nodes()], y.get_in_data_nodes_and_port_indexes(0)[0].name
    (['x', 'Relu_0'], 'x')
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any, NoReturn

from ge.error import GeError, GeTypeError, GeValueError, GraphError
from ge.graph import _subgraphs
from ge.graph._attr import (
    AttrValue,
    check_attr_key,
    ge_attr_python,
    infer_attr_value,
    make_attr_value,
)
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DumpFormat

__all__ = ["MAX_PORTS", "DescSnapshot", "Graph", "link_control"]

Port = tuple[Node, int]

MAX_PORTS = 1 << 16
"""Most input (or output) ports one node may have. Far above any real op (GE's widest take a
few thousand tensors); a count beyond it is a mistake, refused before a port is allocated
(``num_outputs=10**7`` would otherwise take most of a minute and gigabytes to build)."""


def link_control(src: Node, dst: Node) -> None:
    """Add the control edge ``src -> dst`` unless it exists. A node's control lists start as a
    shared ``()`` (most nodes never get one, and an empty list per node is two more objects
    for the cyclic GC to walk on every graph), so the first edge makes the list."""
    if dst in src._out_ctrl:
        return
    if src._out_ctrl:
        src._out_ctrl.append(dst)
    else:
        src._out_ctrl = [dst]
    if dst._in_ctrl:
        dst._in_ctrl.append(src)
    else:
        dst._in_ctrl = [src]


def _check_graph(subgraph: object) -> Graph:
    if not isinstance(subgraph, Graph):
        raise GeTypeError(f"subgraph must be a Graph, got {type(subgraph).__name__}")
    return subgraph


def _check_node(node: object, what: str) -> Node:
    if not isinstance(node, Node):
        raise GeTypeError(f"{what} must be a Node, got {type(node).__name__}")
    return node


def _check_int(value: object, what: str) -> int:
    """An ``int`` (a ``bool`` too, as GE-PY's ``isinstance(x, int)`` takes it, read as 0/1)."""
    if type(value) is int:
        return value
    if not isinstance(value, int):
        raise GeTypeError(f"{what} must be an integer, got {type(value).__name__}")
    return int(value)


def _check_plain_int(value: object, what: str) -> int:
    """An ``int``, not a ``bool``: the check of our own methods (GE's take bools)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise GeTypeError(f"{what} must be an int, got {type(value).__name__}")
    return value


def _check_count(value: object, what: str) -> int:
    if _check_plain_int(value, what) < 0:
        raise GeValueError(f"{what} must be >= 0, got {value}")
    count: int = int(value)  # type: ignore[call-overload]
    return count


def _check_ports(value: object, what: str) -> int:
    count = _check_count(value, what)
    if count > MAX_PORTS:
        raise GeValueError(f"{what} must be at most {MAX_PORTS} (MAX_PORTS), got {count}")
    return count


class DescSnapshot:
    """The descs ``Graph.save_descs`` copied (ours): opaque, for ``Graph.restore_descs``."""

    __slots__ = ("descs", "root")

    def __init__(
        self, root: Graph, descs: list[tuple[Node, list[TensorDesc], list[TensorDesc]]]
    ) -> None:
        self.root = root
        self.descs = descs


class Graph:
    """A GE graph. ``Graph(name="graph")``."""

    __slots__ = (
        "__weakref__",
        "_attrs",
        "_name",
        "_name_counter",
        "_nodes",
        "_outputs",
        "_parent_graph",
        "_parent_node",
        "_subgraphs",
    )

    def __init__(self, name: str | None = "graph") -> None:
        if name is None:
            name = "graph"
        if not isinstance(name, str):
            raise GeTypeError(f"Graph name must be a string, got {type(name).__name__}")
        self._name = name
        self._nodes: dict[str, Node] = {}
        self._attrs: dict[str, AttrValue] = {}
        self._subgraphs: dict[str, Graph] = {}  # only used on a root graph
        self._parent_graph: Graph | None = None
        self._parent_node: Node | None = None
        self._outputs: list[tuple[Node, int]] = []
        self._name_counter = 0

    @property
    def name(self) -> str:
        return self._name

    # --- nodes -----------------------------------------------------------------------------------
    def add_node(
        self,
        op_type: str,
        name: str | None = None,
        *,
        num_inputs: int = 0,
        num_outputs: int = 0,
        input_names: list[str] | None = None,
        output_names: list[str] | None = None,
    ) -> Node:
        """Create a node with unconnected ports (ours; GE-PY builds nodes through ``ge.es``).

        ``name=None`` picks ``<op_type>_<k>`` from one counter per graph (GE-PY's builder rule),
        skipping taken names. A taken explicit name raises ``RuntimeError``.
        """
        if not isinstance(op_type, str) or not op_type:
            raise GeTypeError(f"op_type must be a non-empty str, got {op_type!r}")
        num_inputs = _check_ports(num_inputs, "num_inputs")
        num_outputs = _check_ports(num_outputs, "num_outputs")
        in_names = self._port_names(input_names, num_inputs, "input_names")
        out_names = self._port_names(output_names, num_outputs, "output_names")
        if name is None:
            name = self._fresh_name(op_type)
        elif not isinstance(name, str) or not name or name in self._nodes:
            self._refuse_name(name)
        node = Node._create_named(self, name, op_type, in_names, out_names)
        self._nodes[name] = node
        return node

    def _add_node_named(
        self,
        op_type: str,
        name: str | None,
        input_names: list[str] | tuple[str, ...],
        output_names: list[str] | tuple[str, ...],
        input_descs: list[TensorDesc] | None = None,
        output_descs: list[TensorDesc] | None = None,
    ) -> Node:
        """``add_node`` for a caller that made ``op_type`` and the port names itself (a
        non-empty str, and lists of str each its own or tuples, which nodes may share: port
        names are never changed in place) and maybe the port descs (see
        ``Node._create_named``): only the node name is checked."""
        if name is None:
            name = self._fresh_name(op_type)
        elif not name or name in self._nodes:
            self._refuse_name(name)
        node = Node._create_named(
            self, name, op_type, input_names, output_names, input_descs, output_descs
        )
        self._nodes[name] = node
        return node

    def _refuse_name(self, name: object) -> NoReturn:
        """GE's refusal of a node name that is not a non-empty str, or is taken."""
        if not isinstance(name, str) or not name:
            raise GeTypeError(f"name must be a non-empty str, got {name!r}")
        raise GraphError(
            f"Failed to add Node {name}: graph '{self._name}' already has a node of that name"
        )

    @staticmethod
    def _port_names(names: list[str] | None, count: int, what: str) -> list[str]:
        if names is None:
            return [""] * count
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise GeTypeError(f"{what} must be a list of str")
        if len(names) != count:
            raise GeValueError(f"{what} has {len(names)} names for {count} ports")
        return list(names)

    def _fresh_name(self, op_type: str) -> str:
        while True:
            name = f"{op_type}_{self._name_counter}"
            self._name_counter += 1
            if name not in self._nodes:
                return name

    def has_node(self, name: str) -> bool:
        """Whether a node of this graph is called ``name`` (ours; no exception to catch, as
        ``find_node_by_name`` raises for a missing one)."""
        return name in self._nodes

    def get_direct_nodes(self) -> list[Node]:
        """Nodes of this graph, in creation order."""
        return list(self._nodes.values())

    def get_all_nodes(self) -> list[Node]:
        """Nodes of this graph and, after each node, the nodes of its subgraphs (recursively)."""
        return list(self._walk_all())

    def _walk_all(self) -> Iterator[Node]:
        root = self._root()
        for node in self._nodes.values():
            yield node
            for sub_name in node._subgraph_names:
                sub = root._subgraphs.get(sub_name)
                if sub is not None:
                    yield from sub._walk_all()

    def find_node_by_name(self, name: str) -> Node:
        """The node called ``name`` here or in a subgraph; ``RuntimeError`` if none."""
        if not isinstance(name, str):
            raise GeTypeError(f"name must be a string, got {type(name).__name__}")
        node = self._nodes.get(name)
        if node is None:
            node = next((n for n in self._walk_all() if n._name == name), None)
        if node is None:
            raise GraphError(f"Failed to find Node name {name}")
        return node

    def _own(self, node: object, what: str) -> Node:
        node = _check_node(node, what)
        if node._graph is not self:
            where = "no graph" if node._graph is None else f"graph '{node._graph._name}'"
            raise GraphError(f"{what} {node._name} belongs to {where}, not to graph '{self._name}'")
        return node

    def remove_node(self, node: Node) -> None:
        """Remove ``node`` with all its data and control edges; its consumers' inputs become
        unconnected and it leaves the graph outputs."""
        self.remove_nodes([node])

    def remove_nodes(self, nodes: Iterable[Node]) -> None:
        """``remove_node`` for many nodes at once (ours): every producer's consumer list and
        the graph outputs are filtered once, not once per node (removing the 20k readers of
        one Data one by one scanned its consumer list 20k times). Checked before anything is
        removed: all of them or none."""
        doomed = list(dict.fromkeys(_check_node(n, "node") for n in nodes))
        for node in doomed:
            if node._graph is not self:
                where = "no graph" if node._graph is None else f"graph '{node._graph._name}'"
                raise GraphError(
                    f"Failed to remove Node {node._name} from Graph {self._name}: "
                    f"it belongs to {where}"
                )
        gone = set(doomed)
        producers: dict[tuple[int, int], list[Port]] = {}  # consumer lists to filter
        for node in doomed:
            self._cut_links(node, producers)
        for consumers in producers.values():
            consumers[:] = [e for e in consumers if e[0] not in gone]
        if any(n in gone for n, _ in self._outputs):
            self._outputs = [(n, i) for n, i in self._outputs if n not in gone]
        for node in doomed:
            for name in node._subgraph_names:
                sub = self.get_subgraph(name) if name else None
                if sub is not None and sub._parent_node is node:
                    sub._parent_node = None  # stays registered, now unattached
            del self._nodes[node._name]
            node._graph = None

    def _cut_links(self, node: Node, producers: dict[tuple[int, int], list[Port]]) -> None:
        """Unlink ``node``'s inputs (noting the producers' consumer lists in ``producers``,
        for the caller to filter), its consumers and its control edges."""
        edges = node._in_edges
        if edges:  # (no inputs: the shared empty tuple)
            for port, edge in enumerate(edges):
                if edge is not None:
                    producers.setdefault((id(edge[0]), edge[1]), edge[0]._out_edges[edge[1]])
                    edges[port] = None
        for consumers in node._out_edges:
            for dst, dst_port in consumers:
                Graph._clear_input(dst, dst_port)
            consumers.clear()
        for src in list(node._in_ctrl):
            self._unlink_control(src, node)
        for dst in list(node._out_ctrl):
            self._unlink_control(node, dst)

    # --- edges -----------------------------------------------------------------------------------
    def add_data_edge(
        self, src_node: Node, src_port_index: int, dst_node: Node, dst_port_index: int
    ) -> None:
        """Connect output ``src_port_index`` of ``src_node`` to input ``dst_port_index`` of
        ``dst_node``. The input must be free."""
        _check_node(src_node, "src_node")
        src_port_index = _check_int(src_port_index, "src_port_index")
        _check_node(dst_node, "dst_node")
        dst_port_index = _check_int(dst_port_index, "dst_port_index")
        problem = self._data_edge_problem(src_node, src_port_index, dst_node, dst_port_index)
        if problem:
            raise GraphError(
                f"Failed to add DataEdge from Node {src_node._name}, Port Index "
                f"{src_port_index} to Node {dst_node._name}, Port Index "
                f"{dst_port_index}: {problem}"
            )
        edges = dst_node._in_edges
        assert edges, problem  # the port exists (checked): a list
        src_node._out_edges[src_port_index].append((dst_node, dst_port_index))
        edges[dst_port_index] = (src_node, src_port_index)

    @staticmethod
    def _data_edge_problem(src: Node, src_port: int, dst: Node, dst_port: int) -> str:
        """Why ``src:src_port -> dst:dst_port`` cannot be added ("" if it can). As GE, each
        node needs an owner graph, not this one: edges inside another graph, or across two
        graphs, are accepted (``verify`` reports a cross-graph edge)."""
        for node in (src, dst):
            if node._graph is None:
                return f"Node {node._name} has no graph (it was removed)"
        if not 0 <= src_port < len(src._out_edges):
            return f"{src._name} has {len(src._out_edges)} outputs"
        if not 0 <= dst_port < len(dst._in_edges):
            return f"{dst._name} has {len(dst._in_edges)} inputs"
        current = dst._in_edges[dst_port]
        if current is not None:
            return (
                f"that input is already fed by {current[0]._name}:{current[1]}; "
                f"remove that edge first"
            )
        return ""

    def add_control_edge(self, src_node: Node, dst_node: Node) -> None:
        """``dst_node`` runs after ``src_node``. Adding an existing control edge is a no-op.
        As GE, the nodes need an owner graph, not this one (see ``add_data_edge``)."""
        _check_node(src_node, "src_node")
        _check_node(dst_node, "dst_node")
        for node in (src_node, dst_node):
            if node._graph is None:
                raise GraphError(
                    f"Failed to add Control from Node {src_node._name} to Node "
                    f"{dst_node._name}: Node {node._name} has no graph (it was removed)"
                )
        link_control(src_node, dst_node)

    def remove_edge(
        self, src_node: Node, src_port_index: int, dst_node: Node, dst_port_index: int
    ) -> None:
        """Remove a data edge, or a control edge when both port indexes are -1. As GE, the
        nodes need an owner graph, not this one (see ``add_data_edge``)."""
        _check_node(src_node, "src_node")
        src_port_index = _check_int(src_port_index, "src_port_index")
        _check_node(dst_node, "dst_node")
        dst_port_index = _check_int(dst_port_index, "dst_port_index")
        what = (
            f"Edge from Node {src_node._name}, Port Index {src_port_index} to Node "
            f"{dst_node._name}, Port Index {dst_port_index}"
        )
        for node in (src_node, dst_node):
            if node._graph is None:
                raise GraphError(
                    f"Failed to remove {what}: Node {node._name} has no graph (it was removed)"
                )
        if src_port_index == -1 and dst_port_index == -1:
            if dst_node not in src_node._out_ctrl:
                raise GraphError(f"Failed to remove {what}: there is no such control edge")
            self._unlink_control(src_node, dst_node)
            return
        in_range = 0 <= dst_port_index < len(dst_node._in_edges) and 0 <= src_port_index < len(
            src_node._out_edges
        )
        if not in_range or dst_node._in_edges[dst_port_index] != (src_node, src_port_index):
            raise GraphError(f"Failed to remove {what}: there is no such data edge")
        self._unlink(src_node, src_port_index, dst_node, dst_port_index)

    @staticmethod
    def _unlink(src: Node, src_port: int, dst: Node, dst_port: int) -> None:
        consumers = src._out_edges[src_port]
        for i, (node, port) in enumerate(consumers):
            if node is dst and port == dst_port:
                del consumers[i]
                break
        Graph._clear_input(dst, dst_port)

    @staticmethod
    def _clear_input(dst: Node, dst_port: int) -> None:
        """Disconnect input ``dst_port`` of ``dst``, an edge's end (so ``dst`` has inputs)."""
        edges = dst._in_edges
        assert edges, dst._name  # an edge ends here: a list, not the shared ()
        edges[dst_port] = None

    @staticmethod
    def _unlink_control(src: Node, dst: Node) -> None:
        outs, ins = src._out_ctrl, dst._in_ctrl
        assert isinstance(outs, list) and isinstance(ins, list)  # they hold the edge
        outs.remove(dst)
        ins.remove(src)

    def set_output_desc(self, node: Node, port: int, desc: TensorDesc) -> None:
        """Record ``desc`` (a copy) as the desc of output ``port`` of ``node``, and as the
        input desc of every consumer of that output (ours; the desc write passes use).

        Decision: consumers' input descs follow at once, as the builder records them when it
        connects an input, so no reader sees a producer and a consumer disagree; GE's
        ``Node.update_output_desc`` stays as GE has it, the node alone. Checked first (the
        node is this graph's, ``port`` is one of its outputs, ``desc`` a ``TensorDesc``), so a
        bad call changes nothing.
        """
        node = self._own(node, "node")
        if not 0 <= _check_plain_int(port, "port") < len(node._output_descs):
            raise GraphError(
                f"port: node {node._name} has {len(node._output_descs)} outputs, got {port}"
            )
        if not isinstance(desc, TensorDesc):
            raise GeTypeError(f"desc must be a TensorDesc, got {type(desc).__name__}")
        node._output_descs[port] = desc._clone()
        for dst, dst_port in node._out_edges[port]:
            descs = dst._input_descs
            assert descs, dst._name  # an edge ends here: a list, not the shared ()
            descs[dst_port] = desc._clone()

    def save_descs(self) -> DescSnapshot:
        """A copy of the input and output descs of every node of the root graph and of every
        subgraph registered on it (ours), for ``restore_descs`` to put back: a whole-graph desc
        edit (shape inference) undone when it fails part way. Only descs are saved; nodes,
        edges and attributes are not."""
        root = self._root()
        return DescSnapshot(
            root,
            [
                (n, [d._clone() for d in n._input_descs], [d._clone() for d in n._output_descs])
                for g in (root, *root._subgraphs.values())
                for n in g._nodes.values()
            ],
        )

    def restore_descs(self, saved: DescSnapshot) -> None:
        """Give every node ``saved`` covers the descs it had when saved (ours); nodes added
        since keep theirs. Restores copies, so ``saved`` may be restored again. Checked first
        (``saved`` is a ``DescSnapshot`` of this graph's root), so a bad call changes nothing.
        """
        if not isinstance(saved, DescSnapshot):
            raise GeTypeError(f"saved must be a DescSnapshot, got {type(saved).__name__}")
        if saved.root is not self._root():
            raise GraphError(
                f"saved: a DescSnapshot of graph '{saved.root._name}', "
                f"not of graph '{self._root()._name}'"
            )
        for node, inputs, outputs in saved.descs:
            node._input_descs = [d._clone() for d in inputs]
            node._output_descs = [d._clone() for d in outputs]

    # --- graph outputs (ours; GE's Graph::SetOutputs) --------------------------------------------
    def replace_all_uses(self, node: Node, port: int, new_node: Node, new_port: int) -> None:
        """Make every consumer of ``node:port`` (data edges and graph outputs) read
        ``new_node:new_port`` instead (ours; the basic rewrite step of passes)."""
        node = self._own(node, "node")
        new_node = self._own(new_node, "new_node")
        for what, n, p in (("port", node, port), ("new_port", new_node, new_port)):
            if not 0 <= _check_plain_int(p, what) < len(n._out_edges):
                raise GraphError(f"{what} {p} is out of range for node {n._name}")
        if (node, port) == (new_node, new_port):
            return
        for dst, dst_port in list(node._out_edges[port]):
            self._unlink(node, port, dst, dst_port)
            self.add_data_edge(new_node, new_port, dst, dst_port)
        self._outputs = [
            (new_node, new_port) if (n, p) == (node, port) else (n, p) for n, p in self._outputs
        ]

    def set_outputs(self, outputs: list[tuple[Node, int]]) -> None:
        """Declare the graph outputs as ``(producer node, output index)`` pairs, in order."""
        if not isinstance(outputs, (list, tuple)):
            raise GeTypeError(
                f"outputs must be a list of (Node, int), got {type(outputs).__name__}"
            )
        checked = []
        for i, item in enumerate(outputs):
            if not (isinstance(item, tuple) and len(item) == 2):
                raise GeTypeError(f"outputs[{i}] must be a (Node, int) pair, got {item!r}")
            node = self._own(item[0], f"outputs[{i}] node")
            port = _check_plain_int(item[1], f"outputs[{i}] index")
            if not 0 <= port < len(node._out_edges):
                raise GraphError(
                    f"outputs[{i}]: Node {node._name} has {len(node._out_edges)} "
                    f"outputs, index {port} is out of range"
                )
            checked.append((node, port))
        self._outputs = checked

    def get_outputs(self) -> list[tuple[Node, int]]:
        """The graph outputs set by ``set_outputs`` (ours)."""
        return list(self._outputs)

    # --- attributes ------------------------------------------------------------------------------
    def get_attr(self, key: str) -> Any:
        check_attr_key(key)
        stored = self._attrs.get(key)
        if stored is None:
            raise GraphError(f"Failed to get attribute '{key}' from Graph {self._name}")
        return ge_attr_python(stored)

    def set_attr(self, key: str, value: Any, value_type: AttrValueType | None = None) -> None:
        """Set a graph attribute; kinds as ``Node.set_attr``."""
        check_attr_key(key)
        self._attrs[key] = (
            infer_attr_value(value) if value_type is None else make_attr_value(value, value_type)
        )

    def has_attr(self, key: str) -> bool:
        return check_attr_key(key) in self._attrs

    def attr_value(self, key: str) -> AttrValue | None:
        """The stored ``AttrValue`` of graph attribute ``key``, ``None`` if absent (ours, as
        ``Node.attr_value``): every kind, where GE's ``get_attr`` reads only GE-PY's kinds."""
        return self._attrs.get(key)

    # --- subgraphs -------------------------------------------------------------------------------
    def _root(self) -> Graph:
        graph = self
        while graph._parent_graph is not None:
            graph = graph._parent_graph
        return graph

    def get_all_subgraphs(self) -> list[Graph]:
        """All subgraphs registered on the root graph, in registration order."""
        return list(self._root()._subgraphs.values())

    def get_subgraph(self, name: str) -> Graph | None:
        if not isinstance(name, str):
            raise GeTypeError(f"name must be a string, got {type(name).__name__}")
        return self._root()._subgraphs.get(name)

    def add_subgraph(self, subgraph: Graph) -> None:
        """GE's ``Graph.add_subgraph``: register ``subgraph``, already attached to a node (by
        ``set_node_subgraph`` or the builder), on this graph's root under its name.

        As GE (GE_ERRORS.md §13.2), the subgraph needs a parent graph and a parent node owned
        by that graph, not this graph: a subgraph attached to another graph is accepted and
        the same object is then registered in both (not copied; its parent stays). Refused
        with ``RuntimeError``, registering nothing: a standalone ``Graph`` (no parent node;
        ``register_subgraph`` (ours) takes one) and a name this root already has.
        """
        _subgraphs.add_subgraph(self, _check_graph(subgraph))

    def register_subgraph(self, subgraph: Graph) -> None:
        """Register a standalone ``subgraph`` (and any subgraphs it holds) on the root graph
        under its name (ours; GE's ``add_subgraph`` refuses a graph without a parent node).

        A name already taken, the root's own name, or a graph that already has a parent fails
        with ``RuntimeError`` and registers nothing.
        """
        _subgraphs.register_subgraph(self, _check_graph(subgraph))

    def remove_subgraph(self, name: str) -> None:
        """Unregister a subgraph; nodes that referred to it lose the reference. An unknown
        name does nothing, as in GE."""
        if not isinstance(name, str):
            raise GeTypeError(f"name must be a string, got {type(name).__name__}")
        _subgraphs.remove_subgraph(self, name)

    def set_node_subgraph(self, node: Node, index: int, subgraph: Graph) -> None:
        """Make ``subgraph`` the ``index``-th subgraph of ``node`` (ours; what GE's op builders
        do for If/While/Case). Registers the subgraph on the root if needed."""
        node = self._own(node, "node")
        if _check_count(index, "index") > len(node._subgraph_names):
            raise GeValueError(
                f"index: node {node._name} has {len(node._subgraph_names)} "
                f"subgraphs; the next one is index {len(node._subgraph_names)}"
            )
        _subgraphs.set_node_subgraph(self, node, int(index), _check_graph(subgraph))

    @property
    def parent_node(self) -> Node | None:
        """The node whose subgraph this is (ours); ``None`` for a root or detached graph."""
        return self._parent_node

    # --- checks, text and files ------------------------------------------------------------------
    def verify(self, *, ops: bool = True) -> None:
        """Check the graph and say what to fix.

        Structure: ownership, unique names, both ends of every link, port ranges, graph outputs,
        subgraph references and parents, acyclicity. With ``ops`` (the default), every node of a
        registered op type must also fit its op: port counts per IR input/output, required
        inputs connected, required attributes present with the declared kind, and output descs
        equal to what the op's infer rule gives. Raises ``ge.error.GraphError`` (a
        ``RuntimeError``) listing every problem found.
        """
        from ge.graph._verify import verify_graph  # noqa: PLC0415  (printer/verifier sit above)

        verify_graph(self, ops=ops)

    def as_text(self) -> str:
        """Our deterministic listing (ours): every node with its inputs, attributes and
        output descs, then the outputs and the subgraphs (``ge.graph._printer``). Golden tests,
        ``GE_DUMP_GRAPH`` dumps and ``.lower().as_text()`` read this; ``str(graph)`` is GE's
        readable dump instead."""
        from ge.graph._printer import format_graph  # noqa: PLC0415

        return format_graph(self)

    def __str__(self) -> str:
        """GE's readable dump (``dump_to_stream(DumpFormat.kReadable)``, GE_ERRORS.md §12.1);
        ``as_text()`` is our fuller listing."""
        return self.dump_to_stream(DumpFormat.kReadable)

    def __repr__(self) -> str:
        try:
            return f"<Graph {self._name!r}: {len(self._nodes)} nodes>"
        except GraphError:  # moved out (``_move_out``): say so instead of failing
            return "<Graph (moved)>"

    def to_dot(self) -> str:
        """The graph as Graphviz DOT text (ours)."""
        from ge.graph._dot import to_dot  # noqa: PLC0415

        return to_dot(self)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter: a drawing (``image/svg+xml``) when Graphviz is installed, else the
        ``as_text()`` listing (``text/html``), never both (JupyterLab would pick the HTML)."""
        from ge.graph._dot import to_mimebundle  # noqa: PLC0415

        return to_mimebundle(self)

    def _repr_svg_(self) -> str | None:
        """The drawing as SVG; ``None`` without Graphviz (or for a graph too big to draw)."""
        from ge.graph._dot import to_svg  # noqa: PLC0415

        return to_svg(self)

    def _repr_html_(self) -> str | None:
        """The listing as HTML, ``None`` when the graph can be drawn: IPython adds every
        ``_repr_*_`` that ``_repr_mimebundle_`` left out, and the HTML must not hide the SVG."""
        from ge.graph._dot import can_draw, to_html  # noqa: PLC0415

        return None if can_draw(self) else to_html(self)

    def dump_to_stream(self, format: DumpFormat = DumpFormat.kReadable) -> str:
        """The graph as text: GE's readable dump (kReadable), protobuf text (kTxt) or
        ONNX-style text (kOnnx)."""
        from ge.graph._dump import dump_text  # noqa: PLC0415

        return dump_text(self, format)

    def dump_to_file(self, format: DumpFormat = DumpFormat.kReadable, suffix: str = "") -> None:
        """Write ``dump_to_stream(format)`` into a numbered file in the current directory."""
        from ge.graph._dump import dump_file  # noqa: PLC0415

        dump_file(self, format, suffix)

    def save_to_air(self, file_path: str | os.PathLike[str]) -> None:
        """Write the graph and all its subgraphs as a binary ``ge.proto.ModelDef`` AIR file."""
        from ge.graph._air import save_air  # noqa: PLC0415

        save_air(self, file_path)

    def load_from_air(self, file_path: str | os.PathLike[str]) -> None:
        """Replace this graph (name included) by the one stored in an AIR file.

        On any error the graph is left exactly as it was.
        """
        from ge.graph._air import load_air  # noqa: PLC0415

        loaded = load_air(file_path)
        self._become(loaded)

    def _move_out(self) -> Graph:
        """A new ``Graph`` that owns this one's contents (nodes, edges, attributes, outputs,
        subgraphs, name); this object is left invalid, as GE-PY's ``Pattern(graph)`` leaves
        the ``Graph`` it moves (ours). Node objects are shared, re-parented to the new graph,
        so ``TensorHolder``s and ``Node``s taken from the old graph stay valid.

        Afterwards every method or property of the old object raises ``GraphError("Failed to
        get Graph name")`` (GE_ERRORS.md §2.1): its slots are deleted and ``__getattr__``, run
        only when a normal look-up fails, turns the missing slot into that error, so the move
        costs nothing on the normal path.
        """
        moved = Graph.__new__(Graph)
        for slot in _STATE_SLOTS:
            setattr(moved, slot, getattr(self, slot))
            delattr(self, slot)
        for node in moved._nodes.values():
            node._graph = moved
        root = moved._root()
        for sub in (*moved._subgraphs.values(), *root._subgraphs.values()):
            if sub is not self and sub._parent_graph is self:
                sub._parent_graph = moved
        if root is not moved and root._subgraphs.get(moved._name) is self:
            root._subgraphs[moved._name] = moved
        return moved

    def __getattr__(self, name: str) -> Any:
        if name in _STATE_SLOTS:  # deleted by ``_move_out``
            raise GraphError("Failed to get Graph name")
        raise AttributeError(f"'Graph' object has no attribute '{name}'")

    def _become(self, other: Graph) -> None:
        if self._parent_graph is not None:
            raise GraphError(
                f"Failed to load graph from AIR format: '{self._name}' is a "
                f"subgraph; load into a root graph"
            )
        for slot in ("_attrs", "_name", "_name_counter", "_nodes", "_outputs", "_subgraphs"):
            setattr(self, slot, getattr(other, slot))
        for node in self._nodes.values():
            node._graph = self
        for sub in self._subgraphs.values():
            if sub._parent_graph is other:
                sub._parent_graph = self

    def __copy__(self) -> NoReturn:
        raise GeError("Graph does not support copy")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise GeError("Graph does not support deepcopy")


_STATE_SLOTS = tuple(slot for slot in Graph.__slots__ if slot != "__weakref__")
