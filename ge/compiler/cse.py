"""Common-subexpression elimination: pure nodes with the same op, inputs and attributes are one.

Two Const nodes with the same desc and bytes are merged too (the builder makes one per Python
number). The first node in topological order is kept; the others' consumers are moved to it.
Nodes with subgraphs or control edges are never merged.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ge.compiler._graphs import is_removable
from ge.graph._printer import format_desc
from ge.graph._verify import topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc

__all__ = ["eliminate_common_subexpressions"]


def _desc_key(desc: TensorDesc) -> Any:
    """What ``format_desc`` shows of ``desc``, as a tuple (no text to build) when it has no
    attributes."""
    if desc._attrs:
        return format_desc(desc)
    return (desc._data_type, desc._format, tuple(desc._shape))


def _attr_key(value: Any) -> Any:
    if isinstance(value, Tensor):
        raw = value._bytes  # host bytes hash as they are; device data is copied out first
        data = raw.data if raw is not None and raw.flags.c_contiguous else value._host_bytes()
        return ("tensor", _desc_key(value._desc), hashlib.sha1(data).digest())
    if isinstance(value, tuple):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, repr(value))


def _key(node: Node) -> Any:
    inputs = tuple(None if e is None else (id(e[0]), e[1]) for e in node.inputs)
    attrs = node.attr_values
    attrs_key = (
        tuple(sorted((k, v.type, _attr_key(v.value)) for k, v in attrs.items())) if attrs else ()
    )
    outputs = tuple(_desc_key(d) for d in node.output_descs)
    return (node.type, inputs, attrs_key, outputs, tuple(node.input_names))


def eliminate_common_subexpressions(graph: Graph) -> bool:
    seen: dict[Any, Node] = {}
    changed = False
    order, _ = topological_order(graph)
    for node in order:
        if not is_removable(node) or node.subgraph_names or node.control_inputs:
            continue
        key = _key(node)
        keeper = seen.get(key)
        if keeper is None:
            seen[key] = node
            continue
        for port in range(node.get_outputs_size()):
            graph.replace_all_uses(node, port, keeper, port)
        graph.remove_node(node)
        changed = True
    return changed
