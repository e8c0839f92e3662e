"""``CompiledGraph`` (ge/compiler/executable.py): compiled results equal ``eval_graph``; static
graphs are planned once at compile time, ``-1`` graphs once per distinct input-shape signature,
value-dependent shapes fall back to the reference interpreter; inputs are checked with errors
naming the input; multi-output nodes and outputs that are inputs, constants or repeated."""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge.es
from ge import runtime
from ge.compiler.executable import CompiledGraph
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.ops import eval_graph
from ge.runtime.plan import Plan


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


def assert_matches_eval(compiled: CompiledGraph, graph: Graph, feeds: list[Any]) -> list[Any]:
    actual = compiled.run_arrays(feeds)
    expected = eval_graph(graph, feeds)
    assert len(actual) == len(expected)
    for a, raw in zip(actual, expected, strict=True):
        e = np.asarray(raw)
        assert isinstance(a, np.ndarray)
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    return actual


def build(
    fn: Callable[..., Any],
    *inputs: tuple[str, list[int]],
    name: str = "g",
    dtype: DataType = DataType.DT_FLOAT,
) -> Graph:
    b = GraphBuilder(name)
    xs = [b.create_input(i, name=n, shape=s, data_type=dtype) for i, (n, s) in enumerate(inputs)]
    out = fn(*xs)
    return b.build_and_reset(list(out) if isinstance(out, (list, tuple)) else [out])


# --- results ------------------------------------------------------------------------------------
def test_elementwise_graph_matches_eval_graph() -> None:
    graph = build(
        lambda x, y: [np.tanh(x * y + 1.0) - y / (np.abs(x) + 1.0), np.maximum(x, y)],
        ("x", [4, 5]),
        ("y", [5]),
    )
    compiled = CompiledGraph(graph)
    for seed in range(3):
        assert_matches_eval(compiled, graph, [f32(4, 5, seed=seed), f32(5, seed=seed + 7)])


def test_reference_ops_and_kernels_mix() -> None:
    def fn(x: Any, w: Any) -> Any:
        h = (x @ w) + 1.0
        return [h.sum(axis=1, keepdims=True) * h.T.sum(axis=0), h.T, np.exp(h - h.max())]

    graph = build(fn, ("x", [3, 4]), ("w", [4, 2]))
    compiled = CompiledGraph(graph)
    assert_matches_eval(compiled, graph, [f32(3, 4), f32(4, 2, seed=1)])


def test_multi_output_node() -> None:
    def fn(x: Any) -> Any:
        a, b = ge.es.SplitV(x, [2, 4], 0, 2, num_split=2)
        return [b + 1.0, a, a * 2.0]

    graph = build(fn, ("x", [6, 3]))
    compiled = CompiledGraph(graph)
    out = assert_matches_eval(compiled, graph, [f32(6, 3)])
    assert [o.shape for o in out] == [(4, 3), (2, 3), (2, 3)]


def test_outputs_that_are_inputs_consts_or_repeated() -> None:
    def fn(x: Any, y: Any) -> Any:
        b = x.get_owner_builder()
        c = b.create_const_float(5.0)
        v = b.create_vector_int64([1, 2, 3])
        z = x * 2.0
        return [x, c, z, z, y, x, v, c * 2.0]

    graph = build(fn, ("x", [3]), ("y", [2]))
    compiled = CompiledGraph(graph)
    x, y = f32(3), f32(2, seed=1)
    out = assert_matches_eval(compiled, graph, [x, y])
    np.testing.assert_array_equal(out[0], x)
    assert out[1].shape == () and out[1] == 5.0
    np.testing.assert_array_equal(out[6], np.array([1, 2, 3], np.int64))
    assert out[7] == 10.0
    # every output is its own array: nothing aliases another output or an input
    out[2][...] = 0.0
    out[0][...] = 0.0
    np.testing.assert_array_equal(out[3], x * 2.0)
    np.testing.assert_array_equal(out[5], x)
    np.testing.assert_array_equal(x, f32(3))
    again = compiled.run_arrays([x, y])
    assert again[1] == 5.0
    np.testing.assert_array_equal(again[0], x)


