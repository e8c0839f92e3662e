"""Running a graph that holds a Python custom op whose implementation cannot run it: a clear
``GeError`` naming the node and what is missing, never a crash, in ``run_graph`` and in the
reference interpreter alike; infer_meta still runs again with the real shapes of ``-1`` dims
first. (What runs is in test_execute.py and test_reference.py.)"""

import numpy as np
import pytest

import ge.es.custom
from ge.custom_op import register_op, register_op_impl
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import DataType, Format
from ge.graph import Tensor as GraphTensor
from ge.jit import jit
from ge.ops import eval_graph
from ge.runtime import Tensor, TensorDesc

SHAPES: list[list[int]] = []


def _graph(op_type: str, shape: list[int]):  # type: ignore[no-untyped-def]
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        SHAPES.append(x.shape.origin_shape.dims)
        return TensorDesc(x.shape, x.data_type)

    b = GraphBuilder("g")
    y = getattr(ge.es.custom, op_type)(b.create_input(0, shape=shape))
    return b.build_and_reset([np.exp(y)])


def _execute_impl(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None: ...


def _declare_impl(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class Impl:
        def declare_launch_args(self, x: Tensor, y: Tensor) -> None: ...


def _input(n: int) -> GraphTensor:
    return GraphTensor([1.0] * n, None, DataType.DT_FLOAT, Format.FORMAT_ND, [n])


def test_an_execute_that_makes_no_output_fails_after_re_inference(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _execute_impl(op_type)
    session.add_graph(0, _graph(op_type, [-1]))
    SHAPES.clear()
    with pytest.raises(GeError, match=r"returned without making output 0 \('output0'\)") as info:
        session.run_graph(0, [_input(6)])
    assert f"node {op_type}_" in str(info.value)
    assert [6] in SHAPES  # the -1 dim was re-inferred with the real shape first


def test_a_declare_launch_args_declaring_nothing_fails(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _declare_impl(op_type)
    session.add_graph(0, _graph(op_type, [4]))
    with pytest.raises(GeError, match="declare_launch_args\\) declared no launch"):
        session.run_graph(0, [_input(4)])


def test_no_implementation_says_how_to_register_one(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    session.add_graph(0, _graph(op_type, [4]))
    with pytest.raises(GeError, match=rf"has no implementation: register a class with .*{op_type}"):
        session.run_graph(0, [_input(4)])


def test_the_reference_interpreter_raises_the_same(op_type: str) -> None:
    _execute_impl(op_type)
    graph = _graph(op_type, [-1])
    SHAPES.clear()
    with pytest.raises(GeError, match=r"returned without making output 0 \('output0'\)") as info:
        eval_graph(graph, [np.ones(3, np.float32)])  # the reference runs the same execute
    assert f"node {op_type}_" in str(info.value)
    assert [3] in SHAPES


def test_constant_inputs_are_not_folded_through_a_custom_op(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    from tests.custom_op._kernels import kernel

    calls: list[int] = []

    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    def execute(self, ctx):  # type: ignore[no-untyped-def]
        calls.append(1)
        x = ctx.get_input_tensor(0)
        out = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        args = [x.addr, x.addr, out.addr, x.shape_size]
        ge.runtime.launch_kernel(kernel("add"), 1, ctx.get_stream(), args)

    register_op_impl(op_type=op_type)(type("Impl", (), {"execute": execute}))
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    c = b.create_const_float([1.0, 2.0], shape=[2])
    y = getattr(ge.es.custom, op_type)(c) + x
    session.add_graph(0, b.build_and_reset([y]))
    for run in range(1, 3):  # execute runs on every run, never at compile time
        (out,) = session.run_graph(0, [_input(2)])
        assert out.numpy().tolist() == [3.0, 5.0] and len(calls) == run


def test_a_jit_function_says_what_is_wrong(op_type: str) -> None:
    _declare_impl(op_type)
    graph = _graph(op_type, [2])
    assert graph is not None
    fn = getattr(ge.es.custom, op_type)

    @jit
    def f(x):  # type: ignore[no-untyped-def]
        return fn(x)

    with pytest.raises(GeError, match="declared no launch"):
        f(np.ones(2, np.float32))
