"""ge.passes.rewrite: the one local-rewrite driver (rules, exact-desc guard, dead producers
removed, fixed point), on which the built-in simplification and pattern recognition run."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge.es as es
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import DataType, Graph, Node
from ge.ops import eval_graph
from ge.passes.rewrite import NewOp, Rule, is_removable, rewrite


def producer(node: Node, port: int = 0) -> tuple[Node, int]:
    return node.get_in_data_nodes_and_port_indexes(port)


def double_neg(node: Node, state: Any) -> Any:
    inner, _ = producer(node)
    return producer(inner) if inner.type == "Neg" else None


DOUBLE_NEG = Rule("double_neg", frozenset({"Neg"}), double_neg)


def types(graph: Graph) -> list[str]:
    return sorted(n.type for n in graph.get_direct_nodes())


def chain(depth: int, shape: list[int] | None = None) -> Graph:
    b = GraphBuilder("chain")
    x = b.create_input(0, shape=shape or [3])
    y = x
    for _ in range(depth):
        y = es.Neg(y)
    return b.build_and_reset([es.Relu(y)])


def test_one_sweep_and_a_fixed_point() -> None:
    once = chain(4)
    assert rewrite(once, [DOUBLE_NEG], "t")
    assert types(once) == ["Data", "NetOutput", "Relu"]  # creation order: pairs from the top
    odd = chain(5)
    assert rewrite(odd, [DOUBLE_NEG], "t", fixed_point=True)
    assert types(odd) == ["Data", "Neg", "NetOutput", "Relu"]
    assert not rewrite(odd, [DOUBLE_NEG], "t", fixed_point=True)
    x = np.arange(3, dtype=np.float32) - 1
    np.testing.assert_array_equal(eval_graph(odd, [x])[0], np.maximum(-x, 0))


def test_a_forwarded_value_must_have_the_exact_known_desc() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[1, 3])
    y = b.create_input(1, shape=[2, 3])
    g = b.build_and_reset([x + y])
    forward_x = Rule("x", frozenset({"Add"}), lambda node, state: producer(node, 0))
    assert not rewrite(g, [forward_x], "t")  # [1, 3] does not replace a [2, 3] value
    unknown = GraphBuilder("u")
    a = unknown.create_input(0, shape=[-1, 3])
    b2 = unknown.create_input(1, shape=[-1, 3])
    g2 = unknown.build_and_reset([a + b2])
    assert not rewrite(g2, [forward_x], "t")  # -1 and -1 need not be the same size


def test_a_new_op_replaces_the_node_and_its_dead_producers() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    e = es.Exp(x)
    keep = es.Abs(x)
    g = b.build_and_reset([es.Relu(e), keep])

    def relu_exp(node: Node, state: Any) -> Any:
        inner, _ = producer(node)
        return NewOp("Sigmoid", [producer(inner)]) if inner.type == "Exp" else None

    assert rewrite(g, [Rule("relu_exp", frozenset({"Relu"}), relu_exp)], "t")
    assert types(g) == ["Abs", "Data", "NetOutput", "Sigmoid"]  # Exp went with the Relu
    g.verify()


def test_a_new_op_whose_desc_differs_is_dropped_and_changes_nothing() -> None:
    g = chain(1, [2, 3])
    before = g.as_text()
    to_int = Rule(
        "cast",
        frozenset({"Relu"}),
        lambda node, state: NewOp("Cast", [producer(node)], {"dst_type": int(DataType.DT_INT32)}),
    )
    changed = rewrite(g, [to_int], "t")
    assert not changed and g.as_text() == before


def test_impure_nodes_and_control_sources_are_never_replaced() -> None:
    g = chain(2)
    negs = [n for n in g.get_direct_nodes() if n.type == "Neg"]
    relu = next(n for n in g.get_direct_nodes() if n.type == "Relu")
    g.add_control_edge(negs[1], relu)
    assert not rewrite(g, [DOUBLE_NEG], "t")
    assert not is_removable(negs[1]) and is_removable(negs[0])


def test_a_rule_error_names_the_rewrite_the_rule_and_the_node() -> None:
    def broken(node: Node, state: Any) -> Any:
        raise GeError("no luck")

    with pytest.raises(GeError, match="rewrite demo: rule broken at node Neg_0: no luck"):
        rewrite(chain(1), [Rule("broken", frozenset({"Neg"}), broken)], "demo")


def test_state_is_passed_to_every_rule() -> None:
    seen: list[Any] = []
    state = object()
    rule = Rule("spy", frozenset({"Neg"}), lambda node, s: seen.append(s))
    rewrite(chain(3), [rule], "t", state=state)
    assert seen == [state] * 3


def square_as_mul() -> Graph:
    b = GraphBuilder("square")
    x = b.create_input(0, shape=[3])
    return b.build_and_reset([x * x])


def test_a_whole_node_rule_replaces_the_node_by_a_subgraph() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    g = b.build_and_reset([es.Square(x) + 1.0])
    rule = Rule("square", frozenset({"Square"}), lambda node, state: square_as_mul(), True)
    assert rewrite(g, [rule], "t")
    assert "Square" not in types(g) and "Mul" in types(g)
    v = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(eval_graph(g, [v])[0], v * v + 1.0)


def test_a_value_rule_may_not_return_a_graph_and_a_refused_replacement_raises() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    g = b.build_and_reset([es.Square(x)])
    sneaky = Rule("sneaky", frozenset({"Square"}), lambda node, state: square_as_mul())
    with pytest.raises(GeError, match="rule sneaky returned a Graph; make it with whole_node"):
        rewrite(g, [sneaky], "t")
    two_inputs = GraphBuilder("two")
    a, c = two_inputs.create_input(0, shape=[3]), two_inputs.create_input(1, shape=[3])
    wrong = two_inputs.build_and_reset([a * c])
    rule = Rule("wrong", frozenset({"Square"}), lambda node, state: wrong, True)
    before = g.as_text()
    with pytest.raises(GeError, match="replacing node Square_0 failed \\(status 4\\)"):
        rewrite(g, [rule], "t")
    assert g.as_text() == before