def test_graph_of_only_constants() -> None:
    b = GraphBuilder("consts")
    graph = b.build_and_reset([b.create_const_float(2.0) * 3.0, b.create_vector_int64([7])])
    compiled = CompiledGraph(graph)
    assert compiled.static
    out = assert_matches_eval(compiled, graph, [])
    assert out[0] == 6.0


def test_control_flow_runs_its_subgraphs() -> None:
    def branch(name: str, fn: Callable[[Any], Any]) -> Graph:
        bb = GraphBuilder(name)
        return bb.build_and_reset([fn(bb.create_input(0, shape=[-1]))])

    b = GraphBuilder("if_exec")
    cond = b.create_input(0, name="cond", data_type=DataType.DT_BOOL)
    x = b.create_input(1, name="x", shape=[-1])
    (y,) = ge.es.If(
        cond, [x], 1, branch("t", lambda a: np.exp(a) * 2.0), branch("e", lambda a: a - 1.0)
    )
    graph = b.build_and_reset([y + 1.0])
    compiled = CompiledGraph(graph)
    for flag, n in ((True, 3), (False, 3), (True, 5)):
        assert_matches_eval(compiled, graph, [np.array(flag), f32(n, seed=n)])

    i32 = DataType.DT_INT32
    cb = GraphBuilder("cond_w")
    i, _acc = cb.create_input(0, data_type=i32), cb.create_input(1, shape=[4])
    cond_g = cb.build_and_reset([i < 6])
    bb = GraphBuilder("body_w")
    i, acc = bb.create_input(0, data_type=i32), bb.create_input(1, shape=[4])
    body_g = bb.build_and_reset([i + 1, acc * 1.5 + 1.0])
    wb = GraphBuilder("while_exec")
    i0 = wb.create_input(0, name="i0", data_type=i32)
    a0 = wb.create_input(1, name="a0", shape=[4])
    outs = ge.es.While([i0, a0], 2, cond_g, body_g)
    wgraph = wb.build_and_reset(outs)
    wcompiled = CompiledGraph(wgraph)
    for start in (0, 4, 9):
        got = assert_matches_eval(wcompiled, wgraph, [np.int32(start), f32(4)])
        assert int(got[0]) == max(start, 6)


# --- plans --------------------------------------------------------------------------------------
def test_static_graph_is_planned_once_at_compile_time() -> None:
    graph = build(lambda x, y: x * y + 1.0, ("x", [2, 3]), ("y", [3]))
    compiled = CompiledGraph(graph)
    assert compiled.static
    assert len(compiled._plans) == 1
    (plan,) = compiled._plans.values()
    assert isinstance(plan, Plan)
    for seed in range(4):
        compiled.run_arrays([f32(2, 3, seed=seed), f32(3)])
    assert len(compiled._plans) == 1
    assert next(iter(compiled._plans.values())) is plan
    assert compiled.plan_for([[2, 3], [3]]) is plan


def test_dynamic_graph_caches_one_plan_per_shape_signature() -> None:
    graph = build(lambda x, y: x * y + 1.0, ("x", [-1, 3]), ("y", [-1]))
    compiled = CompiledGraph(graph)
    assert not compiled.static
    assert len(compiled._plans) == 0
    signatures = [((1, 3), (3,)), ((4, 3), (3,)), ((1, 3), (3,)), ((4, 3), (1,)), ((4, 3), (3,))]
    seen: dict[Any, Plan] = {}
    for k, (xs, ys) in enumerate(signatures):
        out = assert_matches_eval(compiled, graph, [f32(*xs, seed=k), f32(*ys, seed=k + 1)])
        assert out[0].shape == xs  # output shape inferred from the actual inputs
        key = (xs, ys)
        plan = compiled._plans[key]
        assert plan is not None
        assert seen.setdefault(key, plan) is plan
        assert len(compiled._plans) == len(seen)
    assert len(compiled._plans) == 3


def test_unknown_rank_input() -> None:
    graph = build(lambda x: np.abs(x) * 2.0, ("x", [-2]))
    compiled = CompiledGraph(graph)
    assert not compiled.static
    for shape in ((), (3,), (2, 3), (2, 1, 3)):
        out = assert_matches_eval(compiled, graph, [f32(*shape)])
        assert out[0].shape == shape
    assert len(compiled._plans) == 4


