"""Memory planning (ge/compiler/memory_plan.py and its use in lowering): buffers whose
lifetimes intersect never share bytes, space is reused by liveness, and the arena size (the
reported peak intermediate memory) of a chain is about two buffers, not one per node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ge.es as ge_es
from ge.compiler.executable import CompiledGraph
from ge.compiler.memory_plan import ALIGN, plan_offsets
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.ops import eval_graph
from ge.runtime.plan import BufferKind, KernelTask, Plan


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def overlaps_in_time(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return not (a[1] < b[0] or b[1] < a[0])


def check_plan(buffers: Sequence[tuple[int, int, int]], offsets: list[int], size: int) -> None:
    assert len(offsets) == len(buffers)
    for i, (buf, off) in enumerate(zip(buffers, offsets, strict=True)):
        assert off >= 0 and off % ALIGN == 0, (i, off)
        assert off + aligned(buf[2]) <= size, (i, off, size)
        for j in range(i):
            if overlaps_in_time(buf, buffers[j]) and buf[2] and buffers[j][2]:
                lo_i, hi_i = off, off + aligned(buf[2])
                lo_j, hi_j = offsets[j], offsets[j] + aligned(buffers[j][2])
                assert hi_i <= lo_j or hi_j <= lo_i, f"buffers {j} and {i} overlap"


def peak_live(buffers: Sequence[tuple[int, int, int]]) -> int:
    """The most bytes (aligned) live at one task: a lower bound on any valid arena."""
    if not buffers:
        return 0
    last = max(b[1] for b in buffers)
    return max(sum(aligned(n) for s, e, n in buffers if s <= t <= e) for t in range(last + 1))


# --- plan_offsets -------------------------------------------------------------------------------
def test_docstring_example() -> None:
    assert plan_offsets([(0, 1, 100), (1, 2, 100), (2, 3, 100)]) == ([0, 128, 0], 256)


def test_no_buffers() -> None:
    assert plan_offsets([]) == ([], 0)


def test_disjoint_lifetimes_share_offset_zero() -> None:
    buffers = [(0, 0, 1000), (1, 1, 500), (2, 2, 1000), (3, 4, 64)]
    offsets, size = plan_offsets(buffers)
    assert offsets == [0, 0, 0, 0]
    assert size == aligned(1000)


def test_all_live_at_once_needs_the_sum() -> None:
    buffers = [(0, 5, 100), (1, 4, 200), (2, 3, 300), (3, 3, 1)]
    offsets, size = plan_offsets(buffers)
    check_plan(buffers, offsets, size)
    assert size == sum(aligned(n) for _, _, n in buffers)


def test_a_buffer_ending_where_another_starts_is_still_live() -> None:
    # a task reads its input and writes its output: both live at that task
    offsets, size = plan_offsets([(0, 3, 64), (3, 5, 64)])
    assert offsets[0] != offsets[1]
    assert size == 128


def test_gaps_are_reused() -> None:
    # a big buffer lives throughout; small ones come and go next to it
    buffers = [(0, 10, 4096)] + [(t, t + 1, 256) for t in range(10)]
    offsets, size = plan_offsets(buffers)
    check_plan(buffers, offsets, size)
    assert size == 4096 + 2 * 256


lifetimes = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(0, 5000)).map(
        lambda t: (t[0], t[0] + t[1], t[2])
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(lifetimes)
def test_live_buffers_never_overlap(buffers: list[tuple[int, int, int]]) -> None:
    offsets, size = plan_offsets(buffers)
    check_plan(buffers, offsets, size)
    if buffers:
        assert size >= max(aligned(n) for _, _, n in buffers)
        assert size >= peak_live(buffers)
    else:
        assert size == 0


@settings(max_examples=60, deadline=None)
@given(lifetimes)
def test_plan_is_deterministic_and_does_not_mutate_input(
    buffers: list[tuple[int, int, int]],
) -> None:
    before = list(buffers)
    assert plan_offsets(buffers) == plan_offsets(before)
    assert buffers == before


# --- planning inside compiled graphs ------------------------------------------------------------
def _touched(task: Any) -> list[int]:
    if isinstance(task, KernelTask):
        return [int(b) for b in task.patch_buf]
    return list(task.buffers)


def check_compiled_plan(plan: Plan) -> None:
    """Independently of the planner: intermediates used by overlapping task ranges are
    disjoint in the arena, and all fit in it. A view is its source's bytes: its uses count
    as the source's, and it sits where the source does."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for t, task in enumerate(plan.tasks):
        for used in _touched(task):
            buf = plan.views.get(used, used)
            first.setdefault(buf, t)
            last[buf] = t
    for view, source in plan.views.items():
        assert plan.buffers[source].kind is not BufferKind.CONST
        assert source not in plan.views  # a view of a view names the first source
        assert plan.buffers[view].index == plan.buffers[source].index
        assert plan.buffers[view].nbytes == plan.buffers[source].nbytes
        assert view not in plan.outputs
    inter = [
        b
        for b, s in enumerate(plan.buffers)
        if s.kind is BufferKind.INTERMEDIATE and b not in plan.views
    ]
    for b in inter:
        spec = plan.buffers[b]
        assert spec.index % ALIGN == 0
        assert spec.index + spec.nbytes <= plan.arena_size
    used = [(first[b], last[b], plan.buffers[b].nbytes) for b in inter if b in first]
    assert plan.arena_size >= peak_live(used)
    for i, a in enumerate(inter):
        for b in inter[:i]:
            if a not in first or b not in first:
                continue
            if last[a] < first[b] or last[b] < first[a]:
                continue
            sa, sb = plan.buffers[a], plan.buffers[b]
            if sa.nbytes == 0 or sb.nbytes == 0:
                continue
            assert sa.index + sa.nbytes <= sb.index or sb.index + sb.nbytes <= sa.index, (
                f"live buffers {a} and {b} overlap"
            )


