"""``ge.session.Session``: GE-PY's session flow and error behaviour (GE_REFERENCE.md §5.2,
§10.1-2) plus our documented decisions (session.py's module docstring): add_graph snapshots and
refuses a used id, run_graph returns host tensors, async runs return device tensors whose memory
comes from the stream's registered allocator, value-dependent shapes run via run_graph only."""

from __future__ import annotations

import copy
import gc
import itertools
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import ge.es
import ge.ops
from ge import runtime
from ge.allocator import Allocator, MemBlock
from ge.compiler.pipeline import PIPELINE
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Format, Graph, Placement, Tensor, TensorDesc
from ge.ops import ExecContext, InferContext, OpDef, TensorSpec, eval_graph
from ge.runtime import Stream
from ge.session import Session

from ..compiler.test_random_graphs import ATOL, RTOL, random_graphs

CONFIG = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
_ids = itertools.count()


@pytest.fixture(autouse=True)
def initialized() -> Iterator[None]:
    """GE initialized around each test, finalized after, so no state leaks."""
    GeApi.ge_initialize(CONFIG)
    yield
    GeApi.ge_finalize()


@pytest.fixture
def session() -> Session:
    return Session(CONFIG)


# --- helpers ------------------------------------------------------------------------------------
def host(array: Any) -> Tensor:
    return Tensor.from_numpy(np.asarray(array))


def device(array: Any) -> Tensor:
    return Tensor.from_numpy(np.asarray(array), placement=Placement.PLACEMENT_DEVICE)


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


def xy_graph(x_shape: list[int] | None = None, y_shape: list[int] | None = None) -> Graph:
    """out = x * y + 1 with inputs named x and y."""
    b = GraphBuilder("xy")
    x = b.create_input(0, name="x", shape=x_shape or [2, 3])
    y = b.create_input(1, name="y", shape=y_shape or [3])
    return b.build_and_reset([x * y + 1.0])


def chain_graph(n: int = 16) -> Graph:
    b = GraphBuilder("small")
    x = b.create_input(0, name="x", shape=[n])
    return b.build_and_reset([(x * 2.0 + 1.0) * 2.0])


class CountingAllocator(Allocator):
    """Serves ge.runtime memory and counts every malloc and free."""

    def __init__(self) -> None:
        self.mallocs = 0
        self.frees = 0
        self.sizes: list[int] = []
        self.live: dict[int, MemBlock] = {}

    def malloc(self, size: int) -> MemBlock:
        block = runtime.malloc(size)
        self.mallocs += 1
        self.sizes.append(size)
        self.live[block.addr] = block
        return block

    def free(self, block: MemBlock) -> None:
        assert block.addr in self.live, "freed a block this allocator did not serve (or twice)"
        del self.live[block.addr]
        self.frees += 1
        runtime.free(block)


# --- construction, type checks before state -----------------------------------------------------
def test_session_constructs_without_initialisation() -> None:
    GeApi.ge_finalize()
    Session()
    Session(None)
    Session(CONFIG)
    Session({"unknown.key": "x"})


def test_session_options_are_checked() -> None:
    with pytest.raises(TypeError, match=r"^option must be a dictionary"):
        Session("ge.graphRunMode=0")  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="'int' object has no attribute 'encode'") as info:
        Session({"ge.graphRunMode": 0})  # type: ignore[dict-item]
    assert isinstance(info.value, TypeError)  # what ge raised before GE_ERRORS.md
    # GE's session create accepts any value; the first add_graph reports it
    session = Session({"ge.graphRunMode": "2"})
    with pytest.raises(ValueError, match=r"^AddGraph failed; graph_id=1; .*ge\.graphRunMode"):
        session.add_graph(1, xy_graph())


@pytest.mark.parametrize("bad_id", ["1", 1.0, None, np.int64(1), [1]])
def test_graph_id_must_be_an_integer(session: Session, bad_id: Any) -> None:
    graph = xy_graph()
    for call in (
        lambda: session.add_graph(bad_id, graph),
        lambda: session.remove_graph(bad_id),
        lambda: session.run_graph(bad_id, []),
        lambda: session.run_graph_with_stream_async(bad_id, Stream(), []),
    ):
        with pytest.raises(TypeError, match="Graph_id must be an integer"):
            call()


@pytest.mark.parametrize("bad_graph", [None, "graph", 1, GraphBuilder])
def test_add_graph_must_be_a_graph(session: Session, bad_graph: Any) -> None:
    with pytest.raises(TypeError, match="Add_graph must be a Graph"):
        session.add_graph(1, bad_graph)


def test_type_checks_run_before_the_init_check(session: Session) -> None:
    GeApi.ge_finalize()
    with pytest.raises(TypeError, match="Graph_id must be an integer"):
        session.add_graph("1", xy_graph())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Add_graph must be a Graph"):
        session.add_graph(1, "g")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        session.run_graph(1, "not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        session.run_graph(1, [np.zeros(3)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Stream must be an integer"):
        session.run_graph_with_stream_async(1, "s", [])  # type: ignore[arg-type]


def test_add_graph_before_initialize_is_ge_error(session: Session) -> None:
    GeApi.ge_finalize()
    with pytest.raises(GeError, match=r"^AddGraph failed; graph_id=7;") as info:
        session.add_graph(7, xy_graph())
    assert isinstance(info.value, RuntimeError)
    assert info.value.api_name == "AddGraph"
    assert info.value.context == {"graph_id": 7}
    assert "ge_initialize" in str(info.value)


def test_run_graph_before_initialize_is_ge_error(session: Session) -> None:
    assert session.add_graph(2, xy_graph()) == 0
    GeApi.ge_finalize()
    with pytest.raises(GeError, match=r"^RunGraph failed; graph_id=2;"):
        session.run_graph(2, [host(f32(2, 3)), host(f32(3))])
    with pytest.raises(GeError, match="graph_id=2"):
        session.run_graph_with_stream_async(2, Stream(), [host(f32(2, 3)), host(f32(3))])


# --- add / remove -------------------------------------------------------------------------------
def test_add_graph_returns_zero(session: Session) -> None:
    ret = session.add_graph(0, xy_graph())
    assert type(ret) is int and ret == 0


def test_adding_under_a_used_id_is_an_error(session: Session) -> None:
    session.add_graph(1, xy_graph())
    with pytest.raises(GeError, match=r"AddGraph failed; graph_id=1") as info:
        session.add_graph(1, chain_graph())
    assert "remove_graph" in str(info.value)
    # the first graph is still the one under id 1
    x, y = f32(2, 3), f32(3, seed=1)
    (out,) = session.run_graph(1, [host(x), host(y)])
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)


