"""Plans are pure data (``ge.runtime.plan``): kernels by key, host ops by name with their
parameters, sub-plans by index; ``Plan.bind()`` resolves them, once, for compiled graphs and
loaded models alike."""

from __future__ import annotations

import numpy as np
import pytest

from ge import offline_compile as oc
from ge import runtime
from ge.compiler.executable import CompiledGraph
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.runtime.executor import PlanRunner, execute_plan
from ge.runtime.plan import (
    PYTHON_TASK,
    BufferKind,
    BufferSpec,
    HostTask,
    KernelRef,
    KernelTask,
    Plan,
    Program,
    binary_data,
    host_task,
    resolve_kernel,
)

F32 = np.dtype(np.float32)


def _graph() -> Graph:
    b = GraphBuilder("data")
    x = b.create_input(0, shape=[5])
    return b.build_and_reset([x * 2.0 + 1.0])


@pytest.fixture(scope="module")
def plan() -> Plan:
    compiled = CompiledGraph(_graph())
    found = compiled.plan_for([[5]])
    assert found is not None
    found._keep = compiled  # type: ignore[attr-defined]
    return found


def test_a_compiled_plans_kernel_tasks_hold_keys_not_functions(plan: Plan) -> None:
    kernels = [t for t in plan.tasks if isinstance(t, KernelTask)]
    assert kernels
    for task in kernels:
        assert isinstance(task.kernel, KernelRef)
        assert len(task.kernel.binary) == 64 and int(task.kernel.binary, 16) >= 0  # SHA-256 hex
        values = [getattr(task, f) for f in task.__match_args__ if f != "explain"]
        assert not any(callable(v) for v in values)  # every field but the diagnostics is data
        assert resolve_kernel(task.kernel).name == task.kernel.function
        assert isinstance(binary_data(task.kernel), bytes)


def test_bind_is_done_once_per_plan(plan: Plan) -> None:
    program = plan.bind()
    assert isinstance(program, Program) and plan.bind() is program
    assert PlanRunner(plan).program is program  # the executor runs the one bound program


def test_a_data_host_task_has_no_function_until_bind() -> None:
    task = host_task("c", "copy", [0, 1])
    assert task.fn is None and task.op == "copy" and task.params == {}
    with pytest.raises(GeError, match="runs through its plan's bind"):
        task.run(np.zeros(2, np.int64), [])


def test_an_unknown_kernel_key_fails_bind_naming_the_node(plan: Plan) -> None:
    (task,) = [t for t in plan.tasks if isinstance(t, KernelTask)][:1]
    bad = Plan()
    bad.buffers = list(plan.buffers)
    bad.inputs, bad.outputs = list(plan.inputs), list(plan.outputs)
    bad.tasks = [task.replace(name="lost", kernel=KernelRef("0" * 64, "f"))]
    with pytest.raises(GeError, match=r"node lost: kernel binary 0{16}\.\.\. is not loaded"):
        bad.bind()
    missing = task.replace(name="nofn", kernel=KernelRef(task.kernel.binary, "nope"))
    bad.tasks = [missing]
    bad._program = None
    with pytest.raises(GeError, match=r"node nofn: .*no function 'nope'"):
        bad.bind()


def _copy_plan() -> Plan:
    """in(float32[3]) -> out: a plan of one data host task."""
    sub = Plan()
    src = sub.add_buffer(BufferSpec(BufferKind.INPUT, 0, (3,), F32))
    dst = sub.add_buffer(BufferSpec(BufferKind.OUTPUT, 0, (3,), F32))
    sub.inputs, sub.outputs = [src], [dst]
    sub.tasks = [host_task("copy", "copy", [src, dst])]
    return sub


