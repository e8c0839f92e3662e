"""Algebraic simplification: local rewrites as data, run by one fixed-point driver.

Each rule is a ``ge.passes.rewrite.Rule`` run by that module's one driver: ``apply(node,
consts)`` returns the ``(node, port)`` that replaces the node's output 0, or ``None`` when the
rule does not apply (``consts`` reads Const values, each once per run). The driver applies a
replacement only when it has exactly the node's output shape and dtype (a fully known shape),
so no rewrite can change a result's type or broadcast shape, and repeats until none fires.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ge.compiler._graphs import ConstValues
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.passes.rewrite import Rule, rewrite

__all__ = ["RULES", "simplify"]

Port = tuple[Node, int]
Apply = Callable[[Node, ConstValues], Port | None]


def _input(node: Node, i: int) -> Port | None:
    """The producer of input ``i``; ``None`` if unconnected or the node has no input ``i``."""
    inputs = node.inputs
    return inputs[i] if i < len(inputs) else None


def _is_const(port: Port | None, value: float, consts: ConstValues) -> bool:
    """Whether ``port`` is a Const whose every element equals ``value`` (numpy's ``==``). A
    one-element number, what nearly every Const a rule asks about is, is compared as the
    Python scalar ``item()`` gives (exact for every numeric dtype), without ``np.all``'s
    array temporaries (a few µs a node on a 100k-node graph)."""
    if port is None:
        return False
    array = consts(port[0])
    if array is None or array.size == 0:
        return False
    if array.size == 1 and array.dtype.kind in _NUMERIC_KINDS:
        return bool(array.item() == value)
    return bool(np.all(array == value))


_NUMERIC_KINDS = frozenset("biufc")


def _identity(node: Node, consts: ConstValues) -> Port | None:  # Identity(x) -> x
    return _input(node, 0)


def _neutral_right(value: float) -> Apply:
    def rule(node: Node, consts: ConstValues) -> Port | None:  # Op(x, neutral) -> x
        return _input(node, 0) if _is_const(_input(node, 1), value, consts) else None

    return rule


def _neutral_either(value: float) -> Apply:
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


RULES: tuple[Rule, ...] = (
    Rule("identity", frozenset({"Identity"}), _identity),
    Rule("add_zero", frozenset({"Add"}), _neutral_either(0)),
    Rule("sub_zero", frozenset({"Sub"}), _neutral_right(0)),
    Rule("mul_one", frozenset({"Mul"}), _neutral_either(1)),
    Rule("div_one", frozenset({"Div", "RealDiv", "Pow"}), _neutral_right(1)),
    Rule("double_neg", frozenset({"Neg"}), _double_neg),
    Rule(
        "same_shape",
        frozenset({"Cast", "Reshape", "BroadcastTo", "Squeeze", "Unsqueeze", "ExpandDims"}),
        _same_shape,
    ),
    Rule("identity_perm", frozenset({"Transpose"}), _identity_perm),
)


def simplify(graph: Graph) -> bool:
    """Apply ``RULES`` until none fires; returns whether anything changed."""
    # the rules remove nodes, never change a Const: one cache of Const values serves the run
    return rewrite(graph, RULES, "simplify", fixed_point=True, state=ConstValues())
