"""``ge.graph._clone.clone_graph`` gives exactly what an AIR round trip gives (the compiler's
copy of a graph), consumer and control-edge order included, or ``None`` where only AIR applies."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings

from ge.compiler.fuse import fuse_elementwise
from ge.es import GraphBuilder
from ge.graph import AttrValueType, Graph, Node
from ge.graph._air import model_from_bytes, model_to_bytes
from ge.graph._clone import clone_graph
from tests.graph._helpers import assert_same_graph
from tests.graph.test_air_property import random_graphs


def _links(graph: Graph) -> list[Any]:
    """Consumers of every output and control successors, in list order, for every graph."""

    def of(node: Node) -> Any:
        outs = [[(d.name, p) for d, p in consumers] for consumers in node._out_edges]
        return node.name, outs, [d.name for d in node._out_ctrl], [s.name for s in node._in_ctrl]

    return [[of(n) for n in g.get_direct_nodes()] for g in (graph, *graph.get_all_subgraphs())]


def _assert_clone_is_air_copy(graph: Graph) -> Graph:
    twin = clone_graph(graph)
    assert twin is not None
    via_air = model_from_bytes(model_to_bytes(graph))
    assert_same_graph(via_air, twin)
    assert _links(via_air) == _links(twin)
    assert model_to_bytes(twin) == model_to_bytes(via_air)
    return twin


def test_builder_graph_with_subgraphs_and_control_edges() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = np.exp(x * 2.0) + x.sum(axis=-1, keepdims=True)
    b.add_control_dependency(y, [x])
    g = b.build_and_reset([y, x * 3.0])
    fuse_elementwise(g, min_ops=1)  # FusedElementwise nodes with body subgraphs
    twin = _assert_clone_is_air_copy(g)
    twin.verify()
    for a, b2 in zip(g.get_direct_nodes(), twin.get_direct_nodes(), strict=True):
        assert a is not b2
        assert all(d is not e for d, e in zip(a._output_descs, b2._output_descs, strict=True))


def test_copy_is_independent_of_the_original() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    g = b.build_and_reset([x + np.array([1.0, 2.0, 3.0], np.float32)])
    twin = clone_graph(g)
    assert twin is not None
    const = next(n for n in g.get_direct_nodes() if n.type == "Const")
    copy = twin.find_node_by_name(const.name)
    assert copy._attrs["value"].value is not const._attrs["value"].value
    copy.update_output_desc(0, copy.get_output_desc(0).set_shape([7]))
    assert const.get_output_desc(0).get_shape() == [3]


def test_consumer_order_follows_node_order_as_air_does() -> None:
    g = Graph("g")
    x = g.add_node("Data", "x", num_outputs=1)
    a = g.add_node("Relu", "a", num_inputs=1, num_outputs=1)
    c = g.add_node("Relu", "c", num_inputs=1, num_outputs=1)
    g.add_data_edge(x, 0, c, 0)  # consumers of x: c first, then a
    g.add_data_edge(x, 0, a, 0)
    g.add_control_edge(c, a)
    _assert_clone_is_air_copy(g)


def test_cases_left_to_air() -> None:
    g = Graph("g")
    a = g.add_node("Relu", "a", num_inputs=1, num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    g.add_data_edge(a, 0, b, 0)
    g.add_data_edge(b, 0, a, 0)
    assert clone_graph(g) is None  # a cycle: AIR's reader reports it
    sub = Graph("sub")
    g2 = Graph("g2")
    n = g2.add_node("If", "n", num_outputs=1)
    g2.set_node_subgraph(n, 0, sub)
    assert clone_graph(sub) is None  # not a root
    n.set_attr("body", sub, AttrValueType.VT_GRAPH)
    assert clone_graph(g2) is None  # a graph-valued attribute


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(graph=random_graphs())
def test_random_graphs_clone_like_air(graph: Graph) -> None:
    twin = clone_graph(graph)
    if twin is None:  # graph-valued attributes: AIR only
        return
    via_air = model_from_bytes(model_to_bytes(graph))
    assert_same_graph(via_air, twin)
    assert _links(via_air) == _links(twin)