def test_value_dependent_shape_gets_one_plan_per_deciding_value() -> None:
    """A Reshape whose target is a graph input: the plan is specialized on the target's
    value (executable.py's docstring), one cached plan per distinct value."""
    b = GraphBuilder("vd")
    x = b.create_input(0, name="x", shape=[12])
    s = b.create_input(1, name="s", data_type=DataType.DT_INT64, shape=[2])
    graph = b.build_and_reset([ge.es.Reshape(x, s) * 2.0])
    compiled = CompiledGraph(graph)
    assert compiled.plan_for([[12], [2]]) is None  # without values there is no plan
    plans = {}
    for k, target in enumerate(([3, 4], [6, 2], [3, 4], [12, 1], [6, 2])):
        feeds = [f32(12, seed=k), np.array(target, np.int64)]
        plan = compiled.plan_for([[12], [2]], feeds)
        assert isinstance(plan, Plan)
        assert plans.setdefault(tuple(target), plan) is plan
        (out,) = assert_matches_eval(compiled, graph, feeds)
        assert list(out.shape) == target
    assert len({id(p) for p in plans.values()}) == 3


def _reshape_arith(b: GraphBuilder) -> tuple[Graph, list[list[Any]]]:
    x = b.create_input(0, name="x", shape=[12])
    s = b.create_input(1, name="s", data_type=DataType.DT_INT64, shape=[2])
    graph = b.build_and_reset([ge.es.Reshape(x, s * 2) + 1.0])
    return graph, [[f32(12), np.array(t, np.int64)] for t in ([1, 3], [3, 1], [1, 3])]


def _reduce_axes(b: GraphBuilder) -> tuple[Graph, list[list[Any]]]:
    x = b.create_input(0, name="x", shape=[2, 3, 4])
    a = b.create_input(1, name="a", data_type=DataType.DT_INT64, shape=[1])
    graph = b.build_and_reset([ge.es.ReduceSum(x, a, keep_dims=False) * 2.0])
    return graph, [[f32(2, 3, 4, seed=k), np.array([k], np.int64)] for k in (0, 1, 2, 1)]


def _range_bound(b: GraphBuilder) -> tuple[Graph, list[list[Any]]]:
    n = b.create_input(0, name="n", data_type=DataType.DT_INT32, shape=[])
    start, step = b.create_scalar_int32(0), b.create_scalar_int32(1)
    graph = b.build_and_reset([ge.es.Range(start, n, step) * 2])
    return graph, [[np.int32(k)] for k in (3, 5, 0, 3)]


def _dynamic_and_value(b: GraphBuilder) -> tuple[Graph, list[list[Any]]]:
    x = b.create_input(0, name="x", shape=[-1])
    s = b.create_input(1, name="s", data_type=DataType.DT_INT64, shape=[2])
    graph = b.build_and_reset([ge.es.Reshape(x, s) + 1.0])
    cases = [(6, [2, 3]), (8, [2, 4]), (6, [3, 2]), (12, [-1, 3])]
    return graph, [[f32(n), np.array(t, np.int64)] for n, t in cases]


def _chained_reshapes(b: GraphBuilder) -> tuple[Graph, list[list[Any]]]:
    x = b.create_input(0, name="x", shape=[12])
    s = b.create_input(1, name="s", data_type=DataType.DT_INT64, shape=[2])
    t = b.create_input(2, name="t", data_type=DataType.DT_INT64, shape=[3])
    y = ge.es.Reshape(x, s)
    graph = b.build_and_reset([ge.es.Reshape(y * 2.0, t), y])
    cases = [([3, 4], [2, 2, 3]), ([4, 3], [1, 12, 1])]
    return graph, [[f32(12), np.array(a, np.int64), np.array(c, np.int64)] for a, c in cases]


