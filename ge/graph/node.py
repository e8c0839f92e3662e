"""``ge.graph.Node``: one operation in a ``Graph``, with def-use links both ways.

A node is a slotted record owned by exactly one graph. Each input port holds at most one
producer ``(node, out_port)``; each output port holds its consumers ``[(node, in_port), ...]``,
so consumers are found without scanning the graph. Edges are added and removed only through
``Graph`` methods, which keep both ends consistent; a node's own methods edit its attributes
and descriptions.

Two ways to read a node. GE's getters (``get_output_desc``, ``get_attr``,
``get_out_data_nodes_and_port_indexes``, ...) return copies the caller may keep and change.
The accessors of ours (``op``, ``inputs``/``input(i)``, ``users(port)``/``users_by_port``,
``output_desc(i)``/``output_descs``, ``input_desc(i)``/``input_descs``, ``attr_value(name)``/
``attr_values``, ``control_inputs``/``control_outputs``, ``subgraph_names``, ``input_names``/
``output_names``) are the fast path passes and the compiler read graphs through: they return
the node's own objects, typed read-only (``Sequence``, ``Mapping``), and never copy.

A desc on a node is a value that is never changed in place: an edit puts a changed copy in the
port's place (``update_*_desc``, ``set_*_attr``, ``TensorHolder.set_shape``, ...). So one desc
object may be shared: a builder gives a new node's input ports its producers' output descs
themselves, and a Const's output desc is its tensor's (a copy per edge was two more GC-tracked
objects per binary op for every full collection to walk). Code that writes a desc's fields
must write a copy it then stores, never one it read from a node.

Decision (measured on CPython 3.11): returning the node's own list from a property costs
~38 ns a call, a ``tuple`` copy ~57 ns for two edges and grows with the fan-out (a Data with
20k readers), a ``MappingProxyType`` ~81 ns; keeping tuples inside instead would make adding an
edge rebuild the tuple (quadratic for wide fan-outs). So the views are the containers
themselves, and the contract is the type: **do not mutate what these return** (edit through
``Graph`` methods, ``update_*_desc`` or ``Graph.set_output_desc``); a mutation would bypass the
checks that keep both ends of every edge consistent. A view is live: it shows later edits of
the node, so copy it (``list(node.users(0))``) before editing the graph while walking it.

    >>> from ge.graph import Graph
    >>> g = Graph("g")
    >>> x = g.add_node("Data", "x", num_outputs=1)
    >>> y = g.add_node("Relu", "y", num_inputs=1, num_outputs=1)
    >>> g.add_data_edge(x, 0, y, 0)
    >>> y.input(0)[0].name, [(n.name, p) for n, p in x.users(0)]
    ('x', [('y', 0)])
    >>> y.output_desc(0) is y.output_desc(0), y.get_output_desc(0) is y.output_desc(0)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ge.error import GeError, GeTypeError, GraphError
from ge.graph._attr import (
    AttrValue,
    check_attr_key,
    ge_attr_python,
    infer_attr_value,
    make_attr_value,
)
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType

if TYPE_CHECKING:
    from ge.graph.graph import Graph
    from ge.ops.schema import OpDef

__all__ = ["Node"]

Port = tuple["Node", int]


def _attr_value(value: object, value_type: AttrValueType | None) -> AttrValue:
    return infer_attr_value(value) if value_type is None else make_attr_value(value, value_type)


def _find_op(op_type: str) -> OpDef | None:
    """The registered ``OpDef`` of ``op_type`` (``ge.ops`` sits above ``ge.graph``, so it is
    imported on first use, then the look-up is bound here)."""
    global _find_op  # noqa: PLW0603  (replaced once by the registry's own function)
    from ge.ops.registry import find_op  # noqa: PLC0415

    _find_op = find_op
    return find_op(op_type)


def _check_index(index: object, size: int, what: str, node: Node) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise GeTypeError(f"{what} index must be an int, got {type(index).__name__}")
    if not 0 <= index < size:
        raise GraphError(
            f"Node {node._name} ({node._type}) has {size} {what}s; "
            f"{what} index {index} is out of range"
        )
    return index


def _ge_index(index: object, what: str) -> int:
    """GE's index type check (``"Input index must be an integer"``): any ``int``, ``bool``
    included (read as 0/1), as GE-PY's ``isinstance(x, int)``."""
    if not isinstance(index, int):
        raise GeTypeError(f"{what} index must be an integer, got {type(index).__name__}")
    return int(index)


