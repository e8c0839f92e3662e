"""A kernel that fails at run time says why (issue #12): lowering gives each kernel task a
host-side explanation, the op's numpy reference re-run on the node's inputs after a failed
launch (never on a successful one). An out-of-range ``GatherV2`` index then names the node,
the op, the input, the bad value and the valid range, on the native launcher's path and on
the task-by-task path alike, from ``Session`` and from ``ge.jit``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ge
import ge.es
from ge.compiler.executable import CompiledGraph
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.runtime.plan import KernelTask
from ge.session import Session

CONFIG = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
X = np.arange(15, dtype=np.float32).reshape(5, 3)


@pytest.fixture(autouse=True)
def initialized() -> Iterator[None]:
    GeApi.ge_initialize(CONFIG)
    yield
    GeApi.ge_finalize()


def gather_graph(name: str, *, computed: bool = False, batch_dims: int = 0) -> Graph:
    """``y = GatherV2(x, i, axis=0) * 2`` (``computed``: the indices are ``i + 1``)."""
    b = GraphBuilder(name)
    x = b.create_input(0, name="x", shape=list(X.shape))
    i = b.create_input(1, name="i", data_type=DataType.DT_INT64, shape=[4])
    if computed:
        i = i + b.create_const_int64(1)
    if batch_dims:
        x = ge.es.Reshape(x, b.create_vector_int64([1, 5, 3]))
        i = ge.es.Reshape(i, b.create_vector_int64([1, 4]))
    axis = b.create_const_int64(batch_dims)
    return b.build_and_reset([ge.es.GatherV2(x, i, axis, batch_dims=batch_dims) * 2.0])


def run(session: Session, graph_id: int, indices: list[int]) -> np.ndarray:
    (out,) = session.run_graph(
        graph_id, [Tensor.from_numpy(X), Tensor.from_numpy(np.array(indices, np.int64))]
    )
    return out.numpy()


@pytest.mark.parametrize(
    ("indices", "message"),
    [
        (
            [0, 7, 1, 9],
            r"holds 7 at \[1\], out of range \[0, 5\) for axis 0 of x \(size 5\); 2 of 4",
        ),
        (
            [0, 1, 2, -1],
            r"holds -1 at \[3\], out of range \[0, 5\) for axis 0 of x \(size 5\); 1 of 4",
        ),
    ],
)
def test_an_out_of_range_index_names_the_op_input_value_and_range(
    path: str, indices: list[int], message: str
) -> None:
    session = Session(CONFIG)
    session.add_graph(0, gather_graph("gather"))
    np.testing.assert_array_equal(run(session, 0, [4, 0, 2, 2]), X[[4, 0, 2, 2]] * 2)
    with pytest.raises(GeError) as info:
        run(session, 0, indices)
    text = str(info.value)
    assert text.startswith("RunGraph failed; graph_id=0; node GatherV2_")
    assert "GatherV2 input 'indices' " in text
    assert re.search(message, text), text
    np.testing.assert_array_equal(run(session, 0, [1, 1, 0, 3]), X[[1, 1, 0, 3]] * 2)


def test_computed_indices_are_explained_too(path: str) -> None:
    session = Session(CONFIG)
    session.add_graph(0, gather_graph("gather_computed", computed=True))
    np.testing.assert_array_equal(run(session, 0, [3, 0, 1, 2]), X[[4, 1, 2, 3]] * 2)
    with pytest.raises(GeError, match=r"GatherV2 input 'indices' holds 5 at \[0\], out of range"):
        run(session, 0, [4, 0, 1, 2])


def test_batch_dims_gather_on_the_reference_task_says_the_same() -> None:
    session = Session(CONFIG)
    session.add_graph(0, gather_graph("gather_batch", batch_dims=1))
    np.testing.assert_array_equal(run(session, 0, [4, 0, 2, 2]), X[[4, 0, 2, 2]][None] * 2)
    with pytest.raises(GeError, match=r"GatherV2 input 'indices' holds 8 at \[0, 2\], out of"):
        run(session, 0, [0, 1, 8, 2])


def _gather_task(compiled: CompiledGraph) -> tuple[Any, KernelTask]:
    plan = compiled.plan_for([list(s.shape) for s in compiled.inputs])
    assert plan is not None
    (task,) = [t for t in plan.tasks if isinstance(t, KernelTask) and "GatherV2" in t.name]
    return plan, task


def test_the_explanation_runs_only_after_a_failure(path: str) -> None:
    compiled = CompiledGraph(gather_graph("gather_counted"))
    plan, task = _gather_task(compiled)
    assert task.explain is not None and len(task.explain_buffers) == 3  # x, indices, axis
    calls = []
    explain = task.explain

    def counted(views: list[np.ndarray]) -> str | None:
        calls.append(1)
        return explain(views)

    task.explain = counted
    runner = compiled.runner(plan)
    good = [np.ascontiguousarray(X), np.array([0, 1, 2, 3], np.int64)]
    for _ in range(20):
        (raw,) = runner.run(good)
        np.testing.assert_array_equal(raw.view(np.float32).reshape(4, 3), X[:4] * 2)
    assert calls == []
    with pytest.raises(GeError, match=r"holds 5 at \[2\]"):
        runner.run([good[0], np.array([0, 1, 5, 3], np.int64)])
    assert calls == [1]


def test_without_an_explanation_the_failure_still_raises(path: str) -> None:
    compiled = CompiledGraph(gather_graph("gather_plain"))
    plan, task = _gather_task(compiled)
    task.explain = None
    runner = compiled.runner(plan)
    with pytest.raises(GeError, match=r"node GatherV2_\d+ failed"):
        runner.run([np.ascontiguousarray(X), np.array([0, 1, 5, 3], np.int64)])


def test_jit_reports_the_bad_index_and_numpy_range() -> None:
    @ge.jit
    def f(x: Any, i: Any) -> Any:
        return x[i] * 2

    np.testing.assert_array_equal(f(X, np.array([-1, 4])), X[[-1, 4]] * 2)
    with pytest.raises(GeError, match=r"holds 6 at \[1\], out of range \[-5, 5\) for axis 0"):
        f(X, np.array([0, 6]))
