"""The indexing ops' kernels (ge/compiler/kernels/indexing.py): every op runs as kernel launches
(no reference host task), multi-block launches agree with numpy, duplicates and integer
wrap-around behave as the references say, a computed ReverseV2 axis is read by its kernel,
and an out-of-range index fails the launch with the reference's message (the op,
the input, the bad value and the valid range) through Session and ge.jit alike."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ge
import ge.es
from ge.compiler.executable import CompiledGraph
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.runtime.plan import HostTask, KernelTask
from ge.session import Session

CONFIG = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
F32 = DataType.DT_FLOAT
I64 = DataType.DT_INT64


@pytest.fixture(autouse=True)
def initialized() -> Iterator[None]:
    GeApi.ge_initialize(CONFIG)
    yield
    GeApi.ge_finalize()


def _graph(name: str, build: object, *inputs: tuple[list[int], DataType]) -> Graph:
    b = GraphBuilder(name)
    holders = [b.create_input(i, shape=s, data_type=t) for i, (s, t) in enumerate(inputs)]
    return b.build_and_reset([build(b, *holders)])  # type: ignore[operator]


def _run(graph: Graph, *arrays: np.ndarray) -> tuple[np.ndarray, list[KernelTask | HostTask]]:
    compiled = CompiledGraph(graph)
    (out,) = compiled.run_arrays(list(arrays))
    plan = compiled.plan_for([list(a.shape) for a in arrays])
    assert plan is not None
    return np.asarray(out), list(plan.tasks)


def _op_tasks(tasks: list[KernelTask | HostTask], op: str) -> list[KernelTask | HostTask]:
    mine = [t for t in tasks if t.name.startswith(op)]
    assert mine, [t.name for t in tasks]
    return mine


def _updated(x: np.ndarray, writes: dict[tuple[int, ...], float]) -> np.ndarray:
    y = x.copy()
    for at, v in writes.items():
        y[at] = v
    return y


RNG = np.random.default_rng(7)
X = RNG.normal(size=(6, 5)).astype(np.float32)


def _vec(b: GraphBuilder, values: object) -> object:
    array = np.asarray(values, np.int64)
    return b.create_const_int64(array.reshape(-1).tolist(), list(array.shape))


# (name, graph builder, inputs, arrays, numpy result)
KERNEL_CASES = [
    (
        "ReverseV2",
        lambda b, x: ge.es.ReverseV2(x, _vec(b, [0, -1])),
        [([6, 5], F32)],
        [X],
        X[::-1, ::-1],
    ),
    (
        "MirrorPad",
        lambda b, x: ge.es.MirrorPad(x, _vec(b, [[2, 5], [4, 1]]), mode="REFLECT"),
        [([6, 5], F32)],
        [X],
        np.pad(X, ((2, 5), (4, 1)), mode="reflect"),
    ),
    (
        "MirrorPad",
        lambda b, x: ge.es.MirrorPad(x, _vec(b, [[6, 0], [1, 5]]), mode="SYMMETRIC"),
        [([6, 5], F32)],
        [X],
        np.pad(X, ((6, 0), (1, 5)), mode="symmetric"),
    ),
    (
        "GatherNd",
        lambda b, x, i: ge.es.GatherNd(x, i),
        [([6, 5], F32), ([4, 2], I64)],
        [X, np.array([[0, 4], [5, 0], [5, 0], [2, 3]], np.int64)],
        X[[0, 5, 5, 2], [4, 0, 0, 3]],
    ),
    (
        "ScatterNd",
        lambda b, i, u: ge.es.ScatterNd(i, u, _vec(b, [6, 5])),
        [([3, 1], I64), ([3, 5], F32)],
        [np.array([[1], [4], [1]], np.int64), X[:3]],
        np.stack([0 * X[0], X[0] + X[2], 0 * X[0], 0 * X[0], X[1], 0 * X[0]]),
    ),
    (
        "TensorScatterUpdate",
        lambda b, x, i, u: ge.es.TensorScatterUpdate(x, i, u),
        [([6, 5], F32), ([3, 2], I64), ([3], F32)],
        [X, np.array([[1, 1], [0, 4], [1, 1]], np.int64), np.array([7, 8, 9], np.float32)],
        _updated(X, {(1, 1): 9, (0, 4): 8}),
    ),
    (
        "TensorScatterAdd",
        lambda b, x, i, u: ge.es.TensorScatterAdd(x, i, u),
        [([6, 5], F32), ([3, 1], I64), ([3, 5], F32)],
        [X, np.array([[5], [5], [0]], np.int64), np.ones((3, 5), np.float32)],
        X + np.array([1, 0, 0, 0, 0, 2], np.float32)[:, None],
    ),
]


@pytest.mark.parametrize(
    ("op", "build", "inputs", "arrays", "expected"),
    KERNEL_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(KERNEL_CASES)],
)
def test_runs_as_kernels(
    op: str, build: object, inputs: list, arrays: list[np.ndarray], expected: np.ndarray
) -> None:
    out, tasks = _run(_graph(f"k_{op}", build, *inputs), *arrays)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert all(isinstance(t, KernelTask) for t in _op_tasks(tasks, op))  # no host fallback


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((6, 5), [1]), ((2, 3, 4), [0, -1]), ((4,), []), ((), []), ((0, 3), [0])],
    ids=["one", "two", "none", "scalar", "empty"],
)
def test_computed_reverse_axis_runs_a_kernel(shape: tuple[int, ...], axes: list[int]) -> None:
    graph = _graph(
        "k_rev_computed",
        lambda b, x, a: ge.es.ReverseV2(x, a),
        (list(shape), F32),
        ([len(axes)], I64),
    )
    x = RNG.normal(size=shape).astype(np.float32)
    out, tasks = _run(graph, x, np.array(axes, np.int64))
    np.testing.assert_array_equal(out, np.flip(x, tuple(axes)) if axes else x)
    kernels = all(isinstance(t, KernelTask) for t in _op_tasks(tasks, "ReverseV2"))
    assert kernels == (x.size > 0)  # an empty x: the reference, which checks the axes


@pytest.mark.parametrize(
    ("axes", "message"),
    [([2], "axis 2 is out of range for rank 2"), ([0, -2], "repeat an axis")],
    ids=["out-of-range", "repeated"],
)
def test_computed_reverse_axis_bad_value(axes: list[int], message: str) -> None:
    session = Session(CONFIG)
    graph = _graph(
        "k_rev_bad", lambda b, x, a: ge.es.ReverseV2(x, a), ([6, 5], F32), ([len(axes)], I64)
    )
    session.add_graph(0, graph)
    with pytest.raises(GeError, match=message):
        session.run_graph(0, [Tensor.from_numpy(X), Tensor.from_numpy(np.array(axes, np.int64))])


def test_multi_block_launches_match_numpy() -> None:
    big = RNG.normal(size=(80, 1024)).astype(np.float32)
    idx = RNG.integers(0, 80, size=(50, 1)).astype(np.int64)
    graph = _graph(
        "k_big_gather", lambda b, x, i: ge.es.GatherNd(x, i), ([80, 1024], F32), ([50, 1], I64)
    )
    out, tasks = _run(graph, big, idx)
    np.testing.assert_array_equal(out, big[idx[:, 0]])
    assert any(isinstance(t, KernelTask) and t.block_dim > 1 for t in tasks)
    pads = [[3, 2], [7, 9]]
    graph = _graph(
        "k_big_mirror",
        lambda b, x: ge.es.MirrorPad(x, _vec(b, pads), mode="SYMMETRIC"),
        ([80, 1024], F32),
    )
    out, _ = _run(graph, big)
    np.testing.assert_array_equal(out, np.pad(big, pads, mode="symmetric"))


def test_update_last_duplicate_wins_and_adds_wrap() -> None:
    idx = np.array([[2], [0], [2], [2], [0]], np.int64)
    upd = np.arange(5, dtype=np.float32)
    graph = _graph(
        "k_dupes",
        lambda b, x, i, u: ge.es.TensorScatterUpdate(x, i, u),
        ([4], F32),
        ([5, 1], I64),
        ([5], F32),
    )
    out, _ = _run(graph, np.zeros(4, np.float32), idx, upd)
    np.testing.assert_array_equal(out, [4, 0, 3, 0])
    i8 = DataType.DT_INT8
    graph = _graph(
        "k_wrap",
        lambda b, x, i, u: ge.es.TensorScatterAdd(x, i, u),
        ([2], i8),
        ([3, 1], I64),
        ([3], i8),
    )
    x8 = np.array([100, 0], np.int8)
    out, _ = _run(graph, x8, np.array([[0], [0], [1]], np.int64), np.array([100, 100, 5], np.int8))
    np.testing.assert_array_equal(out, np.array([300 - 256, 5], np.int8))


def _scatter_graph() -> Graph:
    return _graph(
        "k_scatter_bad",
        lambda b, i, u: ge.es.ScatterNd(i, u, _vec(b, [4, 2])),
        ([3, 1], I64),
        ([3, 2], F32),
    )


@pytest.mark.parametrize(
    ("graph", "feeds", "message"),
    [
        (
            lambda: _graph(
                "k_gnd_bad", lambda b, x, i: ge.es.GatherNd(x, i), ([6, 5], F32), ([2, 2], I64)
            ),
            [X, np.array([[0, 1], [3, 5]], np.int64)],
            r"GatherNd input 'indices' holds 5 at \[1, 1\], out of range \[0, 5\) for dim 1",
        ),
        (
            _scatter_graph,
            [np.array([[0], [-1], [9]], np.int64), np.ones((3, 2), np.float32)],
            r"ScatterNd input 'indices' holds -1 at \[1, 0\], out of range \[0, 4\) for dim 0 "
            r"of shape \(size 4\); 2 of 3",
        ),
    ],
    ids=["GatherNd", "ScatterNd"],
)
def test_bad_index_names_op_input_value_and_range(
    graph: object, feeds: list[np.ndarray], message: str
) -> None:
    session = Session(CONFIG)
    session.add_graph(0, graph())  # type: ignore[operator]
    with pytest.raises(GeError, match=message):
        session.run_graph(0, [Tensor.from_numpy(f) for f in feeds])


def test_bad_index_under_jit_is_a_ge_error() -> None:
    @ge.jit
    def f(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        x[i] = 0.0
        return x

    with pytest.raises(GeError, match=r"TensorScatterUpdate input 'indices' holds 9 at"):
        f(X.copy(), np.array([1, 9]))


@pytest.mark.parametrize("op", ["TensorScatterUpdate", "TensorScatterAdd"])
def test_int64_values_are_copied_exactly(op: str) -> None:
    # x is copied bit for bit: no float64 round trip of large or negative int64 values
    x = np.array([-8, 2**62 + 1, -(2**63), 2**63 - 1], np.int64)
    graph = _graph(
        f"k_exact_{op}",
        lambda b, t, i, u: getattr(ge.es, op)(t, i, u),
        ([4], I64),
        ([1, 1], I64),
        ([1], I64),
    )
    out, _ = _run(graph, x, np.array([[1]], np.int64), np.array([2], np.int64))
    expected = x.copy()
    expected[1] = 2 if op == "TensorScatterUpdate" else x[1] + 2
    np.testing.assert_array_equal(out, expected)


def test_session_runs_the_ops() -> None:
    b = GraphBuilder("k_session")
    x = b.create_input(0, shape=[6, 5], data_type=F32)
    i = b.create_input(1, shape=[2, 1], data_type=I64)
    rows = ge.es.GatherNd(ge.es.ReverseV2(x, _vec(b, [1])), i)
    padded = ge.es.MirrorPad(rows, _vec(b, [[1, 1], [0, 2]]), mode="SYMMETRIC")
    session = Session(CONFIG)
    session.add_graph(0, b.build_and_reset([padded]))
    idx = np.array([[4], [0]], np.int64)
    (out,) = session.run_graph(0, [Tensor.from_numpy(X), Tensor.from_numpy(idx)])
    expected = np.pad(X[:, ::-1][[4, 0]], ((1, 1), (0, 2)), mode="symmetric")
    np.testing.assert_array_equal(out.numpy(), expected)


def _box_coords(box: list[tuple[int, int, int]]) -> np.ndarray:
    grids = np.indices([n for _, _, n in box])
    return np.stack([a + s * grids[k] for k, (a, s, _) in enumerate(box)], axis=-1)


@pytest.mark.parametrize(
    ("shape", "box", "launches"),
    [
        ((6, 5), [(1, 1, 4), (1, 1, 3)], 5),  # x[1:5, 1:4]: 4 slabs around it and the box
        ((6, 5), [(0, 2, 3), (4, -2, 3)], 2),  # x[::2, ::-2]: all of x, then the box
        ((6, 5), [(2, 1, 3)], 3),  # x[2:5], whole rows
        ((3, 4, 5), [(1, 1, 1), (0, 3, 2)], 2),  # x[1:2, ::3], whole last dim
        ((7,), [(6, 1, 1)], 2),  # one element
    ],
)
def test_update_of_a_constant_box_is_affine_copies(
    shape: tuple[int, ...], box: list[tuple[int, int, int]], launches: int
) -> None:
    coords = _box_coords(box)
    updates_shape = list(coords.shape[:-1]) + list(shape[len(box) :])
    x = RNG.normal(size=shape).astype(np.float32)
    upd = RNG.normal(size=updates_shape).astype(np.float32)
    graph = _graph(
        "k_box",
        lambda b, x_, u: ge.es.TensorScatterUpdate(x_, _vec(b, coords), u),
        (list(shape), F32),
        (updates_shape, F32),
    )
    out, tasks = _run(graph, x, upd)
    expected = x.copy()
    expected[tuple(np.moveaxis(coords, -1, 0))] = upd
    np.testing.assert_array_equal(out, expected)
    mine = _op_tasks(tasks, "TensorScatterUpdate")
    assert len(mine) == launches and all(isinstance(t, KernelTask) for t in mine)
    assert all(t.block_dim >= 1 and t.name == mine[0].name for t in mine)
    assert all(t.kernel.function == mine[0].kernel.function for t in mine)  # the affine copy


@pytest.mark.parametrize(
    "coords",
    [
        [[0], [0]],  # the same row twice: last write wins, in order
        [[3], [1]],  # a box with step -2: copied
        [[0], [2], [3]],  # not a progression
        [[0], [6]],  # out of range
    ],
)
def test_update_off_a_box_keeps_the_scatter_kernel(coords: list[list[int]]) -> None:
    idx = np.asarray(coords, np.int64)
    x = RNG.normal(size=(6, 5)).astype(np.float32)
    upd = RNG.normal(size=(len(coords), 5)).astype(np.float32)
    graph = _graph(
        "k_nobox",
        lambda b, x_, u: ge.es.TensorScatterUpdate(x_, _vec(b, idx), u),
        ([6, 5], F32),
        ([len(coords), 5], F32),
    )
    if coords[-1][0] >= 6:
        with pytest.raises(GeError, match="indices"):
            _run(graph, x, upd)
        return
    out, tasks = _run(graph, x, upd)
    expected = x.copy()
    for row, at in enumerate(idx[:, 0]):
        expected[at] = upd[row]
    np.testing.assert_array_equal(out, expected)
    boxed = idx[:, 0].tolist() == [3, 1]  # step -2: all of x, then the box
    assert len(_op_tasks(tasks, "TensorScatterUpdate")) == (2 if boxed else 1)