def test_remove_unknown_graph_is_an_error(session: Session) -> None:
    with pytest.raises(GeError, match="graph_id=5"):
        session.remove_graph(5)
    session.add_graph(5, xy_graph())
    session.remove_graph(5)
    with pytest.raises(GeError, match="graph_id=5"):
        session.remove_graph(5)


def test_remove_then_add_again(session: Session) -> None:
    session.add_graph(4, xy_graph())
    session.remove_graph(4)
    with pytest.raises(GeError, match=r"RunGraph failed; graph_id=4"):
        session.run_graph(4, [host(f32(2, 3)), host(f32(3))])
    assert session.add_graph(4, chain_graph()) == 0
    (out,) = session.run_graph(4, [host(np.ones(16, np.float32))])
    np.testing.assert_array_equal(out.numpy(), np.full(16, 6.0, np.float32))


def test_run_unknown_graph_id_is_an_error(session: Session) -> None:
    with pytest.raises(GeError, match=r"^RunGraph failed; graph_id=42;") as info:
        session.run_graph(42, [])
    assert info.value.context == {"graph_id": 42}
    with pytest.raises(GeError, match="graph_id=42"):
        session.run_graph_with_stream_async(42, Stream(), [])


def test_add_graph_takes_a_snapshot(session: Session) -> None:
    b = GraphBuilder("snap")
    x = b.create_input(0, name="x", shape=[3])
    graph = b.build_and_reset([x + 1.0])
    session.add_graph(1, graph)
    const = next(n for n in graph.get_all_nodes() if n.type == "Const")
    const.set_attr("value", Tensor([5.0], None, DataType.DT_FLOAT, Format.FORMAT_ND, []))
    inputs = [host(np.array([1.0, 2.0, 3.0], np.float32))]
    (out,) = session.run_graph(1, inputs)
    assert out.data == [2.0, 3.0, 4.0]
    # the edited graph, added under another id, runs with its new value
    session.add_graph(2, graph)
    (out,) = session.run_graph(2, inputs)
    assert out.data == [6.0, 7.0, 8.0]


def test_the_same_graph_object_under_two_ids_runs_independently(session: Session) -> None:
    graph = chain_graph()
    session.add_graph(1, graph)
    session.add_graph(2, graph)
    session.remove_graph(1)
    (out,) = session.run_graph(2, [host(np.zeros(16, np.float32))])
    np.testing.assert_array_equal(out.numpy(), np.full(16, 2.0, np.float32))


def test_add_graph_options_are_checked(session: Session) -> None:
    with pytest.raises(TypeError):
        session.add_graph(1, xy_graph(), "opts")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ge\.graphRunMode"):
        session.add_graph(1, xy_graph(), {"ge.graphRunMode": "3"})
    assert session.add_graph(1, xy_graph(), {"ge.enableSingleStream": "true"}) == 0


def _close_a_cycle(graph: Graph, consumer_type: str, producer_type: str) -> None:
    """Feed input 1 of the ``consumer_type`` node from the ``producer_type`` node after it."""
    consumer = next(n for n in graph.get_direct_nodes() if n.type == consumer_type)
    producer = next(n for n in graph.get_direct_nodes() if n.type == producer_type)
    src, port = consumer.get_in_data_nodes_and_port_indexes(1)
    graph.remove_edge(src, port, consumer, 1)
    graph.add_data_edge(producer, 0, consumer, 1)


def test_add_graph_names_the_nodes_of_a_cycle(session: Session) -> None:
    b = GraphBuilder("cyclic")
    x = b.create_input(0, name="x", shape=[2])
    graph = b.build_and_reset([(x + 1.0) * 2.0])
    _close_a_cycle(graph, "Add", "Mul")  # Add_1 -> Mul_3 -> Add_1, NetOutput waits on it
    with pytest.raises(GeError) as info:
        session.add_graph(1, graph)
    assert str(info.value) == (
        "AddGraph failed; graph_id=1; graph 'cyclic' has a cycle: Add_1 -> Mul_3 -> Add_1 "
        "(1 more node waits on it); remove one of its edges"
    )
    assert "AIR" not in str(info.value)
    with pytest.raises(GeError, match="graph_id=1"):  # nothing was added
        session.run_graph(1, [host(np.ones(2, np.float32))])


def test_add_graph_names_a_cycle_inside_a_subgraph(session: Session) -> None:
    b = GraphBuilder("if_cyclic")
    cond = b.create_input(0, name="cond", data_type=DataType.DT_BOOL)
    x = b.create_input(1, name="x", shape=[3])
    (y,) = ge.es.If(cond, [x], 1, _branch("then_cyclic", 2.0), _branch("else_fine", -1.0))
    graph = b.build_and_reset([y])
    _close_a_cycle(graph.get_subgraph("then_cyclic"), "Mul", "Add")  # the 2 read from the Add
    with pytest.raises(
        GeError, match=r"graph 'then_cyclic' has a cycle: \w+ -> \w+ -> \w+ "
    ) as info:
        session.add_graph(1, graph)
    assert str(info.value).startswith("AddGraph failed; graph_id=1; graph 'then_cyclic'")


# --- run_graph ----------------------------------------------------------------------------------
def test_run_graph_with_host_inputs(session: Session) -> None:
    session.add_graph(1, xy_graph())
    x, y = f32(2, 3), f32(3, seed=1)
    outputs = session.run_graph(1, [host(x), host(y)])
    assert isinstance(outputs, list) and len(outputs) == 1
    (out,) = outputs
    assert isinstance(out, Tensor)
    assert out.placement == Placement.PLACEMENT_HOST
    assert out.data_type == DataType.DT_FLOAT
    assert list(out.shape) == [2, 3]
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out.data), x * y + 1.0, rtol=1e-6)


def test_run_graph_with_device_inputs(session: Session) -> None:
    session.add_graph(1, xy_graph())
    x, y = f32(2, 3, seed=2), f32(3, seed=3)
    tx, ty = device(x), device(y)
    (out,) = session.run_graph(1, [tx, ty])
    assert out.placement == Placement.PLACEMENT_HOST
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)
    # inputs are left as they were, still on the device
    assert tx.placement == Placement.PLACEMENT_DEVICE
    np.testing.assert_array_equal(tx.numpy(), x)


def test_run_graph_with_mixed_inputs_and_list_constructed_tensors(session: Session) -> None:
    session.add_graph(1, xy_graph())
    x = Tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], None, DataType.DT_FLOAT, Format.FORMAT_ND, [2, 3])
    y = Tensor(
        [1.0, 10.0, 100.0],
        None,
        DataType.DT_FLOAT,
        Format.FORMAT_ND,
        [3],
        Placement.PLACEMENT_DEVICE,
    )
    (out,) = session.run_graph(1, [x, y])
    assert out.data == [[2.0, 21.0, 301.0], [5.0, 51.0, 601.0]]


