"""Value inputs computed from constants (issue #12): after folding, their consumers are
re-inferred (``ge.compiler.refine``), so the compiled graph verifies and runs.

Each case builds, with ``ge.es.GraphBuilder``, an op whose value input (shape, perm, axes,
paddings, ...) is an ``Identity``/``Cast``/``Neg``/``Add`` of Consts — recorded as ``-1`` dims
until folding — followed by an elementwise op that needs the refined shape too. It runs the
graph through ``Session`` and ``eval_graph`` and compares both with numpy.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pytest

import ge.es
from ge.compiler.pipeline import optimize_graph
from ge.error import GeError, InferError
from ge.es import GraphBuilder, TensorHolder
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.ops import eval_graph
from ge.ops.infer import graph_outputs
from ge.session import Session

CONFIG = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
I64 = DataType.DT_INT64
_ids = itertools.count()


@pytest.fixture(autouse=True)
def initialized() -> Iterator[None]:
    GeApi.ge_initialize(CONFIG)
    yield
    GeApi.ge_finalize()


def ints(b: GraphBuilder, value: list[int] | list[list[int]] | int, via: str) -> TensorHolder:
    """``value`` as an int64 tensor computed from Consts ``via`` one of four routes."""
    array = np.asarray(value, np.int64)
    flat, shape = array.ravel().tolist(), list(array.shape)
    if via == "identity":
        return ge.es.Identity(b.create_const_int64(flat, shape))
    if via == "cast":
        return ge.es.Cast(b.create_const_float([float(v) for v in flat], shape), dst_type=I64)
    if via == "neg":
        return ge.es.Neg(b.create_const_int64([-v for v in flat], shape))
    assert via == "add"
    return ge.es.Add(
        b.create_const_int64([v - 1 for v in flat], shape),
        b.create_const_int64([1] * len(flat), shape),
    )


@dataclass(frozen=True)
class Case:
    label: str
    shape: list[int]  # of the one f32 input x
    build: Callable[[GraphBuilder, TensorHolder, str], TensorHolder]
    expect: Callable[[np.ndarray], np.ndarray]


CASES = [
    Case(
        "reshape",
        [24],
        lambda b, x, v: ge.es.Reshape(x, ints(b, [4, 6], v)),
        lambda a: a.reshape(4, 6),
    ),
    Case(
        "transpose",
        [2, 3, 4],
        lambda b, x, v: ge.es.Transpose(x, ints(b, [2, 0, 1], v)),
        lambda a: a.transpose(2, 0, 1),
    ),
    Case(
        "reduce_sum",
        [2, 3, 4],
        lambda b, x, v: ge.es.ReduceSum(x, ints(b, [1], v)),
        lambda a: a.sum(axis=1),
    ),
    Case(
        "reduce_max_keep",
        [2, 3, 4],
        lambda b, x, v: ge.es.ReduceMax(x, ints(b, [0, 2], v), keep_dims=True),
        lambda a: a.max(axis=(0, 2), keepdims=True),
    ),
    Case(
        "pad",
        [2, 3],
        lambda b, x, v: ge.es.Pad(x, ints(b, [[1, 0], [0, 2]], v)),
        lambda a: np.pad(a, [(1, 0), (0, 2)]),
    ),
    Case(
        "broadcast_to",
        [3],
        lambda b, x, v: ge.es.BroadcastTo(x, ints(b, [2, 3], v)),
        lambda a: np.broadcast_to(a, (2, 3)),
    ),
    Case(
        "tile",
        [2, 3],
        lambda b, x, v: ge.es.Tile(x, ints(b, [2, 1], v)),
        lambda a: np.tile(a, (2, 1)),
    ),
    Case(
        "slice",
        [4, 5],
        lambda b, x, v: ge.es.Slice(x, ints(b, [1, 2], v), ints(b, [2, 3], v)),
        lambda a: a[1:3, 2:5],
    ),
    Case(
        "strided_slice",
        [6, 4],
        lambda b, x, v: ge.es.StridedSlice(
            x, ints(b, [0, 1], v), ints(b, [6, 4], v), ints(b, [2, 1], v)
        ),
        lambda a: a[0:6:2, 1:4],
    ),
    Case(
        "expand_dims",
        [2, 3],
        lambda b, x, v: ge.es.ExpandDims(x, ints(b, 1, v)),
        lambda a: a[:, None, :],
    ),
    Case(
        "concat",
        [2, 3],
        lambda b, x, v: ge.es.ConcatV2([x, x], ints(b, 1, v), N=2),
        lambda a: np.concatenate([a, a], axis=1),
    ),
    Case(
        "split",
        [5, 2],
        lambda b, x, v: ge.es.SplitV(x, ints(b, [2, 3], v), ints(b, 0, v), 2, num_split=2)[1],
        lambda a: a[2:],
    ),
    Case(
        "gather_axis",
        [3, 4],
        lambda b, x, v: ge.es.GatherV2(x, b.create_const_int64([3, 0]), ints(b, 1, v)),
        lambda a: a[:, [3, 0]],
    ),
    Case(
        "fill",
        [],
        lambda b, x, v: ge.es.Fill(ints(b, [2, 3], v), x),
        lambda a: np.full((2, 3), a, np.float32),
    ),
    Case(
        "argmax",
        [3, 4],
        lambda b, x, v: ge.es.Cast(ge.es.ArgMaxV2(x, ints(b, 1, v)), dst_type=DataType.DT_FLOAT),
        lambda a: a.argmax(axis=1).astype(np.float32),
    ),
    Case(
        "range",  # all three inputs are values: the Range folds, its user is refined
        [5],
        lambda b, x, v: (
            x
            + ge.es.Cast(
                ge.es.Range(ints(b, 0, v), ints(b, 5, v), ints(b, 1, v)), dst_type=DataType.DT_FLOAT
            )
        ),
        lambda a: a + np.arange(5, dtype=np.float32),
    ),
    Case(
        "reshape_chain",  # a refined shape feeds a second value-input op
        [24],
        lambda b, x, v: ge.es.Transpose(ge.es.Reshape(x, ints(b, [4, 6], v)), ints(b, [1, 0], v)),
        lambda a: a.reshape(4, 6).T,
    ),
]
VIAS = ("identity", "cast", "neg", "add")


def build(case: Case, via: str) -> Graph:
    b = GraphBuilder(f"refine_{next(_ids)}")
    x = b.create_input(0, name="x", shape=case.shape)
    y = case.build(b, x, via)
    # an elementwise consumer, whose own desc must be refined from y's
    return b.build_and_reset([y * 2.0 + 1.0])


def expected(case: Case, a: np.ndarray) -> np.ndarray:
    return (case.expect(a) * np.float32(2.0) + np.float32(1.0)).astype(np.float32)


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_folded_value_input_runs_in_a_session(case: Case, via: str) -> None:
    graph = build(case, via)
    a = np.random.default_rng(0).uniform(-2, 2, size=case.shape).astype(np.float32)
    want = expected(case, a)
    (reference,) = eval_graph(graph, [a])
    np.testing.assert_allclose(reference, want, rtol=1e-6)
    assert reference.shape == want.shape
    session = Session(CONFIG)
    assert session.add_graph(0, graph) == 0
    (out,) = session.run_graph(0, [Tensor.from_numpy(a)])
    got = out.numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_optimized_graph_records_the_refined_shapes(case: Case) -> None:
    graph = optimize_graph(build(case, "add"))
    want = list(expected(case, np.zeros(case.shape, np.float32)).shape)
    shapes = {
        f"{n.name}:{i}": list(n.get_output_desc(i).get_shape())
        for n in graph.get_direct_nodes()
        for i in range(n.get_outputs_size())
    }
    ((producer, port),) = graph_outputs(graph)
    assert list(producer.get_output_desc(port).get_shape()) == want, shapes
    assert not [k for k, shape in shapes.items() if -1 in shape or shape == [-2]], shapes


def test_a_refined_shape_that_does_not_fit_fails_naming_the_op() -> None:
    b = GraphBuilder("bad_reshape")
    x = b.create_input(0, name="x", shape=[24])
    graph = b.build_and_reset([ge.es.Reshape(x, ints(b, [4, 5], "identity"))])
    with pytest.raises(InferError, match=r"Reshape\(x: f32\[24\].*cannot reshape \[24\]"):
        optimize_graph(graph)
    session = Session(CONFIG)
    session.add_graph(0, graph)
    with pytest.raises(GeError, match=r"compiling the graph failed: Reshape\(.*cannot reshape"):
        session.run_graph(0, [Tensor.from_numpy(np.zeros(24, np.float32))])


def test_a_subgraph_result_refined_by_folding_refines_its_parent() -> None:
    """An If whose branches reshape by a folded shape: the If's outputs are re-inferred."""
    branches = []
    for k in (1.0, -1.0):
        sb = GraphBuilder(f"branch_{next(_ids)}")
        v = sb.create_input(0, name="v", shape=[6])
        sb.set_graph_output(ge.es.Reshape(v, ints(sb, [2, 3], "identity")) * k, 0)
        branches.append(sb.build_and_reset())
    b = GraphBuilder(f"cond_{next(_ids)}")
    cond = b.create_input(0, name="cond", data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, name="x", shape=[6])
    (y,) = ge.es.If(cond, [x], 1, branches[0], branches[1])
    graph = b.build_and_reset([y + 1.0])
    a = np.arange(6, dtype=np.float32)
    optimized = optimize_graph(graph)
    if_node = next(n for n in optimized.get_direct_nodes() if n.type == "If")
    assert list(if_node.get_output_desc(0).get_shape()) == [2, 3]
    session = Session(CONFIG)
    session.add_graph(0, graph)
    for flag, sign in ((True, 1.0), (False, -1.0)):
        inputs = [np.array(flag), a]
        (reference,) = eval_graph(graph, inputs)
        (out,) = session.run_graph(0, [Tensor.from_numpy(v) for v in inputs])
        want = a.reshape(2, 3) * np.float32(sign) + np.float32(1.0)
        np.testing.assert_allclose(reference, want)
        np.testing.assert_allclose(out.numpy(), want)
