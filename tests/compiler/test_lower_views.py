"""A ``VIEW_OPS`` node (Reshape, Squeeze, Unsqueeze, ExpandDims) of a graph input is a view of
the caller's input memory, with no task, wherever the input lives in a run (staged in the
workspace, read in place from a large host array, lent to a host task, given as a device
address); a graph output is never a view (its copy stays), and neither is a view that an op
writing in place reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ge
import ge.es as ge_es
from ge.compiler.executable import CompiledGraph
from ge.custom_op import bootstrap, eager_call, proto, register_op, register_op_impl, registry
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import Graph
from ge.graph import Tensor as GraphTensor
from ge.runtime import Tensor, TensorDesc, launch_kernel
from ge.runtime.executor import DIRECT_BYTES, PlanRunner
from ge.runtime.plan import BufferKind, Plan, buffers_of
from ge.session import Session

VIEW_TYPES = ("Reshape", "Squeeze", "Unsqueeze", "ExpandDims")


def _plan(compiled: CompiledGraph) -> Plan:
    (plan,) = compiled._plans.values()
    assert plan is not None
    return plan


def _view_tasks(plan: Plan) -> list[str]:
    return [t.name for t in plan.tasks if t.name.startswith(VIEW_TYPES)]


def _input_views(plan: Plan) -> dict[int, int]:
    """view -> input slot, for every view of a graph input."""
    return {
        v: plan.buffers[s].index
        for v, s in plan.views.items()
        if plan.buffers[s].kind is BufferKind.INPUT
    }


def _reshaped(shape: list[int], rows: int, cols: int) -> Graph:
    """``[x.reshape(rows, cols) @ w, ExpandDims/Squeeze/Reshape(x) * 2]``; ``w`` is
    [cols, 3]."""
    b = GraphBuilder("reshaped")
    x = b.create_input(0, shape=shape)
    w = b.create_input(1, shape=[cols, 3])
    y = x.reshape([rows, cols]) @ w
    z = ge_es.Squeeze(ge_es.ExpandDims(x, b.create_scalar_int64(0)), axis=[0])
    z = ge_es.Unsqueeze(z.reshape([rows * cols]), axes=[1]) * 2.0
    return b.build_and_reset([y, z])


def _want(x: np.ndarray, w: np.ndarray, rows: int) -> list[np.ndarray]:
    return [x.reshape(rows, w.shape[0]) @ w, x.reshape(-1, 1) * 2.0]


def test_views_of_an_input_launch_no_task() -> None:
    plan = _plan(CompiledGraph(_reshaped([4, 6], 3, 8)))
    assert _view_tasks(plan) == []
    assert sorted(_input_views(plan).values()) == [0] * len(plan.views)
    assert len(plan.views) == 5  # Reshape, ExpandDims, Squeeze, Reshape, Unsqueeze
    for view, source in plan.views.items():
        assert source not in plan.views  # no chains: each view names the input itself
        assert plan.buffers[view].nbytes == plan.buffers[source].nbytes
        assert plan.buffers[view].index == plan.buffers[source].index
    assert "a view of buf0" in plan.as_text()


@pytest.mark.parametrize(
    ("shape", "rows", "cols"),
    [([4, 6], 3, 8), ([2, 3, 4], 6, 4), ([1, 1, 7], 1, 7), ([5, 0], 5, 0), ([0, 3], 0, 4)],
    ids=["2d", "3d", "ones", "zero-cols", "zero-rows"],
)
def test_results_equal_numpy_and_move_with_the_input(
    path: str, shape: list[int], rows: int, cols: int
) -> None:
    compiled = CompiledGraph(_reshaped(shape, rows, cols))
    rng = np.random.default_rng(len(shape))
    w = rng.standard_normal((cols, 3)).astype(np.float32)
    for _ in range(3):  # each run's input elsewhere: the views follow it
        x = rng.standard_normal(shape).astype(np.float32)
        kept = x.copy()
        got = compiled.run_arrays([x, w])
        for g, want in zip(got, _want(kept, w, rows), strict=True):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
            assert not np.shares_memory(g, x)
        np.testing.assert_array_equal(x, kept)
    assert _view_tasks(_plan(compiled)) == []


def test_large_inputs_read_in_place_and_lent_to_host_tasks(path: str) -> None:
    """An input of DIRECT_BYTES and up is read where it is (kernels) or lent (the BLAS
    matmul host task reads its view): the view is then the caller's array."""
    rows, cols = 64, DIRECT_BYTES // 4 // 64 * 2
    compiled = CompiledGraph(_reshaped([rows * 2, cols // 2], rows, cols))
    rng = np.random.default_rng(1)
    w = rng.standard_normal((cols, 3)).astype(np.float32)
    for _ in range(2):
        x = rng.standard_normal((rows * 2, cols // 2)).astype(np.float32)
        got = compiled.run_arrays([x, w])
        for g, want in zip(got, _want(x, w, rows), strict=True):
            np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)
    plan = _plan(compiled)
    assert _view_tasks(plan) == [] and _input_views(plan)


def test_session_runs_move_the_views_with_device_inputs() -> None:
    graph, cols = _reshaped([3, 8], 6, 4), 4
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        session.add_graph(0, graph)
        rng = np.random.default_rng(2)
        w = rng.standard_normal((cols, 3)).astype(np.float32)
        for _ in range(3):
            x = rng.standard_normal((3, 8)).astype(np.float32)
            got = session.run_graph(0, [GraphTensor.from_numpy(x), GraphTensor.from_numpy(w)])
            for g, want in zip(got, _want(x, w, 6), strict=True):
                np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-5)
    finally:
        GeApi.ge_finalize()


def test_an_output_that_is_a_reshape_of_an_input_is_copied() -> None:
    """An output is the caller's fresh array: never the input's bytes."""
    b = GraphBuilder("out")
    x = b.create_input(0, shape=[2, 3])
    graph = b.build_and_reset([x.reshape([3, 2]), ge_es.ExpandDims(x, b.create_scalar_int64(0))])
    compiled = CompiledGraph(graph)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = compiled.run_arrays([a])
    np.testing.assert_array_equal(got[0], a.reshape(3, 2))
    np.testing.assert_array_equal(got[1], a[None])
    assert not any(np.shares_memory(g, a) for g in got)
    plan = _plan(compiled)
    assert not plan.views and len(plan.tasks) == 2


def test_donation_over_an_elementwise_read_of_a_view_stays_possible() -> None:
    b = GraphBuilder("donate")
    x = b.create_input(0, shape=[4, 4])
    graph = b.build_and_reset([x.reshape([16]) * 2.0 + 1.0])
    plan = _plan(CompiledGraph(graph))
    assert _input_views(plan)
    assert PlanRunner(plan).aliasable(0, 0)


def test_donation_is_refused_while_a_view_is_read_after_the_output_is_written() -> None:
    """``out = x * 2`` first, then ``x`` read again through a view (a matmul): donating x to
    out would overwrite what the matmul still reads."""
    b = GraphBuilder("donate_late")
    x = b.create_input(0, shape=[4, 4])
    w = b.create_input(1, shape=[16, 2])
    graph = b.build_and_reset([x * 2.0, x.reshape([1, 16]) @ w])
    plan = _plan(CompiledGraph(graph, fuse=False))
    assert _input_views(plan)
    out, (view,) = plan.outputs[0], _input_views(plan)
    writes = [t for t, task in enumerate(plan.tasks) if out in buffers_of(task)]
    reads = [t for t, task in enumerate(plan.tasks) if view in buffers_of(task)]
    assert max(reads) > min(writes)  # the order the test is about
    assert not PlanRunner(plan).aliasable(0, 0)


@pytest.mark.parametrize("shape", [[], [1], [2, 1, 3], [0, 4]], ids=["scalar", "one", "3d", "0"])
def test_jit_reshape_of_an_input_odd_shapes(shape: list[int]) -> None:
    def f(x: Any, y: Any) -> Any:
        return x.reshape(-1, 1) + y  # broadcast against y

    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    y = np.linspace(-1, 1, 3, dtype=np.float32)
    jitted = ge.jit(f)
    for k in range(3):
        xk = x + k
        kept = xk.copy()
        got = jitted(xk, y)
        np.testing.assert_allclose(got, f(kept, y), rtol=1e-6)
        assert not np.shares_memory(got, xk)
        np.testing.assert_array_equal(xk, kept)
    ge.jit.wait_for_compiles()
    np.testing.assert_allclose(jitted(x, y), f(x, y), rtol=1e-6)


def test_jit_non_contiguous_input_and_einsum() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((6, 4), np.float32), rng.standard_normal((6, 4), np.float32)
    w = rng.standard_normal((3, 4, 4), np.float32)
    bilinear = ge.jit(lambda a, w, b: np.einsum("ni,kij,nj->nk", a, w, b))
    flat = ge.jit(lambda x, w: x.reshape(2, 12) @ w)
    xt = rng.standard_normal((4, 6), np.float32).T  # not contiguous
    w2 = rng.standard_normal((12, 5), np.float32)
    for _ in range(2):
        np.testing.assert_allclose(
            bilinear(a, w, b), np.einsum("ni,kij,nj->nk", a, w, b), rtol=1e-4, atol=1e-4
        )
        np.testing.assert_allclose(flat(xt, w2), xt.reshape(2, 12) @ w2, rtol=1e-4, atol=1e-4)
        ge.jit.wait_for_compiles()


# --- ops that write in place keep the copy --------------------------------------------------------
@pytest.fixture
def isolated_ops() -> Iterator[None]:
    """Registries as they were after the test (as tests/custom_op's conftest does)."""
    protos, impls, loaded = proto._snapshot(), registry._snapshot(), list(bootstrap._LOADED)
    eager_call.cache_clear()
    try:
        yield
    finally:
        eager_call.cache_clear()
        registry._restore(impls)
        proto._restore(protos)
        bootstrap._LOADED[:] = loaded


@pytest.mark.slow
@pytest.mark.usefixtures("isolated_ops")
def test_a_view_read_by_an_op_that_mutates_its_input_is_a_copy() -> None:
    from tests.custom_op._kernels import kernel
    from tests.custom_op._ops import same

    op_type = "TestLowerViewsAddOneInPlace"

    @register_op(op_type=op_type, mutates_args=("x",))
    def infer(x: TensorDesc) -> TensorDesc:
        return same(x)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            from ge.custom_op import get_execute_ctx

            ctx = get_execute_ctx()
            ctx.make_output_ref_input(0, 0)
            launch_kernel(kernel("add_one_in_place"), 1, ctx.get_stream(), [x.addr, x.shape_size])

    b = GraphBuilder("mutating")
    x = b.create_input(0, shape=[2, 3])
    y = getattr(ge_es.custom, op_type)(x.reshape([6]))
    graph = b.build_and_reset([y * 1.0, x * 1.0])
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        session.add_graph(0, graph)
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = GraphTensor.from_numpy(a)
        for _ in range(2):
            out_y, out_x = session.run_graph(0, [t])
            np.testing.assert_array_equal(out_y.numpy(), a.reshape(6) + 1.0)
            np.testing.assert_array_equal(out_x.numpy(), a)  # the input is as given
            np.testing.assert_array_equal(t.numpy(), a)
    finally:
        GeApi.ge_finalize()
    compiled = CompiledGraph(graph)
    plan = _plan(compiled)
    assert not _input_views(plan)
    assert _view_tasks(plan)  # the Reshape is a copy the op may write


# --- outputs that are reshapes of intermediates are written in place ----------------------------
def _output_views(plan: Plan) -> dict[int, int]:
    """view -> output position, for every view of a graph output."""
    return {
        v: plan.buffers[s].index
        for v, s in plan.views.items()
        if plan.buffers[s].kind is BufferKind.OUTPUT
    }


@pytest.mark.parametrize("size", [6, 0, DIRECT_BYTES // 4], ids=["small", "empty", "direct"])
def test_a_reshaped_intermediate_output_is_written_in_place(path: str, size: int) -> None:
    """``exp(x) * 2`` reshaped, and a matmul reshaped: each producer writes the result, no
    copy. Results held by the caller stay as they were when later runs write the pooled
    result memory."""
    b = GraphBuilder("out_views")
    x = b.create_input(0, shape=[size, 1])
    w = b.create_input(1, shape=[1, 3])
    graph = b.build_and_reset(
        [(ge_es.Exp(x) * 2.0).reshape([size]), ge_es.ExpandDims(x @ w, b.create_scalar_int64(0))]
    )
    compiled = CompiledGraph(graph)
    plan = _plan(compiled)
    assert _view_tasks(plan) == [] and sorted(_output_views(plan).values()) == [0, 1]
    assert not [t for t in plan.tasks if t.name.startswith("output_")]
    rng = np.random.default_rng(size)
    wa = rng.standard_normal((1, 3)).astype(np.float32)
    held = []
    for _ in range(3):
        xa = rng.standard_normal((size, 1)).astype(np.float32)
        want = [np.exp(xa).reshape(size) * 2.0, (xa @ wa)[None]]
        got = compiled.run_arrays([xa, wa])
        for g, w_ in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w_, rtol=1e-5, atol=1e-5)
        held.append((got, want))
    for got, want in held:  # earlier results were not written over
        for g, w_ in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w_, rtol=1e-5, atol=1e-5)


def test_one_value_under_two_output_shapes_keeps_its_copy_kernels() -> None:
    b = GraphBuilder("shared")
    x = b.create_input(0, shape=[4, 6])
    h = ge_es.Exp(x)
    graph = b.build_and_reset([h.reshape([24]), h.reshape([6, 4]), h * 1.0])
    compiled = CompiledGraph(graph)
    plan = _plan(compiled)
    assert not _output_views(plan) and len(_view_tasks(plan)) == 2
    a = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    got = compiled.run_arrays([a])
    want = [np.exp(a).reshape(24), np.exp(a).reshape(6, 4), np.exp(a)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_session_output_views_move_with_each_runs_outputs() -> None:
    b = GraphBuilder("session_out")
    x = b.create_input(0, shape=[3, 4])
    graph = b.build_and_reset([(ge_es.Exp(x) + 1.0).reshape([12])])
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        session.add_graph(0, graph)
        outs = []
        for k in range(3):
            a = np.full((3, 4), k, np.float32)
            (out,) = session.run_graph(0, [GraphTensor.from_numpy(a)])
            outs.append((out, np.exp(a).reshape(12) + 1.0))
        for out, want in outs:
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    finally:
        GeApi.ge_finalize()


def test_donation_into_an_output_written_through_a_view() -> None:
    b = GraphBuilder("donate_out")
    x = b.create_input(0, shape=[4, 4])
    graph = b.build_and_reset([(x * 2.0 + 1.0).reshape([16])])
    plan = _plan(CompiledGraph(graph))
    if not _output_views(plan):
        pytest.skip("the reshape was folded into the kernel")
    assert PlanRunner(plan).aliasable(0, 0)


def test_execute_plan_places_views_at_their_sources_addresses() -> None:
    """The stream's path (``execute_plan``: fresh output memory from ``alloc``, inputs at
    device addresses) addresses each view where its source is."""
    from ge.runtime import memory
    from ge.runtime.executor import execute_plan

    b = GraphBuilder("stream")
    x = b.create_input(0, shape=[2, 6])
    w = b.create_input(1, shape=[4, 2])
    graph = b.build_and_reset([(x.reshape([3, 4]) @ w).reshape([6]), x.reshape([12]) * 2.0])
    plan = _plan(CompiledGraph(graph))
    assert _input_views(plan) and _output_views(plan)
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((2, 6)).astype(np.float32)
    wa = rng.standard_normal((4, 2)).astype(np.float32)
    blocks = [memory.malloc(a.nbytes) for a in (xa, wa)]
    try:
        for block, a in zip(blocks, (xa, wa), strict=True):
            memory.memcpy_h2d(block.addr, a)
        addrs, releases = execute_plan(plan, [block.addr for block in blocks])
        try:
            got = [
                memory.device_view(addr, plan.buffers[buf].nbytes).view(np.float32).copy()
                for addr, buf in zip(addrs, plan.outputs, strict=True)
            ]
        finally:
            for release in releases:
                release()
    finally:
        for block in blocks:
            memory.free(block)
    np.testing.assert_allclose(got[0], (xa.reshape(3, 4) @ wa).reshape(6), rtol=1e-5)
    np.testing.assert_allclose(got[1], xa.reshape(12) * 2.0, rtol=1e-6)
