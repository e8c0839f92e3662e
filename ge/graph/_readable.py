"""``str(graph)`` / ``dump_to_stream(DumpFormat.kReadable)``: GE's readable dump
(``ge::ReadableDump``, GE_ERRORS.md §12.1), character for character.

    graph("g"):
      %input_0 : [#users=1] = Node[type=Data] (attrs = {index: 0})
      %Const_0 : [#users=1] = Node[type=Const] (attrs = {value: [1.000000]})
      %Add_1 : [#users=1] = Node[type=Add] (inputs = (x1=%input_0, x2=%Const_0))

      return (%Add_1)

The rules, as GE's: one line per direct node but NetOutput, in creation order; ``#users`` is
the node's output count; a node with several outputs adds a ``get_element`` line per output
(``ret``, ``ret_1``, ... numbered per graph); inputs are named by the op's IR
(``<name>_<k>`` for a dynamic one, ``_input_<i>`` without IR) and skipped when unconnected or
fed from outside the graph; attributes are the subgraphs first, then the IR attributes present
on the node, in IR order (private and custom attributes are not printed); the ``return`` line
lists NetOutput's connected inputs. The subgraphs referenced by the nodes follow depth-first,
each once, after an empty line.

Decisions where GE's rules rest on GE's types: a graph without a NetOutput node (built with
``Graph.add_node`` and ``set_outputs``) has no return line, as in GE; attribute values render
by their stored kind; a kind GE does not print (descs, graphs, bytes, named attrs, lists of
tensors or of float lists) is skipped. Our own listing is ``Graph.as_text()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeError
from ge.graph._attr import AttrValue
from ge.graph.types import AttrValueType, DataType

if TYPE_CHECKING:
    from ge.graph.graph import Graph
    from ge.graph.node import Node
    from ge.graph.tensor import Tensor
    from ge.ops.schema import OpDef

__all__ = ["readable_dump", "render_attr", "tensor_value_text"]

VT = AttrValueType
_NET_OUTPUT = "NetOutput"

# The dtypes GE's TensorValueUtils prints (others: <not_supported>).
_FLOATS = frozenset({DataType.DT_FLOAT, DataType.DT_DOUBLE, DataType.DT_FLOAT16})
_INTS = frozenset(
    {
        DataType.DT_INT8,
        DataType.DT_INT16,
        DataType.DT_INT32,
        DataType.DT_INT64,
        DataType.DT_UINT8,
        DataType.DT_UINT16,
        DataType.DT_UINT32,
        DataType.DT_UINT64,
    }
)
_NUMPY = {
    DataType.DT_FLOAT: np.float32,
    DataType.DT_DOUBLE: np.float64,
    DataType.DT_FLOAT16: np.float16,
    DataType.DT_INT8: np.int8,
    DataType.DT_INT16: np.int16,
    DataType.DT_INT32: np.int32,
    DataType.DT_INT64: np.int64,
    DataType.DT_UINT8: np.uint8,
    DataType.DT_UINT16: np.uint16,
    DataType.DT_UINT32: np.uint32,
    DataType.DT_UINT64: np.uint64,
    DataType.DT_BOOL: np.bool_,
}


def _to_string(value: float) -> str:
    """C++ ``std::to_string`` of a float or double: ``%f``, six decimals."""
    return f"{float(value):f}"


def _element_text(data_type: DataType) -> Callable[[Any], str]:
    if data_type in _FLOATS:
        return _to_string
    if data_type == DataType.DT_BOOL:
        return lambda x: "true" if x else "false"
    return lambda x: str(int(x))


def tensor_elements(tensor: Tensor) -> list[str] | str:
    """Every element of ``tensor`` as GE's C text gives it, or the marker GE prints instead
    (``<empty>``, ``<invalid>``, ``<not_supported>``): what ``Tensor.get_data`` parses."""
    data_type = tensor._desc._data_type
    np_type = _NUMPY.get(data_type)
    if np_type is None:
        return "<not_supported>"
    raw = tensor._raw()
    if raw is None or raw.size == 0:
        return "<empty>"
    size = np.dtype(np_type).itemsize
    if raw.size % size:
        return "<invalid>"
    text = _element_text(data_type)
    return [text(x) for x in raw.view(np_type).tolist()]


def tensor_value_text(tensor: Tensor) -> str:
    """A tensor value as the readable dump prints it: ``[1 2 3]``, ``[1 2 3 ... 8 9 10]``."""
    try:
        items = tensor_elements(tensor)
    except GeError:  # donated, or its device memory freed: nothing GE could print
        return "<invalid>"
    if isinstance(items, str):
        return items
    if len(items) >= 7:
        items = [*items[:3], "...", *items[-3:]]
    return "[" + " ".join(items) + "]"


def _scalar_text(kind: AttrValueType, value: Any) -> str:
    if kind == VT.VT_INT:
        return str(value)
    if kind == VT.VT_FLOAT:
        return _to_string(value)
    if kind == VT.VT_BOOL:
        return "true" if value else "false"
    if kind == VT.VT_STRING:
        return f'"{value}"' if value else ""
    if kind == VT.VT_DATA_TYPE:
        return str(DataType(value).name)
    return ""


def _list_text(items: list[str]) -> str:
    return "{" + ", ".join(items) + "}"


def render_attr(attr: AttrValue) -> str:
    """An attribute value as GE's ``AttrString`` renders it; ``""`` (not printed) for an
    empty string or list, and for the kinds GE does not print."""
    kind, value = attr.type, attr.value
    if kind == VT.VT_TENSOR:
        return tensor_value_text(value)
    if kind in (VT.VT_LIST_INT, VT.VT_LIST_FLOAT, VT.VT_LIST_BOOL, VT.VT_LIST_DATA_TYPE):
        if not value:
            return ""
        scalar = VT(kind - VT.VT_LIST_BASE)
        return _list_text([_scalar_text(scalar, v) for v in value])
    if kind == VT.VT_LIST_STRING:
        return _list_text([f'"{v}"' for v in value if v]) if value else ""
    if kind == VT.VT_LIST_LIST_INT:
        if not value:
            return ""
        return _list_text([_list_text([str(v) for v in row]) for row in value if row])
    return _scalar_text(kind, value)


def _input_params(node: Node, op: OpDef | None) -> list[str]:
    """The ``param`` of each input port: the IR name, ``<name>_<k>`` for a dynamic input
    (``k`` from 1 for ``For``), ``_input_<i>`` without IR."""
    count = len(node._in_edges)
    if op is None or not op.inputs:
        return [f"_input_{i}" for i in range(count)]
    start = 1 if node._type == "For" else 0
    static = {spec.name for spec in op.inputs if not spec.dynamic}
    dynamic = [spec.name for spec in op.inputs if spec.dynamic]
    seen: dict[str, int] = {}
    params = []
    for i, name in enumerate(node._input_names):
        if name in static:
            params.append(name)
            continue
        group = next((d for d in dynamic if name.startswith(d) and name[len(d) :].isdigit()), None)
        if group is None:
            params.append(f"_input_{i}")
            continue
        k = seen.get(group, start)
        seen[group] = k + 1
        params.append(f"{group}_{k}")
    return params


def _subgraph_params(node: Node, op: OpDef | None) -> list[tuple[str, str]]:
    specs = op.subgraphs if op is not None else ()
    out = []
    k = 0
    for i, instance in enumerate(node._subgraph_names):
        if i < len(specs) and not specs[i].dynamic:
            param = specs[i].name
        elif specs and specs[-1].dynamic and i >= len(specs) - 1:
            param = f"{specs[-1].name}{k}"
            k += 1
        else:
            param = f"_graph_{i}"
        if instance:
            out.append((param, instance))
    return out


class _GraphDump:
    """One graph's lines; the ``ret`` names of its multi-output nodes, assigned first."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes = [n for n in graph._nodes.values() if n._type != _NET_OUTPUT]
        self.members = {id(n) for n in self.nodes}
        self.rets: dict[tuple[int, int], str] = {}
        k = 0
        for node in self.nodes:
            if len(node._out_edges) > 1:
                for port in range(len(node._out_edges)):
                    self.rets[(id(node), port)] = "ret" if k == 0 else f"ret_{k}"
                    k += 1

    def instance(self, node: Node, port: int) -> str | None:
        if id(node) not in self.members:
            return None  # fed from another graph (or from NetOutput): GE skips it
        return self.rets.get((id(node), port), node._name)

    def node_lines(self, node: Node) -> Iterator[str]:
        op = node.op
        inputs = []
        for param, edge in zip(_input_params(node, op), node._in_edges, strict=True):
            if edge is not None:
                instance = self.instance(*edge)
                if instance is not None:
                    inputs.append(f"{param}=%{instance}")
        attrs = [f"{p}: %{i}" for p, i in _subgraph_params(node, op)]
        if op is not None:
            for spec in op.attrs:
                stored = node._attrs.get(spec.name)
                text = render_attr(stored) if stored is not None else ""
                if text:
                    attrs.append(f"{spec.name}: {text}")
        parts = []
        if inputs:
            parts.append(f"inputs = ({', '.join(inputs)})")
        if attrs:
            parts.append(f"attrs = {{{', '.join(attrs)}}}")
        users = len(node._out_edges)
        yield f"  %{node._name} : [#users={users}] = Node[type={node._type}] ({', '.join(parts)})"
        if users > 1:
            for port, consumers in enumerate(node._out_edges):
                ret = self.rets[(id(node), port)]
                yield (
                    f"  %{ret} : [#users={len(consumers)}] = "
                    f"get_element[node=%{node._name}]({port})"
                )

    def return_line(self) -> str | None:
        outputs = []
        for node in self.graph._nodes.values():
            if node._type == _NET_OUTPUT:
                for edge in node._in_edges:
                    if edge is not None:
                        instance = self.instance(*edge)
                        if instance is not None:
                            outputs.append(instance)
                break
        if not outputs:
            return None
        if len(outputs) == 1:
            return f"  return (%{outputs[0]})"
        return "  return (" + ", ".join(f"output_{j}=%{o}" for j, o in enumerate(outputs)) + ")"

    def text(self) -> str:
        lines = [f'graph("{self.graph._name}"):']
        for node in self.nodes:
            lines.extend(self.node_lines(node))
        ret = self.return_line()
        if ret is not None:
            lines += ["", ret]
        return "\n".join(lines) + "\n"


def _referenced(graph: Graph, root: Graph, seen: set[str]) -> Iterator[Graph]:
    """The subgraphs ``graph``'s nodes reference, depth-first, each once (by name)."""
    for node in graph._nodes.values():
        for name in node._subgraph_names:
            if not name or name in seen:
                continue
            sub = root._subgraphs.get(name)
            if sub is None:
                continue
            seen.add(name)
            yield sub
            yield from _referenced(sub, root, seen)


def readable_dump(graph: Graph) -> str:
    """The graph and the subgraphs its nodes reference, as GE's readable dump."""
    root = graph._root()
    blocks = [_GraphDump(graph).text()]
    blocks += [_GraphDump(sub).text() for sub in _referenced(graph, root, {graph._name})]
    return "\n".join(blocks)
