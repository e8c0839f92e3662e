# ruff: noqa: UP006, UP035  (typing.List is the annotation kind GE-PY reads)
"""A custom op's ``execute`` is a data task of its plan (``HOST_OPS["custom_op"]``): before
``bind()`` the plan holds only data (kernel keys, host ops by name with their parameters);
``bind()`` makes its function through ``ge.custom_op`` from the registry, reuses its loan
run after run, and an offline model neither writes nor reads such a task."""

from __future__ import annotations

import json
from typing import Any, List

import numpy as np
import pytest

import ge.es
import ge.es.custom
from ge import offline_compile as oc
from ge.custom_op import get_execute_ctx, register_op, register_op_impl, registry
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.graph import Tensor as GraphTensor
from ge.graph.types import Placement
from ge.runtime import ModelFormatError, Tensor, TensorDesc, load_model, memory
from ge.runtime import plan as plan_mod
from ge.runtime.executor import execute_plan
from ge.runtime.host_ops import HOST_OPS
from ge.runtime.plan import HostTask, KernelTask, Plan
from tests.custom_op._ops import CALLS, launch_add, output_like, rand, register_add
from tests.runtime.test_om_format import repack, split

N = 6


def _t(a: np.ndarray) -> GraphTensor:
    return GraphTensor.from_numpy(a, placement=Placement.PLACEMENT_DEVICE)


def _add_graph(op: Any) -> Any:
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[N]), b.create_input(1, shape=[N])
    return b.build_and_reset([op(np.exp(x), y) * 2.0])


def _plan(session: Any, graph: Any, inputs: int = 2) -> Plan:
    """The plan graph 0 runs (compiled, not run: not bound)."""
    session.add_graph(0, graph)
    plan = session._compiled("RunGraph", 0, {}).plan_for([[N]] * inputs)
    assert isinstance(plan, Plan)
    return plan


def _custom_task(plan: Plan) -> HostTask:
    (task,) = [t for t in plan.tasks if isinstance(t, HostTask) and t.op == "custom_op"]
    return task


def _run(plan: Plan, *arrays: np.ndarray) -> list[np.ndarray]:
    """One run of ``plan`` through ``execute_plan`` (its own bind) on host arrays."""
    blocks = [memory.malloc(a.nbytes) for a in arrays]
    try:
        for block, a in zip(blocks, arrays, strict=True):
            memory.memcpy_h2d(block.addr, a)
        outs, releases = execute_plan(plan, [b.addr for b in blocks])
        results = []
        for buf, addr in zip(plan.outputs, outs, strict=True):
            spec = plan.buffers[buf]
            results.append(plan_mod.view(addr, spec).copy())
        for release in releases:
            release()
        return results
    finally:
        for block in blocks:
            memory.free(block)


def test_a_session_plan_with_an_execute_op_holds_only_data_before_bind(session) -> None:  # type: ignore[no-untyped-def]
    op = register_add("DataTaskAdd", compile=True)
    plan = _plan(session, _add_graph(op))
    assert plan._program is None  # not bound yet
    for task in plan.tasks:
        assert isinstance(task, (KernelTask, HostTask)), task
        if isinstance(task, HostTask):
            assert task.fn is None and task.op in HOST_OPS, task
    task = _custom_task(plan)
    kinds = HOST_OPS["custom_op"].params
    data = {k: v for k, v in task.params.items() if kinds[k] != "hint"}
    assert json.loads(json.dumps(data)) == data  # plain data: what a file could hold
    assert data["op_type"] == "DataTaskAdd" and data["inputs"] == [[0], [1]]
    assert data["outputs"] == [[2]] and data["dtypes"] == [int(DataType.DT_FLOAT)] * 3
    assert type(task.params["instance"]).__name__ == "Compiled"  # compile ran on it
    a, c = rand(N), rand(N, seed=1)
    (out,) = session.run_graph(0, [_t(a), _t(c)])
    np.testing.assert_allclose(out.numpy(), (np.exp(a) + c) * 2.0, rtol=1e-6)
    assert plan._program is not None  # run_graph bound it


