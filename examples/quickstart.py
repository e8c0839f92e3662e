"""Quickstart: build a graph with ge.es, look at it, run it on the reference interpreter, and
round-trip it through an AIR file.

Run: python examples/quickstart.py
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

import ge.es
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.ops import eval_graph
from ge.utils import GeUtils


def main() -> None:
    # 1. Build: numpy-style code on TensorHolders records GE ops (shapes inferred as you go).
    builder = GraphBuilder("quickstart")
    x = builder.create_input(0, name="x", shape=[2, 4])
    y = builder.create_input(1, name="y", shape=[4])
    scores = np.exp(x) * y + x * 0.5 - y * y
    probabilities = ge.es.SoftmaxV2(scores)
    total = probabilities.sum(axis=0)
    graph = builder.build_and_reset([probabilities, total])
    print(graph)

    # 2. Run on the numpy reference interpreter and compare with plain numpy.
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((2, 4)).astype(np.float32)
    yv = rng.standard_normal(4).astype(np.float32)
    probs, sums = eval_graph(graph, [xv, yv])
    s = np.exp(xv) * yv + xv * 0.5 - yv * yv
    expected = np.exp(s - s.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(probs, expected, rtol=1e-5)
    print("\nsoftmax rows:\n", np.round(probs, 4))
    print("column sums:", np.round(sums, 4))

    # 3. Save as AIR (GE's binary ModelDef), reload, re-infer for a new batch size.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "quickstart.air")
        graph.save_to_air(path)
        loaded = Graph()
        loaded.load_from_air(path)
    GeUtils.infer_shape(loaded, [[8, 4], [4]])
    softmax = loaded.find_node_by_name(probabilities.name)
    print(f"\nreloaded '{loaded.name}' from {os.path.basename(path)}; with a batch of 8 the "
          f"softmax output is {softmax.get_output_desc(0).shape}")


if __name__ == "__main__":
    main()
