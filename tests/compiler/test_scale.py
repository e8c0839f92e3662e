"""Compile and lowering costs grow linearly with the graph, checked without clocks: the Python
calls made at n and 4n nodes (a quadratic pass makes 16x as many, a linear one 4x) and the
whole-graph walks each pipeline step makes (a constant, whatever the size)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ge.compiler.executable import CompiledGraph
from ge.compiler.fuse import fuse_elementwise
from ge.compiler.memory_plan import plan_offsets
from ge.compiler.pipeline import PIPELINE, Compilation, copy_graph, optimize_graph
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.ops import eval_graph
from tests._counting import count_calls, growth

LINEAR = 4.6  # calls(4n) / calls(n) allowed: 4 plus a little for what does not scale


def chain(n: int) -> Graph:
    b = GraphBuilder("chain")
    x = b.create_input(0, shape=[8, 8])
    for _ in range(n // 4):
        x = x * 1.0001 + 0.5
    return b.build_and_reset([x])


def reshape_chain(n: int) -> Graph:
    """Fusion cannot merge across the Reshapes: lowering sees a kernel per step."""
    b = GraphBuilder("reshape")
    x = b.create_input(0, shape=[8, 8])
    for i in range(n // 6):
        x = (x * 1.0001 + 0.5).reshape([8, 8] if i % 2 else [64])
    return b.build_and_reset([x])


def wide(n: int) -> Graph:
    b = GraphBuilder("wide")
    x = b.create_input(0, shape=[8, 8])
    level = [x * (1.0 + i * 1e-6) + 0.5 for i in range(n // 5)]
    while len(level) > 1:
        pairs = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
        level = pairs + level[len(pairs) * 2 :]
    return b.build_and_reset(level)


SHAPES: dict[str, Callable[[int], Graph]] = {
    "chain": chain,
    "reshape": reshape_chain,
    "wide": wide,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_optimize_is_linear(shape: str) -> None:
    def make(n: int) -> Callable[[], Any]:
        graph = SHAPES[shape](n)
        return lambda: optimize_graph(graph)

    ratio, at_n, at_4n = growth(make, 300)
    assert ratio < LINEAR, (ratio, at_n.total, at_4n.total)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_pipeline_step_walks_the_graph_a_constant_number_of_times(shape: str) -> None:
    def walks(n: int) -> list[int]:
        work = copy_graph(SHAPES[shape](n))
        per_step = []
        for step in PIPELINE:
            _, calls = count_calls(lambda: step.run(work, Compilation({})))  # noqa: B023
            per_step.append(calls.big_walks(n // 2))
        return per_step

    at_n, at_4n = walks(200), walks(800)
    names = [s.name for s in PIPELINE]
    assert at_n == at_4n, list(zip(names, at_n, at_4n, strict=True))
    assert max(at_4n) <= 4, list(zip(names, at_4n, strict=True))


def test_copy_graph_is_linear_and_walks_once() -> None:
    def make(n: int) -> Callable[[], Any]:
        graph = wide(n)
        return lambda: copy_graph(graph)

    ratio, _, at_4n = growth(make, 300)
    assert ratio < LINEAR
    assert at_4n.big_walks(600) == 1


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_lowering_is_linear(shape: str) -> None:
    def make(n: int) -> Callable[[], Any]:
        optimized = optimize_graph(SHAPES[shape](n))
        return lambda: CompiledGraph(optimized, optimize=False)

    make(60)()  # the kernels of this shape, compiled once, outside the counts
    ratio, at_n, at_4n = growth(make, 300)
    assert ratio < LINEAR, (ratio, at_n.total, at_4n.total)


def test_memory_plan_is_linear_for_a_chain() -> None:
    def make(n: int) -> Callable[[], Any]:
        buffers = [(t, t + 2, 4096 + 64 * (t % 3)) for t in range(n)]
        return lambda: plan_offsets(buffers)

    ratio, _, _ = growth(make, 2000)
    assert ratio < LINEAR


def test_big_chain_compiles_and_matches_the_reference() -> None:
    graph = reshape_chain(3000)
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    got = CompiledGraph(graph).run_arrays([x])[0]
    np.testing.assert_allclose(got, eval_graph(graph, [x])[0], rtol=1e-5)


def test_fusion_refuses_a_merge_that_would_make_a_cycle() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4, 4])
    a = x * 2.0
    around = a.reshape([4, 4])  # not fusible: feeds c from outside the group of a
    c = a + around
    graph = b.build_and_reset([c * 3.0])
    fuse_elementwise(graph)
    graph.verify()  # acyclic
    x_value = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(eval_graph(graph, [x_value])[0], (x_value * 4.0) * 3.0)
    fused = [
        n.get_attr("_fused_ops") for n in graph.get_direct_nodes() if n.type.startswith("Fused")
    ]
    assert fused == ["Add,Mul"]  # x * 2 stays out: the Reshape reads it and feeds the Add
