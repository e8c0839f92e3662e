"""``ge.graph.Node``: one operation in a ``Graph``, with def-use links both ways.

A node is a slotted record owned by exactly one graph. Each input port holds at most one
producer ``(node, out_port)``; each output port holds its consumers ``[(node, in_port), ...]``,
so consumers are found without scanning the graph. Edges are added and removed only through
``Graph`` methods, which keep both ends consistent; a node's own methods edit its attributes
and descriptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from ge.error import GeError, GeTypeError, GraphError
from ge.graph._attr import AttrValue, check_attr_key, infer_attr_value, make_attr_value
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType

if TYPE_CHECKING:
    from ge.graph.graph import Graph

__all__ = ["Node"]

Port = tuple["Node", int]


def _attr_value(value: object, value_type: AttrValueType | None) -> AttrValue:
    return infer_attr_value(value) if value_type is None else make_attr_value(value, value_type)


def _check_index(index: object, size: int, what: str, node: Node) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise GeTypeError(f"{what} index must be an int, got {type(index).__name__}")
    if not 0 <= index < size:
        raise GraphError(
            f"Node {node._name} ({node._type}) has {size} {what}s; "
            f"{what} index {index} is out of range"
        )
    return index


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
        raise GeError("Node cannot be constructed directly; use Graph.add_node or ge.es")

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
        """A node with unconnected ports; ``input_descs`` (one per input, owned by the node
        from now on) saves making scalar descs a caller replaces at once."""
        node = cls.__new__(cls)
        node._graph = graph
        node._name = name
        node._type = op_type
        node._attrs = {}
        scalar = TensorDesc._scalar
        node._input_descs = (
            [scalar() for _ in range(num_inputs)] if input_descs is None else input_descs
        )
        node._output_descs = [scalar() for _ in range(num_outputs)]
        node._input_names = [""] * num_inputs
        node._output_names = [""] * num_outputs
        node._in_edges = [None] * num_inputs
        node._out_edges = [[] for _ in range(num_outputs)]
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
    _input_descs: list[TensorDesc]
    _output_descs: list[TensorDesc]
    _input_names: list[str] | tuple[str, ...]  # never changed in place: may be shared
    _output_names: list[str] | tuple[str, ...]
    _in_edges: list[Port | None]
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

    # --- attributes ------------------------------------------------------------------------------
    def get_attr(self, key: str) -> Any:
        """Attribute value as a Python value; ``RuntimeError`` if absent."""
        check_attr_key(key)
        if key not in self._attrs:
            raise GraphError(f"Node {self._name} has no attribute {key!r}")
        return self._attrs[key].to_python()

    def set_attr(self, key: str, value: Any, value_type: AttrValueType | None = None) -> None:
        """Set an attribute; its kind follows GE-PY's rules unless ``value_type`` (ours) is given"""
        check_attr_key(key)
        self._attrs[key] = _attr_value(value, value_type)

    def has_attr(self, attr_name: str) -> bool:
        check_attr_key(attr_name)
        return attr_name in self._attrs

    def get_attr_names(self) -> list[str]:
        """Names of the node's attributes, in setting order (ours)."""
        return list(self._attrs)

    def get_input_attr(self, attr_name: str, input_index: int) -> Any:
        desc = self._input_descs[_check_index(input_index, len(self._input_descs), "input", self)]
        return self._desc_attr(desc, attr_name, f"input {input_index}")

    def set_input_attr(self, attr_name: str, input_index: int, value: Any) -> None:
        check_attr_key(attr_name)
        i = _check_index(input_index, len(self._input_descs), "input", self)
        self._input_descs[i]._attrs[attr_name] = infer_attr_value(value)

    def get_output_attr(self, attr_name: str, output_index: int) -> Any:
        desc = self._output_descs[
            _check_index(output_index, len(self._output_descs), "output", self)
        ]
        return self._desc_attr(desc, attr_name, f"output {output_index}")

    def set_output_attr(self, attr_name: str, output_index: int, value: Any) -> None:
        check_attr_key(attr_name)
        i = _check_index(output_index, len(self._output_descs), "output", self)
        self._output_descs[i]._attrs[attr_name] = infer_attr_value(value)

    def _desc_attr(self, desc: TensorDesc, attr_name: str, where: str) -> Any:
        check_attr_key(attr_name)
        if attr_name not in desc._attrs:
            raise GraphError(f"Node {self._name} {where} has no attribute {attr_name!r}")
        return desc._attrs[attr_name].to_python()

    # --- descriptions ----------------------------------------------------------------------------
    def get_inputs_size(self) -> int:
        return len(self._input_descs)

    def get_outputs_size(self) -> int:
        return len(self._output_descs)

    def get_input_desc(self, index: int) -> TensorDesc:
        return self._input_descs[
            _check_index(index, len(self._input_descs), "input", self)
        ]._clone()

    def update_input_desc(self, index: int, tensor_desc: TensorDesc) -> None:
        i = _check_index(index, len(self._input_descs), "input", self)
        if not isinstance(tensor_desc, TensorDesc):
            raise GeTypeError(f"tensor_desc must be a TensorDesc, got {type(tensor_desc).__name__}")
        self._input_descs[i] = tensor_desc._clone()

    def get_output_desc(self, index: int) -> TensorDesc:
        i = _check_index(index, len(self._output_descs), "output", self)
        return self._output_descs[i]._clone()

    def update_output_desc(self, index: int, tensor_desc: TensorDesc) -> None:
        i = _check_index(index, len(self._output_descs), "output", self)
        if not isinstance(tensor_desc, TensorDesc):
            raise GeTypeError(f"tensor_desc must be a TensorDesc, got {type(tensor_desc).__name__}")
        self._output_descs[i] = tensor_desc._clone()

    def get_input_names(self) -> list[str]:
        """IR names of the input ports (ours; ``""`` where unknown)."""
        return list(self._input_names)

    def get_output_names(self) -> list[str]:
        """IR names of the output ports (ours; ``""`` where unknown)."""
        return list(self._output_names)

    # --- links -----------------------------------------------------------------------------------
    def get_in_data_nodes_and_port_indexes(self, in_index: int) -> tuple[Node, int]:
        """Producer ``(node, out_port)`` of input ``in_index``; ``RuntimeError`` if unconnected."""
        edge = self._in_edges[_check_index(in_index, len(self._in_edges), "input", self)]
        if edge is None:
            raise GraphError(f"Node {self._name} input {in_index} is not connected")
        return edge

    def get_out_data_nodes_and_port_indexes(self, out_index: int) -> list[tuple[Node, int]]:
        """Consumers ``[(node, in_port), ...]`` of output ``out_index``, in edge order."""
        return list(self._out_edges[_check_index(out_index, len(self._out_edges), "output", self)])

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
