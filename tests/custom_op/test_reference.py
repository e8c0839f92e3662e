"""The reference interpreter runs Python custom ops (issue #13): ``eval_graph`` of a graph that
holds one runs its implementation (``execute`` or ``declare_launch_args``) and agrees with
``Session.run_graph`` and numpy — every input kind, attributes, dynamic outputs,
``mutates_args``, ``-1`` dims re-inferred with real shapes, failures naming the node, no
constant folding of custom ops, and re-registration dropping what was cached."""

# ruff: noqa: UP045  (typing.List/Optional are annotation kinds GE-PY reads)
from __future__ import annotations

import itertools
from typing import Any, Optional

import numpy as np
import pytest

import ge.es.custom
from ge import runtime
from ge.compiler.fold import fold_constants
from ge.compiler.pipeline import optimize_graph
from ge.custom_op import (
    get_execute_ctx,
    register_op,
    register_op_impl,
    registry,
)
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.graph import Tensor as GraphTensor
from ge.ops import eval_graph
from ge.ops.registry import get_op
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc, launch_kernel
from tests.custom_op._kernels import kernel
from tests.custom_op._ops import (
    CALLS,
    SHAPES,
    output_like,
    rand,
    register_add,
    register_inc,
    register_mix,
    register_unary,
    same,
)

_graph_ids = itertools.count(100)


def _run(session: Any, graph: Any, arrays: list[np.ndarray]) -> list[np.ndarray]:
    graph_id = next(_graph_ids)
    session.add_graph(graph_id, graph)
    outputs = session.run_graph(graph_id, [GraphTensor.from_numpy(a) for a in arrays])
    return [t.numpy() for t in outputs]


def _agree(session: Any, graph: Any, arrays: list[np.ndarray], expected: list[Any]) -> None:
    """eval_graph, run_graph and numpy give the same values."""
    by_eval = eval_graph(graph, arrays)
    by_run = _run(session, graph, arrays)
    assert len(by_eval) == len(by_run) == len(expected)
    for got_eval, got_run, want in zip(by_eval, by_run, expected, strict=True):
        np.testing.assert_allclose(got_eval, want, rtol=1e-6)
        np.testing.assert_allclose(got_eval, got_run, rtol=1e-6)  # exp: a kernel vs numpy


def _add_graph(add: Any, shape: list[int]) -> Any:
    """exp(add(x, y)) * 2: the op between built-ins."""
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=shape), b.create_input(1, shape=shape)
    return b.build_and_reset([np.exp(add(x, y)) * 2.0])


# --- agreement ----------------------------------------------------------------------------------
@pytest.mark.parametrize("declared", [False, True], ids=["execute", "declare_launch_args"])
def test_eval_graph_runs_the_op_and_agrees_with_run_graph(
    session: Any, op_type: str, declared: bool
) -> None:
    add = register_add(op_type, declared=declared)
    a, c = rand(2, 3), rand(2, 3, seed=1)
    _agree(session, _add_graph(add, [2, 3]), [a, c], [np.exp(a + c) * 2])
    assert CALLS[0] == ("declare" if declared else "execute", [2, 3])


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_optional_dynamic_inputs_attrs_and_dynamic_outputs(
    session: Any, op_type: str, with_bias: bool, count: int
) -> None:
    mix = register_mix(op_type)
    b = GraphBuilder("g")
    index = itertools.count()
    x = b.create_input(next(index), shape=[4])
    bias = b.create_input(next(index), shape=[4]) if with_bias else None
    xs = [b.create_input(next(index), shape=[4]) for _ in range(count)]
    out = mix(x, bias, xs, output1_num=count, scale=3.0)
    graph = b.build_and_reset([out.output0, *out.output1])
    arrays = [rand(4, seed=k) for k in range(next(index))]
    xv, rest = arrays[0], arrays[2:] if with_bias else arrays[1:]
    expected = [xv * np.float32(3.0) + (arrays[1] if with_bias else 0), *[t + xv for t in rest]]
    _agree(session, graph, arrays, expected)
    assert CALLS[0] == ("execute", with_bias, count, 3.0)


def test_unknown_dims_are_inferred_with_the_real_shapes(session: Any, op_type: str) -> None:
    add = register_add(op_type)
    graph = _add_graph(add, [-1, 3])
    SHAPES.clear()
    a = rand(5, 3)
    _agree(session, graph, [a, a], [np.exp(a + a) * 2])
    assert [5, 3] in SHAPES and CALLS[0] == ("execute", [5, 3])
    with pytest.raises(GeError, match="x and y must have the same shape"):
        eval_graph(graph, [a, rand(4, 3)])  # infer_meta refuses the real shapes, naming the op