def test_run_graph_refuses_a_tuple_of_inputs_as_ge_does(session: Session) -> None:
    """GE_ERRORS.md §4: ``inputs`` not a ``list`` is GE-PY's TypeError (we once took tuples)."""
    session.add_graph(1, chain_graph())
    inputs = (host(np.ones(16, np.float32)),)
    with pytest.raises(TypeError, match=r"^inputs must be a list of Tensor, got tuple"):
        session.run_graph(1, inputs)  # type: ignore[arg-type]
    (out,) = session.run_graph(1, list(inputs))
    np.testing.assert_array_equal(out.numpy(), np.full(16, 6.0, np.float32))


def test_run_graph_outputs_follow_graph_output_order(session: Session) -> None:
    b = GraphBuilder("multi")
    x = b.create_input(0, name="x", shape=[4])
    c = b.create_const_float(3.0)
    y = x * 2.0
    graph = b.build_and_reset([y + 1.0, x, y, c, y, (x > 0.0)])
    session.add_graph(1, graph)
    xv = f32(4, seed=5)
    outs = session.run_graph(1, [host(xv)])
    assert len(outs) == 6
    assert all(o.placement == Placement.PLACEMENT_HOST for o in outs)
    np.testing.assert_allclose(outs[0].numpy(), xv * 2.0 + 1.0, rtol=1e-6)
    np.testing.assert_array_equal(outs[1].numpy(), xv)
    np.testing.assert_array_equal(outs[2].numpy(), xv * 2.0)
    assert outs[3].data == 3.0 and list(outs[3].shape) == []
    np.testing.assert_array_equal(outs[4].numpy(), xv * 2.0)
    assert outs[5].data_type == DataType.DT_BOOL
    np.testing.assert_array_equal(outs[5].numpy(), xv > 0)


def test_graph_without_inputs_runs_with_an_empty_list(session: Session) -> None:
    b = GraphBuilder("consts")
    graph = b.build_and_reset([b.create_const_float(3.0) * 2.0])
    session.add_graph(1, graph)
    (out,) = session.run_graph(1, [])
    assert out.data == 6.0


def test_run_graph_repeatedly_gives_fresh_results(session: Session) -> None:
    session.add_graph(1, xy_graph())
    results = []
    for seed in range(3):
        x, y = f32(2, 3, seed=seed), f32(3, seed=seed + 10)
        (out,) = session.run_graph(1, [host(x), host(y)])
        results.append((out, x * y + 1.0))
    for out, expected in results:  # earlier outputs are not overwritten by later runs
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


# --- input checks -------------------------------------------------------------------------------
def _assert_input_error(info: pytest.ExceptionInfo[BaseException], graph_id: int) -> str:
    error = info.value
    assert isinstance(error, GeError) and isinstance(error, ValueError)
    text = str(error)
    assert text.startswith(f"RunGraph failed; graph_id={graph_id};"), text
    return text


def test_wrong_input_count_names_the_inputs(session: Session) -> None:
    session.add_graph(3, xy_graph())
    for inputs in ([host(f32(2, 3))], [], [host(f32(2, 3)), host(f32(3)), host(f32(3))]):
        with pytest.raises(ValueError) as info:
            session.run_graph(3, inputs)
        text = _assert_input_error(info, 3)
        assert "2 inputs" in text and "x" in text and "y" in text
        assert str(len(inputs)) in text


def test_wrong_input_dtype_names_the_input(session: Session) -> None:
    session.add_graph(3, xy_graph())
    with pytest.raises(ValueError) as info:
        session.run_graph(3, [host(f32(2, 3)), host(np.ones(3, np.int32))])
    text = _assert_input_error(info, 3)
    assert "input 1 (y)" in text
    assert "int32" in text
    with pytest.raises(ValueError) as info:
        session.run_graph(3, [host(np.ones((2, 3), np.float16)), host(f32(3))])
    assert "input 0 (x)" in _assert_input_error(info, 3)


@pytest.mark.parametrize("bad_shape", [(4,), (1, 3), (2, 3), ()])
def test_wrong_input_shape_names_the_input(session: Session, bad_shape: tuple[int, ...]) -> None:
    session.add_graph(3, xy_graph())
    y = np.ones(bad_shape, np.float32)
    with pytest.raises(ValueError) as info:
        session.run_graph(3, [host(f32(2, 3)), host(y)])
    text = _assert_input_error(info, 3)
    assert "input 1 (y)" in text
    assert str(list(bad_shape)) in text


def test_wrong_device_input_shape_names_the_input(session: Session) -> None:
    session.add_graph(3, xy_graph())
    with pytest.raises(ValueError, match=r"input 0 \(x\)"):
        session.run_graph(3, [device(f32(3, 2)), device(f32(3))])


def test_async_input_checks_name_the_input(session: Session) -> None:
    session.add_graph(3, xy_graph())
    stream = Stream()
    with pytest.raises(ValueError, match=r"input 1 \(y\)") as info:
        session.run_graph_with_stream_async(3, stream, [host(f32(2, 3)), host(f32(5))])
    assert isinstance(info.value, GeError)
    assert "graph_id=3" in str(info.value)
    stream.synchronize()  # nothing was queued, nothing failed


def test_non_tensor_inputs_are_type_errors(session: Session) -> None:
    session.add_graph(1, xy_graph())
    with pytest.raises(TypeError, match=r"inputs\[1\]"):
        session.run_graph(1, [host(f32(2, 3)), f32(3)])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        session.run_graph(1, host(f32(2, 3)))  # type: ignore[arg-type]


def test_the_session_works_after_input_errors(session: Session) -> None:
    session.add_graph(1, xy_graph())
    with pytest.raises(ValueError):
        session.run_graph(1, [host(f32(2, 3))])
    x, y = f32(2, 3), f32(3)
    (out,) = session.run_graph(1, [host(x), host(y)])
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)


# --- unknown dims, control flow, value-dependent shapes -----------------------------------------
def test_minus_one_dims_run_with_several_batch_sizes(session: Session) -> None:
    session.add_graph(1, xy_graph([-1, 3], [3]))
    y = f32(3, seed=9)
    for batch in (1, 5, 2, 5, 8):
        x = f32(batch, 3, seed=batch)
        (out,) = session.run_graph(1, [host(x), device(y)])
        assert list(out.shape) == [batch, 3]
        np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match=r"input 0 \(x\)"):
        session.run_graph(1, [host(f32(4, 2)), host(y)])


