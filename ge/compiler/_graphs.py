"""Small helpers the compiler passes share: walking graphs, reading constants, replacing nodes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.ops.infer import const_array
from ge.ops.schema import OpDef
from ge.passes.rewrite import is_removable  # one rule for every rewrite: pure, no control out

__all__ = ["ConstValues", "all_graphs", "const_array", "is_removable", "make_const", "op_of"]


def all_graphs(graph: Graph) -> Iterator[Graph]:
    """The root graph and every registered subgraph."""
    yield graph
    yield from graph.get_all_subgraphs()


class ConstValues:
    """``const_array`` for one pass, each node read once. Reading a Const copies its bytes, and
    a pass asks for the same few Consts at every user (CSE leaves one Const per number). The
    arrays are shared, hence read-only; the pass must not change a Const it has read."""

    def __init__(self) -> None:
        self._read: dict[int, tuple[Node, np.ndarray | None]] = {}  # the node keeps its id

    def __call__(self, node: Node) -> np.ndarray | None:
        hit = self._read.get(id(node))
        if hit is not None:
            return hit[1]
        value = const_array(node)
        if value is not None:
            value.flags.writeable = False
        self._read[id(node)] = (node, value)
        return value


def op_of(node: Node) -> OpDef | None:
    op: OpDef | None = node.op
    return op


def make_const(graph: Graph, name: str, value: np.ndarray, like: Node, port: int) -> Node:
    """A Const node holding ``value`` with the desc of ``like:port``, its shape the value's
    (where ``like`` recorded ``-1`` dims, the value knows them)."""
    from ge.ops.construct import add_op_node  # noqa: PLC0415  (construct imports infer)

    tensor = Tensor.from_numpy(np.ascontiguousarray(value).reshape(value.shape))
    desc = like.get_output_desc(port)  # a copy: it becomes the Const's
    tensor.set_data_type(desc.get_data_type())
    desc.set_shape(list(value.shape))
    const = add_op_node(graph, "Const", [], {"value": tensor}, name=name)
    const.update_output_desc(0, desc)
    return const


def fresh_name(graph: Graph, base: str) -> str:
    if not graph.has_node(base):
        return base
    k = 1
    while graph.has_node(f"{base}_{k}"):
        k += 1
    return f"{base}_{k}"