def test_bind_reuses_one_loan_run_after_run(session) -> None:  # type: ignore[no-untyped-def]
    op = register_add("LoanTaskAdd")
    plan = _plan(session, _add_graph(op))
    a, c = rand(N), rand(N, seed=2)
    for k in range(4):
        (out,) = session.run_graph(0, [_t(a + k), _t(c)])
        np.testing.assert_allclose(out.numpy(), (np.exp(a + k) + c) * 2.0, rtol=1e-6)
    index = plan.tasks.index(_custom_task(plan))
    run = plan.bind().host[index]
    assert run is not None
    state = run.__self__  # type: ignore[attr-defined]
    assert len(state.loans) == 1  # built at the first run, lent again at every later one
    assert [c[0] for c in CALLS] == ["execute"] * 4


def test_a_task_without_its_instance_binds_through_the_registry(session) -> None:  # type: ignore[no-untyped-def]
    op = register_add("RegistryTaskAdd")
    plan = _plan(session, _add_graph(op))
    task = _custom_task(plan)
    bare = task.replace(params={**task.params, "instance": None})
    copy = Plan(
        buffers=plan.buffers,
        tasks=[bare if t is task else t for t in plan.tasks],
        inputs=plan.inputs,
        outputs=plan.outputs,
        const_addrs=plan.const_addrs,
        arena_size=plan.arena_size,
    )
    a, c = rand(N), rand(N, seed=3)
    (out,) = _run(copy, a, c)
    np.testing.assert_allclose(out, (np.exp(a) + c) * 2.0, rtol=1e-6)
    registry._unregister("RegistryTaskAdd")
    again = Plan(
        buffers=plan.buffers,
        tasks=copy.tasks,
        inputs=plan.inputs,
        outputs=plan.outputs,
        const_addrs=plan.const_addrs,
        arena_size=plan.arena_size,
    )
    with pytest.raises(
        GeError,
        match=r"no implementation with execute is registered.*"
        r"register_op_impl\(op_type='RegistryTaskAdd'\)",
    ):
        again.bind()
    assert again._program is None  # nothing half-bound


def test_a_task_that_does_not_fit_its_op_is_refused_at_bind(session) -> None:  # type: ignore[no-untyped-def]
    op = register_add("MisfitTaskAdd")
    plan = _plan(session, _add_graph(op))
    task = _custom_task(plan)
    for bad in (
        {"inputs": [[0]]},
        {"outputs": [[1]]},
        {"attrs": {"scale": 1.0}},
        {"dtypes": [0]},
        {"output_names": []},
    ):
        wrong = task.replace(params={**task.params, **bad})
        with pytest.raises(GeError, match=r"does not fit op MisfitTaskAdd"):
            plan_mod._host_runner(wrong, plan.buffers, [])


def test_attributes_and_a_tensor_attribute_travel_as_data(session) -> None:  # type: ignore[no-untyped-def]
    @register_op(op_type="AttrTaskOp")
    def infer(x: TensorDesc, *, k: int, dt: DataType, ks: List[int], t: Tensor) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    seen: list[Any] = []

    @register_op_impl(op_type="AttrTaskOp")
    class Impl:
        def execute(self, x: Tensor, *, k: int, dt: DataType, ks: List[int], t: Tensor) -> None:
            seen.append((k, dt, list(ks), t.data_type, t.storage_shape.dims))
            ks.append(99)  # mutating a list attribute never reaches the next run
            ctx = get_execute_ctx()
            launch_add(ctx, x, x, output_like(ctx, 0, x))

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[N])
    const = GraphTensor.from_numpy(np.arange(3, dtype=np.int32))
    fn = ge.es.custom.AttrTaskOp
    plan = _plan(
        session, b.build_and_reset([fn(x, k=3, dt=DataType.DT_INT8, ks=[1, 2], t=const)]), 1
    )
    params = _custom_task(plan).params
    assert params["attrs"]["k"] == 3 and params["attrs"]["dt"] == int(DataType.DT_INT8)
    assert params["attrs"]["ks"] == [1, 2]
    position = params["attrs"]["t"]  # the constant's buffer, after the input and the output
    assert position == 2 and params["dtypes"][position] == int(DataType.DT_INT32)
    a = rand(N)
    for _ in range(2):
        (out,) = session.run_graph(0, [_t(a)])
        np.testing.assert_allclose(out.numpy(), a + a, rtol=1e-6)
    assert seen == [(3, DataType.DT_INT8, [1, 2], DataType.DT_INT32, [3])] * 2


