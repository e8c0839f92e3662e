"""How build, compile and run times grow with graph size (they should grow linearly).

For graphs of about 1k, 10k and 100k nodes of four shapes, prints the seconds to build the
graph (``ge.es`` op calls, or tracing a ``ge.jit`` function whose Python loop unrolls),
compile it (``optimize_graph``: inference, folding, CSE, simplification, fusion, verify),
lower it (``CompiledGraph``: the task plan, memory plan and kernel codegen), the first run and
a steady run, with the cost per node of each step (and of the build, the part spent in
cyclic garbage collections: ``(gc)``) and the kernels of the plan: ``tasks``
launched per run, ``kernels`` distinct kernels loaded and ``built`` of those compiled by Numba
now (not found in the disk kernel cache). Flat µs/node from 1k to 100k is the goal.

    chain      x = x * 1.0001 + 0.5, repeated: fusion merges it into few, identical kernels
    reshape    the chain with a Reshape between [64, 64] and [4096] after every step: fusion
               cannot merge across a Reshape, so lowering sees one kernel per step
    wide       many independent branches x * c_i + 0.5, summed back as a binary tree
    jit-chain  the chain written as a Python loop in a @ge.jit function, traced

The (gc) column is the part of build spent in cyclic garbage collections, and obj the
GC-tracked objects each node of the built graph keeps alive: what every full collection walks,
so the build cost per node grows with it as the graph outgrows the CPU caches. With
``--calls``, ``calls`` is the Python function calls per node of a second build of the same
graph (counted with ``sys.setprofile``, untimed): a count that other processes' load does not
change, unlike the seconds.

Run: python benchmarks/graph_scale.py [--sizes 1000,10000,100000] [--cases chain,wide]
     [--steady-repeat 5] [--no-lower] [--calls]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from _timing import median_seconds

from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import _codegen
from ge.compiler.pipeline import optimize_graph
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.jit import jit

SHAPE = [64, 64]


def chain(n: int) -> tuple[Graph, list[np.ndarray]]:
    b = GraphBuilder("chain")
    x = b.create_input(0, shape=SHAPE)
    for _ in range(max(n // 4, 1)):  # Const, Mul, Const, Add
        x = x * 1.0001 + 0.5
    return b.build_and_reset([x]), [np.ones(SHAPE, np.float32)]


def reshape_chain(n: int) -> tuple[Graph, list[np.ndarray]]:
    b = GraphBuilder("reshape")
    x = b.create_input(0, shape=SHAPE)
    flat = [SHAPE[0] * SHAPE[1]]
    for i in range(max(n // 6, 1)):  # Const, Mul, Const, Add, Const (shape), Reshape
        x = (x * 1.0001 + 0.5).reshape(SHAPE if i % 2 else flat)
    return b.build_and_reset([x]), [np.ones(SHAPE, np.float32)]


def wide(n: int) -> tuple[Graph, list[np.ndarray]]:
    b = GraphBuilder("wide")
    x = b.create_input(0, shape=SHAPE)
    # n/5 branches of 4 nodes (Const, Mul, Const, Add) and n/5 - 1 Adds summing them
    level = [x * (1.0 + i * 1e-6) + 0.5 for i in range(max(n // 5, 2))]
    while len(level) > 1:
        pairs = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
        level = pairs + level[len(pairs) * 2 :]
    return b.build_and_reset(level), [np.ones(SHAPE, np.float32)]


def jit_chain(n: int) -> tuple[Graph, list[np.ndarray]]:
    steps = max(n // 4, 1)

    def f(x: Any) -> Any:
        for _ in range(steps):
            x = x * 1.0001 + 0.5
        return x

    arrays = [np.ones(SHAPE, np.float32)]
    traced: Any = jit(f)
    return traced.trace(*arrays), arrays


CASES: dict[str, Callable[[int], tuple[Graph, list[np.ndarray]]]] = {
    "chain": chain,
    "reshape": reshape_chain,
    "wide": wide,
    "jit-chain": jit_chain,
}


@dataclass
class Row:
    case: str
    nodes: int
    build: float
    compile: float
    build_gc: float = 0.0  # of ``build``: in cyclic garbage collections
    tracked: float = 0.0  # GC-tracked objects per node the built graph keeps (what gc walks)
    calls: float = float("nan")  # Python function calls per node of the build (``--calls``)
    lower: float = float("nan")
    first: float = float("nan")
    steady: float = float("nan")
    tasks: int = 0
    kernels: int = 0
    built: int = 0


class _GcClock:
    """Seconds spent in cyclic garbage collections while it is installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start