def test_control_flow_tasks_run_their_sub_plans_by_index() -> None:
    """A ``branch`` task names its branches as indexes into ``Plan.subplans``; bind makes
    runners of them. Branch 0 copies, branch 1 is a plan that negates through a Python task."""
    negate = Plan()
    a = negate.add_buffer(BufferSpec(BufferKind.INPUT, 0, (3,), F32))
    b = negate.add_buffer(BufferSpec(BufferKind.OUTPUT, 0, (3,), F32))
    negate.inputs, negate.outputs = [a], [b]

    def neg(views: list[np.ndarray]) -> None:
        np.negative(views[0], out=views[1])

    negate.tasks = [HostTask("neg", neg, [a, b])]
    plan = Plan()
    cond = plan.add_buffer(BufferSpec(BufferKind.INPUT, 0, (), np.dtype(np.bool_)))
    x = plan.add_buffer(BufferSpec(BufferKind.INPUT, 1, (3,), F32))
    y = plan.add_buffer(BufferSpec(BufferKind.OUTPUT, 0, (3,), F32))
    plan.inputs, plan.outputs = [cond, x], [y]
    plan.subplans = [_copy_plan(), negate]
    plan.tasks = [
        host_task(
            "if",
            "branch",
            [cond, x, y],
            case=False,
            inputs=1,
            branches=[0, 1],
            branch_inputs=[1, 1],
        )
    ]
    assert plan.tasks[0].op != PYTHON_TASK and plan.tasks[0].params["branches"] == [0, 1]
    runner = PlanRunner(plan)
    xs = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(runner.call([np.array(True), xs])[0], xs)
    np.testing.assert_array_equal(runner.call([np.array(False), xs])[0], -xs)
    assert "host branch if" in plan.as_text()


def test_execute_plan_runs_once_at_given_addresses(plan: Plan) -> None:
    x = np.arange(5, dtype=np.float32)
    block = runtime.malloc(x.nbytes)
    try:
        runtime.memcpy_h2d(block.addr, x)
        (out,), (release,) = execute_plan(plan, [block.addr])
    finally:
        runtime.free(block)
    try:
        got = runtime.device_view(out, x.nbytes).view(np.float32).copy()
    finally:
        release()
    np.testing.assert_allclose(got, x * 2 + 1)


def test_a_loaded_model_binds_the_same_kernels_by_key(plan: Plan) -> None:
    oc.build_initialize({})
    try:
        data = oc.build_model(_graph()).get_bytes()
    finally:
        oc.build_finalize()
    model = runtime.load_model(data)
    (gear,) = model._default._gears
    loaded = gear.runner.plan
    assert isinstance(gear.runner.program, Program)
    refs = [t.kernel for t in loaded.tasks if isinstance(t, KernelTask)]
    assert refs and all(isinstance(r, KernelRef) for r in refs)
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    np.testing.assert_allclose(model.execute([x])[0], x * 2 + 1, rtol=1e-6)


def test_a_bound_plan_dropped_frees_its_constants_at_once() -> None:
    """The program a plan binds does not point back at the plan: dropping a bound plan frees
    the device memory it owns by reference counting, with no cyclic collection."""
    plan = _copy_plan()
    plan.device_constant(np.zeros(1000, np.float32))
    PlanRunner(plan).call([np.ones(3, np.float32)])
    before = runtime.live_bytes()
    del plan
    assert runtime.live_bytes() <= before - 4000


def _if_graph() -> Graph:
    import ge.es
    from ge.graph import DataType

    def branch(name: str, scale: float) -> Graph:
        b = GraphBuilder(name)
        b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
        x = b.create_input(1, shape=[3])
        return b.build_and_reset([x * scale])

    b = GraphBuilder("if")
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[3])
    (y,) = ge.es.If(c, [c, x], 1, branch("then", 2.0), branch("else", -1.0))
    return b.build_and_reset([y + 1.0])


def test_a_loaded_plan_is_the_same_data_a_file_holds() -> None:
    """A loaded model's plan (control flow: data host tasks over ``subplans``) written back
    with ``om.plan_data`` and loaded again runs the same: plans and files are one data."""
    from ge.runtime import om

    oc.build_initialize({})
    try:
        first = om.unpack(oc.build_model(_if_graph()).get_bytes())
    finally:
        oc.build_finalize()
    model = runtime.load_model(om.pack(first))
    (gear,) = model._default._gears
    loaded = gear.runner.plan
    assert loaded.subplans and any(
        t.op == "branch" for t in loaded.tasks if isinstance(t, HostTask)
    )
    again = om.ModelData([], [], [], dict(first.options), ge_options=first.ge_options)
    entry = first.graphs[0]
    data = om.plan_data(loaded, again, entry.name)
    again.graphs.append(om.GraphEntry(entry.name, entry.input_names, entry.output_names, data))
    assert len(data.subplans) == len(entry.plan.subplans)
    assert [type(t) for t in data.tasks] == [type(t) for t in entry.plan.tasks]
    reloaded = runtime.load_model(om.pack(again))
    x = np.array([1.0, -2.0, 0.5], np.float32)
    for cond, want in ((True, x * 2 + 1), (False, -x + 1)):
        for m in (model, reloaded):
            np.testing.assert_allclose(m.execute([np.array(cond), x])[0], want, rtol=1e-6)