def test_build_model_refuses_an_execute_op_suggesting_declare_launch_args() -> None:
    op = register_add("OfflineTaskAdd")
    oc.build_initialize({})
    try:
        with pytest.raises(
            GeError,
            match=r"node OfflineTaskAdd\S* runs Python on the host "
            r"\(custom op OfflineTaskAdd's execute\).*declare_launch_args",
        ):
            oc.build_model(_add_graph(op))
    finally:
        oc.build_finalize()


def test_a_model_file_holding_a_custom_op_task_is_refused() -> None:
    oc.build_initialize({})
    try:
        b = GraphBuilder("m")
        x = b.create_input(0, name="x", shape=[N])
        data = oc.build_model(b.build_and_reset([np.exp(x) + 1.0])).get_bytes()
    finally:
        oc.build_finalize()
    header, payload = split(data)
    tasks = header["graphs"][0]["tasks"]
    tasks.append({"name": "c", "host": "custom_op", "buffers": [0], "params": {}})
    with pytest.raises(ModelFormatError, match=r"custom_op runs a custom op's Python execute"):
        load_model(repack(header, payload))
    (out,) = load_model(data).execute([np.ones(N, np.float32)])  # the untouched file loads
    np.testing.assert_allclose(out, np.exp(np.ones(N)) + 1.0, rtol=1e-6)


def test_plain_int_launches_on_the_execute_stream_run_at_once_without_a_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ge.custom_op._eager import _InlineStream
    from ge.runtime import launch_kernel
    from tests.custom_op._kernels import kernel

    submitted: list[str] = []
    real_submit = _InlineStream.submit

    def counting(self: Any, fn: Any, name: str = "", **kw: Any) -> None:
        submitted.append(name)
        real_submit(self, fn, name, **kw)

    monkeypatch.setattr(_InlineStream, "submit", counting)
    stream = _InlineStream()
    x, y = rand(N), rand(N, seed=4)
    blocks = [memory.malloc(x.nbytes) for _ in range(3)]
    try:
        memory.memcpy_h2d(blocks[0].addr, x)
        memory.memcpy_h2d(blocks[1].addr, y)
        addrs = [b.addr for b in blocks]
        launch_kernel(kernel("add"), 2, stream.handle, [*addrs, N])
        out = memory.device_view(blocks[2].addr, x.nbytes).view(np.float32)
        np.testing.assert_allclose(out, x + y, rtol=1e-6)  # ran at once, before synchronize
        assert submitted == []  # no task was queued for it
        out[...] = 0.0
        launch_kernel(kernel("add"), 2, stream.handle, [8, addrs[1], addrs[2], N])  # wild x
        launch_kernel(kernel("add"), 2, stream.handle, [*addrs, N])  # skipped behind it
        assert not out.any()
        with pytest.raises(GeError, match=r"^kernel add failed: kernel add: its kernel_array"):
            stream.synchronize()
        launch_kernel(kernel("add"), 2, stream.handle, [*addrs, N])  # runs again after it
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
        stream.synchronize()
        launch_kernel(kernel("add"), 2, stream.handle, [2**63, addrs[1], addrs[2], N])
        with pytest.raises(GeError, match=r"at 0x8000000000000000 \(from args\[0\]\)"):
            stream.synchronize()  # past int64: the checked path took it, as a uint64 address
    finally:
        for block in blocks:
            memory.free(block)
