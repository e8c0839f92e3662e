"""The indexing ops' prototypes, infer rules and bad input (ge/ops/indexing.py); their values
against numpy are in the op table (tests/ops/_cases.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge.es
from ge.error import GeValueError, InferError
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.ops import eval_graph, get_op

from ._cases import D, K, V, build

F32, I32, I64 = DataType.DT_FLOAT, DataType.DT_INT32, DataType.DT_INT64


def test_prototypes_use_ge_names() -> None:
    def names(op: str) -> tuple[list[str], list[str], list[str]]:
        d = get_op(op)
        return [s.name for s in d.inputs], [s.name for s in d.outputs], [a.name for a in d.attrs]

    assert names("ReverseV2") == (["x", "axis"], ["y"], [])
    assert names("MirrorPad") == (["x", "paddings"], ["y"], ["mode"])
    assert names("GatherNd") == (["x", "indices"], ["y"], [])
    assert names("ScatterNd") == (["indices", "x", "shape"], ["y"], [])
    for op in ("TensorScatterUpdate", "TensorScatterAdd"):
        assert names(op) == (["x", "indices", "updates"], ["y"], [])
    assert get_op("MirrorPad").attrs[0].default == "REFLECT"


def _run(op: str, inputs: tuple[Any, ...], attrs: dict[str, Any] | None = None) -> list[Any]:
    built = build(op, inputs, attrs or {}, "float32", np.random.default_rng(0))
    return list(eval_graph(built.graph, built.feeds))


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "message"),
    [
        ("ReverseV2", (D(2, 3), K([0, -2])), {}, "repeat an axis"),
        ("ReverseV2", (D(2, 3), K([2])), {}, "axis 2 is out of range for rank 2"),
        ("ReverseV2", (D(2, 3), K([[0]])), {}, "axis must be a scalar or 1-D"),
        ("MirrorPad", (D(3, 4), K([[3, 0], [0, 0]])), {"mode": "REFLECT"}, "exceed the REFLECT"),
        ("MirrorPad", (D(3, 4), K([[0, 0], [0, 5]])), {}, "dim 1 \\(size 4\\)"),
        ("MirrorPad", (D(3, 4), K([[4, 0], [0, 0]])), {"mode": "SYMMETRIC"}, "SYMMETRIC limit 3"),
        ("MirrorPad", (D(3, 4), K([[0, 0], [0, 0]])), {"mode": "EDGE"}, "'REFLECT' or"),
        ("MirrorPad", (D(3, 4), K([[-1, 0], [0, 0]])), {}, "non-negative"),
        ("MirrorPad", (D(3, 4), K([1, 1])), {}, "2x2"),
        ("GatherNd", (D(3, 4), V([[0, 1, 2]], "int32")), {}, "3 entries per index"),
        ("GatherNd", (D(3, 4), V(1, "int32")), {}, "at least one dim"),
        ("GatherNd", (D(3, 4), V([[0.0]], "float32")), {}, "'indices' has type DT_FLOAT"),
        ("ScatterNd", (V([[0], [1]], "int32"), D(3, 2), K([4, 2])), {}, "need \\[2, 2\\]"),
        ("ScatterNd", (V([[0]], "int32"), D(1, 2), K([-4, 2])), {}, "negative dims"),
        ("TensorScatterUpdate", (D(3, 2), V([[0]], "int32"), D(1, 3)), {}, "need \\[1, 2\\]"),
        (
            "TensorScatterAdd",
            (D(3, 2), V([[0]], "int32"), D(1, 2, dtype="float64")),
            {},
            "updates have type DT_DOUBLE, x has DT_FLOAT",
        ),
    ],
)
def test_infer_refuses_bad_input(
    op: str, inputs: tuple[Any, ...], attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InferError, match=message):
        _run(op, inputs, attrs)


@pytest.mark.parametrize(
    ("op", "inputs", "message"),
    [
        (
            "GatherNd",
            (D(3, 4), V([[0, 1], [-1, 0]], "int64")),
            r"GatherNd input 'indices' holds -1 at \[1, 0\], out of range \[0, 3\) for dim 0 "
            r"of x \(size 3\); 1 of 4 indices are out of range",
        ),
        (
            "ScatterNd",
            (V([[0], [4]], "int32"), D(2, 2), K([4, 2])),
            r"ScatterNd input 'indices' holds 4 at \[1, 0\], out of range \[0, 4\) for dim 0 "
            r"of shape",
        ),
        (
            "TensorScatterUpdate",
            (D(3, 2), V([[0, 2]], "int32"), D(1)),
            r"TensorScatterUpdate input 'indices' holds 2 at \[0, 1\], out of range \[0, 2\) "
            r"for dim 1 of x",
        ),
        (
            "TensorScatterAdd",
            (D(3, 2), V([[7]], "int64"), D(1, 2)),
            r"TensorScatterAdd input 'indices' holds 7 at \[0, 0\]",
        ),
    ],
)
def test_out_of_range_index_names_op_input_value_and_range(
    op: str, inputs: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(GeValueError, match=message):
        _run(op, inputs)


def test_value_inputs_only_known_at_run_time() -> None:
    # axis / paddings / shape fed as Data: infer gives what it can, the reference checks
    (y,) = _run("ReverseV2", (D(2, 3), V([1], "int32")))
    assert y.shape == (2, 3)
    with pytest.raises(GeValueError, match="exceed the REFLECT limit"):
        _run("MirrorPad", (D(2, 3), V([[0, 0], [3, 0]], "int32")))
    (y,) = _run("MirrorPad", (D(2, 3), V([[1, 1], [2, 0]], "int32")), {"mode": "SYMMETRIC"})
    assert y.shape == (4, 5)


def test_unknown_dims_infer() -> None:
    b = GraphBuilder("unknown")
    x = b.create_input(0, shape=[-1, 4], data_type=F32)
    i = b.create_input(1, shape=[-1, 1], data_type=I64)
    pads = b.create_const_int64([1, 1, 2, 3], [2, 2])
    y = ge.es.GatherNd(x, i)
    p = ge.es.MirrorPad(x, pads, mode="SYMMETRIC")
    r = ge.es.ReverseV2(x, b.create_const_int64([0]))
    assert list(y.shape) == [-1, 4]
    assert list(p.shape) == [-1, 9]
    assert list(r.shape) == [-1, 4]
    free = b.create_input(2, shape=[-2], data_type=F32)
    assert list(ge.es.GatherNd(free, i).shape) == [-2]


def test_generated_builders_run() -> None:
    b = GraphBuilder("es")
    x = b.create_input(0, shape=[3, 2], data_type=F32)
    i = b.create_input(1, shape=[2, 1], data_type=I32)
    u = b.create_input(2, shape=[2, 2], data_type=F32)
    outs = [
        ge.es.TensorScatterAdd(x, i, u),
        ge.es.ScatterNd(i, u, b.create_const_int32([3, 2])),
        ge.es.GatherNd(x, i),
    ]
    graph = b.build_and_reset(outs)
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    idx = np.array([[2], [2]], np.int32)
    up = np.ones((2, 2), np.float32)
    add, scattered, gathered = eval_graph(graph, [xs, idx, up])
    np.testing.assert_array_equal(add, xs + np.array([[0, 0], [0, 0], [2, 2]]))
    np.testing.assert_array_equal(scattered, [[0, 0], [0, 0], [2, 2]])
    np.testing.assert_array_equal(gathered, xs[[2, 2]])