def chain(n_ops: int, shape: list[int]) -> Graph:
    b = GraphBuilder(f"chain{n_ops}")
    h = b.create_input(0, shape=shape)
    for i in range(n_ops):
        h = h * 2.0 if i % 2 == 0 else h + 1.0
    return b.build_and_reset([h])


@pytest.mark.parametrize("n_ops", [4, 16])
def test_chain_arena_is_about_two_buffers(n_ops: int) -> None:
    shape = [8, 256]
    nbytes = 8 * 256 * 4
    compiled = CompiledGraph(chain(n_ops, shape), fuse=False)
    (plan,) = compiled._plans.values()
    check_compiled_plan(plan)
    inter = [s for s in plan.buffers if s.kind is BufferKind.INTERMEDIATE]
    assert len(inter) == n_ops - 1  # the last op writes the output in place
    assert plan.arena_size <= 2 * aligned(nbytes)
    assert plan.arena_size >= aligned(nbytes)
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    (out,) = compiled.run_arrays([x])
    np.testing.assert_allclose(out, eval_graph(chain(n_ops, shape), [x])[0], rtol=1e-6)


def test_chain_arena_does_not_grow_with_length() -> None:
    sizes = {
        n: next(iter(CompiledGraph(chain(n, [1024]), fuse=False)._plans.values())).arena_size
        for n in (3, 9, 25)
    }
    assert sizes[3] == sizes[9] == sizes[25]


def test_values_read_late_are_not_overwritten() -> None:
    """A value kept alive across a long chain must keep its bytes: wrong liveness would let
    the chain reuse them and change the result."""
    b = GraphBuilder("late")
    x = b.create_input(0, shape=[512])
    early = np.abs(x) + 3.0
    h = x
    for i in range(10):
        h = h * 0.5 if i % 2 == 0 else h - 1.0
    graph = b.build_and_reset([h + early, early * h])
    compiled = CompiledGraph(graph)
    (plan,) = compiled._plans.values()
    check_compiled_plan(plan)
    for seed in range(3):
        xv = np.random.default_rng(seed).uniform(-4, 4, 512).astype(np.float32)
        for a, e in zip(compiled.run_arrays([xv]), eval_graph(graph, [xv]), strict=True):
            np.testing.assert_allclose(a, e, rtol=1e-6)


