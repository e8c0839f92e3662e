"""``<out>_num`` arguments of generated ``ge.es`` functions (ge/es/_generator.py) and
``output_counts`` of ``add_op_node``: a non-int is a ``GeTypeError`` naming the argument (a
list leaked Python's own ``TypeError``), an absurd count a ``GeValueError``, and the builder's
graph is left as it was."""

from __future__ import annotations

from typing import Any

import pytest

import ge.es
from ge.error import GeTypeError, GeValueError
from ge.es import GraphBuilder
from ge.graph import Graph, TensorDesc
from ge.graph.graph import MAX_PORTS
from ge.ops import add_op_node


def branch(name: str) -> Graph:
    b = GraphBuilder(name)
    return b.build_and_reset([b.create_input(0, shape=[2])])


def if_call(output_num: Any) -> tuple[GraphBuilder, list[str]]:
    b = GraphBuilder("g")
    x, c = b.create_input(0, shape=[2]), b.create_input(1, shape=[])
    before = [n.name for n in b._graph.get_direct_nodes()]
    ge.es.If(c, [x], output_num, branch("then_g"), branch("else_g"))
    return b, before


@pytest.mark.parametrize("bad", [[1], 1.0, "1", None, True])
def test_a_count_that_is_not_an_int_is_a_type_error_naming_it(bad: Any) -> None:
    with pytest.raises(
        GeTypeError, match=rf"If: output_num must be an int, got {type(bad).__name__}"
    ):
        if_call(bad)


@pytest.mark.parametrize("bad", [-1, MAX_PORTS + 1, 10**7])
def test_a_count_out_of_range_is_a_value_error(bad: int) -> None:
    with pytest.raises(GeValueError, match=rf"If: output_num must be in 0..{MAX_PORTS}, got {bad}"):
        if_call(bad)


def test_a_failed_call_leaves_the_graph_unchanged() -> None:
    b = GraphBuilder("g")
    x, c = b.create_input(0, shape=[2]), b.create_input(1, shape=[])
    names = [n.name for n in b._graph.get_direct_nodes()]
    with pytest.raises(GeTypeError):
        ge.es.If(c, [x, 1.0], [1], branch("then_g"), branch("else_g"))  # 1.0 becomes a Const
    assert [n.name for n in b._graph.get_direct_nodes()] == names
    assert b._graph.get_all_subgraphs() == []


@pytest.mark.parametrize(
    ("counts", "error", "message"),
    [
        ([[1]], GeTypeError, r"If output 'output': its count must be an int, got list"),
        ([10**7], GeValueError, rf"If output 'output': its count must be in 0..{MAX_PORTS}"),
    ],
)
def test_add_op_node_checks_output_counts(counts: list[Any], error: type, message: str) -> None:
    g = Graph("g")
    cond = add_op_node(g, "Data", [None], {"index": 0}, declared=[TensorDesc([])])
    with pytest.raises(error, match=message):
        add_op_node(g, "If", [(cond, 0), []], output_counts=counts)
    assert g.get_direct_nodes() == [cond]
