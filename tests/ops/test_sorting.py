"""Cumsum, Cumprod, Sort, TopKV2 (ge/ops/sorting.py): prototypes, shape rules, the documented
decisions (stable order, NaN largest, exclusive/reverse scans) and the errors for bad input,
through ``eval_graph``, the generated ``ge.es`` functions, ``Session`` and ``ge.jit``.

The table (tests/ops/_cases.py) checks every claimed dtype and odd shape against numpy; the
compiled kernels are checked in tests/compiler/test_sorting_kernels.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ge
import ge.es
from ge.error import GeValueError, InferError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.ops import add_op_node, eval_graph, get_op
from ge.session import Session

from ._cases import const_node, data_node


def _graph(op: str, x_shape: list[int], second: Any, attrs: dict[str, Any], dtype: str) -> Graph:
    """``op`` on a Data input (and a Const second input ``second``, or a Data one when it is
    the string ``"data"``)."""
    g = Graph("g")
    inputs: list[Any] = [(data_node(g, 0, x_shape, dtype), 0)]
    if isinstance(second, str):
        inputs.append((data_node(g, 1, [], "int32"), 0))
    elif second is not None:
        inputs.append((const_node(g, np.asarray(second, np.int32)), 0))
    node = add_op_node(g, op, inputs, attrs, name="op")
    g.set_outputs([(node, i) for i in range(node.get_outputs_size())])
    return g


# --- prototypes ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "inputs", "outputs", "attrs"),
    [
        ("Cumsum", ["x", "axis"], ["y"], {"exclusive": False, "reverse": False}),
        ("Cumprod", ["x", "axis"], ["y"], {"exclusive": False, "reverse": False}),
        ("Sort", ["x"], ["y1", "y2"], {"axis": -1, "descending": False}),
        ("TopKV2", ["x", "k"], ["values", "indices"], {"sorted": True, "dim": -1, "largest": True}),
    ],
)
def test_prototypes(op: str, inputs: list[str], outputs: list[str], attrs: dict[str, Any]) -> None:
    d = get_op(op)
    assert [s.name for s in d.inputs] == inputs
    assert [s.name for s in d.outputs] == outputs
    assert {a.name: a.default for a in d.attrs} == attrs
    params = inspect.signature(getattr(ge.es, op)).parameters
    assert list(params) == inputs + list(attrs)


# --- documented semantics -----------------------------------------------------------------------
def test_sort_is_stable_and_nan_is_largest_both_ways() -> None:
    x = np.array([2.0, np.nan, 1.0, 2.0, -0.0, 0.0, np.nan, -np.inf], np.float32)
    g = _graph("Sort", [8], None, {}, "float32")
    values, order = eval_graph(g, [x])
    np.testing.assert_array_equal(order, [7, 4, 5, 2, 0, 3, 1, 6])
    np.testing.assert_array_equal(values, x[[7, 4, 5, 2, 0, 3, 1, 6]])
    assert order.dtype == np.int32
    g = _graph("Sort", [8], None, {"descending": True}, "float32")
    values, order = eval_graph(g, [x])
    np.testing.assert_array_equal(order, [1, 6, 0, 3, 2, 4, 5, 7])  # ties in input order
    np.testing.assert_array_equal(np.signbit(values), np.signbit(x[[1, 6, 0, 3, 2, 4, 5, 7]]))


def test_topk_lower_index_first_on_ties_and_sorted_even_when_not_asked() -> None:
    x = np.array([[1, 3, 3, 0, 3]], np.int32)
    for sorted_ in (True, False):
        g = _graph("TopKV2", [1, 5], 2, {"sorted": sorted_}, "int32")
        values, indices = eval_graph(g, [x])
        np.testing.assert_array_equal(values, [[3, 3]])
        np.testing.assert_array_equal(indices, [[1, 2]])
    g = _graph("TopKV2", [1, 5], 3, {"largest": False}, "int32")
    np.testing.assert_array_equal(eval_graph(g, [x])[1], [[3, 0, 1]])


def test_scans_exclusive_and_reverse() -> None:
    x = np.array([1, 2, 3, 4], np.int64)
    expect = {
        (False, False): [1, 3, 6, 10],
        (True, False): [0, 1, 3, 6],
        (False, True): [10, 9, 7, 4],
        (True, True): [9, 7, 4, 0],
    }
    for (exclusive, reverse), want in expect.items():
        g = _graph("Cumsum", [4], 0, {"exclusive": exclusive, "reverse": reverse}, "int64")
        np.testing.assert_array_equal(eval_graph(g, [x])[0], want)
    g = _graph("Cumprod", [4], -1, {"exclusive": True}, "int64")
    np.testing.assert_array_equal(eval_graph(g, [x])[0], [1, 1, 2, 6])


def test_scans_wrap_in_the_integer_type() -> None:
    x = np.full(4, 100, np.int8)
    g = _graph("Cumsum", [4], 0, {}, "int8")
    np.testing.assert_array_equal(eval_graph(g, [x])[0], np.cumsum(x, dtype=np.int8))


def test_topk_k_known_only_at_run_time() -> None:
    g = _graph("TopKV2", [2, 5], "data", {}, "float32")
    node = next(n for n in g.get_direct_nodes() if n.type == "TopKV2")
    assert list(node.get_output_desc(0).get_shape()) == [2, -1]
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    values, indices = eval_graph(g, [x, np.asarray(2, np.int32)])
    np.testing.assert_array_equal(values, [[4, 3], [9, 8]])
    np.testing.assert_array_equal(indices, [[4, 3], [4, 3]])
    with pytest.raises(GeValueError, match=r"k must be in \[0, 5\].*got 6"):
        eval_graph(g, [x, np.asarray(6, np.int32)])


def test_unknown_shapes_pass_through() -> None:
    g = _graph("Sort", [-1, 3], None, {"axis": 0}, "float32")
    node = next(n for n in g.get_direct_nodes() if n.type == "Sort")
    assert list(node.get_output_desc(1).get_shape()) == [-1, 3]
    assert node.get_output_desc(1).get_data_type() == DataType.DT_INT32
    g = _graph("Cumsum", [-2], 0, {}, "float32")
    node = next(n for n in g.get_direct_nodes() if n.type == "Cumsum")
    assert list(node.get_output_desc(0).get_shape()) == [-2]


# --- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "shape", "second", "attrs", "dtype", "text"),
    [
        ("Cumsum", [2, 3], 2, {}, "float32", "axis 2 is out of range for rank 2"),
        ("Cumsum", [2, 3], [0, 1], {}, "float32", "axis must hold one value, got 2"),
        ("Cumprod", [2, 3], 0, {}, "bool", "DT_BOOL"),
        ("Sort", [2, 3], None, {"axis": -3}, "float32", "axis -3 is out of range for rank 2"),
        ("TopKV2", [2, 3], 4, {}, "float32", r"k must be in \[0, 3\].*got 4"),
        ("TopKV2", [2, 3], -1, {}, "float32", r"k must be in \[0, 3\].*got -1"),
        ("TopKV2", [], 1, {}, "float32", "at least one dim"),
        ("TopKV2", [2, 3], 1, {"dim": 2}, "float32", "dim 2 is out of range for rank 2"),
    ],
)
def test_bad_input_is_an_infer_error(
    op: str, shape: list[int], second: Any, attrs: dict[str, Any], dtype: str, text: str
) -> None:
    with pytest.raises(InferError, match=text):
        _graph(op, shape, second, attrs, dtype)


def test_float_axis_is_refused() -> None:
    g = Graph("g")
    x = data_node(g, 0, [3], "float32")
    axis = const_node(g, np.asarray(0.0, np.float32))
    with pytest.raises(
        InferError, match="input 'axis' has type DT_FLOAT; Cumsum accepts DT_INT32, DT_INT64"
    ):
        add_op_node(g, "Cumsum", [(x, 0), (axis, 0)])


# --- ge.es, Session and ge.jit ------------------------------------------------------------------
@pytest.fixture
def session() -> Iterator[Session]:
    config = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
    GeApi.ge_initialize(config)
    yield Session(config)
    GeApi.ge_finalize()


def test_es_functions_run_in_a_session(session: Session) -> None:
    b = GraphBuilder("sorting")
    x = b.create_input(0, shape=[3, 4])
    top = ge.es.TopKV2(x, 2, dim=0, largest=False)
    srt = ge.es.Sort(x, descending=True)
    graph = b.build_and_reset(
        [ge.es.Cumsum(x, 1, exclusive=True), ge.es.Cumprod(x, 0), srt.y1, srt.y2, top.values]
    )
    session.add_graph(1, graph)
    xs = np.array([[3, 1, 2, 2], [0, 5, 1, 1], [4, 4, 0, 2]], np.float32)
    outs = session.run_graph(1, [Tensor.from_numpy(xs)])
    got = [o.numpy() for o in outs]
    expected = [
        np.concatenate([np.zeros((3, 1), np.float32), np.cumsum(xs, 1)[:, :-1]], 1),
        np.cumprod(xs, 0),
        -np.sort(-xs, axis=1),
        np.argsort(-xs, axis=1, kind="stable").astype(np.int32),
        np.sort(xs, axis=0)[:2],
    ]
    for a, e in zip(got, expected, strict=True):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)
    for a, e in zip(eval_graph(graph, [xs]), expected, strict=True):
        np.testing.assert_array_equal(a, e)


def test_jit_traces_the_ops() -> None:
    @ge.jit
    def f(x: Any) -> Any:
        top = ge.es.TopKV2(x, 3)
        return top.values, top.indices, ge.es.Cumsum(x, -1, reverse=True)

    x = np.array([[0.5, 2.0, -1.0, 2.0, 7.0]], np.float32)
    values, indices, scan = f(x)
    np.testing.assert_array_equal(values, [[7.0, 2.0, 2.0]])
    np.testing.assert_array_equal(indices, [[4, 1, 3]])
    np.testing.assert_array_equal(scan, np.flip(np.cumsum(np.flip(x, 1), 1), 1))
