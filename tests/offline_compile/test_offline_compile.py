"""``ge.offline_compile`` and ``ge.runtime.load_model``: every check of GE_ERRORS.md §8 (type,
text and order), models that round-trip through ``save_model`` and ``load_model`` (from the
path and from the bytes) and compute what ``eval_graph``/numpy compute, address refresh with
device memory, bundles sharing weights, and a model run in a process without the compiler."""

from __future__ import annotations

import copy
import gc
import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge.es
from ge import offline_compile as oc
from ge import runtime
from ge.error import GeError, GeTypeError, GeValueError
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.graph.tensor import Tensor
from ge.offline_compile import GraphWithOptions, ModelBuffer
from ge.ops import eval_graph
from ge.runtime import om
from ge.runtime.om import HostTaskData, KernelTaskData
from ge.runtime.types import TensorDesc


@pytest.fixture(autouse=True)
def session() -> Iterator[None]:
    oc.build_initialize({})
    yield
    oc.build_finalize()


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


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


def small_graph(name: str = "g") -> Graph:
    return build(lambda x: np.exp(x) * 2.0 + 1.0, ("x", [2, 3]), name=name)


def models(graph: Graph, tmp_path: Path, options: dict[str, str] | None = None) -> list[Any]:
    """The graph built, saved and loaded back twice: from the ``.om`` path and from bytes."""
    buffer = oc.build_model(graph, options)
    assert buffer.length == buffer.get_length() == len(buffer.get_bytes()) > 0
    assert bytes(buffer) == buffer.get_bytes()
    stem = str(tmp_path / graph.name)
    oc.save_model(stem, buffer)
    path = Path(stem + ".om")
    assert path.read_bytes() == buffer.get_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(graph.name)) == [
        path.name
    ]  # written whole: no temporary left behind
    return [runtime.load_model(str(path)), runtime.load_model(buffer.get_bytes())]


def assert_same(actual: Sequence[Any], expected: Sequence[Any]) -> None:
    assert len(actual) == len(expected)
    for a, raw in zip(actual, expected, strict=True):
        e = np.asarray(raw)
        assert isinstance(a, np.ndarray)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        if e.dtype.kind in "iub":
            np.testing.assert_array_equal(a, e)
        else:
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def check_round_trip(
    graph: Graph,
    feeds: list[np.ndarray],
    tmp_path: Path,
    expected: Sequence[Any] | None = None,
    options: dict[str, str] | None = None,
) -> list[Any]:
    reference = eval_graph(graph, feeds) if expected is None else expected
    loaded = models(graph, tmp_path, options)
    for model in loaded:
        for _ in range(2):  # a second run reuses the workspace
            assert_same(model.execute(feeds), reference)
    return loaded


def tasks_of(graph: Graph, options: dict[str, str] | None = None) -> tuple[Any, ...]:
    data = om.unpack(oc.build_model(graph, options).get_bytes())
    return data.graphs[0].plan.tasks


# --- GE_ERRORS.md §8: the checks, their types, texts and order ---------------------------------
def test_graph_with_options_checks() -> None:
    graph = small_graph()
    with pytest.raises(TypeError, match=r"^graph must be a Graph$"):
        GraphWithOptions("graph")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^graph must be a Graph$"):
        GraphWithOptions(None, 5)  # type: ignore[arg-type]  # graph first
    with pytest.raises(TypeError, match=r"^build_options must be a dictionary$"):
        GraphWithOptions(graph, [("a", "b")])  # type: ignore[arg-type]
    for bad in ({"a": 1}, {1: "a"}, {"a": None}):
        with pytest.raises(TypeError, match=r"^build_options keys and values must be strings$"):
            GraphWithOptions(graph, bad)  # type: ignore[arg-type]
    assert GraphWithOptions(graph, None).build_options == {}
    assert GraphWithOptions(graph).build_options == {}
    options = {"a": "b"}
    item = GraphWithOptions(graph, options)
    assert item.graph is graph and item.build_options == {"a": "b"}


def test_model_buffer_cannot_be_made_or_copied() -> None:
    with pytest.raises(RuntimeError, match=r"^ModelBuffer objects should not be created directly$"):
        ModelBuffer()
    buffer = oc.build_model(small_graph())
    with pytest.raises(RuntimeError, match=r"^ModelBuffer does not support copy$"):
        copy.copy(buffer)
    with pytest.raises(RuntimeError, match=r"^ModelBuffer does not support deepcopy$"):
        copy.deepcopy(buffer)
    with pytest.raises(RuntimeError, match=r"^ModelBuffer does not support deepcopy$"):
        copy.deepcopy([buffer])
    with pytest.raises(ValueError, match=r"^Failed to create ModelBuffer$"):
        ModelBuffer._create_from(b"")
    with pytest.raises(ValueError, match=r"^Failed to create ModelBuffer$"):
        ModelBuffer._create_from(None)