def build_calls(case: str, n: int) -> float:
    """Python function calls per node of building ``case`` at ``n`` nodes (C calls are not
    counted: ``sys.setprofile`` reports them as ``c_call``)."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        graph, _ = CASES[case](n)
    finally:
        sys.setprofile(None)
    return count / len(graph.get_direct_nodes())


def measure(case: str, n: int, lower: bool, repeat: int) -> Row:
    gc.collect()
    tracked = len(gc.get_objects())
    clock = _GcClock()
    gc.callbacks.append(clock)
    try:
        t0 = time.perf_counter()
        graph, arrays = CASES[case](n)
        t1 = time.perf_counter()
    finally:
        gc.callbacks.remove(clock)
    gc.collect()
    tracked = len(gc.get_objects()) - tracked
    t1b = time.perf_counter()
    optimized = optimize_graph(graph)
    t2 = time.perf_counter()
    nodes = len(graph.get_direct_nodes())
    row = Row(case, nodes, t1 - t0, t2 - t1b, build_gc=clock.seconds, tracked=tracked / nodes)
    if not lower:
        return row
    kernels, built = _codegen.compiled_kernel_count(), _codegen.built_kernel_count()
    compiled = CompiledGraph(optimized, optimize=False)
    t3 = time.perf_counter()
    compiled.run_arrays(arrays)
    t4 = time.perf_counter()
    row.lower, row.first = t3 - t2, t4 - t3
    row.steady = median_seconds(lambda: compiled.run_arrays(arrays), repeat=repeat, warmup=1)
    plan = compiled.plan_for([a.shape for a in arrays])
    row.tasks = len(plan.tasks) if plan is not None else 0
    row.kernels = _codegen.compiled_kernel_count() - kernels
    row.built = _codegen.built_kernel_count() - built
    return row


def _us(seconds: float, nodes: int) -> str:
    return f"{seconds / nodes * 1e6:7.1f}"


def print_table(rows: list[Row]) -> None:
    print(
        f"{'case':10} {'nodes':>7} | {'build s':>8} {'compile s':>9} {'lower s':>8} "
        f"{'1st run s':>9} {'steady ms':>9} | {'build':>7} {'(gc)':>6} {'compile':>7} "
        f"{'lower':>7} µs/node | {'obj':>5} {'calls':>5} | {'tasks':>6} {'kernels':>7} "
        f"{'built':>5}"
    )
    for r in rows:
        print(
            f"{r.case:10} {r.nodes:7d} | {r.build:8.3f} {r.compile:9.3f} {r.lower:8.3f} "
            f"{r.first:9.3f} {r.steady * 1e3:9.3f} | {_us(r.build, r.nodes)} "
            f"{_us(r.build_gc, r.nodes)[1:]} {_us(r.compile, r.nodes)} "
            f"{_us(r.lower, r.nodes)}         | {r.tracked:5.1f} {r.calls:5.1f} | "
            f"{r.tasks:6d} {r.kernels:7d} {r.built:5d}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--steady-repeat", type=int, default=5)
    parser.add_argument("--no-lower", action="store_true", help="build and compile only")
    parser.add_argument(
        "--calls", action="store_true", help="count Python calls per node of each build"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {list(CASES)}")
    rows = []
    for case in cases:
        for n in sizes:
            row = measure(case, n, not args.no_lower, args.steady_repeat)
            if args.calls:
                row.calls = build_calls(case, n)
            rows.append(row)
            print(f"  ... {case} {n}: done", flush=True)
    print_table(rows)


if __name__ == "__main__":
    main()
