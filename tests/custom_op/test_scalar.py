"""``register_op(scalar=...)``: a custom op with a scalar body is elementwise, compiled and
fused like a built-in (issue #13)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

import ge.es.custom
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import kernels_of
from ge.compiler.kernels.elementwise import FUSIBLE_OPS, lower_elementwise
from ge.custom_op import register_op, register_op_impl
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.ops import eval_graph
from ge.ops.registry import get_op
from ge.runtime import Tensor, TensorDesc


def _softplus(x: float) -> float:
    """softplus, one element."""
    return math.log(1.0 + math.exp(x))


def _register_softplus(op_type: str) -> Any:
    @register_op(op_type=op_type, scalar=_softplus)
    def softplus(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    return getattr(ge.es.custom, op_type)


def _types(compiled: CompiledGraph) -> Counter[str]:
    return Counter(n.type for n in compiled.graph.get_direct_nodes())


def test_custom_times_two_plus_one_is_one_kernel(op_type: str) -> None:
    build = _register_softplus(op_type)
    op = get_op(op_type)
    assert op.elementwise and op.fusible and op_type in FUSIBLE_OPS
    assert op.scalar is not None and op.scalar.expr == "math.log(1.0 + math.exp(a))"
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[1000])
    graph = b.build_and_reset([build(x) * 2.0 + 1.0])
    compiled = CompiledGraph(graph)
    assert _types(compiled) == Counter({"Data": 1, "FusedElementwise": 1, "NetOutput": 1})
    (fused,) = [n for n in compiled.graph.get_direct_nodes() if n.type == "FusedElementwise"]
    assert fused.get_attr("_fused_ops") == f"{op_type},Mul,Add"
    plan = compiled.plan_for([[1000]])
    assert plan is not None and len(plan.tasks) == 1
    data = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    (actual,) = compiled.run_arrays([data])
    np.testing.assert_allclose(actual, np.log1p(np.exp(data)) * 2 + 1, rtol=2e-6, atol=2e-6)
    (reference,) = eval_graph(graph, [data])
    np.testing.assert_allclose(reference, actual, rtol=2e-6, atol=2e-6)


def test_lone_node_gets_the_elementwise_kernel_float64(op_type: str) -> None:
    build = _register_softplus(op_type)
    assert kernels_of(get_op(op_type)).lowering is lower_elementwise
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3, 4], data_type=DataType.DT_DOUBLE)
    compiled = CompiledGraph(b.build_and_reset([build(x)]))
    plan = compiled.plan_for([[3, 4]])
    assert plan is not None and [type(t).__name__ for t in plan.tasks] == ["KernelTask"]
    data = np.linspace(-3, 3, 12).reshape(3, 4)
    (actual,) = compiled.run_arrays([data])
    assert actual.dtype == np.float64
    np.testing.assert_allclose(actual, np.log1p(np.exp(data)), rtol=1e-13)


def test_binary_with_attribute_broadcasts_and_fuses(op_type: str) -> None:
    @register_op(op_type=op_type, scalar="x * alpha + abs(y)")
    def axpy(x: TensorDesc, y: TensorDesc, *, alpha: float = 2.0) -> TensorDesc:
        dims = [tuple(d.shape.storage_shape.dims) for d in (x, y)]
        return TensorDesc(list(np.broadcast_shapes(*dims)), x.data_type)

    assert get_op(op_type).scalar.expr == "a * p0 + abs(b)"  # type: ignore[union-attr]
    build = getattr(ge.es.custom, op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[4, 5]), b.create_input(1, shape=[5])
    graph = b.build_and_reset([build(x, y, alpha=0.5) - x])
    compiled = CompiledGraph(graph)
    assert _types(compiled)["FusedElementwise"] == 1
    rng = np.random.default_rng(1)
    xs, ys = (
        rng.standard_normal((4, 5)).astype(np.float32),
        rng.standard_normal(5).astype(np.float32),
    )
    (actual,) = compiled.run_arrays([xs, ys])
    np.testing.assert_allclose(actual, xs * 0.5 + np.abs(ys) - xs, rtol=1e-6, atol=1e-6)


def test_keyword_only_parameters_read_attributes(op_type: str) -> None:
    @register_op(op_type=op_type, scalar=lambda v, *, k: v * k if v > 0 else v)
    def scale(x: TensorDesc, *, k: int = 3) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    assert get_op(op_type).scalar.expr == "a * p0 if a > 0 else a"  # type: ignore[union-attr]
    build = getattr(ge.es.custom, op_type)
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[6], data_type=DataType.DT_INT32)
    graph = b.build_and_reset([build(x, k=4) + x])
    data = np.arange(-3, 3, dtype=np.int32)
    expected = np.where(data > 0, data * 4, data) + data
    (actual,) = CompiledGraph(graph).run_arrays([data])
    np.testing.assert_array_equal(actual, expected)
    np.testing.assert_array_equal(eval_graph(graph, [data])[0], expected)


def test_implementation_runs_alone_and_the_body_when_fused(op_type: str) -> None:
    build = _register_softplus(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            raise RuntimeError("the implementation ran")

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[8])
    fused = CompiledGraph(b.build_and_reset([build(x) * 2.0]))  # fused: the scalar body runs
    (actual,) = fused.run_arrays([np.zeros(8, np.float32)])
    np.testing.assert_allclose(actual, np.full(8, 2 * math.log(2.0)), rtol=1e-6)
    b = GraphBuilder("g")
    alone = CompiledGraph(b.build_and_reset([build(b.create_input(0, shape=[8]))]))
    with pytest.raises(GeError, match="the implementation ran"):
        alone.run_arrays([np.zeros(8, np.float32)])
    del Impl


@pytest.mark.parametrize(
    ("scalar", "message"),
    [
        (lambda x: x + k_outside, "neither an input"),
        (lambda x: x[0], "Subscript"),
        (lambda x, y: x, "2 positional"),
        (lambda x, *, beta: x, "not attributes"),
        ("os.getcwd()", "only math"),
        ("x +", "not a Python expression"),
        ("math.nope(x)", "no attribute 'nope'"),
        ("round(x)", "cannot call"),
        ("[x, x]", "List"),
    ],
)
def test_bad_scalar_bodies_are_refused(op_type: str, scalar: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):

        @register_op(op_type=op_type, scalar=scalar)
        def op(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.data_type)

    assert op_type not in dir(ge.es.custom)


def test_infer_meta_must_give_the_broadcast_shape(op_type: str) -> None:
    @register_op(op_type=op_type, scalar=lambda x: x)
    def wrong(x: TensorDesc) -> TensorDesc:
        return TensorDesc([*x.shape.storage_shape.dims, 1], x.data_type)

    b = GraphBuilder("g")
    with pytest.raises(GeError, match="broadcast shape"):
        getattr(ge.es.custom, op_type)(b.create_input(0, shape=[3]))


k_outside = 1.0