def test_mutates_args_returns_the_new_value_and_leaves_the_inputs(
    session: Any, op_type: str
) -> None:
    inc = register_inc(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[5]), b.create_input(1, shape=[5])
    out = inc(x, y)
    graph = b.build_and_reset([out.ref_x, out.output1, x + 0.0])
    xv, yv = np.arange(5, dtype=np.float32), np.arange(5, dtype=np.float32) * 10
    xv.flags.writeable = False  # the interpreter never writes the caller's arrays
    got = eval_graph(graph, [xv, yv])
    np.testing.assert_array_equal(got[0], np.arange(5) + 1)
    np.testing.assert_array_equal(got[1], yv * 2)
    np.testing.assert_array_equal(xv, np.arange(5))
    np.testing.assert_array_equal(got[0], _run(session, graph, [xv, yv])[0])


def test_a_second_evaluation_runs_the_cached_plan(op_type: str) -> None:
    add = register_add(op_type, declared=True)
    graph = _add_graph(add, [8])
    for seed in range(3):
        a = rand(8, seed=seed)
        np.testing.assert_allclose(eval_graph(graph, [a, a])[0], np.exp(a + a) * 2, rtol=1e-6)
    assert CALLS == [("declare", [8])]  # declared once, run three times


def test_an_op_whose_only_input_is_absent(session: Any, op_type: str) -> None:
    """The one-node graph has no input at all: the op joins it through owner_builder."""

    @register_op(op_type=op_type)
    def infer(x: Optional[TensorDesc], *, n: int = 3) -> TensorDesc:
        return TensorDesc([n], DataType.DT_FLOAT) if x is None else same(x)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Optional[Tensor], *, n: int) -> None:
            ctx = get_execute_ctx()
            shape, fmt = StorageShape([n], [n]), StorageFormat()
            out = ctx.malloc_output_tensor(0, shape, fmt, DataType.DT_FLOAT)
            runtime.memcpy_h2d(out.addr, np.arange(n, dtype=np.float32))

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = getattr(ge.es.custom, op_type)(None, owner_builder=b, n=4)
    graph = b.build_and_reset([y, x + 1.0])
    xv = np.ones(2, np.float32)
    _agree(session, graph, [xv], [np.arange(4, dtype=np.float32), xv + 1])


def test_a_shape_computed_by_a_custom_op(session: Any, op_type: str) -> None:
    """Reshape's target shape comes from a custom op: run_graph learns it by evaluating the
    op's reference on the real input (eval_tensors), then runs the op again in the plan."""

    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc([2], DataType.DT_INT32)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            shape, fmt = StorageShape([2], [2]), StorageFormat()
            out = ctx.malloc_output_tensor(0, shape, fmt, DataType.DT_INT32)
            runtime.memcpy_h2d(out.addr, np.array([1, x.shape_size], np.int32))

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[-1, 3])
    graph = b.build_and_reset([ge.es.Reshape(x, getattr(ge.es.custom, op_type)(x))])
    a = rand(4, 3)
    _agree(session, graph, [a], [a.reshape(1, 12)])


# --- errors -------------------------------------------------------------------------------------
def test_an_execute_that_raises_is_a_ge_error_naming_the_node(op_type: str) -> None:
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            raise KeyError("boom")

    fn = getattr(ge.es.custom, op_type)
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    y = fn(fn(x))  # the second node is <op>_1; the one-node graph's is <op>_0
    graph = b.build_and_reset([y])
    with pytest.raises(GeError) as info:
        eval_graph(graph, [np.ones(3, np.float32)])
    message = str(info.value)
    assert f"node {op_type}_0 failed: {op_type} (" in message
    assert ".Impl.execute) raised KeyError: 'boom'" in message


def test_the_error_names_the_graph_node_not_the_one_node_graphs(op_type: str) -> None:
    calls = itertools.count()

    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            if next(calls) == 1:
                raise ValueError("second call")
            launch_kernel(
                kernel("scale2"), 1, ctx.get_stream(), [x.addr, output_like(ctx, 0, x).addr, 3]
            )

    fn = getattr(ge.es.custom, op_type)
    b = GraphBuilder("g")
    graph = b.build_and_reset([fn(fn(b.create_input(0, shape=[3])))])
    with pytest.raises(GeError, match=rf"^node {op_type}_1 failed: .*raised ValueError"):
        eval_graph(graph, [np.ones(3, np.float32)])