def test_minus_one_dims_async(session: Session) -> None:
    session.add_graph(1, xy_graph([-1, 3], [-1]))
    stream = Stream()
    runs = []
    for batch in (2, 6):
        x, y = f32(batch, 3, seed=batch), f32(3, seed=batch + 1)
        runs.append((session.run_graph_with_stream_async(1, stream, [host(x), host(y)]), x, y))
    stream.synchronize()
    for (out,), x, y in runs:
        assert list(out.shape) == list(x.shape)
        np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)


def _branch(name: str, scale: float) -> Graph:
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[3])
    return b.build_and_reset([x * scale + 1.0])


def test_if_graph_runs_its_branches(session: Session) -> None:
    b = GraphBuilder("if_graph")
    cond = b.create_input(0, name="cond", data_type=DataType.DT_BOOL)
    x = b.create_input(1, name="x", shape=[3])
    (y,) = ge.es.If(cond, [x], 1, _branch("then_graph", 2.0), _branch("else_graph", -1.0))
    session.add_graph(1, b.build_and_reset([y]))
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    (out,) = session.run_graph(1, [host(np.array(True)), host(xv)])
    np.testing.assert_allclose(out.numpy(), xv * 2.0 + 1.0)
    (out,) = session.run_graph(1, [device(np.array(False)), device(xv)])
    np.testing.assert_allclose(out.numpy(), xv * -1.0 + 1.0)
    stream = Stream()
    (out,) = session.run_graph_with_stream_async(1, stream, [host(np.array(True)), host(xv)])
    stream.synchronize()
    np.testing.assert_allclose(out.numpy(), xv * 2.0 + 1.0)


def _while_graph() -> Graph:
    """i, acc = 0, 1; while i < n: i += 1; acc *= 2.  Returns acc."""
    types = (DataType.DT_INT32, DataType.DT_FLOAT, DataType.DT_INT32)
    cond_b = GraphBuilder("cond")
    i, _acc, n = (cond_b.create_input(k, data_type=t) for k, t in enumerate(types))
    cond = cond_b.build_and_reset([i < n])
    body_b = GraphBuilder("body")
    i, acc, n = (body_b.create_input(k, data_type=t) for k, t in enumerate(types))
    body = body_b.build_and_reset([i + 1, acc * 2.0, n])
    b = GraphBuilder("while_graph")
    n = b.create_input(0, name="n", data_type=DataType.DT_INT32)
    start = [b.create_scalar_int32(0), b.create_scalar_float(1.0), n]
    _, acc, _ = ge.es.While(start, 3, cond, body)
    return b.build_and_reset([acc])


def test_while_graph_loops(session: Session) -> None:
    session.add_graph(1, _while_graph())
    for n in (0, 1, 5, 10):
        (out,) = session.run_graph(1, [host(np.int32(n))])
        assert out.data_type == DataType.DT_FLOAT
        assert out.data == float(2**n)


def test_case_graph_picks_its_branch(session: Session) -> None:
    fns = [lambda a: a + 1.0, lambda a: a * a, lambda a: -a]
    branches = []
    for k, fn in enumerate(fns):
        bb = GraphBuilder(f"br{k}")
        branches.append(bb.build_and_reset([fn(bb.create_input(0, shape=[3]))]))
    b = GraphBuilder("case_graph")
    idx = b.create_input(0, name="idx", data_type=DataType.DT_INT32)
    x = b.create_input(1, name="x", shape=[3])
    (y,) = ge.es.Case(idx, [x], 1, branches)
    session.add_graph(1, b.build_and_reset([y]))
    xv = np.array([1.0, -2.0, 3.0], np.float32)
    for k, fn in enumerate(fns):
        (out,) = session.run_graph(1, [host(np.int32(k)), host(xv)])
        np.testing.assert_allclose(out.numpy(), fn(xv))


def _reshape_by_value_graph() -> Graph:
    b = GraphBuilder("reshape_by_value")
    x = b.create_input(0, name="x", shape=[6])
    shape = b.create_input(1, name="shape", data_type=DataType.DT_INT64, shape=[2])
    return b.build_and_reset([ge.es.Reshape(x, shape) + 1.0])


def test_value_dependent_output_shape_runs_via_run_graph(session: Session) -> None:
    session.add_graph(1, _reshape_by_value_graph())
    x = np.arange(6, dtype=np.float32)
    for target in ([2, 3], [3, 2], [1, 6]):
        (out,) = session.run_graph(1, [host(x), host(np.array(target, np.int64))])
        assert out.placement == Placement.PLACEMENT_HOST
        assert list(out.shape) == target
        np.testing.assert_array_equal(out.numpy(), x.reshape(target) + 1.0)


def test_value_dependent_output_shape_runs_async_on_the_given_values(session: Session) -> None:
    """Decision (session.py): the small inputs that decide output shapes are read when
    run_graph_with_stream_async is called, so such a graph runs async too."""
    session.add_graph(1, _reshape_by_value_graph())
    stream = Stream()
    allocator = CountingAllocator()
    session.register_external_allocator(stream, allocator)
    x = np.arange(6, dtype=np.float32)
    runs = []
    for target, place in (([2, 3], host), ([3, 2], device), ([2, 3], device), ([6, 1], host)):
        shape = place(np.array(target, np.int64))
        runs.append((session.run_graph_with_stream_async(1, stream, [host(x), shape]), target))
    stream.synchronize()
    for (out,), target in runs:
        assert out.placement == Placement.PLACEMENT_DEVICE
        assert list(out.shape) == target
        np.testing.assert_array_equal(out.numpy(), x.reshape(target) + 1.0)
    del runs, out
    gc.collect()
    assert allocator.mallocs == allocator.frees > 0


def _positives_infer(ctx: InferContext) -> list[TensorDesc]:
    x = ctx.inputs[0]
    return [TensorDesc([-1], x.get_format(), x.get_data_type())]


def _positives_reference(ctx: ExecContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    return [x[x > 0]]


@pytest.fixture
def data_dependent_graph() -> Iterator[Graph]:
    """out = positives(x) * 2, whose length depends on the data, not on any small input."""
    op_type = f"TestsSessionPositives{next(_ids)}x{os.getpid()}"
    ge.ops.register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            infer=_positives_infer,
            reference=_positives_reference,
            group="custom",
            source="tests",
        )
    )
    try:
        b = GraphBuilder("positives")
        x = b.create_input(0, name="x", shape=[6])
        yield b.build_and_reset([getattr(ge.es.custom, op_type)(x) * 2.0])
    finally:
        ge.ops.registry().unregister(op_type)