@pytest.mark.parametrize(
    "make", [_reshape_arith, _reduce_axes, _range_bound, _dynamic_and_value, _chained_reshapes]
)
def test_value_dependent_variants_match_eval_graph(
    make: Callable[[GraphBuilder], tuple[Graph, list[list[Any]]]],
) -> None:
    graph, feeds_list = make(GraphBuilder(make.__name__.strip("_")))
    compiled = CompiledGraph(graph)
    for feeds in feeds_list:
        assert_matches_eval(compiled, graph, feeds)


def _positives_infer(ctx: Any) -> list[Any]:
    from ge.graph import TensorDesc

    x = ctx.inputs[0]
    return [TensorDesc([-1], x.get_format(), x.get_data_type())]


def test_data_dependent_shape_falls_back_to_the_interpreter() -> None:
    from ge.ops import OpDef, TensorSpec, register_op_def, registry

    op_type = "TestsExecutablePositives"
    register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            infer=_positives_infer,
            reference=lambda ctx: [ctx.inputs[0][ctx.inputs[0] > 0]],
            group="custom",
            source="tests",
        )
    )
    try:
        graph = build(lambda x: getattr(ge.es.custom, op_type)(x * 1.5) + 1.0, ("x", [8]))
        compiled = CompiledGraph(graph)
        for seed in range(3):
            feeds = [f32(8, seed=seed)]
            assert compiled.plan_for([[8]], feeds) is None
            (out,) = assert_matches_eval(compiled, graph, feeds)
            assert out.shape == (int(np.sum(feeds[0] > 0)),)
    finally:
        registry().unregister(op_type)


def _broken_reference(ctx: Any) -> list[np.ndarray]:
    raise KeyError("a bug in the reference")


def test_a_host_task_whose_reference_breaks_raises_a_ge_error_naming_the_node() -> None:
    """No bare exception leaves a run: a reference running as a plan's host task is wrapped
    as eval_graph wraps it (it leaked the reference's own AttributeError)."""
    from ge.ops import OpDef, TensorSpec, register_op_def, registry

    op_type = "TestsExecutableBroken"
    register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            infer=lambda ctx: [ctx.inputs[0]._clone()],
            reference=_broken_reference,
            group="custom",
            source="tests",
        )
    )
    try:
        graph = build(lambda x: getattr(ge.es.custom, op_type)(x * 1.5) + 1.0, ("x", [8]))
        compiled = CompiledGraph(graph)
        with pytest.raises(GeError, match=rf"node {op_type}_\d+ \({op_type}\): its reference "):
            compiled.run_arrays([f32(8)])
    finally:
        registry().unregister(op_type)


# --- input checks -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def xy() -> CompiledGraph:
    return CompiledGraph(build(lambda x, y: x + y, ("x", [2, 3]), ("y", [3])))


def _check(info: pytest.ExceptionInfo[BaseException]) -> str:
    assert isinstance(info.value, GeError) and isinstance(info.value, ValueError)
    return str(info.value)


def test_wrong_input_count(xy: CompiledGraph) -> None:
    for feeds in ([f32(2, 3)], [], [f32(2, 3), f32(3), f32(3)]):
        with pytest.raises(ValueError) as info:
            xy.run_arrays(feeds)
        text = _check(info)
        assert "2 inputs" in text and "(x, y)" in text and f"got {len(feeds)}" in text


def test_wrong_input_dtype(xy: CompiledGraph) -> None:
    with pytest.raises(ValueError) as info:
        xy.run_arrays([f32(2, 3), np.ones(3, np.float64)])
    text = _check(info)
    assert "input 1 (y)" in text and "float64" in text
    with pytest.raises(ValueError, match=r"input 0 \(x\)"):
        xy.run_arrays([np.ones((2, 3), np.int32), f32(3)])


@pytest.mark.parametrize("shape", [(3, 2), (2,), (2, 3, 1), (), (1, 3)])
def test_wrong_input_shape(xy: CompiledGraph, shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError) as info:
        xy.run_arrays([np.ones(shape, np.float32), f32(3)])
    text = _check(info)
    assert "input 0 (x)" in text and str(list(shape)) in text


