"""How long the ``ge.passes`` pattern matcher takes on a large graph.

Builds a DAG of about 10k nodes (blocks of MatMul -> Add -> Relu|Sigmoid -> Mul by a Const,
with a residual Add every fourth block) and looks for 20 patterns in it with
``ge.passes._match.find_matches``: a few that occur (hundreds or thousands of times), most
that do not (types absent from the graph, or present but wired differently). Prints one row
per pattern (matches, milliseconds) and the totals: graph size, patterns, matches, total match
time and µs per node per pattern. Goal: the 20 patterns in at most 1 s on 10k nodes.

Run: python benchmarks/pass_matching.py [--nodes 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from ge import es
from ge.es import GraphBuilder, TensorHolder
from ge.graph import Graph
from ge.passes._match import find_matches
from ge.passes.pattern import Pattern, PatternMatcherConfigBuilder

SHAPE = [4, 4]


def big_graph(nodes: int) -> Graph:
    b = GraphBuilder("big")
    x = b.create_input(0, shape=SHAPE)
    w = b.create_input(1, shape=SHAPE)
    bias = b.create_input(2, shape=SHAPE)
    previous = x
    for i in range(max(round((nodes - 4) / 5.25), 1)):  # 5.25 nodes per block on average
        h = es.MatMul(x, w) + bias
        h = es.Sigmoid(h) if i % 3 == 2 else es.Relu(h)
        h = h * 0.5
        if i % 4 == 3:
            h = h + previous  # residual
        previous, x = x, h
    return b.build_and_reset([x])


def pattern(name: str, n_inputs: int, fn: Callable[..., Any]) -> Pattern:
    b = GraphBuilder(name)
    inputs = [b.create_input(i, shape=[-2]) for i in range(n_inputs)]
    out = fn(*inputs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return Pattern(b.build_and_reset(outs))


def _double_relu(x: TensorHolder) -> TensorHolder:
    return es.Relu(es.Relu(x))


PATTERNS: list[tuple[str, int, Callable[..., Any]]] = [
    # occur
    ("matmul_add", 3, lambda a, w, c: es.MatMul(a, w) + c),
    ("add_relu", 2, lambda a, c: es.Relu(a + c)),
    ("matmul_add_relu", 3, lambda a, w, c: es.Relu(es.MatMul(a, w) + c)),
    ("add_sigmoid", 2, lambda a, c: es.Sigmoid(a + c)),
    ("relu_mul_const", 1, lambda a: es.Relu(a) * 0.5),
    ("mul_add_residual", 2, lambda a, r: a * 0.5 + r),
    # types present, wiring or counts differ
    ("add_matmul", 3, lambda a, w, c: es.MatMul(a + c, w)),
    ("relu_relu", 1, _double_relu),
    ("matmul_bias", 3, lambda a, w, c: es.MatMul(a, w, bias=c)),
    ("relu_add", 2, lambda a, c: es.Relu(a) + c),
    ("sigmoid_relu", 1, lambda a: es.Relu(es.Sigmoid(a))),
    ("same_input_add", 1, lambda a: a + a),
    ("mul_matmul", 2, lambda a, w: es.MatMul(a * 0.5, w)),
    ("mul_const_2", 1, lambda a: es.Relu(a) * 2.0),  # differs only by value: const matching
    # types absent
    ("tanh", 1, es.Tanh),
    ("exp_log", 1, lambda a: es.Log(es.Exp(a))),
    ("sub_abs", 2, lambda a, b: es.Abs(a - b)),
    ("div_sqrt", 2, lambda a, b: es.Sqrt(a / b)),
    ("transpose_matmul", 2, lambda a, w: es.MatMul(es.Transpose(a, [1, 0]), w)),
    ("softmax_like", 1, lambda a: es.Exp(a) / es.Exp(a).sum()),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    graph = big_graph(args.nodes)
    built = time.perf_counter() - start
    size = len(graph.get_direct_nodes())
    config = PatternMatcherConfigBuilder().enable_const_value_match().build()
    patterns = [(name, pattern(name, n, fn)) for name, n, fn in PATTERNS]
    print(f"graph: {size} nodes, built in {built:.2f} s; const value matching on")
    print(f"{'pattern':<20} {'matches':>8} {'ms':>8}")
    total_matches = 0
    total = 0.0
    for name, p in patterns:
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            found = find_matches(graph, p, config)
            best = min(best, time.perf_counter() - t0)
        total += best
        total_matches += len(found)
        print(f"{name:<20} {len(found):>8} {best * 1e3:>8.2f}")
    print()
    print(f"{'nodes':>7} {'patterns':>9} {'matches':>8} {'total s':>8} {'µs/node':>8}")
    per_node = total / size * 1e6
    print(f"{size:>7} {len(patterns):>9} {total_matches:>8} {total:>8.3f} {per_node:>8.1f}")
    print(f"(µs/node counts all {len(patterns)} patterns; goal: total <= 1 s for 10k nodes)")


if __name__ == "__main__":
    main()