def test_data_dependent_output_shape_runs_via_run_graph_and_is_refused_async(
    session: Session, data_dependent_graph: Graph
) -> None:
    session.add_graph(1, data_dependent_graph)
    for values in ([1.0, -2.0, 3.0, -4.0, 5.0, 0.0], [-1.0] * 6, [2.0] * 6):
        x = np.array(values, np.float32)
        (out,) = session.run_graph(1, [host(x)])
        assert out.placement == Placement.PLACEMENT_HOST
        np.testing.assert_array_equal(out.numpy(), x[x > 0] * 2.0)
    stream = Stream()
    allocator = CountingAllocator()
    session.register_external_allocator(stream, allocator)
    with pytest.raises(GeError, match="RunGraphWithStreamAsync failed; graph_id=1") as info:
        session.run_graph_with_stream_async(1, stream, [host(np.ones(6, np.float32))])
    assert "depend on input values" in str(info.value)
    assert "run_graph" in str(info.value)
    stream.synchronize()
    assert allocator.mallocs == allocator.frees == 0


# --- async runs, streams, allocators ------------------------------------------------------------
def test_async_run_with_a_stream_object(session: Session) -> None:
    session.add_graph(1, xy_graph())
    stream = Stream()
    x, y = f32(2, 3), f32(3, seed=1)
    outputs = session.run_graph_with_stream_async(1, stream, [host(x), device(y)])
    assert isinstance(outputs, list) and len(outputs) == 1
    (out,) = outputs
    assert isinstance(out, Tensor)
    assert out.placement == Placement.PLACEMENT_DEVICE
    assert list(out.shape) == [2, 3] and out.data_type == DataType.DT_FLOAT
    stream.synchronize()
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)


def test_async_run_with_a_stream_handle(session: Session) -> None:
    session.add_graph(1, xy_graph())
    stream = Stream()
    x, y = f32(2, 3, seed=4), f32(3, seed=5)
    (out,) = session.run_graph_with_stream_async(1, stream.handle, [device(x), host(y)])
    stream.synchronize()
    assert out.placement == Placement.PLACEMENT_DEVICE
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)


@pytest.mark.parametrize("bad", ["1", 1.5, None, np.int64(1), [1]])
def test_stream_must_be_an_integer(session: Session, bad: Any) -> None:
    session.add_graph(1, xy_graph())
    with pytest.raises(TypeError, match="Stream must be an integer"):
        session.run_graph_with_stream_async(1, bad, [host(f32(2, 3)), host(f32(3))])


def test_allocator_apis_check_the_stream(session: Session) -> None:
    with pytest.raises(TypeError, match="stream must be an integer"):
        session.register_external_allocator("s", CountingAllocator())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stream must be an integer"):
        session.unregister_external_allocator(2.0)  # type: ignore[arg-type]


def test_async_outputs_are_device_tensors_readable_after_synchronize(session: Session) -> None:
    session.add_graph(1, chain_graph(1024))
    stream = Stream()
    runs = []
    for seed in range(4):
        x = f32(1024, seed=seed)
        runs.append((session.run_graph_with_stream_async(1, stream, [host(x)])[0], x))
    stream.synchronize()
    for out, x in runs:
        assert out.placement == Placement.PLACEMENT_DEVICE
        assert out.addr != 0
        np.testing.assert_allclose(out.numpy(), (x * 2.0 + 1.0) * 2.0, rtol=1e-6)
    assert len({out.addr for out, _ in runs}) == len(runs)
    host_copy = runs[0][0].to_host()
    assert host_copy.placement == Placement.PLACEMENT_HOST
    np.testing.assert_allclose(host_copy.numpy(), (runs[0][1] * 2.0 + 1.0) * 2.0, rtol=1e-6)


def _multi_output_graph() -> Graph:
    b = GraphBuilder("multi_async")
    x = b.create_input(0, name="x", shape=[64])
    y = np.abs(x * 2.0) + 1.0
    return b.build_and_reset([y * 3.0, y - 1.0, x, y, y])


def test_external_allocator_serves_all_async_memory(session: Session) -> None:
    session.add_graph(1, _multi_output_graph())
    stream = Stream()
    allocator = CountingAllocator()
    assert session.register_external_allocator(stream, allocator) is None
    session.run_graph(1, [host(f32(64))])  # compile first; run_graph never uses the allocator
    assert allocator.mallocs == 0
    before = runtime.live_bytes()
    x = f32(64, seed=3)
    outs = session.run_graph_with_stream_async(1, stream, [host(x)])
    stream.synchronize()
    y = np.abs(x * 2.0) + 1.0
    for out, expected in zip(outs, [y * 3.0, y - 1.0, x, y, y], strict=True):
        assert out.placement == Placement.PLACEMENT_DEVICE
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    # every output lives in a block the allocator served, and the workspace came from it too
    served = {addr: block.size for addr, block in allocator.live.items()}
    for out in outs:
        assert out.addr in served
        assert served[out.addr] >= out.nbytes
    assert allocator.mallocs > len(outs), "the workspace (arena) must come from the allocator"
    assert allocator.mallocs - allocator.frees == len(outs)  # only outputs still held
    del outs, out
    gc.collect()
    assert allocator.mallocs == allocator.frees
    assert not allocator.live
    assert runtime.live_bytes() == before


def test_to_host_releases_an_allocator_block_exactly_once(session: Session) -> None:
    session.add_graph(1, chain_graph(32))
    stream = Stream()
    allocator = CountingAllocator()
    session.register_external_allocator(stream.handle, allocator)  # the handle works too
    (out,) = session.run_graph_with_stream_async(1, stream, [host(np.ones(32, np.float32))])
    stream.synchronize()
    out.to_host()
    assert out.placement == Placement.PLACEMENT_HOST
    np.testing.assert_array_equal(out.numpy(), np.full(32, 6.0, np.float32))
    assert allocator.mallocs == allocator.frees
    del out
    gc.collect()
    assert allocator.mallocs == allocator.frees  # no second free


def test_allocator_is_per_stream_and_unregister_restores_the_default(session: Session) -> None:
    session.add_graph(1, chain_graph(32))
    mine, other = Stream(), Stream()
    allocator = CountingAllocator()
    session.register_external_allocator(mine, allocator)
    inputs = [host(np.ones(32, np.float32))]
    (a,) = session.run_graph_with_stream_async(1, other, inputs)
    other.synchronize()
    assert allocator.mallocs == 0
    (b,) = session.run_graph_with_stream_async(1, mine, inputs)
    mine.synchronize()
    assert allocator.mallocs >= 1 and b.addr in allocator.live
    session.unregister_external_allocator(mine)
    count = allocator.mallocs
    (c,) = session.run_graph_with_stream_async(1, mine, inputs)
    mine.synchronize()
    assert allocator.mallocs == count
    for t in (a, b, c):
        np.testing.assert_array_equal(t.numpy(), np.full(32, 6.0, np.float32))
    del a, b, c, t
    gc.collect()
    assert allocator.mallocs == allocator.frees