def test_wrong_rank_for_a_dynamic_input() -> None:
    compiled = CompiledGraph(build(lambda x: x * 2.0, ("x", [-1, 3])))
    with pytest.raises(ValueError, match=r"input 0 \(x\)"):
        compiled.run_arrays([f32(3)])
    with pytest.raises(ValueError, match=r"input 0 \(x\)"):
        compiled.run_arrays([f32(2, 4)])
    assert len(compiled._plans) == 0  # nothing was planned for refused inputs


def test_checks_leave_the_compiled_graph_usable(xy: CompiledGraph) -> None:
    with pytest.raises(ValueError):
        xy.run_arrays([f32(2, 3)])
    x, y = f32(2, 3), f32(3, seed=1)
    np.testing.assert_array_equal(xy.run_arrays([x, y])[0], x + y)


# --- resources, failures, threads ---------------------------------------------------------------
def test_runs_leave_device_memory_flat() -> None:
    graph = build(lambda x: (x * 2.0 + 1.0).sum(axis=0), ("x", [-1, 8]))
    compiled = CompiledGraph(graph)
    for rows in (2, 3):
        compiled.run_arrays([f32(rows, 8)])
    gc.collect()
    live = runtime.live_bytes()
    for k in range(200):
        compiled.run_arrays([f32(2 + k % 2, 8)])
    gc.collect()
    assert runtime.live_bytes() == live


def test_discarded_compiled_graphs_give_their_device_memory_back() -> None:
    """A plan's constants and kernel parameters live in device memory; dropping the compiled
    graph must free them, or every compile (a removed session graph, a new -1 signature in a
    cache that is cleared) leaks."""

    def make() -> Graph:
        return build(lambda x: np.exp(x) * 3.0 + 1.0, ("x", [16]))

    CompiledGraph(make()).run_arrays([f32(16)])  # warm up
    gc.collect()
    live, count = runtime.live_bytes(), runtime.live_allocations()
    for _ in range(10):
        CompiledGraph(make()).run_arrays([f32(16)])
    gc.collect()
    assert runtime.live_bytes() == live
    assert runtime.live_allocations() == count


def test_execute_uses_the_given_allocator_for_outputs_and_workspace() -> None:
    graph = build(lambda x: [np.abs(x * 2.0) + 1.0, x - 1.0], ("x", [64]))
    compiled = CompiledGraph(graph)
    (plan,) = compiled._plans.values()
    served: list[int] = []
    freed: list[int] = []

    def alloc(nbytes: int) -> tuple[int, Callable[[], None]]:
        block = runtime.malloc(max(nbytes, 1))
        served.append(block.addr)
        return block.addr, lambda: (freed.append(block.addr), runtime.free(block))

    x = f32(64)
    block = runtime.malloc(x.nbytes)
    try:
        runtime.memcpy_h2d(block.addr, x)
        outputs, releases = compiled.execute(plan, [block.addr], alloc)
    finally:
        runtime.free(block)
    assert len(served) == len(outputs) + 1  # outputs and the arena
    assert set(outputs) <= set(served)
    assert len(freed) == 1  # the arena is given back at once
    results = []
    for addr, buf in zip(outputs, plan.outputs, strict=True):
        spec = plan.buffers[buf]
        result = np.empty(spec.shape, spec.dtype)
        runtime.memcpy_d2h(result, addr)
        results.append(result)
    for release in releases:
        release()
    assert sorted(freed) == sorted(served)
    np.testing.assert_allclose(results[0], np.abs(x * 2.0) + 1.0, rtol=1e-6)
    np.testing.assert_allclose(results[1], x - 1.0, rtol=1e-6)