def _port(index: int, size: int) -> int | None:
    """``index`` if it is one of ``size`` ports, else ``None`` (GE's C call fails)."""
    return index if 0 <= index < size else None


def _range_note(node: Node, size: int, what: str) -> str:
    return f": node {node._name} ({node._type}) has {size} {what}s"


class Node:
    """A node of a ``Graph``. Not constructible directly: use ``Graph.add_node`` (ours) or the
    ``ge.es`` builder."""

    __slots__ = (
        "__weakref__",
        "_attrs",
        "_graph",
        "_in_ctrl",
        "_in_edges",
        "_input_descs",
        "_input_names",
        "_name",
        "_op",
        "_out_ctrl",
        "_out_edges",
        "_output_descs",
        "_output_names",
        "_source",
        "_subgraph_names",
        "_type",
    )

    def __init__(self) -> None:
        raise GeError(
            "Node objects should not be created directly. Use Graph.add_node or the ge.es builder"
        )

    @classmethod
    def _create(
        cls,
        graph: Graph,
        name: str,
        op_type: str,
        num_inputs: int,
        num_outputs: int,
        input_descs: list[TensorDesc] | None = None,
    ) -> Node:
        """A node with unconnected, unnamed ports; ``input_descs`` (one per input, owned by
        the node from now on) saves making scalar descs a caller replaces at once."""
        return cls._create_named(
            graph, name, op_type, [""] * num_inputs, [""] * num_outputs, input_descs
        )

    @classmethod
    def _create_named(
        cls,
        graph: Graph,
        name: str,
        op_type: str,
        input_names: list[str] | tuple[str, ...],
        output_names: list[str] | tuple[str, ...],
        input_descs: list[TensorDesc] | None = None,
        output_descs: list[TensorDesc] | None = None,
    ) -> Node:
        """A node with unconnected ports named ``input_names``/``output_names`` (kept, not
        copied: see the slot types); ``input_descs``/``output_descs`` (one per port, owned by
        the node from now on) save making scalar descs a caller replaces at once. The one
        place nodes are made: it runs once per node of every graph built, so it is flat."""
        node = cls.__new__(cls)
        node._graph = graph
        node._name = name
        node._type = op_type
        node._attrs = {}
        num_inputs = len(input_names)
        scalar = TensorDesc._scalar
        if not num_inputs:  # a Const or Data: one shared empty tuple, no GC-tracked lists
            node._input_descs = ()
            node._in_edges = ()
        else:
            node._input_descs = (
                [scalar() for _ in range(num_inputs)] if input_descs is None else input_descs
            )
            node._in_edges = [None] * num_inputs
        if output_descs is None:
            output_descs = (
                [scalar()] if len(output_names) == 1 else [scalar() for _ in output_names]
            )
        node._output_descs = output_descs
        node._input_names = input_names
        node._output_names = output_names
        # (a comprehension is a call in CPython 3.11: most nodes have one output)
        node._out_edges = [[]] if len(output_names) == 1 else [[] for _ in output_names]
        node._in_ctrl = ()  # shared until written: see Graph's link_control
        node._out_ctrl = ()
        node._subgraph_names = ()
        node._source = None
        node._op = None
        return node

    # The slot types, for readers and mypy.
    _graph: Graph | None
    _name: str
    _type: str
    _attrs: dict[str, AttrValue]
    _input_descs: list[TensorDesc] | tuple[()]  # () when there are no inputs (shared)
    _output_descs: list[TensorDesc]
    _input_names: list[str] | tuple[str, ...]  # never changed in place: may be shared
    _output_names: list[str] | tuple[str, ...]
    _in_edges: list[Port | None] | tuple[()]  # () when there are no inputs (shared)
    _out_edges: list[list[Port]]
    _in_ctrl: list[Node] | tuple[()]
    _out_ctrl: list[Node] | tuple[()]
    _subgraph_names: list[str] | tuple[()]
    _source: str | None
    _op: Any

    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._type

    @property
    def graph(self) -> Graph | None:
        """The owning graph (ours); ``None`` once the node was removed."""
        return self._graph

    @property
    def op(self) -> OpDef | None:
        """The registered ``OpDef`` of the node's type (ours): the one the builder resolved
        when it made the node, else the registry's now; ``None`` for an unregistered type."""
        op = self._op
        return op if op is not None else _find_op(self._type)

    # --- read-only views (ours): the node's own containers, never copies; see the module doc -
    @property
    def inputs(self) -> Sequence[Port | None]:
        """The producer ``(node, out_port)`` of each input port, ``None`` where unconnected."""
        return self._in_edges

    def input(self, index: int) -> Port | None:
        """The producer ``(node, out_port)`` of input ``index``; ``None`` if unconnected (GE's
        ``get_in_data_nodes_and_port_indexes`` raises instead). ``RuntimeError`` if ``index``
        is not an input of the node."""
        edges = self._in_edges
        if type(index) is int and 0 <= index < len(edges):
            return edges[index]
        return edges[_check_index(index, len(edges), "input", self)]

    def users(self, port: int = 0) -> Sequence[Port]:
        """The consumers ``(node, in_port)`` of output ``port``, in edge order (graph outputs
        are not edges: see ``Graph.get_outputs``). ``RuntimeError`` if ``port`` is not an
        output of the node."""
        outs = self._out_edges
        if type(port) is int and 0 <= port < len(outs):
            return outs[port]
        return outs[_check_index(port, len(outs), "output", self)]

    @property
    def users_by_port(self) -> Sequence[Sequence[Port]]:
        """``users(p)`` for every output port ``p``, in port order."""
        return self._out_edges

    def output_desc(self, index: int) -> TensorDesc:
        """The desc of output ``index`` itself, not a copy (GE's ``get_output_desc`` copies).
        Read it; to change it, ``Graph.set_output_desc`` or ``update_output_desc``."""
        descs = self._output_descs
        if type(index) is int and 0 <= index < len(descs):
            return descs[index]
        return descs[_check_index(index, len(descs), "output", self)]

    @property
    def output_descs(self) -> Sequence[TensorDesc]:
        """The desc of every output, the node's own objects."""
        return self._output_descs

    def input_desc(self, index: int) -> TensorDesc:
        """The desc recorded for input ``index`` itself, not a copy (see ``output_desc``)."""
        descs = self._input_descs
        if type(index) is int and 0 <= index < len(descs):
            return descs[index]
        return descs[_check_index(index, len(descs), "input", self)]

    @property
    def input_descs(self) -> Sequence[TensorDesc]:
        """The desc recorded for every input, the node's own objects."""
        return self._input_descs

    def attr_value(self, name: str) -> AttrValue | None:
        """The stored ``AttrValue`` of attribute ``name`` (an immutable value: ``.type`` and
        ``.value``, lists as tuples), or ``None`` if the node has none; ``get_attr`` converts
        to a fresh Python value instead."""
        return self._attrs.get(name)

    @property
    def attr_values(self) -> Mapping[str, AttrValue]:
        """Every attribute's stored ``AttrValue`` by name, in setting order."""
        return self._attrs

    @property
    def control_inputs(self) -> Sequence[Node]:
        """The nodes this one runs after through control edges."""
        return self._in_ctrl

    @property
    def control_outputs(self) -> Sequence[Node]:
        """The nodes that run after this one through control edges."""
        return self._out_ctrl

    @property
    def subgraph_names(self) -> Sequence[str]:
        """Instance names of the node's subgraphs, in IR order (``""``: removed)."""
        return self._subgraph_names

    @property
    def input_names(self) -> Sequence[str]:
        """IR names of the input ports (``""`` where unknown)."""
        return self._input_names

    @property
    def output_names(self) -> Sequence[str]:
        """IR names of the output ports (``""`` where unknown)."""
        return self._output_names

    # --- attributes ------------------------------------------------------------------------------
    def get_attr(self, key: str) -> Any:
        """Attribute value as a Python value; ``RuntimeError`` if absent, or of a kind GE-PY
        cannot read (``attr_value(key).value``, ours, reads every kind)."""
        check_attr_key(key)
        stored = self._attrs.get(key)
        if stored is None:
            raise GraphError(f"Failed to get attribute '{key}' from Node {self._name}")
        return ge_attr_python(stored)

    def set_attr(self, key: str, value: Any, value_type: AttrValueType | None = None) -> None:
        """Set an attribute; its kind follows GE-PY's rules unless ``value_type`` (ours) is
        given: a kind GE-PY's rules refuse (a list of int lists, a desc, ...) is stored with
        it, e.g. ``set_attr("pads", [[1, 2]], AttrValueType.VT_LIST_LIST_INT)``."""
        check_attr_key(key)
        self._attrs[key] = _attr_value(value, value_type)

    def has_attr(self, attr_name: str) -> bool:
        check_attr_key(attr_name, "attr_name must be a string")
        return attr_name in self._attrs

    def get_attr_names(self) -> list[str]:
        """Names of the node's attributes, in setting order (ours)."""
        return list(self._attrs)

    def _desc_of(
        self, attr_name: object, index: object, side: str
    ) -> tuple[int, TensorDesc | None]:
        """GE's checks of ``get/set_<side>_attr``: the name, then the index; the desc of that
        port, ``None`` where it has none (GE's C call fails)."""
        check_attr_key(attr_name, "Attribute name must be a string")
        i = _ge_index(index, side.capitalize())
        descs = self._input_descs if side == "input" else self._output_descs
        port = _port(i, len(descs))
        return i, None if port is None else descs[port]

    def get_input_attr(self, attr_name: str, input_index: int) -> Any:
        return self._get_desc_attr(attr_name, input_index, "input")

    def set_input_attr(self, attr_name: str, input_index: int, value: Any) -> None:
        self._set_desc_attr(attr_name, input_index, value, "input")

    def get_output_attr(self, attr_name: str, output_index: int) -> Any:
        return self._get_desc_attr(attr_name, output_index, "output")

    def set_output_attr(self, attr_name: str, output_index: int, value: Any) -> None:
        self._set_desc_attr(attr_name, output_index, value, "output")

    def _get_desc_attr(self, attr_name: str, index: int, side: str) -> Any:
        i, desc = self._desc_of(attr_name, index, side)
        stored = None if desc is None else desc._attrs.get(attr_name)
        if stored is None:
            why = (
                _range_note(
                    self, len(self._input_descs if side == "input" else self._output_descs), side
                )
                if desc is None
                else ": no such attribute"
            )
            raise GraphError(
                f"Failed to get Node {self._name} {side} attribute '{attr_name}' for index {i}{why}"
            )
        return ge_attr_python(stored)

    def _set_desc_attr(self, attr_name: str, index: int, value: Any, side: str) -> None:
        i, desc = self._desc_of(attr_name, index, side)
        stored = infer_attr_value(value)
        if desc is None:
            size = len(self._input_descs if side == "input" else self._output_descs)
            raise GraphError(
                f"Failed to set Node {self._name} {side} attribute '{attr_name}' for index "
                f"{i}{_range_note(self, size, side)}"
            )
        descs = self._input_descs if side == "input" else self._output_descs
        assert descs, side  # ``desc`` is one of them: a list, not the shared ()
        twin = desc._clone()  # a new desc, not an edit: ``desc`` may be shared (module doc)
        twin._attrs[attr_name] = stored
        descs[i] = twin

    # --- descriptions ----------------------------------------------------------------------------
    def get_inputs_size(self) -> int:
        return len(self._input_descs)

    def get_outputs_size(self) -> int:
        return len(self._output_descs)

    def get_input_desc(self, index: int) -> TensorDesc:
        return self._ge_desc(index, "input", self._input_descs)._clone()

    def update_input_desc(self, index: int, tensor_desc: TensorDesc) -> None:
        self._update_desc(index, tensor_desc, "input", self._input_descs)

    def get_output_desc(self, index: int) -> TensorDesc:
        return self._ge_desc(index, "output", self._output_descs)._clone()

    def update_output_desc(self, index: int, tensor_desc: TensorDesc) -> None:
        self._update_desc(index, tensor_desc, "output", self._output_descs)

    def _ge_desc(self, index: object, side: str, descs: list[TensorDesc] | tuple[()]) -> TensorDesc:
        i = _ge_index(index, side.capitalize())
        port = _port(i, len(descs))
        if port is None:
            raise GraphError(
                f"Failed to get {side} desc for index {i}{_range_note(self, len(descs), side)}"
            )
        return descs[port]

    def _update_desc(
        self, index: object, tensor_desc: object, side: str, descs: list[TensorDesc] | tuple[()]
    ) -> None:
        i = _ge_index(index, side.capitalize())
        if not isinstance(tensor_desc, TensorDesc):
            raise GeTypeError(f"tensor_desc must be a TensorDesc, got {type(tensor_desc).__name__}")
        port = _port(i, len(descs))
        if port is None or not descs:  # (no ports: the shared empty tuple)
            raise GraphError(
                f"Failed to update {side} desc for index {i}{_range_note(self, len(descs), side)}"
            )
        descs[port] = tensor_desc._clone()

    def get_input_names(self) -> list[str]:
        """IR names of the input ports (ours; ``""`` where unknown)."""
        return list(self._input_names)

    def get_output_names(self) -> list[str]:
        """IR names of the output ports (ours; ``""`` where unknown)."""
        return list(self._output_names)

    # --- links -----------------------------------------------------------------------------------
    def get_in_data_nodes_and_port_indexes(self, in_index: int) -> tuple[Node, int]:
        """Producer ``(node, out_port)`` of input ``in_index``; ``RuntimeError`` if the input
        does not exist or is unconnected (``input(i)``, ours, gives ``None`` for that)."""
        i = _ge_index(in_index, "Input")
        port = _port(i, len(self._in_edges))
        edge = None if port is None else self._in_edges[port]
        if edge is None:
            why = (
                _range_note(self, len(self._in_edges), "input")
                if port is None
                else ": the input is not connected"
            )
            raise GraphError(f"Failed to get input data node for index {i}{why}")
        return edge

    def get_out_data_nodes_and_port_indexes(self, out_index: int) -> list[tuple[Node, int]]:
        """Consumers ``[(node, in_port), ...]`` of output ``out_index``, in edge order; ``[]``
        for an output the node does not have, as in GE."""
        port = _port(_ge_index(out_index, "Output"), len(self._out_edges))
        return [] if port is None else list(self._out_edges[port])

    def get_in_control_nodes(self) -> list[Node]:
        return list(self._in_ctrl)

    def get_out_control_nodes(self) -> list[Node]:
        return list(self._out_ctrl)

    def get_subgraph_names(self) -> list[str]:
        """Instance names of the node's subgraphs, in IR subgraph order (ours)."""
        return list(self._subgraph_names)

    @property
    def source(self) -> str | None:
        """``file:line`` of the user code that built the node, when known (ours)."""
        return self._source

    def __repr__(self) -> str:
        return f"<Node {self._name}: {self._type}>"

    def __copy__(self) -> NoReturn:
        raise GeError("Node does not support copy")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise GeError("Node does not support deepcopy")
