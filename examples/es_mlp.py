"""Build a small MLP with ge.es.GraphBuilder, print it, save it to AIR, reload it and evaluate
it with the reference interpreter, checking the result against numpy.

Run: python examples/es_mlp.py
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

import ge.es
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.ops import eval_graph


def build_mlp(weights: list[tuple[np.ndarray, np.ndarray]], batch: int) -> Graph:
    builder = GraphBuilder("mlp")
    x = builder.create_input(0, name="x", data_type=DataType.DT_FLOAT,
                             shape=[batch, weights[0][0].shape[0]])
    h = x
    for i, (w, b) in enumerate(weights):
        h = ge.es.BiasAdd(h @ w, b, data_format="ND")
        if i < len(weights) - 1:
            h = ge.es.Relu(h)
    probabilities = ge.es.SoftmaxV2(h)
    return builder.build_and_reset([probabilities])


def numpy_mlp(x: np.ndarray, weights: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    h = x
    for i, (w, b) in enumerate(weights):
        h = h @ w + b
        if i < len(weights) - 1:
            h = np.maximum(h, 0)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main() -> None:
    rng = np.random.default_rng(0)
    sizes = [8, 16, 16, 4]
    weights = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
                (rng.standard_normal(n) * 0.1).astype(np.float32))
               for m, n in zip(sizes[:-1], sizes[1:], strict=True)]
    graph = build_mlp(weights, batch=5)
    print(graph)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp.air")
        graph.save_to_air(path)
        reloaded = Graph()
        reloaded.load_from_air(path)
    print(f"\nAIR round trip: {len(reloaded.get_all_nodes())} nodes, graph '{reloaded.name}'")

    x = rng.standard_normal((5, sizes[0])).astype(np.float32)
    (probabilities,) = eval_graph(reloaded, [x])
    expected = numpy_mlp(x, weights)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-5, atol=1e-6)
    print("probabilities:\n", np.round(probabilities, 4))
    print("matches numpy: max abs diff", float(np.abs(probabilities - expected).max()))


if __name__ == "__main__":
    main()