def test_a_failing_node_is_named_and_nothing_leaks() -> None:
    from ge.graph import TensorDesc
    from ge.ops import OpDef, TensorSpec, register_op_def, registry

    def infer(ctx: Any) -> list[TensorDesc]:
        x = ctx.inputs[0]
        return [TensorDesc(list(x.get_shape()), x.get_format(), x.get_data_type())]

    def reference(ctx: Any) -> list[np.ndarray]:
        raise GeError("refusing to run")

    op_type = "TestsExecutableFail"
    register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            infer=infer,
            reference=reference,
            group="custom",
            source="tests",
        )
    )
    try:
        graph = build(lambda x: getattr(ge.es.custom, op_type)(x + 1.0) * 2.0, ("x", [4]))
        node = next(n.name for n in graph.get_all_nodes() if n.type == op_type)
        gc.collect()
        before = runtime.live_bytes()
        compiled = CompiledGraph(graph)
        with pytest.raises(GeError, match=node):
            compiled.run_arrays([f32(4)])
        live = runtime.live_bytes()  # the plan's constants and its reusable workspace
        for _ in range(3):
            with pytest.raises(GeError, match=node) as info:
                compiled.run_arrays([f32(4)])
            assert "refusing to run" in str(info.value)
        gc.collect()
        assert runtime.live_bytes() == live
        del compiled, info  # the traceback holds the plan's frames
        gc.collect()
        assert runtime.live_bytes() == before
    finally:
        registry().unregister(op_type)


def test_concurrent_runs_of_one_compiled_graph() -> None:
    graph = build(lambda x, y: np.tanh(x * y) + (x - y) * 0.5, ("x", [-1, 16]), ("y", [16]))
    compiled = CompiledGraph(graph)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            for k in range(15):
                rows = 1 + (seed + k) % 3
                x, y = f32(rows, 16, seed=seed * 100 + k), f32(16, seed=seed)
                (out,) = compiled.run_arrays([x, y])
                np.testing.assert_allclose(
                    out, np.tanh(x * y) + (x - y) * 0.5, rtol=1e-5, atol=1e-6
                )
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(compiled._plans) == 3


