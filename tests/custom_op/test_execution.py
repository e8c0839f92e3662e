"""Running a graph that holds a Python custom op, before the execution paths exist: a clear
``NotImplementedError``-kind error naming the op and the missing path, never a crash; infer_meta
still runs again with the real shapes of ``-1`` dims first."""

import numpy as np
import pytest

import ge.es.custom
from ge.custom_op import register_op, register_op_impl
from ge.custom_op._execution import CustomOpNotImplementedError
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Format
from ge.graph import Tensor as GraphTensor
from ge.jit import jit
from ge.ops import eval_graph
from ge.runtime import Tensor, TensorDesc
from ge.session import Session

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


@pytest.fixture
def session():  # type: ignore[no-untyped-def]
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        yield Session({})
    finally:
        GeApi.ge_finalize()


def _input(n: int) -> GraphTensor:
    return GraphTensor([1.0] * n, None, DataType.DT_FLOAT, Format.FORMAT_ND, [n])


def test_run_graph_says_the_execute_path_is_not_implemented_yet(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _execute_impl(op_type)
    session.add_graph(0, _graph(op_type, [-1]))
    SHAPES.clear()
    with pytest.raises(GeError) as info:
        session.run_graph(0, [_input(6)])
    text = str(info.value)
    assert "not implemented yet: execute path" in text and f"'{op_type}'" in text
    assert [6] in SHAPES  # the -1 dim was re-inferred with the real shape first
    causes, error = [], info.value.__cause__
    while error is not None:
        causes.append(error)
        error = error.__cause__
    assert any(isinstance(e, CustomOpNotImplementedError) for e in causes)


def test_declare_launch_args_only_names_that_path(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _declare_impl(op_type)
    session.add_graph(0, _graph(op_type, [4]))
    with pytest.raises(GeError, match="not implemented yet: declare_launch_args path"):
        session.run_graph(0, [_input(4)])


def test_no_implementation_says_how_to_register_one(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    session.add_graph(0, _graph(op_type, [4]))
    with pytest.raises(GeError, match=rf"has no implementation: register a class with .*{op_type}"):
        session.run_graph(0, [_input(4)])


def test_the_reference_interpreter_raises_the_same(op_type: str) -> None:
    _execute_impl(op_type)
    graph = _graph(op_type, [3])
    with pytest.raises(CustomOpNotImplementedError) as info:
        eval_graph(graph, [np.ones(3, np.float32)])
    assert isinstance(info.value, NotImplementedError) and isinstance(info.value, GeError)
    assert "not implemented yet: execute path" in str(info.value)


def test_constant_inputs_are_not_folded_through_a_custom_op(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _execute_impl(op_type)

    @register_op(op_type=op_type + "C")
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    register_op_impl(op_type=op_type + "C")(type("Impl", (), {"execute": lambda self, ctx: None}))
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    c = b.create_const_float([1.0, 2.0], shape=[2])
    y = getattr(ge.es.custom, op_type + "C")(c) + x
    session.add_graph(0, b.build_and_reset([y]))
    with pytest.raises(GeError, match="not implemented yet: execute path"):
        session.run_graph(0, [_input(2)])


def test_a_jit_function_cannot_call_it_either(op_type: str) -> None:
    _execute_impl(op_type)
    graph = _graph(op_type, [2])
    assert graph is not None
    fn = getattr(ge.es.custom, op_type)

    @jit
    def f(x):  # type: ignore[no-untyped-def]
        return fn(x)

    with pytest.raises(GeError, match="not implemented yet: execute path"):
        f(np.ones(2, np.float32))