def test_unregister_twice_is_an_error(session: Session) -> None:
    stream = Stream()
    with pytest.raises(GeError):
        session.unregister_external_allocator(stream)
    session.register_external_allocator(stream, CountingAllocator())
    assert session.unregister_external_allocator(stream) is None
    with pytest.raises(GeError, match="UnregisterExternalAllocator failed") as info:
        session.unregister_external_allocator(stream.handle)
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("bad", [None, object(), MemBlock, runtime.malloc, "allocator"])
def test_register_needs_an_allocator(session: Session, bad: Any) -> None:
    with pytest.raises(TypeError):
        session.register_external_allocator(Stream(), bad)


def test_allocator_returning_a_bad_block_is_reported(session: Session) -> None:
    class Tiny(CountingAllocator):
        def malloc(self, size: int) -> MemBlock:
            block = super().malloc(size)
            return MemBlock(block.addr, 0) if size > 16 else block

        def free(self, block: MemBlock) -> None:
            super().free(self.live.get(block.addr, block))

    session.add_graph(1, chain_graph(64))
    stream = Stream()
    allocator = Tiny()
    session.register_external_allocator(stream, allocator)
    try:
        with pytest.raises(GeError, match="Tiny"):
            session.run_graph_with_stream_async(1, stream, [host(np.ones(64, np.float32))])
            stream.synchronize()
    finally:
        gc.collect()
        for block in list(allocator.live.values()):  # whatever the session did not give back
            runtime.free(block)


def test_unknown_stream_handle_is_an_error(session: Session) -> None:
    session.add_graph(1, chain_graph())
    gone = Stream()
    handle = gone.handle
    del gone
    gc.collect()
    with pytest.raises(GeError, match=str(handle)):
        session.run_graph_with_stream_async(1, handle, [host(np.ones(16, np.float32))])
    with pytest.raises(GeError):
        session.register_external_allocator(handle, CountingAllocator())


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4])
def test_a_failing_allocator_leaks_nothing(session: Session, fail_at: int) -> None:
    """The allocator refuses its n-th malloc (outputs are allocated at call time, the
    workspace when the run executes): the run fails and every block served is freed."""

    class Refusing(CountingAllocator):
        attempts = 0

        def malloc(self, size: int) -> MemBlock:
            self.attempts += 1
            if self.attempts == fail_at:
                raise MemoryError("out of device memory")
            return super().malloc(size)

    b = GraphBuilder("three_outputs")
    x = b.create_input(0, name="x", shape=[8])
    h = x * 2.0
    session.add_graph(1, b.build_and_reset([h + 1.0, h * 3.0, x]))
    stream = Stream()
    allocator = Refusing()
    session.register_external_allocator(stream, allocator)
    with pytest.raises(Exception, match="out of device memory"):
        outs = session.run_graph_with_stream_async(1, stream, [host(np.ones(8, np.float32))])
        stream.synchronize()
    outs = None  # noqa: F841
    gc.collect()
    assert allocator.attempts == fail_at  # the refusal happened, and nothing was tried after it
    assert allocator.mallocs == allocator.frees == fail_at - 1
    assert not allocator.live


def test_sessions_are_independent() -> None:
    first, second = Session(), Session()
    first.add_graph(1, chain_graph())
    second.add_graph(1, xy_graph())
    (a,) = first.run_graph(1, [host(np.ones(16, np.float32))])
    x, y = f32(2, 3), f32(3)
    (b,) = second.run_graph(1, [host(x), host(y)])
    np.testing.assert_array_equal(a.numpy(), np.full(16, 6.0, np.float32))
    np.testing.assert_allclose(b.numpy(), x * y + 1.0, rtol=1e-6)
    first.remove_graph(1)
    (b,) = second.run_graph(1, [host(x), host(y)])
    np.testing.assert_allclose(b.numpy(), x * y + 1.0, rtol=1e-6)


# --- failures on a stream -----------------------------------------------------------------------
def _boom_infer(ctx: InferContext) -> list[TensorDesc]:
    x = ctx.inputs[0]
    return [TensorDesc(list(x.get_shape()), x.get_format(), x.get_data_type())]


def _boom_reference(ctx: ExecContext) -> list[np.ndarray]:
    raise GeError("custom kernel exploded")


@pytest.fixture
def failing_graph() -> Iterator[Graph]:
    """A graph with a node whose implementation fails at run time (a custom op)."""
    op_type = f"TestsSessionBoom{next(_ids)}x{os.getpid()}"
    ge.ops.register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            infer=_boom_infer,
            reference=_boom_reference,
            group="custom",
            source="tests",
        )
    )
    try:
        b = GraphBuilder("failing")
        x = b.create_input(0, name="x", shape=[8])
        bad = getattr(ge.es.custom, op_type)(x * 2.0)
        yield b.build_and_reset([bad + 1.0])
    finally:
        ge.ops.registry().unregister(op_type)


def _failing_node_name(graph: Graph) -> str:
    return next(n.name for n in graph.get_all_nodes() if n.type.startswith("TestsSessionBoom"))


def test_run_graph_failure_names_the_node_and_session_stays_usable(
    session: Session, failing_graph: Graph
) -> None:
    node = _failing_node_name(failing_graph)
    session.add_graph(1, failing_graph)
    session.add_graph(2, xy_graph())
    with pytest.raises(GeError, match=r"RunGraph failed; graph_id=1") as info:
        session.run_graph(1, [host(np.ones(8, np.float32))])
    assert node in str(info.value)
    assert "custom kernel exploded" in str(info.value)
    x, y = f32(2, 3), f32(3)
    (out,) = session.run_graph(2, [host(x), host(y)])
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)
    with pytest.raises(GeError, match=node):  # fails again, the same way
        session.run_graph(1, [host(np.ones(8, np.float32))])