# --- the plan executor: kernel runs go to the launcher in one call -----------------------------
def _failing(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    if block_idx >= args[0]:
        raise ValueError("block failed")


def test_a_failing_kernel_in_a_batch_names_its_node_and_stops_the_plan() -> None:
    from ge.runtime.kernel import compile_kernel, load_kernel_binary
    from ge.runtime.plan import BufferKind, BufferSpec, HostTask, kernel_task

    fn = load_kernel_binary(compile_kernel(_failing, "failing")).get_function("failing")
    ran: list[str] = []
    plan = Plan()
    plan.inputs = [plan.add_buffer(BufferSpec(BufferKind.INPUT, 0, (1,), np.dtype(np.float32)))]
    plan.tasks = [
        kernel_task("ok_first", fn, 2, [2], []),
        HostTask("host", lambda views: ran.append("host"), [0]),
        kernel_task("ok_second", fn, 2, [2], []),
        kernel_task("breaks", fn, 4, [1], []),  # blocks 1..3 fail
        HostTask("after", lambda views: ran.append("after"), [0]),
    ]
    block = runtime.malloc(4)
    try:
        with pytest.raises(GeError, match="node breaks failed"):
            plan.execute(plan.addresses([block.addr], [], 0))
    finally:
        runtime.free(block)
    assert ran == ["host"]  # nothing after the failing kernel ran


def test_plan_runner_moves_inputs_and_outputs_and_comes_home() -> None:
    graph = build(lambda x: x * 2.0 + 1.0, ("x", [6]))
    compiled = CompiledGraph(graph)
    plan = compiled.plan_for([[6]])
    assert plan is not None
    runner = compiled.runner(plan)
    x = np.arange(6, dtype=np.float32)
    block, out = runtime.malloc(24), runtime.malloc(24)
    try:
        runtime.memcpy_h2d(block.addr, x * 10)
        target = (out.addr, runtime.device_view(out.addr, 24))
        (moved,) = runner.run([block.addr], [target])  # read and write outside the workspace
        np.testing.assert_array_equal(moved.view(np.float32), x * 20 + 1)
        (home,) = runner.call([x])  # back in the workspace
        np.testing.assert_array_equal(home, x * 2 + 1)
        np.testing.assert_array_equal(
            runtime.device_view(out.addr, 24).view(np.float32), x * 20 + 1
        )  # the earlier target was left alone
    finally:
        runtime.free(block)
        runtime.free(out)


def test_plan_runner_call_uses_large_arrays_in_place_and_returns_fresh_results() -> None:
    n = 1 << 15  # 128 KiB of float32: above the in-place threshold
    graph = build(lambda x, y: [x * 2.0 + y, x @ y.reshape(n, 1)], ("x", [1, n]), ("y", [n]))
    compiled = CompiledGraph(graph)
    plan = compiled.plan_for([[1, n], [n]])
    assert plan is not None
    runner = compiled.runner(plan)
    direct = runner._direct
    assert direct.outputs == {0}  # the fused kernel's result; the matmul is a host task
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((1, n)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x_before, y_before = x.copy(), y.copy()
    first = runner.call([x, y])
    second = runner.call([x * 3, y])
    np.testing.assert_array_equal(x, x_before)  # inputs are read, never written
    np.testing.assert_array_equal(y, y_before)
    np.testing.assert_array_equal(first[0], x * np.float32(2) + y)
    np.testing.assert_array_equal(second[0], x * 3 * np.float32(2) + y)
    assert not np.shares_memory(first[0], second[0]) and not np.shares_memory(first[0], x)
    np.testing.assert_allclose(first[1], x @ y.reshape(n, 1), rtol=1e-4)
    (moved,) = runner.run([x.copy(), y.copy()])[:1]  # the staged path still works after
    np.testing.assert_array_equal(moved.view(np.float32).reshape(1, n), first[0])


# --- pooled result blocks -------------------------------------------------------------------------
def test_a_result_block_comes_back_when_the_last_view_goes() -> None:
    from ge.runtime.executor import ResultBlocks

    pool = ResultBlocks()
    like = np.empty((4, 8), np.float32)
    array, addr = pool.array(like)
    assert array.shape == (4, 8) and array.dtype == np.float32
    assert array.ctypes.data == addr and array.flags.writeable
    view = array[1:]
    del array
    gc.collect()
    assert not pool._spare.get(like.nbytes)  # the view still uses it
    del view
    gc.collect()
    assert len(pool._spare[like.nbytes]) == 1
    again, addr_again = pool.array(like)
    assert addr_again == addr  # reused: no fresh pages
    raw, _ = pool.array(np.empty(like.nbytes, np.uint8))  # another view type of a size
    assert raw.dtype == np.uint8 and raw.shape == (like.nbytes,)
    del again, raw


def test_only_a_few_spare_blocks_are_kept_per_size() -> None:
    from ge.runtime.executor import ResultBlocks

    pool = ResultBlocks()
    like = np.empty(1000, np.uint8)
    gc.collect()
    live = runtime.live_bytes()
    arrays = [pool.array(like)[0] for _ in range(7)]
    assert runtime.live_bytes() == live + 7 * 1000
    del arrays
    gc.collect()
    assert len(pool._spare[1000]) == 4
    assert runtime.live_bytes() == live + 4 * 1000


def _large_result_runner() -> tuple[Any, np.ndarray]:
    """A runner of ``x * 2 + 1`` on 32K float32 (a result large enough to be pooled)."""
    b = GraphBuilder("big")
    x = b.create_input(0, shape=[1 << 15])
    compiled = CompiledGraph(b.build_and_reset([x * 2.0 + 1.0]))
    runner = compiled.runner(next(iter(compiled._plans.values())))  # type: ignore[arg-type]
    return runner, np.arange(1 << 15, dtype=np.float32)


def test_large_results_come_from_the_pool() -> None:
    runner, data = _large_result_runner()
    first = runner.call([data])[0]
    np.testing.assert_array_equal(first, data * 2 + 1)
    addr = first.ctypes.data
    del first
    gc.collect()
    second = runner.call([data])[0]
    assert second.ctypes.data == addr
    np.testing.assert_array_equal(second, data * 2 + 1)
    third = runner.call([data + 1])[0]  # while `second` lives, another block
    assert third.ctypes.data != addr
    np.testing.assert_array_equal(second, data * 2 + 1)


def test_a_dropped_result_array_is_written_again_only_when_nothing_holds_it() -> None:
    runner, data = _large_result_runner()
    expected = data * np.float32(2) + np.float32(1)
    first = runner.call([data])[0]
    was_first = weakref.ref(first)
    del first
    second = runner.call([data])[0]
    assert was_first() is second  # nothing held it: the same array object, written again
    np.testing.assert_array_equal(second, expected)
    del second
    views = (lambda a: a[1:], lambda a: a.reshape(2, -1), lambda a: a.view(np.int32), memoryview)
    for make_view in views:  # a view (or a buffer export) of a dropped result keeps it
        result = runner.call([data])[0]
        view = make_view(result)
        snapshot = np.array(view)
        del result
        again = runner.call([data + 1])[0]
        np.testing.assert_array_equal(np.asarray(view), snapshot)
        assert not np.shares_memory(np.asarray(view), again)
        np.testing.assert_array_equal(again, expected + 2)
        del view, again


def test_large_inputs_of_host_tasks_are_read_in_place() -> None:
    b = GraphBuilder("mm")
    x = b.create_input(0, shape=[256, 128])
    w = b.create_input(1, shape=[128, 160])
    compiled = CompiledGraph(b.build_and_reset([np.maximum(x @ w, 0.0)]))
    runner = compiled.runner(next(iter(compiled._plans.values())))  # type: ignore[arg-type]
    assert runner._direct.lent == {0, 1}  # the BLAS matmul (a host task) reads them
    rng = np.random.default_rng(0)
    xs, ws = (
        rng.standard_normal((256, 128), np.float32),
        rng.standard_normal((128, 160), np.float32),
    )
    runner.call([xs, ws])  # the workspace is made on the first call
    gc.collect()
    count = runtime.live_allocations()
    out = runner.call([xs, ws])[0]
    np.testing.assert_allclose(out, np.maximum(xs @ ws, 0), rtol=1e-5, atol=1e-5)
    assert runtime.live_allocations() == count  # the result reuses a pooled block; loans ended
    assert runner._free[0].inputs == [xs.ctypes.data, ws.ctypes.data]  # read where they are
    again = runner.call([np.asfortranarray(xs), ws])[0]  # not C-contiguous: staged
    np.testing.assert_allclose(again, out, rtol=1e-6)


def test_threads_lending_one_array_do_not_end_each_others_loans() -> None:
    b = GraphBuilder("mm2")
    x = b.create_input(0, shape=[128, 128])
    compiled = CompiledGraph(b.build_and_reset([x @ x]))
    runner = compiled.runner(next(iter(compiled._plans.values())))  # type: ignore[arg-type]
    assert runner._direct.lent == {0}
    data = np.random.default_rng(1).standard_normal((128, 128), np.float32)
    expected = data @ data
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                np.testing.assert_allclose(runner.call([data])[0], expected, rtol=1e-4, atol=1e-4)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: between one's lend and another's end
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[0]
    assert not runtime.memory.contains(data.ctypes.data, data.nbytes)  # every loan ended


def test_a_dropped_compiled_graph_frees_its_plans_without_a_cyclic_collection() -> None:
    """Neither the plan cache nor a bound plan points back at its owner: reference counting
    alone frees a dropped graph's plans and the device memory they hold."""
    graph = build(lambda x: x * 2.0 + 1.0, ("x", [6]))
    gc.collect()
    gc.disable()
    try:
        compiled = CompiledGraph(graph)
        compiled.run_arrays([f32(6)])
        plan = compiled.plan_for([[6]])
        assert plan is not None
        alive = weakref.ref(plan)
        del plan, compiled
        assert alive() is None
    finally:
        gc.enable()


def test_deleting_a_compiled_graph_frees_its_arena_without_gc() -> None:
    """No reference cycle ties a plan to its compiler: the intermediates' arena is freed when
    the last reference to the CompiledGraph goes, not at the next cyclic collection."""
    b = GraphBuilder("arena")
    x = b.create_input(0, shape=[64, 64])
    y = ge.es.Transpose(x * 2.0, b.create_const_int64([1, 0], shape=[2]))
    graph = b.build_and_reset([ge.es.ReduceSum(y, b.create_const_int64([0], shape=[1]))])
    gc.collect()
    before = runtime.live_bytes()
    gc.disable()
    try:
        compiled = CompiledGraph(graph)
        compiled.run_arrays([np.ones((64, 64), np.float32)])
        assert runtime.live_bytes() > before  # the arena is allocated
        del compiled
        assert runtime.live_bytes() <= before
    finally:
        gc.enable()
