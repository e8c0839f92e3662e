"""``str(graph)``: a deterministic, readable listing, one line per node.

    graph demo {
      x = Data() {index=0} -> f32[2,3]
      Relu_0 = Relu(x:0) -> f32[2,3]
      return Relu_0:0
    }

Inputs read ``producer:port`` (``_`` for an unconnected input), control inputs ``^producer``;
attributes are sorted by name; outputs show dtype and shape, and the format when it is not ND.
Subgraphs follow the root graph, each in its own block naming its parent node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ge.graph._attr import AttrValue, NamedAttrs
from ge.graph._dtypes import dtype_info
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import DataType, Format

if TYPE_CHECKING:
    from ge.graph.graph import Graph
    from ge.graph.node import Node

__all__ = ["format_desc", "format_graph", "format_value"]

_MAX_BYTES = 16


def format_desc(desc: TensorDesc) -> str:
    """``f32[2,3]``; ``@NCHW`` when the format is not ND; tensor attrs in braces."""
    text = f"{dtype_info(desc._data_type).short}[{','.join(map(str, desc._shape))}]"
    if desc._format != Format.FORMAT_ND:
        text += f"@{desc._format.name.removeprefix('FORMAT_')}"
    if desc._attrs:
        text += _format_attrs(desc._attrs)
    return text


def format_value(value: Any) -> str:
    """One attribute value, compactly and unambiguously."""
    from ge.graph.graph import Graph  # noqa: PLC0415  (graph.py imports this module lazily)
    from ge.graph.tensor import Tensor  # noqa: PLC0415

    if isinstance(value, tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, DataType):
        return value.name
    if isinstance(value, Tensor):
        return f"tensor<{format_desc(value._desc)}>{value._preview()}"
    if isinstance(value, TensorDesc):
        return f"desc<{format_desc(value)}>"
    if isinstance(value, Graph):
        return f"graph<{value._name}>"
    if isinstance(value, NamedAttrs):
        return f"{value.name}{_format_attrs(value.attrs)}"
    if isinstance(value, float):
        return str(np.float32(value))  # attrs are float32: print the shortest exact text
    if isinstance(value, bytes):
        cut = value[:_MAX_BYTES]
        return repr(cut) + (f"...({len(value)} bytes)" if len(value) > _MAX_BYTES else "")
    return repr(value)


def _format_attrs(attrs: dict[str, AttrValue] | Any) -> str:
    if not attrs:
        return ""
    return "{" + ", ".join(f"{k}={format_value(attrs[k].value)}" for k in sorted(attrs)) + "}"


def _format_node(node: Node) -> str:
    inputs = [("_" if e is None else f"{e[0]._name}:{e[1]}") for e in node._in_edges]
    inputs += [f"^{src._name}" for src in node._in_ctrl]
    line = f"{node._name} = {node._type}({', '.join(inputs)})"
    if node._attrs:
        line += " " + _format_attrs(node._attrs)
    if node._subgraph_names:
        line += f" subgraphs=[{', '.join(n or '_' for n in node._subgraph_names)}]"
    outs = [format_desc(d) for d in node._output_descs]
    if len(outs) == 1:
        line += f" -> {outs[0]}"
    elif outs:
        line += f" -> ({', '.join(outs)})"
    return line


def _format_block(graph: Graph, header: str) -> list[str]:
    lines = [f"{header} {{"]
    if graph._attrs:
        lines.append(f"  attrs {_format_attrs(graph._attrs)}")
    lines += [f"  {_format_node(n)}" for n in graph._nodes.values()]
    if graph._outputs:
        lines.append("  return " + ", ".join(f"{n._name}:{i}" for n, i in graph._outputs))
    lines.append("}")
    return lines


def format_graph(graph: Graph) -> str:
    lines = _format_block(graph, f"graph {graph._name}")
    if graph._parent_graph is None:
        for sub in graph._subgraphs.values():
            parent = sub._parent_node._name if sub._parent_node is not None else "-"
            lines += _format_block(sub, f"subgraph {sub._name} (parent {parent})")
    return "\n".join(lines)
