"""Time AIR save/load and str(graph) on a chain graph, against numpy's own save/load of the
same weights (the floor for moving those bytes through Python).

Run: python benchmarks/air_roundtrip.py [--nodes N] [--weight-elems M]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from collections.abc import Callable

import numpy as np

from ge.graph import Graph, Tensor, TensorDesc
from ge.graph._air import model_from_bytes, model_to_bytes


def chain_graph(nodes: int, weight_elems: int) -> tuple[Graph, list[np.ndarray]]:
    graph = Graph("chain")
    prev = graph.add_node("Data", "x", num_outputs=1)
    prev.set_attr("index", 0)
    rng = np.random.default_rng(0)
    weights = []
    for i in range(nodes):
        w = rng.standard_normal(weight_elems).astype(np.float32)
        weights.append(w)
        const = graph.add_node("Const", f"w{i}", num_outputs=1)
        const.set_attr("value", Tensor.from_numpy(w))
        add = graph.add_node("Add", num_inputs=2, num_outputs=1)
        add.update_output_desc(0, TensorDesc([weight_elems]))
        graph.add_data_edge(prev, 0, add, 0)
        graph.add_data_edge(const, 0, add, 1)
        prev = add
    graph.set_outputs([(prev, 0)])
    return graph, weights


def median_us(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--weight-elems", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    graph, weights = chain_graph(args.nodes, args.weight_elems)
    data = model_to_bytes(graph)

    def numpy_roundtrip() -> None:
        buf = io.BytesIO()
        np.savez(buf, *weights)
        buf.seek(0)
        with np.load(buf) as z:
            [z[k] for k in z.files]

    rows = [
        ("model_to_bytes", median_us(lambda: model_to_bytes(graph), args.repeat)),
        ("model_from_bytes", median_us(lambda: model_from_bytes(data), args.repeat)),
        ("str(graph)", median_us(lambda: str(graph), args.repeat)),
        ("numpy savez+load (weights only)", median_us(numpy_roundtrip, args.repeat)),
    ]
    floor = rows[-1][1]
    print(f"graph: {3 * args.nodes + 1} nodes, {len(data) / 1e6:.2f} MB of AIR")
    print(f"{'case':34} {'median us':>12} {'x numpy':>9}")
    for name, us in rows:
        print(f"{name:34} {us:12.1f} {us / floor:9.2f}")


if __name__ == "__main__":
    main()
