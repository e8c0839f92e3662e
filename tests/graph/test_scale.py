"""Building and verifying grow linearly with the graph, checked without clocks: Python calls
at n and 4n nodes, and how often an op call iterates the whole node table (it must not: the
builder's rollback snapshot is counts, not a copy of the node names)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ge.es import GraphBuilder
from ge.graph import Graph
from ge.graph.node import Node
from tests._counting import count_calls, growth

LINEAR = 4.6


def chain(n: int) -> Graph:
    b = GraphBuilder("chain")
    x = b.create_input(0, shape=[4])
    for _ in range(n // 4):
        x = x * 1.0001 + 0.5
    return b.build_and_reset([x])


def fan_out(n: int) -> Graph:
    """One input read by n/4 branches, summed back as a tree."""
    b = GraphBuilder("fan_out")
    x = b.create_input(0, shape=[4])
    level = [x * (1.0 + i * 1e-6) + 0.5 for i in range(n // 5)]
    while len(level) > 1:
        pairs = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
        level = pairs + level[len(pairs) * 2 :]
    return b.build_and_reset(level)


def test_building_is_linear() -> None:
    for build in (chain, fan_out):

        def make(n: int, build: Callable[[int], Graph] = build) -> Callable[[], Any]:
            return lambda: build(n)

        ratio, at_n, at_4n = growth(make, 300)
        assert ratio < LINEAR, (build.__name__, ratio, at_n.total, at_4n.total)


class _CountingNodes(dict[str, Node]):
    """A node table that counts whole-table iterations."""

    iterations = 0

    def __iter__(self) -> Iterator[str]:
        _CountingNodes.iterations += 1
        return super().__iter__()

    def keys(self) -> Any:
        _CountingNodes.iterations += 1
        return super().keys()

    def values(self) -> Any:
        _CountingNodes.iterations += 1
        return super().values()

    def items(self) -> Any:
        _CountingNodes.iterations += 1
        return super().items()


def test_an_op_call_does_not_iterate_the_node_table() -> None:
    b = GraphBuilder("g")
    b._graph._nodes = _CountingNodes(b._graph._nodes)
    x = b.create_input(0, shape=[4])
    _CountingNodes.iterations = 0
    for _ in range(50):
        x = (x * 1.5 + 0.5).reshape([2, 2]).reshape([4])  # reshape: a transaction each
    assert _CountingNodes.iterations == 0


def test_failed_op_call_still_rolls_back_what_it_added() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4])
    y = x * 2.0
    before = [n.name for n in b._graph.get_direct_nodes()]
    with pytest.raises(ValueError):
        y.reshape([3])  # 4 elements into 3: fails after making its shape Const
    assert [n.name for n in b._graph.get_direct_nodes()] == before


def test_verify_is_linear() -> None:
    for build in (chain, fan_out):

        def make(n: int, build: Callable[[int], Graph] = build) -> Callable[[], Any]:
            graph = build(n)
            return graph.verify

        ratio, _, at_4n = growth(make, 300)
        assert ratio < LINEAR, (build.__name__, ratio)
        assert at_4n.big_walks(600) == 1


def test_counting_sees_a_quadratic_pass() -> None:
    """The yardstick itself: a pass that looks at every pair of nodes is caught."""

    def make(n: int) -> Callable[[], Any]:
        nodes = chain(n).get_direct_nodes()
        return lambda: [sum(1 for m in nodes if m is not k) for k in nodes]

    ratio, _, _ = growth(make, 100)
    assert ratio > 10
    _, calls = count_calls(lambda: None)
    assert calls.total <= 1


@pytest.mark.parametrize(("build", "most"), [(chain, 11.0), (fan_out, 12.2)])
def test_a_built_graph_keeps_few_gc_tracked_objects_per_node(
    build: Callable[[int], Graph], most: float
) -> None:
    """What each cyclic collection walks (its cost at 100k nodes is as large as the rest of
    building): 13.5 per chain node and 14.6 per fan-out node before descs shared their shapes
    (clones, and outputs shaped as an input) and input-less nodes their empty port lists;
    now 10.5 and 11.8."""
    build(40)
    gc.collect()
    before = len(gc.get_objects())
    graph = build(2000)
    gc.collect()
    per_node = (len(gc.get_objects()) - before) / len(graph.get_all_nodes())
    assert per_node <= most, per_node
