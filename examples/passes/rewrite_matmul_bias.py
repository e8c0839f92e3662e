"""A FusionBasePass with SubgraphRewriter: ``Add(MatMulV2(a, b), bias)`` with a 1-D bias
becomes ``MatMulV2(a, b, bias)``, the bias added by the matmul task itself (GE's graph-base
pass sample, rebuilt for ge's CPU device).

A ``FusionBasePass`` walks the graph itself: for each candidate it checks ``can_fuse``
(would one node in place of these make a cycle? are they on different streams?), describes
the region's boundary (its inputs as the node inputs that read them, its outputs) and hands a
replacement graph to ``SubgraphRewriter.replace``, which copies it in, rewires the users and
deletes the region — or changes nothing and fails.

Run: python examples/passes/rewrite_matmul_bias.py
"""

from __future__ import annotations

import numpy as np

import ge
import ge.es
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Tensor
from ge.passes import (
    FusionBasePass,
    PassStage,
    SubgraphBoundary,
    SubgraphInput,
    SubgraphOutput,
    SubgraphRewriter,
    can_fuse,
    explain,
    register_fusion_pass,
)
from ge.session import Session


def matmul_bias_replacement(input_descs):
    """MatMulV2(a, b, bias), its inputs described as the tensors they will read (at
    AFTER_INFER_SHAPE the graph's descs are known, and the builder infers as it goes)."""
    builder = GraphBuilder("matmul_bias")
    a, b, bias = (
        builder.create_input(i, shape=list(desc.get_shape()), data_type=desc.get_data_type())
        for i, desc in enumerate(input_descs)
    )
    return builder.build_and_reset([ge.es.MatMulV2(a, b, bias)])


@register_fusion_pass(name="MatMulBiasPass", stage=PassStage.AFTER_INFER_SHAPE)
class MatMulBiasPass(FusionBasePass):
    def run(self, graph, context):
        for add in [n for n in graph.get_direct_nodes() if n.type == "Add"]:
            for bias_port in (1, 0):
                matmul, _ = add.get_in_data_nodes_and_port_indexes(1 - bias_port)
                if self.fits(matmul, add, bias_port):
                    self.fuse(matmul, add, bias_port, context)
                    break

    @staticmethod
    def fits(matmul, add, bias_port):
        if matmul.type != "MatMulV2" or matmul.get_inputs_size() < 3:
            return False
        if len(matmul.get_out_data_nodes_and_port_indexes(0)) != 1:
            return False  # the product is used elsewhere too
        try:
            matmul.get_in_data_nodes_and_port_indexes(2)
            return False  # it has a bias already
        except RuntimeError:
            pass
        bias_shape = list(add.get_input_desc(bias_port).get_shape())
        n = list(matmul.get_output_desc(0).get_shape())[-1]
        return bias_shape == [n] and n >= 0

    @staticmethod
    def fuse(matmul, add, bias_port, context):
        if not can_fuse([matmul, add]).ok:
            return
        boundary = SubgraphBoundary()
        boundary.add_input(0, SubgraphInput([(matmul, 0)]))
        boundary.add_input(1, SubgraphInput([(matmul, 1)]))
        boundary.add_input(2, SubgraphInput([(add, bias_port)]))
        boundary.add_output(0, SubgraphOutput(add, 0))
        descs = [matmul.get_input_desc(0), matmul.get_input_desc(1), add.get_input_desc(bias_port)]
        SubgraphRewriter.replace(boundary, matmul_bias_replacement(descs), context=context)


def build_graph():
    builder = GraphBuilder("dense")
    x = builder.create_input(0, name="x", data_type=DataType.DT_FLOAT, shape=[8, 32])
    w = builder.create_input(1, name="w", data_type=DataType.DT_FLOAT, shape=[32, 16])
    bias = builder.create_input(2, name="bias", data_type=DataType.DT_FLOAT, shape=[16])
    return builder.build_and_reset([ge.es.Relu(ge.es.MatMulV2(x, w) + bias)])


def op_types(graph):
    return [node.type for node in graph.get_direct_nodes()]


def main():
    rng = np.random.default_rng(1)
    x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ([8, 32], [32, 16], [16]))
    expected = np.maximum(x @ w + bias, 0)

    graph = build_graph()
    print("before:", op_types(graph))
    report = explain(graph)
    print(report)
    print("after: ", op_types(report.graph))
    if "Add" in op_types(report.graph):
        raise SystemExit("the pass did not fold the bias into the MatMul")

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        session.add_graph(0, graph)
        (out,) = session.run_graph(0, [Tensor.from_numpy(v) for v in (x, w, bias)])
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
        print("Session result matches numpy")
    finally:
        GeApi.ge_finalize()

    @ge.jit
    def dense(x, w, bias):
        return np.maximum(x @ w + bias, 0)

    np.testing.assert_allclose(dense(x, w, bias), expected, rtol=1e-5, atol=1e-5)
    print("ge.jit graph:", op_types(dense.lower(x, w, bias).graph))
    print("ge.jit result matches numpy")


if __name__ == "__main__":
    main()