def test_build_initialize_checks() -> None:
    with pytest.raises(TypeError, match=r"^global_options must be a dictionary$"):
        oc.build_initialize([("a", "b")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^global_options must be a dictionary$"):
        oc.build_initialize("a=b")  # type: ignore[arg-type]
    for bad in ({"a": 1}, {1: "a"}):
        with pytest.raises(TypeError, match=r"^global_options keys and values must be strings$"):
            oc.build_initialize(bad)  # type: ignore[arg-type]
    assert oc.build_initialize(None) is None
    assert oc.build_initialize() is None
    assert oc.build_finalize() is None
    assert oc.build_finalize() is None  # twice is fine: GE's result is ignored


def test_build_initialize_failing_custom_op_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(tmp_path / "missing_op.py"))
    with pytest.raises(GeError, match=r"^BuildInitialize failed; ") as info:
        oc.build_initialize({})
    assert info.value.api_name == "BuildInitialize"
    assert "missing_op.py" in str(info.value)


def test_build_model_checks_in_order() -> None:
    graph = small_graph()
    with pytest.raises(TypeError, match=r"^graph must be a Graph$"):
        oc.build_model("graph", 5)  # type: ignore[arg-type]  # graph before options
    with pytest.raises(TypeError, match=r"^graph must be a Graph$"):
        oc.build_model(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^build_options must be a dictionary$"):
        oc.build_model(graph, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^build_options keys and values must be strings$"):
        oc.build_model(graph, {"a": 1})  # type: ignore[dict-item]
    assert isinstance(oc.build_model(graph, None), ModelBuffer)
    assert isinstance(oc.build_model(graph, {}), ModelBuffer)


def test_build_model_without_build_initialize() -> None:
    graph = small_graph()
    oc.build_finalize()
    with pytest.raises(TypeError, match=r"^graph must be a Graph$"):
        oc.build_model("graph")  # type: ignore[arg-type]  # type checks still come first
    with pytest.raises(GeError, match=r"^BuildModel failed; ") as info:
        oc.build_model(graph)
    assert type(info.value) is GeError and isinstance(info.value, RuntimeError)
    assert info.value.api_name == "BuildModel" and info.value.context == {}
    with pytest.raises(GeError, match=r"^BundleBuildModel failed; graph_count=2; ") as info:
        oc.bundle_build_model([GraphWithOptions(graph), GraphWithOptions(small_graph("h"))])
    assert info.value.api_name == "BundleBuildModel"
    assert info.value.context == {"graph_count": 2}
    oc.build_initialize({})
    assert isinstance(oc.build_model(graph), ModelBuffer)


def test_save_model_checks_in_order(tmp_path: Path) -> None:
    buffer = oc.build_model(small_graph())
    for save in (oc.save_model, oc.bundle_save_model):
        with pytest.raises(TypeError, match=r"^output_file must be a string$"):
            save(5, "model")  # type: ignore[arg-type]  # output_file first
        with pytest.raises(TypeError, match=r"^output_file must be a string$"):
            save(tmp_path / "m", buffer)  # type: ignore[arg-type]  # a Path is not a str
        with pytest.raises(TypeError, match=r"^model must be a ModelBuffer$"):
            save(str(tmp_path / "m"), buffer.get_bytes())  # type: ignore[arg-type]
    missing = str(tmp_path / "no" / "such" / "dir" / "m")
    for save, api in ((oc.save_model, "SaveModel"), (oc.bundle_save_model, "BundleSaveModel")):
        with pytest.raises(
            GeError, match=rf"^{api} failed; output_file={re.escape(missing)}; "
        ) as info:
            save(missing, buffer)
        assert info.value.api_name == api
        assert info.value.context == {"output_file": missing}
    assert not (tmp_path / "no").exists()
    oc.save_model(str(tmp_path / "m"), buffer)
    assert (tmp_path / "m.om").read_bytes() == buffer.get_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["m.om"]


def test_bundle_build_model_checks_in_order() -> None:
    graph = small_graph()
    item = GraphWithOptions(graph)
    with pytest.raises(TypeError, match=r"^graph_with_options must be a list$"):
        oc.bundle_build_model((item, item))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^graph_with_options must be a list$"):
        oc.bundle_build_model(item)  # type: ignore[arg-type]
    for short in ([], [item], ["not an item"]):  # the size check runs before the element check
        with pytest.raises(ValueError, match=r"^graph_with_options size must be larger than 1$"):
            oc.bundle_build_model(short)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"^Each item in graph_with_options must be a GraphWithOptions$"
    ):
        oc.bundle_build_model([item, graph])  # type: ignore[list-item]
    with pytest.raises(GeError, match=r"^BundleBuildModel failed; graph_count=2; .*named 'g'"):
        oc.bundle_build_model([item, GraphWithOptions(small_graph())])  # two graphs named g


def test_errors_are_ge_errors_and_builtins() -> None:
    with pytest.raises(GeTypeError):
        oc.build_model(1)  # type: ignore[arg-type]
    with pytest.raises(GeValueError):
        oc.bundle_build_model([])
    with pytest.raises(GeError):
        ModelBuffer()


def test_options_are_merged_and_saved(tmp_path: Path) -> None:
    oc.build_initialize({"a": "1", "b": "1"})
    (model,) = models(small_graph(), tmp_path, {"b": "2", "c": "3"})[1:]
    assert model.options == {"a": "1", "b": "2", "c": "3"}


# --- round trips ---------------------------------------------------------------------------------
def test_elementwise_chain_is_fused(tmp_path: Path) -> None:
    graph = build(
        lambda x, y: np.tanh(x * y + 1.0) - y / (np.abs(x) + 1.0),
        ("x", [4, 5]),
        ("y", [5]),
    )
    tasks = tasks_of(graph)
    assert len(tasks) == 1 and isinstance(tasks[0], KernelTaskData)  # one kernel for the chain
    x, y = f32(4, 5), f32(5, seed=1)
    check_round_trip(graph, [x, y], tmp_path, [np.tanh(x * y + 1.0) - y / (np.abs(x) + 1.0)])


def test_elementwise_and_unary_ops(tmp_path: Path) -> None:
    graph = build(
        lambda x: [np.exp(x) * 2.0, ge.es.Relu(x), np.maximum(x, 0.5), ge.es.Sigmoid(x)],
        ("x", [3, 7]),
    )
    x = f32(3, 7, seed=3)
    check_round_trip(graph, [x], tmp_path)


def test_matmul_and_batch_matmul(tmp_path: Path) -> None:
    w = f32(4, 5, seed=1)
    graph = build(
        lambda x, b: [
            ge.es.Reshape(x, [6, 4]) @ w,
            ge.es.MatMul(ge.es.Reshape(x, [6, 4]), np.ascontiguousarray(w.T), transpose_x2=True),
            ge.es.BatchMatMulV2(x, b),
        ],
        ("x", [2, 3, 4]),
        ("b", [2, 4, 5]),
    )
    x, b = f32(2, 3, 4), f32(2, 4, 5, seed=2)
    flat = x.reshape(6, 4)
    check_round_trip(graph, [x, b], tmp_path, [flat @ w, flat @ w, x @ b])


def test_reduction(tmp_path: Path) -> None:
    graph = build(
        lambda x: [
            ge.es.ReduceSum(x, [1]),
            ge.es.ReduceSum(x, [0], keep_dims=True),
            ge.es.ReduceSum(x, [0, 1]),
        ],
        ("x", [5, 6]),
    )
    x = f32(5, 6)
    check_round_trip(graph, [x], tmp_path, [x.sum(axis=1), x.sum(axis=0, keepdims=True), x.sum()])


def test_softmax(tmp_path: Path) -> None:
    graph = build(ge.es.SoftmaxV2, ("x", [4, 9]))
    x = f32(4, 9) * 3
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    check_round_trip(graph, [x], tmp_path, [e / e.sum(axis=-1, keepdims=True)])


def test_reshape(tmp_path: Path) -> None:
    graph = build(
        lambda x: [ge.es.Reshape(x, [3, 4]), ge.es.Reshape(x * 2.0, [12]) + 1.0], ("x", [2, 6])
    )
    x = f32(2, 6)
    check_round_trip(graph, [x], tmp_path, [x.reshape(3, 4), (x * 2.0).reshape(12) + 1.0])


def test_mlp_with_const_weights(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    sizes = [8, 16, 4]
    weights = [
        (
            (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            (rng.standard_normal(n) * 0.1).astype(np.float32),
        )
        for m, n in itertools.pairwise(sizes)
    ]
    b = GraphBuilder("mlp")
    x = b.create_input(0, name="x", shape=[5, sizes[0]])
    h = x
    for i, (w, bias) in enumerate(weights):
        h = ge.es.BiasAdd(h @ w, bias, data_format="ND")
        if i < len(weights) - 1:
            h = ge.es.Relu(h)
    graph = b.build_and_reset([ge.es.SoftmaxV2(h)])
    feed = rng.standard_normal((5, sizes[0])).astype(np.float32)
    expected = feed
    for i, (w, bias) in enumerate(weights):
        expected = expected @ w + bias
        if i < len(weights) - 1:
            expected = np.maximum(expected, 0)
    e = np.exp(expected - expected.max(axis=-1, keepdims=True))
    loaded = check_round_trip(graph, [feed], tmp_path, [e / e.sum(axis=-1, keepdims=True)])
    data = om.unpack(oc.build_model(graph).get_bytes())
    stored = [w for w in data.weights if w.shape in {(8, 16), (16, 4)}]
    assert len(stored) == 2  # the weights travel in the model
    assert all(len(m.weight_names) >= 2 for m in loaded)


def test_several_outputs_inputs_consts_and_repeats(tmp_path: Path) -> None:
    b = GraphBuilder("outs")
    x = b.create_input(0, name="x", shape=[2, 3])
    c = b.create_const_float([1.0, 2.0, 3.0], [3])
    y = x * 2.0
    graph = b.build_and_reset([y, x, c, y, ge.es.ReduceSum(y + c, [1])])
    feed, const = f32(2, 3), np.array([1, 2, 3], np.float32)
    check_round_trip(
        graph, [feed], tmp_path, [feed * 2, feed, const, feed * 2, (feed * 2 + const).sum(1)]
    )
    model = models(graph, tmp_path)[1]
    assert model.output_descs == [
        TensorDesc([2, 3], DataType.DT_FLOAT),
        TensorDesc([2, 3], DataType.DT_FLOAT),
        TensorDesc([3], DataType.DT_FLOAT),
        TensorDesc([2, 3], DataType.DT_FLOAT),
        TensorDesc([2], DataType.DT_FLOAT),
    ]
    assert model.input_descs == [TensorDesc([2, 3], DataType.DT_FLOAT)]


@pytest.mark.parametrize(
    ("dtype", "np_dtype"), [(DataType.DT_DOUBLE, np.float64), (DataType.DT_INT32, np.int32)]
)
def test_float64_and_int32(tmp_path: Path, dtype: DataType, np_dtype: type) -> None:
    graph = build(
        lambda x, y: [x * y + x, ge.es.ReduceSum(x, [1]), np.maximum(x, y), x - y],
        ("x", [2, 3]),
        ("y", [3]),
        dtype=dtype,
    )
    x = (np.arange(6).reshape(2, 3) - 2).astype(np_dtype)
    y = np.array([3, -1, 2], np_dtype)
    loaded = check_round_trip(
        graph, [x, y], tmp_path, [x * y + x, x.sum(1, dtype=np_dtype), np.maximum(x, y), x - y]
    )
    for model in loaded:
        assert [d.data_type for d in model.input_descs] == [dtype, dtype]
        with pytest.raises(GeValueError, match=r"input 0 \(x\)"):
            model.execute([x.astype(np.float32), y])


def test_zero_size_input(tmp_path: Path) -> None:
    graph = build(lambda x: [x * 3.0 + 1.0, ge.es.ReduceSum(x, [0])], ("x", [0, 3]))
    x = np.zeros((0, 3), np.float32)
    check_round_trip(graph, [x], tmp_path, [x, np.zeros(3, np.float32)])


def test_scalar_input(tmp_path: Path) -> None:
    graph = build(lambda x, y: [x * 3.0 + 1.0, y * x], ("x", []), ("y", [4]))
    x, y = np.array(2.5, np.float32), f32(4)
    loaded = check_round_trip(graph, [x, y], tmp_path, [np.float32(8.5), y * x])
    assert loaded[0].input_descs[0] == TensorDesc([], DataType.DT_FLOAT)


def test_unknown_dims_need_input_shape(tmp_path: Path) -> None:
    graph = build(lambda x: ge.es.ReduceSum(x * 2.0, [1]), ("x", [-1, 3]))
    with pytest.raises(GeError, match=r"^BuildModel failed; .*input_shape") as info:
        oc.build_model(graph)
    assert "x" in str(info.value)
    with pytest.raises(GeError, match=r"^BuildModel failed; .*declared \[-1, 3\]"):
        oc.build_model(graph, {"input_shape": "x:4,2"})
    with pytest.raises(GeError, match=r"^BuildModel failed; .*not inputs of the graph"):
        oc.build_model(graph, {"input_shape": "x:4,3;y:2"})
    with pytest.raises(GeError, match=r"^BuildModel failed; .*integers"):
        oc.build_model(graph, {"input_shape": "x:4,a"})
    x = f32(4, 3)
    loaded = check_round_trip(graph, [x], tmp_path, [(x * 2).sum(1)], {"input_shape": "x:4,3"})
    for model in loaded:
        assert model.input_descs == [TensorDesc([4, 3], DataType.DT_FLOAT)]
        assert model.options["input_shape"] == "x:4,3"
        with pytest.raises(GeValueError, match=r"input 0 \(x\)"):
            model.execute([f32(5, 3)])  # a model's shapes are fixed


def _branch(name: str, scale: float) -> Graph:
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[3])
    return b.build_and_reset([x * scale + 1.0])


def _if_graph() -> Graph:
    b = GraphBuilder("if_graph")
    cond = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[3])
    (y,) = ge.es.If(cond, [x], 1, _branch("then_graph", 2.0), _branch("else_graph", -1.0))
    return b.build_and_reset([y * 3.0])


def _while_graph(name: str = "while_graph") -> Graph:
    """i, acc = 0, 1; while i < n: i += 1; acc *= 2 (acc is 2**n)."""
    types = (DataType.DT_INT32, DataType.DT_FLOAT, DataType.DT_INT32)
    cond_b = GraphBuilder("cond")
    i, _acc, n = (cond_b.create_input(k, data_type=t) for k, t in enumerate(types))
    cond_graph = cond_b.build_and_reset([i < n])
    body_b = GraphBuilder("body")
    i, acc, n = (body_b.create_input(k, data_type=t) for k, t in enumerate(types))
    body = body_b.build_and_reset([i + 1, acc * 2.0, n])
    b = GraphBuilder(name)
    n = b.create_input(0, data_type=DataType.DT_INT32, shape=[])
    start = [b.create_scalar_int32(0), b.create_scalar_float(1.0), n]
    _, acc, _ = ge.es.While(start, 3, cond_graph, body)
    return b.build_and_reset([acc])


def test_if_round_trips_both_branches(tmp_path: Path) -> None:
    x = f32(3)
    for model in models(_if_graph(), tmp_path):
        for cond in (True, False):
            feeds = [np.array(cond), x]
            assert_same(model.execute(feeds), eval_graph(_if_graph(), feeds))


def test_while_round_trips_for_any_trip_count(tmp_path: Path) -> None:
    for model in models(_while_graph(), tmp_path):
        for n in (0, 1, 5, 20):
            (acc,) = model.execute([np.array(n, np.int32)])
            assert acc.dtype == np.float32 and float(acc) == 2.0**n


def test_case_runs_the_indexed_branch_and_the_last_out_of_range(tmp_path: Path) -> None:
    b = GraphBuilder("case_graph")
    index = b.create_input(0, data_type=DataType.DT_INT32, shape=[])
    x = b.create_input(1, shape=[3])
    branches = [_branch(f"b{k}", float(k + 1)) for k in range(3)]
    (y,) = ge.es.Case(index, [x], 1, branches)
    graph = b.build_and_reset([y])
    x = f32(3)
    for model in models(graph, tmp_path):
        for k in (0, 1, 2, 7, -1):
            (out,) = model.execute([np.array(k, np.int32), x])
            scale = k + 1 if 0 <= k < 3 else 3
            np.testing.assert_allclose(out, x * scale + 1.0, rtol=1e-6)


def test_control_flow_in_a_bundle() -> None:
    model = runtime.load_model(
        oc.bundle_build_model(
            [GraphWithOptions(small_graph()), GraphWithOptions(_while_graph())]
        ).get_bytes()
    )
    assert float(model.graph("while_graph").execute([np.array(3, np.int32)])[0]) == 8.0
    assert_same(model.graph("g").execute([f32(2, 3)]), [np.exp(f32(2, 3)) * 2.0 + 1.0])


# --- address refresh: device memory in and out, new addresses every round ------------------------
def _io_graph() -> Graph:
    return build(
        lambda x, y: [
            np.tanh(x * y) + 1.0,
            ge.es.ReduceSum(x, [1]),
            x @ np.ones((3, 2), np.float32),
        ],
        ("x", [4, 3]),
        ("y", [3]),
        name="io",
    )


def _expected_io(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    return [np.tanh(x * y) + 1.0, x.sum(1), x @ np.ones((3, 2), np.float32)]


def _read(block: Any, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    runtime.memcpy_d2h(out, block.addr)
    return out


@pytest.mark.parametrize("source", ["path", "bytes"])
def test_device_memory_inputs_and_outputs_at_new_addresses(tmp_path: Path, source: str) -> None:
    model = models(_io_graph(), tmp_path)[0 if source == "path" else 1]
    rng = np.random.default_rng(5)
    held: list[Any] = []  # keep each round's blocks alive so the next round gets new addresses
    seen: set[int] = set()
    for _ in range(2):
        x = rng.standard_normal((4, 3)).astype(np.float32)
        y = rng.standard_normal(3).astype(np.float32)
        expected = _expected_io(x, y)
        bx, by = runtime.malloc(x.nbytes), runtime.malloc(y.nbytes)
        outs = [runtime.malloc(e.nbytes) for e in expected]
        blocks = [bx, by, *outs]
        assert not seen & {blk.addr for blk in blocks}
        seen |= {blk.addr for blk in blocks}
        held += blocks
        runtime.memcpy_h2d(bx.addr, x)
        runtime.memcpy_h2d(by.addr, y)
        result = model.execute([bx, by], outs)
        assert len(result) == 3 and all(r is o for r, o in zip(result, outs, strict=True))
        for blk, e in zip(outs, expected, strict=True):
            np.testing.assert_allclose(_read(blk, e), e, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(_read(bx, x), x)  # inputs are not written
        # host arrays in, device out; device in, host out; all host
        mixed = [np.zeros_like(e) for e in expected]
        result = model.execute([x, by], mixed)
        assert all(r is m for r, m in zip(result, mixed, strict=True))
        assert_same(mixed, expected)
        assert_same(model.execute([bx, y]), expected)
        assert_same(model.execute([x, y]), expected)
    for blk in held:
        runtime.free(blk)


def test_execute_checks_name_the_input(tmp_path: Path) -> None:
    model = models(_io_graph(), tmp_path)[1]
    x, y = f32(4, 3), f32(3)
    with pytest.raises(GeValueError, match=r"input 0 \(x\) must be float32\[4, 3\], got float64"):
        model.execute([x.astype(np.float64), y])
    with pytest.raises(GeValueError, match=r"input 1 \(y\) must be float32\[3\], got float32\[2\]"):
        model.execute([x, y[:2]])
    with pytest.raises(GeValueError, match=r"input 0 \(x\)"):
        model.execute([x.reshape(3, 4), y])
    with pytest.raises(GeValueError, match=r"takes 2 inputs, got 1"):
        model.execute([x])
    with pytest.raises(GeValueError, match=r"takes 2 inputs, got 3"):
        model.execute([x, y, y])
    with pytest.raises(GeValueError, match=r"takes 2 inputs"):
        model.execute(x)  # type: ignore[arg-type]
    with pytest.raises(GeValueError, match=r"has 3 outputs; outputs must list as many"):
        model.execute([x, y], [np.empty((4, 3), np.float32)])
    with pytest.raises(GeValueError, match=r"outputs\[1\] must be a C-contiguous float32\[4\]"):
        model.execute(
            [x, y],
            [np.empty((4, 3), np.float32), np.empty(4, np.float64), np.empty((4, 2), np.float32)],
        )
    small = runtime.malloc(4)
    try:
        with pytest.raises(GeValueError, match=r"input 1 \(y\) holds 4 bytes; it needs 12"):
            model.execute([x, small])
    finally:
        runtime.free(small)
    with pytest.raises(GeTypeError, match=r"input 1 \(y\) must be a numpy array, MemBlock"):
        model.execute([x, [1.0, 2.0, 3.0]])
    read_only = np.empty(4, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(GeValueError, match=r"outputs\[1\] is not writeable"):
        model.execute(
            [x, y], [np.empty((4, 3), np.float32), read_only, np.empty((4, 2), np.float32)]
        )
    assert_same(model.execute([x, y]), _expected_io(x, y))  # still fine after every refusal


def test_freed_memblock_is_refused(tmp_path: Path) -> None:
    model = models(_io_graph(), tmp_path)[1]
    x, y = f32(4, 3), f32(3)
    stale = runtime.malloc(y.nbytes)
    runtime.memcpy_h2d(stale.addr, y)
    runtime.free(stale)
    with pytest.raises(GeError, match=r"execute: .*not inside live device memory"):
        model.execute([x, stale])
    reused = runtime.malloc(y.nbytes)  # may well take the freed block's address
    try:
        with pytest.raises(GeError, match=r"execute: "):
            model.execute([x, stale])
        dead_out = runtime.malloc(16)
        runtime.free(dead_out)
        with pytest.raises(GeError):
            model.execute(
                [x, y], [np.empty((4, 3), np.float32), dead_out, np.empty((4, 2), np.float32)]
            )
    finally:
        runtime.free(reused)
    assert_same(model.execute([x, y]), _expected_io(x, y))


def test_device_range_inputs(tmp_path: Path) -> None:
    model = models(_io_graph(), tmp_path)[1]
    x, y = f32(4, 3), f32(3)
    block = runtime.malloc(256)
    try:
        runtime.memcpy_h2d(block.addr + 64, x)
        assert_same(
            model.execute([runtime.DeviceRange.of(block, 64, x.nbytes), y]), _expected_io(x, y)
        )
    finally:
        runtime.free(block)


# --- bundles -----------------------------------------------------------------------------------
W = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0) / 10.0


def _bundle_graph(name: str, relu: bool) -> Graph:
    b = GraphBuilder(name)
    x = b.create_input(0, name="x", shape=[2, 4])
    w = ge.es.Const(b, value=Tensor.from_numpy(W))  # Const_0 in both graphs
    h = x @ w
    return b.build_and_reset([ge.es.Relu(h) if relu else h])


def _bundle(tmp_path: Path) -> tuple[ModelBuffer, list[Any]]:
    buffer = oc.bundle_build_model(
        [
            GraphWithOptions(_bundle_graph("plain", False)),
            GraphWithOptions(_bundle_graph("relu", True), {"x": "y"}),
        ]
    )
    oc.bundle_save_model(str(tmp_path / "bundle"), buffer)
    assert (tmp_path / "bundle.om").read_bytes() == buffer.get_bytes()
    return buffer, [
        runtime.load_model(tmp_path / "bundle.om"),
        runtime.load_model(buffer.get_bytes()),
    ]


def test_bundle_runs_each_graph_by_name(tmp_path: Path) -> None:
    buffer, loaded = _bundle(tmp_path)
    x = f32(2, 4)
    data = om.unpack(buffer.get_bytes())
    assert sum(w.shape == (4, 3) for w in data.weights) == 1  # the shared Const is stored once
    for model in loaded:
        assert model.graph_names == ["plain", "relu"]
        assert "Const_0" in model.weight_names
        assert_same(model.graph("plain").execute([x]), [x @ W])
        assert_same(model.graph("relu").execute([x]), [np.maximum(x @ W, 0)])
        assert_same(model.execute([x]), [x @ W])  # the first graph
        assert model.graph("relu").input_descs == [TensorDesc([2, 4], DataType.DT_FLOAT)]
        with pytest.raises(GeValueError, match=r"model has no graph 'nope'"):
            model.graph("nope")


def test_set_weights_changes_every_graph_sharing_it(tmp_path: Path) -> None:
    _, loaded = _bundle(tmp_path)
    before_file = (tmp_path / "bundle.om").read_bytes()
    x = f32(2, 4)
    new = f32(4, 3, seed=9)
    for model in loaded:
        model.set_weights({"Const_0": new})
        assert_same(model.graph("plain").execute([x]), [x @ new])
        assert_same(model.graph("relu").execute([x]), [np.maximum(x @ new, 0)])
        model.set_weights({"Const_0": W.astype(np.float64)})  # same-kind values are cast
        assert_same(model.graph("plain").execute([x]), [x @ W])
    assert (tmp_path / "bundle.om").read_bytes() == before_file  # the mapped file is not written
    fresh = runtime.load_model(tmp_path / "bundle.om")
    assert_same(fresh.graph("plain").execute([x]), [x @ W])


def test_set_weights_refusals_change_nothing(tmp_path: Path) -> None:
    _, loaded = _bundle(tmp_path)
    x = f32(2, 4)
    for model in loaded:
        with pytest.raises(GeValueError, match=r"model has no weight 'nope'"):
            model.set_weights({"nope": W})
        with pytest.raises(GeValueError, match=r"weight 'Const_0' is float32\[4, 3\], got"):
            model.set_weights({"Const_0": W[:2]})
        with pytest.raises(GeValueError, match=r"'Const_0'"):
            model.set_weights({"Const_0": W.astype(np.complex64)})
        with pytest.raises(GeValueError, match=r"nope"):  # checked whole before any write
            model.set_weights({"Const_0": np.zeros((4, 3), np.float32), "nope": W})
        with pytest.raises(GeTypeError, match=r"must be a mapping"):
            model.set_weights([("Const_0", W)])  # type: ignore[arg-type]
        assert_same(model.graph("plain").execute([x]), [x @ W])
        assert_same(model.graph("relu").execute([x]), [np.maximum(x @ W, 0)])


def _biased_graph(name: str, bias: float) -> Graph:
    b = GraphBuilder(name)
    x = b.create_input(0, name="x", shape=[2, 4])
    w = ge.es.Const(b, value=Tensor.from_numpy(W))  # Const_0: one value in both graphs
    c = ge.es.Const(b, value=Tensor.from_numpy(np.full(3, bias, np.float32)))  # Const_1: two
    return b.build_and_reset([(x @ w) + c])


def test_bundle_weight_names_of_one_name_and_two_values(tmp_path: Path) -> None:
    buffer = oc.bundle_build_model(
        [GraphWithOptions(_biased_graph("a", 1.0)), GraphWithOptions(_biased_graph("b", 2.0))]
    )
    oc.bundle_save_model(str(tmp_path / "two"), buffer)
    x = f32(2, 4)
    for model in (runtime.load_model(tmp_path / "two.om"), runtime.load_model(buffer.get_bytes())):
        names = set(model.weight_names)
        assert {"Const_0", "a/Const_0", "b/Const_0", "a/Const_1", "b/Const_1"} <= names
        assert "Const_1" not in names  # two values: no name that would update only one
        with pytest.raises(GeValueError, match=r"no weight 'Const_1'"):
            model.set_weights({"Const_1": np.zeros(3, np.float32)})
        model.set_weights({"a/Const_1": np.full(3, 5.0, np.float32)})
        assert_same(model.graph("a").execute([x]), [x @ W + 5.0])
        assert_same(model.graph("b").execute([x]), [x @ W + 2.0])
        new = f32(4, 3, seed=4)
        model.set_weights({"b/Const_0": new})  # the shared weight, by either graph's name
        assert_same(model.graph("a").execute([x]), [x @ new + 5.0])
        assert_same(model.graph("b").execute([x]), [x @ new + 2.0])


def test_set_weights_of_a_build_time_const_is_refused_or_takes_effect(tmp_path: Path) -> None:
    b = GraphBuilder("axes")
    x = b.create_input(0, name="x", shape=[2, 3])
    graph = b.build_and_reset([ge.es.ReduceSum(x, [1])])  # Const_0 holds the axes [1]
    model = models(graph, tmp_path)[1]
    feed = f32(2, 3)
    assert_same(model.execute([feed]), [feed.sum(1)])
    if "Const_0" not in model.weight_names:
        return
    try:
        model.set_weights({"Const_0": np.array([0], np.int64)})
    except GeError:
        return
    (out,) = model.execute([feed])
    assert out.shape == (3,) and np.allclose(out, feed.sum(0), rtol=1e-5)


def test_loading_from_path_and_resaving_over_it(tmp_path: Path) -> None:
    first = small_graph()
    oc.save_model(str(tmp_path / "m"), oc.build_model(first))
    model = runtime.load_model(str(tmp_path / "m.om"))
    other = build(lambda x: x - 1.0, ("x", [2, 3]))
    oc.save_model(str(tmp_path / "m"), oc.build_model(other))  # replaced, never truncated
    x = f32(2, 3)
    assert_same(model.execute([x]), [np.exp(x) * 2.0 + 1.0])
    assert_same(runtime.load_model(tmp_path / "m.om").execute([x]), [x - 1.0])
    del model
    gc.collect()


def test_models_free_their_memory(tmp_path: Path) -> None:
    graph = _io_graph()
    buffer = oc.build_model(graph)
    oc.save_model(str(tmp_path / "io"), buffer)
    x, y = f32(4, 3), f32(3)
    for source in (buffer.get_bytes(), str(tmp_path / "io.om")):
        runtime.load_model(source).execute([x, y])  # warm any process-wide caches
        gc.collect()
        before = runtime.live_bytes(), runtime.live_allocations()
        for _ in range(3):
            model = runtime.load_model(source)
            model.execute([x, y])
            del model
            gc.collect()
        assert (runtime.live_bytes(), runtime.live_allocations()) == before


# --- a model runs without the compiler ---------------------------------------------------------
_RUN_IN_FRESH_PROCESS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import ge.runtime
    model = ge.runtime.load_model(sys.argv[1])
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    y = np.array([1.0, -2.0, 0.5], np.float32)
    outs = model.execute([x, y])
    print(json.dumps([o.tolist() for o in outs]))
    assert "numba" not in sys.modules, "numba was imported"
    assert "ge.compiler" not in sys.modules, "ge.compiler was imported"
    assert "ge.offline_compile" not in sys.modules, "ge.offline_compile was imported"
    assert "ge.ops" not in sys.modules, "ge.ops was imported"
    assert "ge.custom_op" not in sys.modules, "ge.custom_op was imported"
    assert "ge.graph" not in sys.modules, "ge.graph was imported"  # the IR: descs only
    assert [d.shape.origin_shape.dims for d in model.input_descs] == [[4, 3], [3]]
    """
)


def test_model_runs_in_a_process_without_the_compiler(tmp_path: Path) -> None:
    oc.save_model(str(tmp_path / "io"), oc.build_model(_io_graph()))
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"}
    done = subprocess.run(
        [sys.executable, "-c", _RUN_IN_FRESH_PROCESS, str(tmp_path / "io.om")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(tmp_path),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outs = json.loads(done.stdout.strip().splitlines()[-1])
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    y = np.array([1.0, -2.0, 0.5], np.float32)
    for got, expected in zip(outs, _expected_io(x, y), strict=True):
        np.testing.assert_allclose(np.array(got, np.float32), expected, rtol=1e-5, atol=1e-6)


def test_host_tasks_in_a_model_are_data() -> None:
    tasks = tasks_of(_io_graph())
    assert any(isinstance(t, KernelTaskData) for t in tasks)
    assert all(t.op in {"copy", "matmul"} for t in tasks if isinstance(t, HostTaskData))


def _nested_if(name: str, depth: int) -> Graph:
    """``depth`` Ifs, each inside the then-branch of the one above; every level doubles."""
    b = GraphBuilder(name)
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[3])
    if depth == 0:
        return b.build_and_reset([x + 1.0])
    (y,) = ge.es.If(c, [c, x], 1, _nested_if(name + "t", depth - 1), _nested_if(name + "e", 0))
    return b.build_and_reset([y * 2.0])


def test_nested_control_flow_round_trips_and_too_deep_is_refused_at_build(tmp_path: Path) -> None:
    x = f32(3)
    for model in models(_nested_if("root", 3), tmp_path):
        for cond in (True, False):
            feeds = [np.array(cond), x]
            assert_same(model.execute(feeds), eval_graph(_nested_if("root", 3), feeds))
    with pytest.raises(GeError, match=r"^BuildModel failed; .*nests deeper than 16"):
        oc.build_model(_nested_if("deep", 18))


def test_large_host_output_arrays_are_written_in_place(tmp_path: Path) -> None:
    """Outputs of 64 KiB and up given as host arrays are lent to the device for the run and
    written by the kernel or host task itself (a BLAS matmul here), not copied."""
    b = GraphBuilder("big")
    x = b.create_input(0, name="x", shape=[256, 128])
    w = b.create_input(1, name="w", shape=[128, 256])
    graph = b.build_and_reset([x * 2.0 + 1.0, ge.es.MatMulV2(x, w)])
    x, w = f32(256, 128), f32(128, 256, seed=1)
    for model in models(graph, tmp_path):
        outs = [np.empty((256, 128), np.float32), np.empty((256, 256), np.float32)]
        for _ in range(2):  # the loans end with the run: the second run lends again
            got = model.execute([x, w], outs)
            assert got[0] is outs[0] and got[1] is outs[1]
            np.testing.assert_allclose(outs[0], x * 2.0 + 1.0, rtol=1e-6)
            np.testing.assert_allclose(outs[1], x @ w, rtol=1e-4, atol=1e-4)
        assert runtime.memory.contains(outs[0].ctypes.data, outs[0].nbytes) is False