def test_async_failure_surfaces_at_synchronize_with_the_node_name(
    session: Session, failing_graph: Graph
) -> None:
    node = _failing_node_name(failing_graph)
    session.add_graph(1, failing_graph)
    session.add_graph(2, chain_graph(8))
    stream = Stream()
    allocator = CountingAllocator()
    session.register_external_allocator(stream, allocator)
    outs = session.run_graph_with_stream_async(1, stream, [host(np.ones(8, np.float32))])
    assert len(outs) == 1  # queued: the failure is not known yet
    with pytest.raises(GeError, match=node) as info:
        stream.synchronize()
    assert "custom kernel exploded" in str(info.value)
    stream.synchronize()  # reported once, then the stream is clean
    # the session and the stream stay usable
    (good,) = session.run_graph_with_stream_async(2, stream, [host(np.ones(8, np.float32))])
    stream.synchronize()
    np.testing.assert_array_equal(good.numpy(), np.full(8, 6.0, np.float32))
    (sync,) = session.run_graph(2, [host(np.zeros(8, np.float32))])
    np.testing.assert_array_equal(sync.numpy(), np.full(8, 2.0, np.float32))
    del outs, good
    gc.collect()
    assert allocator.mallocs == allocator.frees  # the failed run leaked nothing


def test_async_failure_not_yet_synchronized_surfaces_at_the_next_synchronize(
    session: Session, failing_graph: Graph
) -> None:
    node = _failing_node_name(failing_graph)
    session.add_graph(1, failing_graph)
    session.add_graph(2, chain_graph(8))
    stream = Stream()
    session.run_graph_with_stream_async(1, stream, [host(np.ones(8, np.float32))])
    session.run_graph_with_stream_async(2, stream, [host(np.ones(8, np.float32))])
    with pytest.raises(GeError, match=node):
        stream.synchronize()
    (out,) = session.run_graph_with_stream_async(2, stream, [host(np.ones(8, np.float32))])
    stream.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.full(8, 6.0, np.float32))


def test_concurrent_run_graph_keeps_each_callers_result_and_error(
    session: Session, failing_graph: Graph
) -> None:
    """run_graph is synchronous: a caller gets its own outputs or its own graph's error, even
    while other threads run (and fail) graphs on the same session at the same time."""
    session.add_graph(1, failing_graph)
    session.add_graph(2, chain_graph(8))
    problems: list[str] = []
    ones = host(np.ones(8, np.float32))

    def run_failing() -> None:
        for _ in range(60):
            try:
                outputs = session.run_graph(1, [ones])
                problems.append(f"failing graph returned {outputs!r}")
            except GeError as e:
                if "graph_id=1" not in str(e):
                    problems.append(f"failing graph raised another error: {e}")

    def run_good() -> None:
        for _ in range(60):
            try:
                outputs = session.run_graph(2, [ones])
                if len(outputs) != 1 or outputs[0].data != [6.0] * 8:
                    problems.append(f"good graph returned {outputs!r}")
            except GeError as e:
                problems.append(f"good graph raised: {e}")

    threads = [threading.Thread(target=run_failing)] + [
        threading.Thread(target=run_good) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, f"{len(problems)} wrong results, first: {problems[0]}"


# --- copy, resources ----------------------------------------------------------------------------
def test_copy_and_deepcopy_are_runtime_errors(session: Session) -> None:
    with pytest.raises(RuntimeError, match="copy"):
        copy.copy(session)
    with pytest.raises(RuntimeError, match="deepcopy"):
        copy.deepcopy(session)


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def test_many_runs_leave_device_memory_flat(session: Session) -> None:
    session.add_graph(1, chain_graph(256))
    inputs = [host(np.ones(256, np.float32))]
    dev_inputs = [device(np.ones(256, np.float32))]
    for _ in range(20):
        session.run_graph(1, inputs)
    gc.collect()
    live, count, rss = runtime.live_bytes(), runtime.live_allocations(), _rss_bytes()
    for i in range(2000):
        (out,) = session.run_graph(1, inputs if i % 2 else dev_inputs)
    np.testing.assert_array_equal(out.numpy(), np.full(256, 6.0, np.float32))
    del out
    gc.collect()
    assert runtime.live_bytes() == live
    assert runtime.live_allocations() == count
    after = _rss_bytes()
    if rss is not None and after is not None:
        assert after - rss < 64 * 2**20  # lenient: no per-run growth of note


def test_many_async_runs_leave_device_memory_flat(session: Session) -> None:
    session.add_graph(1, chain_graph(256))
    stream = Stream()
    inputs = [host(np.ones(256, np.float32))]
    session.run_graph_with_stream_async(1, stream, inputs)
    stream.synchronize()
    gc.collect()
    live = runtime.live_bytes()
    for _ in range(300):
        session.run_graph_with_stream_async(1, stream, inputs)
    stream.synchronize()
    gc.collect()
    assert runtime.live_bytes() == live


def test_removed_graphs_give_their_device_memory_back(session: Session) -> None:
    """Adding, running and removing graphs again and again must not grow device memory: a
    removed graph's compiled constants are freed with it."""
    session.add_graph(1, xy_graph())  # warm up (kernels compiled, pools filled)
    session.run_graph(1, [host(f32(2, 3)), host(f32(3))])
    session.remove_graph(1)
    gc.collect()
    live, count = runtime.live_bytes(), runtime.live_allocations()
    for _ in range(10):
        session.add_graph(1, xy_graph())
        session.run_graph(1, [host(f32(2, 3)), host(f32(3))])
        session.remove_graph(1)
    gc.collect()
    assert runtime.live_bytes() == live
    assert runtime.live_allocations() == count


def test_session_example_runs() -> None:
    """examples/session_run.py's flow (GE-PY's seed sample) inside one test."""
    b = GraphBuilder("add_graph")
    n = 1024
    x = b.create_input(0, name="data_x", data_type=DataType.DT_FLOAT, shape=[n])
    y = b.create_input(1, name="data_y", data_type=DataType.DT_FLOAT, shape=[n])
    b.set_graph_output(ge.es.Add(x, y), 0)
    graph = b.build_and_reset()
    session = Session(CONFIG)
    assert session.add_graph(0, graph) == 0
    xs = [1.0 + i for i in range(n)]
    ys = [10.0 + 0.5 * i for i in range(n)]
    inputs = [
        Tensor(v, None, DataType.DT_FLOAT, Format.FORMAT_ND, [n], Placement.PLACEMENT_DEVICE)
        for v in (xs, ys)
    ]
    outputs = session.run_graph(0, inputs)
    assert len(outputs) == 1
    assert outputs[0].data == [a + c for a, c in zip(xs, ys, strict=True)]


# --- compile pipeline through the session -------------------------------------------------------
def test_graph_dumps_during_a_session_run(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GE_DUMP_GRAPH", str(tmp_path))
    b = GraphBuilder("session/dump")
    x = b.create_input(0, name="x", shape=[3])
    session.add_graph(1, b.build_and_reset([x * 2.0 + 1.0]))
    assert list(tmp_path.iterdir()) == []  # compiled on the first run, not when added
    (out,) = session.run_graph(1, [host(np.ones(3, np.float32))])
    assert out.data == [3.0, 3.0, 3.0]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == len(PIPELINE) + 1
    assert all(name.startswith("ge_session_dump_") for name in files), files
    session.run_graph(1, [host(np.ones(3, np.float32))])
    assert len(list(tmp_path.iterdir())) == len(files)  # compiled once, reused


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(case=random_graphs())
def test_random_graphs_through_the_session(case: tuple[Graph, list[np.ndarray]]) -> None:
    """tests/compiler/test_random_graphs.py's graphs through ``Session``: run_graph (host
    outputs) and an async run on a stream whose registered allocator gets every block back
    once the outputs are dropped, both equal to ``eval_graph``."""
    graph, feeds = case
    expected = [np.asarray(e) for e in eval_graph(graph, feeds)]
    session = Session()
    session.add_graph(0, graph)
    tensors = [Tensor.from_numpy(f) for f in feeds]
    synced = [t.numpy() for t in session.run_graph(0, tensors)]
    stream = Stream()
    allocator = CountingAllocator()
    session.register_external_allocator(stream, allocator)
    outs = session.run_graph_with_stream_async(0, stream, tensors)
    stream.synchronize()
    queued = [t.numpy() for t in outs]
    del outs
    gc.collect()
    assert allocator.mallocs == allocator.frees > 0
    for got in (synced, queued):
        assert len(got) == len(expected)
        for a, e in zip(got, expected, strict=True):
            assert a.shape == e.shape and a.dtype == e.dtype
            scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
            np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL * scale, err_msg=graph.as_text())


# --- large outputs are written into pooled memory the result tensor owns -----------------------
def test_large_results_stay_independent_and_their_memory_is_reused(session: Session) -> None:
    b = GraphBuilder("big_out")
    x = b.create_input(0, shape=[100_000])
    session.add_graph(41, b.build_and_reset([x * 2.0 + 1.0]))
    first_in, second_in = f32(100_000, seed=1), f32(100_000, seed=2)
    session.run_graph(41, [host(first_in)])  # compile and warm the pools
    gc.collect()
    live = runtime.live_bytes()
    first = session.run_graph(41, [host(first_in)])[0]
    second = session.run_graph(41, [host(second_in)])[0]
    np.testing.assert_array_equal(first.numpy(), first_in * np.float32(2) + np.float32(1))
    np.testing.assert_array_equal(second.numpy(), second_in * np.float32(2) + np.float32(1))
    assert runtime.live_bytes() >= live + 400_000  # each live result holds its own block
    del first, second
    gc.collect()
    grown = runtime.live_bytes()
    for seed in range(10):  # collected results' blocks are reused, not piled up
        out = session.run_graph(41, [host(f32(100_000, seed=seed))])[0]
        del out
    gc.collect()
    assert runtime.live_bytes() == grown <= live + 400_000 + 64


# --- repeated calls: the quick path for the last call's input signature -------------------------
def test_repeats_with_new_values_new_kinds_and_new_shapes(session: Session) -> None:
    session.add_graph(50, xy_graph([-1, 3]))
    x, y = f32(2, 3), f32(3, seed=1)
    for inputs in ([host(x), host(y)], [device(x), device(y)], [host(x), device(y)]):
        for _ in range(2):  # the second call takes the quick path
            (out,) = session.run_graph(50, inputs)
            np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)
    x4 = f32(4, 3, seed=2)  # another batch size: the full path, then quick again
    for _ in range(2):
        (out,) = session.run_graph(50, [device(x4), host(y)])
        np.testing.assert_allclose(out.numpy(), x4 * y + 1.0, rtol=1e-6)
    (out,) = session.run_graph(50, [host(x), host(y)])  # and back
    np.testing.assert_allclose(out.numpy(), x * y + 1.0, rtol=1e-6)


