"""Plan.as_text and CompiledGraph.peak_intermediate_bytes report the memory plan."""

from __future__ import annotations

import numpy as np

from ge.compiler.executable import CompiledGraph
from ge.es import GraphBuilder


def _chain(length: int, size: int) -> CompiledGraph:
    b = GraphBuilder("chain")
    y = b.create_input(0, shape=[size])
    for _ in range(length):
        y = np.exp(y) * 0.5
    return CompiledGraph(b.build_and_reset([y]), fuse=False)  # one buffer per op value


def test_peak_is_two_buffers_for_a_chain_not_one_per_op() -> None:
    compiled = _chain(8, 1024)
    assert compiled.peak_intermediate_bytes == 2 * 1024 * 4


def test_as_text_lists_buffers_launches_and_peak() -> None:
    compiled = _chain(2, 16)
    plan = compiled.plan_for([[16]])
    assert plan is not None
    text = plan.as_text()
    assert text.startswith(f"plan: {len(plan.tasks)} tasks")
    assert "peak intermediate memory 128 bytes" in text
    assert "input#0 float32[16]" in text
    assert text.count("launch k_") == len(plan.tasks)


def test_dynamic_graphs_have_no_compile_time_peak() -> None:
    b = GraphBuilder("dyn")
    x = b.create_input(0, shape=[-1])
    assert CompiledGraph(b.build_and_reset([x * 2.0])).peak_intermediate_bytes is None
