"""Multi-node patterns that have a dedicated kernel: recognised and replaced by one op.

Code traced from numpy (``@ge.jit``) spells a softmax as five ops; the row kernel of
``SoftmaxV2`` does it in one pass over each row with a vectorised exponential. Each pattern
is a matcher returning the replacement's inputs and attributes, or ``None``; a match is
accepted only when every inner value is used inside the pattern alone (so nothing else needs
it) and the replacement has exactly the matched output's desc.

    softmax      Div(e, ReduceSum(e, axes, keep_dims=True)),
                 e = Exp(Sub(x, ReduceMax(x, axes, keep_dims=True)))    -> SoftmaxV2(x, axes)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ge.compiler._graphs import const_array, fresh_name
from ge.compiler.dce import eliminate_dead_nodes
from ge.graph._verify import topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.ops.construct import add_op_node

__all__ = ["PATTERNS", "recognize_patterns"]

Match = tuple[str, list[Any], dict[str, Any]]  # op type, inputs, attributes


def _producer(node: Node, port: int, op_type: str) -> Node | None:
    edge = node._in_edges[port] if port < len(node._in_edges) else None
    return edge[0] if edge is not None and edge[0].type == op_type and edge[1] == 0 else None


def _uses(node: Node) -> int:
    return sum(len(consumers) for consumers in node._out_edges)


def _axes(reduce: Node) -> list[int] | None:
    """The reduction's axes, normalised, when they are a Const and it keeps dims."""
    keep = reduce._attrs.get("keep_dims")
    values = const_array(reduce._in_edges[1][0]) if reduce._in_edges[1] is not None else None
    if keep is None or not keep.value or values is None:
        return None
    rank = len(reduce._output_descs[0]._shape)
    return sorted(int(a) % rank for a in np.asarray(values).reshape(-1))


def _softmax(div: Node) -> Match | None:
    total = _producer(div, 1, "ReduceSum")
    exp = _producer(div, 0, "Exp")
    if total is None or exp is None or _producer(total, 0, "Exp") is not exp:
        return None
    sub = _producer(exp, 0, "Sub")
    top = _producer(sub, 1, "ReduceMax") if sub is not None else None
    if sub is None or top is None or sub._in_edges[0] is None or top._in_edges[0] is None:
        return None
    if sub._in_edges[0] != top._in_edges[0]:  # max of the same x that is shifted
        return None
    axes = _axes(total)
    if axes is None or axes != _axes(top) or exp._attrs["base"].value != -1.0:
        return None
    if _uses(exp) != 2 or _uses(total) != 1 or _uses(sub) != 1 or _uses(top) != 1:
        return None
    if exp._attrs["scale"].value != 1.0 or exp._attrs["shift"].value != 0.0:
        return None
    return "SoftmaxV2", [sub._in_edges[0]], {"axes": axes}


# (anchor op, matcher): the matcher looks at the anchor and what feeds it
PATTERNS: tuple[tuple[str, Callable[[Node], Match | None]], ...] = (("Div", _softmax),)


def recognize_patterns(graph: Graph) -> bool:
    """Replace every match in ``graph``; returns whether anything changed."""
    changed = False
    order, _ = topological_order(graph)
    for node in order:
        for anchor, matcher in PATTERNS:
            if node.type != anchor or node._graph is not graph:
                continue
            match = matcher(node)
            if match is None:
                continue
            op_type, inputs, attrs = match
            name = fresh_name(graph, f"{node.name}_{op_type}")
            new = add_op_node(graph, op_type, inputs, attrs, name=name)
            if [str(d) for d in new._output_descs] != [str(d) for d in node._output_descs]:
                graph.remove_node(new)
                continue
            graph.replace_all_uses(node, 0, new, 0)
            changed = True
    if changed:
        eliminate_dead_nodes(graph)
    return changed