def test_repeats_still_check_their_inputs(session: Session) -> None:
    session.add_graph(51, xy_graph())
    x, y = host(f32(2, 3)), host(f32(3))
    session.run_graph(51, [x, y])
    with pytest.raises(ValueError, match=r"input 1 \(y\)"):
        session.run_graph(51, [x, host(np.ones(3, np.int32))])
    with pytest.raises(ValueError, match="2 inputs"):
        session.run_graph(51, [x])
    with pytest.raises(TypeError, match=r"inputs\[1\]"):
        session.run_graph(51, [x, f32(3)])  # type: ignore[list-item]
    with pytest.raises(GeError, match=r"^RunGraph failed; graph_id=True; no graph"):
        session.run_graph(True, [x, y])  # a bool is an int to GE-PY: graph 1, not added
    short = host(f32(2, 3))
    short._bytes = short._bytes[:8]  # type: ignore[index]  # a tensor whose bytes were cut
    with pytest.raises(GeError, match="inputs\\[0\\] holds 8 bytes"):
        session.run_graph(51, [short, y])
    given_up = device(f32(2, 3))
    session.run_graph(51, [given_up, y])
    given_up._donate("f (test.py:1)")  # as ge.jit's donate_argnums does
    with pytest.raises(GeError, match=r"donated to f \(test.py:1\)"):
        session.run_graph(51, [given_up, y])
    GeApi.ge_finalize()
    with pytest.raises(GeError, match="GE is not correctly initialized"):
        session.run_graph(51, [x, y])
    GeApi.ge_initialize(CONFIG)


def test_a_graph_added_again_under_its_id_is_the_one_that_runs(session: Session) -> None:
    session.add_graph(52, chain_graph(4))
    x = f32(4)
    session.run_graph(52, [host(x)])
    session.remove_graph(52)
    b = GraphBuilder("other")
    b_x = b.create_input(0, shape=[4])
    session.add_graph(52, b.build_and_reset([b_x - 1.0]))
    (out,) = session.run_graph(52, [host(x)])
    np.testing.assert_allclose(out.numpy(), x - 1.0, rtol=1e-6)


def test_result_tensors_share_a_desc_until_one_changes_it(session: Session) -> None:
    session.add_graph(53, chain_graph(4))
    x = host(f32(4))
    first, second = session.run_graph(53, [x])[0], session.run_graph(53, [x])[0]
    first.set_format(Format.FORMAT_NCHW).set_data_type(DataType.DT_INT32)
    assert first.get_format() == Format.FORMAT_NCHW and first.get_data_type() == DataType.DT_INT32
    assert second.get_format() == Format.FORMAT_ND and second.get_data_type() == DataType.DT_FLOAT
    (third,) = session.run_graph(53, [x])
    assert third.get_tensor_desc() == second.get_tensor_desc()
