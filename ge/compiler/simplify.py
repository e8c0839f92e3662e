"""Algebraic simplification: local rewrites as data, run by one fixed-point driver.

Each rule is ``(op types, rewrite)``; ``rewrite(node, consts)`` returns the ``(node, port)``
that replaces the node's output 0, or ``None`` when the rule does not apply (``consts`` reads
Const values, each once per pass). A rule only fires when
the replacement has exactly the node's output shape and dtype, so no rewrite can change a
result's type or broadcast shape.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ge.compiler._graphs import ConstValues, is_removable
from ge.graph.graph import Graph
from ge.graph.node import Node

__all__ = ["RULES", "simplify"]

Port = tuple[Node, int]
Rule = Callable[[Node, ConstValues], Port | None]


def _input(node: Node, i: int) -> Port | None:
    """The producer of input ``i``; ``None`` if unconnected or the node has no input ``i``."""
    inputs = node.inputs
    return inputs[i] if i < len(inputs) else None


def _is_const(port: Port | None, value: float, consts: ConstValues) -> bool:
    if port is None:
        return False
    array = consts(port[0])
    return array is not None and array.size > 0 and bool(np.all(array == value))


def _identity(node: Node, consts: ConstValues) -> Port | None:  # Identity(x) -> x
    return _input(node, 0)


def _neutral_right(value: float) -> Rule:
    def rule(node: Node, consts: ConstValues) -> Port | None:  # Op(x, neutral) -> x
        return _input(node, 0) if _is_const(_input(node, 1), value, consts) else None

    return rule


def _neutral_either(value: float) -> Rule:
    def rule(node: Node, consts: ConstValues) -> Port | None:
        # Op(x, neutral) or Op(neutral, x) -> x
        if _is_const(_input(node, 1), value, consts):
            return _input(node, 0)
        if _is_const(_input(node, 0), value, consts):
            return _input(node, 1)
        return None

    return rule


def _double_neg(node: Node, consts: ConstValues) -> Port | None:  # Neg(Neg(x)) -> x
    inner = _input(node, 0)
    if inner is not None and inner[0].type == "Neg":
        return _input(inner[0], 0)
    return None


def _same_shape(node: Node, consts: ConstValues) -> Port | None:
    # Cast/Reshape/Transpose/BroadcastTo to itself -> x
    return _input(node, 0)


def _identity_perm(node: Node, consts: ConstValues) -> Port | None:  # Transpose(x, [0, 1, ..]) -> x
    perm_port = _input(node, 1)
    perm = None if perm_port is None else consts(perm_port[0])
    if perm is not None and perm.tolist() == list(range(perm.size)):
        return _input(node, 0)
    return None


RULES: tuple[tuple[frozenset[str], Rule], ...] = (
    (frozenset({"Identity"}), _identity),
    (frozenset({"Add"}), _neutral_either(0)),
    (frozenset({"Sub"}), _neutral_right(0)),
    (frozenset({"Mul"}), _neutral_either(1)),
    (frozenset({"Div", "RealDiv", "Pow"}), _neutral_right(1)),
    (frozenset({"Neg"}), _double_neg),
    (
        frozenset({"Cast", "Reshape", "BroadcastTo", "Squeeze", "Unsqueeze", "ExpandDims"}),
        _same_shape,
    ),
    (frozenset({"Transpose"}), _identity_perm),
)


def _rules_by_type() -> dict[str, list[Rule]]:
    """``RULES`` by op type, in their order (a pass visits every node: most have none)."""
    table: dict[str, list[Rule]] = {}
    for types, rule in RULES:
        for op_type in sorted(types):
            table.setdefault(op_type, []).append(rule)
    return table


_RULES_BY_TYPE = _rules_by_type()


def _fits(node: Node, port: Port) -> bool:
    """The replacement must look exactly like what it replaces."""
    have, want = port[0].output_desc(port[1]), node.output_desc(0)
    return (
        list(have._shape) == list(want._shape)
        and have._data_type == want._data_type
        and -1 not in want._shape
        and list(want._shape) != [-2]
    )


def simplify(graph: Graph) -> bool:
    """Apply ``RULES`` until none fires; returns whether anything changed."""
    changed = False
    progress = True
    consts = ConstValues()  # the rules remove nodes, never change a Const
    while progress:
        progress = False
        for node in graph.get_direct_nodes():
            rules = _RULES_BY_TYPE.get(node.type)
            if rules is None or node.graph is None or len(node.output_descs) != 1:
                continue
            if not is_removable(node):
                continue
            for rule in rules:
                replacement = rule(node, consts)
                if replacement is not None and _fits(node, replacement):
                    graph.replace_all_uses(node, 0, *replacement)
                    graph.remove_node(node)
                    progress = changed = True
                    break
    return changed