def test_fan_out_needs_room_for_every_live_value() -> None:
    b = GraphBuilder("fan")
    x = b.create_input(0, shape=[256])
    parts = [x * float(k + 2) for k in range(6)]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    graph = b.build_and_reset([total])
    compiled = CompiledGraph(graph, fuse=False)
    (plan,) = compiled._plans.values()
    check_compiled_plan(plan)
    assert plan.arena_size > 2 * aligned(256 * 4)  # several values are live at once
    xv = np.linspace(-1, 1, 256, dtype=np.float32)
    np.testing.assert_allclose(compiled.run_arrays([xv])[0], eval_graph(graph, [xv])[0], rtol=1e-6)


def test_each_shape_plan_of_a_dynamic_graph_is_planned() -> None:
    compiled = CompiledGraph(chain(8, [-1, 64]), fuse=False)
    for rows in (1, 3, 16):
        compiled.run_arrays([np.ones((rows, 64), np.float32)])
    assert len(compiled._plans) == 3
    for key, plan in compiled._plans.items():
        assert plan is not None
        check_compiled_plan(plan)
        rows = key[0][0]
        assert plan.arena_size <= 2 * aligned(rows * 64 * 4)


# --- views: Reshape and friends share their input's bytes ---------------------------------------
def _run_and_compare(graph: Graph, x: np.ndarray, *, fuse: bool = True) -> Plan:
    compiled = CompiledGraph(graph, fuse=fuse)
    (plan,) = compiled._plans.values()
    assert plan is not None
    check_compiled_plan(plan)
    for got, want in zip(compiled.run_arrays([x]), eval_graph(graph, [x]), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    return plan


def _task_names(plan: Plan) -> list[str]:
    return [t.name for t in plan.tasks]


def test_reshapes_between_kernels_are_views_with_no_task() -> None:
    b = GraphBuilder("views")
    x = b.create_input(0, shape=[8, 16])
    h = x
    for i in range(6):  # Reshape, Squeeze-like and ExpandDims steps between elementwise ops
        h = (h * 1.5 + 0.25).reshape([128] if i % 2 == 0 else [8, 16])
    h = ge_es.ExpandDims(h * 2.0, b.create_scalar_int64(0))
    h = ge_es.Squeeze(h + 1.0, axis=[0])
    graph = b.build_and_reset([h * 3.0])
    plan = _run_and_compare(graph, np.linspace(-2, 2, 128, dtype=np.float32).reshape(8, 16))
    assert len(plan.views) == 8
    assert not [n for n in _task_names(plan) if n.startswith(("Reshape", "Expand", "Squeeze"))]


def test_a_view_keeps_its_source_live_while_it_is_read() -> None:
    """The source's own last use is early, the view's late: the chain between them must not
    reuse the source's bytes."""
    b = GraphBuilder("late_view")
    x = b.create_input(0, shape=[512])
    early = (ge_es.Abs(x) + 3.0).reshape([16, 32])
    h = x
    for i in range(10):
        h = ge_es.Exp(h * 0.5) if i % 2 == 0 else ge_es.Log(h + 1.0)
    graph = b.build_and_reset([h.reshape([16, 32]) + early])
    plan = _run_and_compare(graph, np.linspace(-4, 4, 512, dtype=np.float32), fuse=False)
    gaps = []
    for view, source in plan.views.items():
        reads = [t for t, task in enumerate(plan.tasks) if view in _touched(task)]
        touches = [t for t, task in enumerate(plan.tasks) if source in _touched(task)]
        gaps.append(min(reads) - max(touches))
    assert max(gaps) > 10  # one view is read long after its source's own last use


def test_views_of_inputs_and_outputs() -> None:
    """A view of an input is the input's bytes, with no task; a reshaped intermediate that is
    an output is written in place (the intermediate is a view of the output); a view of an
    input that is an output, or of a value that is an output, gets its own buffer."""
    b = GraphBuilder("edges")
    x = b.create_input(0, shape=[4, 8])
    y = x * 2.0 + 1.0
    from_input = x.reshape([32])
    from_output = y.reshape([32])
    graph = b.build_and_reset([y, from_output * 1.0 + from_input, (y * 3.0).reshape([32])])
    plan = _run_and_compare(graph, np.arange(32, dtype=np.float32).reshape(4, 8))
    assert sorted(plan.views.values()) == [plan.inputs[0], plan.outputs[2]]
