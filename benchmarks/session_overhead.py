"""Per-call overhead of Session.run_graph on a tiny graph (one Add of 4 float32 elements),
with host and with device input tensors, against numpy's own x + y.

Run: python benchmarks/session_overhead.py [--calls N]
"""

from __future__ import annotations

import argparse
import gc
import resource

import numpy as np
from _timing import median_seconds

import ge.es
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Format, Placement, Tensor
from ge.runtime import live_bytes
from ge.session import Session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--leak-calls", type=int, default=10000)
    args = parser.parse_args()

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    b = GraphBuilder("tiny")
    x, y = (b.create_input(i, shape=[4]) for i in range(2))
    session = Session()
    session.add_graph(0, b.build_and_reset([ge.es.Add(x, y)]))
    host = [Tensor([1.0, 2.0, 3.0, 4.0], None, DataType.DT_FLOAT, Format.FORMAT_ND, [4])
            for _ in range(2)]
    device = [Tensor([1.0, 2.0, 3.0, 4.0], None, DataType.DT_FLOAT, Format.FORMAT_ND, [4],
                     Placement.PLACEMENT_DEVICE) for _ in range(2)]
    a, c = np.ones(4, np.float32), np.ones(4, np.float32)

    def per_call(fn: object, calls: int) -> float:
        def loop() -> None:
            for _ in range(calls):
                fn()  # type: ignore[operator]

        return median_seconds(loop, repeat=5, warmup=1) / calls * 1e6

    rows = [("Session.run_graph, host inputs", per_call(lambda: session.run_graph(0, host),
                                                         args.calls)),
            ("Session.run_graph, device inputs", per_call(lambda: session.run_graph(0, device),
                                                           args.calls)),
            ("numpy x + y", per_call(lambda: a + c, args.calls))]
    print(f"{'case':36} {'us/call':>10} {'x numpy':>9}")
    for name, us in rows:
        print(f"{name:36} {us:10.2f} {us / rows[-1][1]:9.1f}")

    gc.collect()
    before_bytes = live_bytes()
    before_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(args.leak_calls):
        session.run_graph(0, device)
    gc.collect()
    print(f"\n{args.leak_calls} runs: live device bytes {before_bytes} -> {live_bytes()}, "
          f"max RSS {before_rss} -> {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB")
    GeApi.ge_finalize()


if __name__ == "__main__":
    main()
