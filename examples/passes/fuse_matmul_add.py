"""A PatternFusionPass: MatMul + Add becomes GE's GEMM (GE's fusion-pass sample
``pattern_base_pass/1_fuse_matmul_add_pass``, rebuilt for ge's CPU device).

The pattern and the replacement are written in the expression style: ``@pattern`` methods
build the subgraph to look for from lazy ``inputs``, ``replacement`` builds what takes its
place from the same inputs. The pass runs for every graph compiled after it is registered:
through ``Session`` and through ``@ge.jit`` below (``ge.jit`` traces ``a @ w + c`` into
MatMulV2 + Add, which the second pattern catches).

Run: python examples/passes/fuse_matmul_add.py
"""

from __future__ import annotations

import numpy as np

import ge
import ge.es
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Tensor
from ge.passes import PassStage, PatternFusionPass, explain, pattern, register_fusion_pass
from ge.session import Session


@register_fusion_pass(name="FuseMatMulAddPass", stage=PassStage.BEFORE_INFER_SHAPE)
class FuseMatMulAddPass(PatternFusionPass):
    @pattern
    def matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return ge.es.MatMul(a, b) + c

    @pattern
    def matmul_v2_add(self, inputs):
        a, b, c = inputs[:3]
        return ge.es.MatMulV2(a, b) + c

    def replacement(self, inputs):
        r_a, r_b, r_c = inputs[:3]
        return ge.es.GEMM(r_a, r_b, r_c, 1.0, 1.0)


def build_graph():
    builder = GraphBuilder("matmul_add")
    a = builder.create_input(0, name="a", data_type=DataType.DT_FLOAT, shape=[4, 8])
    b = builder.create_input(1, name="b", data_type=DataType.DT_FLOAT, shape=[8, 16])
    c = builder.create_input(2, name="c", data_type=DataType.DT_FLOAT, shape=[4, 16])
    return builder.build_and_reset([ge.es.Relu(ge.es.MatMul(a, b) + c)])


def op_types(graph):
    return [node.type for node in graph.get_direct_nodes()]


def main():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ([4, 8], [8, 16], [4, 16]))
    expected = np.maximum(a @ b + c, 0)

    graph = build_graph()
    print("before:", op_types(graph))
    report = explain(graph)
    print(report)
    print("after: ", op_types(report.graph))
    if "GEMM" not in op_types(report.graph) or "MatMul" in op_types(report.graph):
        raise SystemExit("the pass did not fuse MatMul + Add")

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        session.add_graph(0, graph)
        (out,) = session.run_graph(0, [Tensor.from_numpy(v) for v in (a, b, c)])
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
        print("Session result matches numpy")
    finally:
        GeApi.ge_finalize()

    @ge.jit
    def layer(a, b, c):
        return np.maximum(a @ b + c, 0)

    np.testing.assert_allclose(layer(a, b, c), expected, rtol=1e-5, atol=1e-5)
    fused = op_types(layer.lower(a, b, c).graph)
    print("ge.jit graph:", fused)
    if "GEMM" not in fused:
        raise SystemExit("the pass did not apply to the ge.jit trace")
    print("ge.jit result matches numpy")


if __name__ == "__main__":
    main()
