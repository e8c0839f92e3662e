"""A DecomposePass: ``Gelu`` split into primitives (Mul, Add, Tanh), as a backend without a
Gelu kernel would need (GE's decompose-pass sample, rebuilt for ge's CPU device).

``op_types`` names the ops to visit; ``meet_requirements`` may skip some (here: only float
Gelus are split); ``replacement`` returns a graph whose inputs are the node's inputs, in
order, and whose outputs replace the node's outputs. GE's Gelu is the tanh approximation:

    gelu(x) = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))

Run: python examples/passes/decompose_gelu.py
"""

from __future__ import annotations

import math

import numpy as np

import ge
import ge.es
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Tensor
from ge.passes import DecomposePass, PassStage, explain, register_decompose_pass
from ge.session import Session


@register_decompose_pass(
    name="DecomposeGeluPass", stage=PassStage.BEFORE_INFER_SHAPE, op_types=["Gelu"]
)
class DecomposeGeluPass(DecomposePass):
    def meet_requirements(self, node):
        return node.get_input_desc(0).get_data_type() in (DataType.DT_FLOAT, DataType.DT_FLOAT16)

    def replacement(self, node):
        builder = GraphBuilder("gelu_primitives")
        x = builder.create_input(0)
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))
        return builder.build_and_reset([0.5 * x * (1.0 + ge.es.Tanh(inner))])


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def build_graph():
    builder = GraphBuilder("gelu")
    x = builder.create_input(0, name="x", data_type=DataType.DT_FLOAT, shape=[2, 64])
    return builder.build_and_reset([ge.es.Gelu(x) * 2.0])


def op_types(graph):
    return sorted({node.type for node in graph.get_direct_nodes()})


def main():
    x = np.linspace(-4, 4, 128, dtype=np.float32).reshape(2, 64)
    expected = gelu(x) * 2.0

    graph = build_graph()
    print("before:", op_types(graph))
    report = explain(graph)
    print(report)
    print("after: ", op_types(report.graph))
    if "Gelu" in op_types(report.graph):
        raise SystemExit("the pass did not decompose Gelu")

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        session.add_graph(0, graph)
        (out,) = session.run_graph(0, [Tensor.from_numpy(x)])
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
        print("Session result matches numpy")
    finally:
        GeApi.ge_finalize()

    @ge.jit
    def scaled_gelu(x):
        return ge.es.Gelu(x) * 2.0

    np.testing.assert_allclose(scaled_gelu(x), expected, rtol=1e-5, atol=1e-5)
    print("ge.jit graph:", op_types(scaled_gelu.lower(x).graph))
    print("ge.jit result matches numpy")


if __name__ == "__main__":
    main()
