"""``GeUtils``: whole-graph shape inference and the "has a compiled kernel" query."""

from __future__ import annotations

from typing import Any

from ge.error import GeError, GeTypeError
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.ops.infer import infer_graph
from ge.ops.registry import find_op

__all__ = ["GeUtils"]


class GeUtils:
    """GE-PY's ``ge.utils.GeUtils`` (static methods)."""

    @staticmethod
    def infer_shape(graph: Graph, input_shapes: list[list[int]]) -> None:
        """Infer every node's output shape and dtype (subgraphs included) from the given input
        shapes (``input_shapes[i]`` for the Data node with ``index`` i). Only the descs change;
        no other optimisation runs. On failure (``RuntimeError``) the graph is left as it was.
        """
        if not isinstance(graph, Graph):
            raise GeTypeError(f"graph must be a Graph, got {type(graph).__name__}")
        if not isinstance(input_shapes, list) or not all(
            isinstance(s, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in s)
            for s in input_shapes
        ):
            raise GeTypeError("input_shapes must be a list of lists of int")
        saved = graph.save_descs()
        try:
            infer_graph(graph, input_shapes)
        except GeError:
            graph.restore_descs(saved)
            raise

    @staticmethod
    def check_node_support_on_aicore(node: Node) -> tuple[bool, str]:
        """Whether ``node`` has a compiled kernel path (ge's stand-in for AICore support),
        and if not, why. Nodes without one still run, on their op's numpy reference."""
        if not isinstance(node, Node):
            raise GeTypeError(f"node must be a Node, got {type(node).__name__}")
        from ge.compiler.kernels import LOWERINGS  # noqa: PLC0415  (compiler sits above utils)

        op: Any = find_op(node.type)
        if op is None:
            return False, f"op type {node.type!r} is not registered"
        if op.io or node.type == "Const":
            return True, ""
        if node.type in LOWERINGS:
            return True, ""
        return False, (
            f"{node.type} has no compiled kernel yet; it runs on its numpy reference implementation"
        )
