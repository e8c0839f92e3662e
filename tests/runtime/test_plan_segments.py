"""A bound plan whose kernels are split by host tasks runs each run of kernels with one native
call: serially on the calling thread when every kernel of the run has one block, on the pool
when one has more; a kernel that fails is named, whichever run it is in."""

from __future__ import annotations

import numpy as np
import pytest

from ge.error import GeError
from ge.runtime.executor import PlanRunner
from ge.runtime.plan import BufferKind, BufferSpec, Plan, host_task, kernel_task
from tests.custom_op._kernels import kernel

N = 37
F32 = np.dtype(np.float32)


def _plan(first_blocks: int, second_blocks: int, n: int = N) -> Plan:
    """out = 2 * (copy of (x + x)) + 0: scale2 after a host copy after add, then add again."""
    plan = Plan()
    x = plan.add_buffer(BufferSpec(BufferKind.INPUT, 0, (N,), F32))
    a = plan.add_buffer(BufferSpec(BufferKind.INTERMEDIATE, 0, (N,), F32))
    b = plan.add_buffer(BufferSpec(BufferKind.INTERMEDIATE, 256, (N,), F32))
    out = plan.add_buffer(BufferSpec(BufferKind.OUTPUT, 0, (N,), F32))
    plan.inputs, plan.outputs, plan.arena_size = [x], [out], 512
    plan.tasks = [
        kernel_task("add", kernel("add"), first_blocks, [0, 0, 0, N], [(0, x), (1, x), (2, a)]),
        host_task("copy", "copy", [a, b]),
        kernel_task("scale", kernel("scale2"), second_blocks, [0, 0, n], [(0, b), (1, out)]),
    ]
    return plan


@pytest.mark.parametrize(("first", "second"), [(1, 1), (1, 4), (3, 1)])
def test_runs_of_kernels_around_a_host_task(first: int, second: int) -> None:
    runner = PlanRunner(_plan(first, second))
    x = np.linspace(-3, 3, N, dtype=np.float32)
    for _ in range(2):
        (out,) = runner.call([x])
        np.testing.assert_array_equal(out.view(np.float32), (x + x) * 2.0)
    bound = runner._free[-1].bound
    if bound._batch is None:
        pytest.skip("no native launcher in this process")
    kinds = [(None if run is None else run.__name__, count) for run, _, count, _ in bound._steps]
    serial = {1: "run_serial"}
    assert kinds == [
        (serial.get(first, "run_parallel"), 1),
        (None, 0),
        (serial.get(second, "run_parallel"), 1),
    ]


def test_a_kernel_failing_after_a_host_task_is_named() -> None:
    runner = PlanRunner(_plan(1, 1, n=1 << 40))  # scale2 views far past its buffers
    with pytest.raises(GeError, match=r"^node scale failed: kernel scale: its kernel_array view"):
        runner.call([np.ones(N, np.float32)])