def test_no_implementation_says_how_to_register_one(op_type: str) -> None:
    register_unary(op_type)

    b = GraphBuilder("g")
    graph = b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[2]))])
    with pytest.raises(GeError, match=rf"'{op_type}' has no implementation: register a class"):
        eval_graph(graph, [np.ones(2, np.float32)])


# --- folding --------------------------------------------------------------------------------------
def test_a_custom_op_fed_only_by_consts_is_not_folded(session: Any, op_type: str) -> None:
    add = register_add(op_type)
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    c = b.create_const_float([1.0, 2.0], shape=[2])
    graph = b.build_and_reset([add(c, c) + x])
    assert get_op(op_type).foldable is False
    optimized = optimize_graph(graph)
    assert op_type in [n.type for n in optimized.get_all_nodes()]
    assert not fold_constants(graph) and op_type in [n.type for n in graph.get_all_nodes()]
    assert CALLS == []  # nothing ran at compile time
    xv = np.array([10.0, 20.0], np.float32)
    _agree(session, graph, [xv], [np.array([12.0, 24.0], np.float32)])
    runs = len(CALLS)
    _run(session, graph, [xv])
    assert len(CALLS) == runs + 1  # it runs in the plan, on every run


# --- re-registration ------------------------------------------------------------------------------
def test_registering_the_implementation_again_drops_the_cached_plan(op_type: str) -> None:
    add = register_add(op_type)
    graph = _add_graph(add, [4])
    a = rand(4)
    np.testing.assert_allclose(eval_graph(graph, [a, a])[0], np.exp(a + a) * 2, rtol=1e-6)
    registry._unregister(op_type)

    @register_op_impl(op_type=op_type)
    class Twice:
        def execute(self, x: Tensor, y: Tensor) -> None:
            ctx = get_execute_ctx()
            launch_kernel(
                kernel("scale2"), 1, ctx.get_stream(), [x.addr, output_like(ctx, 0, x).addr, 4]
            )

    np.testing.assert_allclose(eval_graph(graph, [a, a])[0], np.exp(a * 2) * 2, rtol=1e-6)
    np.testing.assert_allclose(eval_graph(graph, [a, a + 1])[0], np.exp(a * 2) * 2, rtol=1e-6)


# --- views and in-place writes -------------------------------------------------------------------
@pytest.mark.parametrize("declared", [False, True], ids=["execute", "declare_launch_args"])
def test_an_op_writing_a_reshaped_value_in_place_leaves_the_source(
    session: Any, op_type: str, declared: bool
) -> None:
    """A Reshape of an intermediate is a view with no copy, unless an op that writes its input
    in place (mutates_args) reads it: then the source, read again later, must keep its bytes."""
    inc = register_inc(op_type, declared=declared)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[2, 8]), b.create_input(1, shape=[16])
    t = x + 1.0
    bumped = inc(t.reshape([16]), y)
    later = t.sum(axis=1)  # a separate kernel, after the op wrote the reshaped copy
    graph = b.build_and_reset([bumped.ref_x, later])
    a, c = rand(2, 8), rand(16, seed=1)
    got = _run(session, graph, [a, c])
    np.testing.assert_allclose(got[0], (a + 1.0).reshape(16) + 1.0, rtol=1e-6)
    np.testing.assert_allclose(got[1], (a + 1.0).sum(axis=1), rtol=1e-5)


def test_a_reshape_read_after_its_source_was_written_in_place_keeps_the_old_bytes(
    session: Any, op_type: str
) -> None:
    """The other side: the op writes the source in place after a Reshape of it was taken."""
    inc = register_inc(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[16]), b.create_input(1, shape=[16])
    t = x + 1.0
    flat = t.reshape([2, 8])
    bumped = inc(t, y)
    later = flat.sum(axis=1)  # a separate kernel, after the op wrote t
    graph = b.build_and_reset([bumped.ref_x, later])
    a, c = rand(16), rand(16, seed=1)
    got = _run(session, graph, [a, c])
    np.testing.assert_allclose(got[0], a + 2.0, rtol=1e-6)
    np.testing.assert_allclose(got[1], (a + 1.0).reshape(2, 8).sum(axis=1), rtol=1e-5)
