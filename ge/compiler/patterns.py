"""Multi-node patterns that have a dedicated kernel: recognised and replaced by one op.

Code traced from numpy (``@ge.jit``) spells a softmax as five ops; the row kernel of
``SoftmaxV2`` does it in one pass over each row with a vectorised exponential. Each pattern
is a ``ge.passes.rewrite.Rule`` returning the replacement op with its inputs and attributes,
or ``None``, run by that module's one driver; a match is accepted only when every inner value
is used inside the pattern alone (so nothing else needs it), and the driver applies it only
when the replacement has exactly the matched output's shape and dtype.

    softmax      Div(e, ReduceSum(e, axes, keep_dims=True)),
                 e = Exp(Sub(x, ReduceMax(x, axes, keep_dims=True)))    -> SoftmaxV2(x, axes)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.compiler._graphs import const_array
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.passes.rewrite import NewOp, Rule, rewrite

__all__ = ["PATTERNS", "recognize_patterns"]

Match = tuple[str, list[Any], dict[str, Any]]  # op type, inputs, attributes


def _producer(node: Node, port: int, op_type: str) -> Node | None:
    edge = node.input(port) if port < len(node.inputs) else None
    return edge[0] if edge is not None and edge[0].type == op_type and edge[1] == 0 else None


def _uses(node: Node) -> int:
    return sum(len(consumers) for consumers in node.users_by_port)


def _attr(node: Node, name: str) -> object:
    """The stored value of attribute ``name``; ``None`` if the node has none."""
    stored = node.attr_value(name)
    return None if stored is None else stored.value


def _axes(reduce: Node) -> list[int] | None:
    """The reduction's axes, normalised, when they are a Const and it keeps dims."""
    axes = reduce.input(1)
    values = const_array(axes[0]) if axes is not None else None
    if not _attr(reduce, "keep_dims") or values is None:
        return None
    rank = len(reduce.output_desc(0)._shape)
    return sorted(int(a) % rank for a in np.asarray(values).reshape(-1))


def _softmax(div: Node) -> Match | None:
    total = _producer(div, 1, "ReduceSum")
    exp = _producer(div, 0, "Exp")
    if total is None or exp is None or _producer(total, 0, "Exp") is not exp:
        return None
    sub = _producer(exp, 0, "Sub")
    top = _producer(sub, 1, "ReduceMax") if sub is not None else None
    if sub is None or top is None:
        return None
    x = sub.input(0)
    if x is None or x != top.input(0):  # max of the same x that is shifted
        return None
    axes = _axes(total)
    if axes is None or axes != _axes(top) or _attr(exp, "base") != -1.0:
        return None
    if _uses(exp) != 2 or _uses(total) != 1 or _uses(sub) != 1 or _uses(top) != 1:
        return None
    if _attr(exp, "scale") != 1.0 or _attr(exp, "shift") != 0.0:
        return None
    return "SoftmaxV2", [x], {"axes": axes}


def _softmax_rule(div: Node, state: object) -> NewOp | None:
    match = _softmax(div)
    return None if match is None else NewOp(*match)


# each rule is anchored at the op that produces the pattern's result and looks at what feeds it
PATTERNS: tuple[Rule, ...] = (Rule("softmax", frozenset({"Div"}), _softmax_rule),)


def recognize_patterns(graph: Graph) -> bool:
    """Replace every match in ``graph`` (one sweep); returns whether anything changed."""
    return rewrite(graph, PATTERNS, "recognize")
