"""Compiled-graph times on the fusion issue's cases, against numpy, a hand-written parallel
Numba loop, and JAX when it is installed. Graphs run through Session.run_graph with device
inputs (outputs come back to the host, as run_graph returns them).

Run: python benchmarks/kernels_vs_numpy.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from _hand import hand_chain, hand_expsin, hand_softmax
from _timing import interleaved_medians, jax_or_none

import ge.es
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import Graph, Tensor
from ge.session import Session


def _graph(name: str, shapes: list[list[int]], body: Callable[..., object]) -> Graph:
    b = GraphBuilder(name)
    inputs = [b.create_input(i, shape=s) for i, s in enumerate(shapes)]
    return b.build_and_reset([body(*inputs)])


def _cases(quick: bool) -> list[tuple[str, Graph, list[np.ndarray], Callable[[], object],
                                      Callable[[], object] | None, Callable[..., Any]]]:
    rng = np.random.default_rng(0)
    jax = jax_or_none()
    jax_softmax = jax.nn.softmax if jax is not None else None  # type: ignore[attr-defined]
    n1, n16 = 1 << 20, (1 << 22 if quick else 1 << 24)
    cases = []
    for label, n in (("chain 1M f32", n1), (f"chain {n16 >> 20}M f32", n16)):
        x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
        out = np.empty_like(x)
        cases.append((label, _graph("chain", [[n], [n]], lambda a, b: a * b + a * 0.5 - b * b),
                      [x, y], lambda x=x, y=y: x * y + x * np.float32(0.5) - y * y,
                      lambda x=x, y=y, out=out: hand_chain(x, y, out),
                      lambda a, b, xp: a * b + a * 0.5 - b * b))
    x, y = rng.standard_normal(n1, np.float32), rng.standard_normal(n1, np.float32)
    out = np.empty_like(x)
    cases.append(("exp/sin chain 1M f32",
                  _graph("expsin", [[n1], [n1]],
                         lambda a, b: np.exp(a) * b + np.sin(a) * 0.5 - b * b),
                  [x, y], lambda: np.exp(x) * y + np.sin(x) * np.float32(0.5) - y * y,
                  lambda: hand_expsin(x, y, out),
                  lambda a, b, xp: xp.exp(a) * b + xp.sin(a) * 0.5 - b * b))
    s = rng.standard_normal((1024, 1024), np.float32)
    sout = np.empty_like(s)

    def np_softmax() -> np.ndarray:
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    cases.append(("softmax 1024x1024 f32", _graph("softmax", [[1024, 1024]], ge.es.SoftmaxV2),
                  [s], np_softmax, lambda: hand_softmax(s, sout),
                  lambda a, xp: jax_softmax(a, axis=-1)))
    w = [rng.standard_normal(shape, np.float32) * np.float32(0.05)
         for shape in ((784, 256), (256, 256), (256, 10))]
    xb = rng.standard_normal((1024, 784), np.float32)

    bias = [rng.standard_normal(shape[1], np.float32) * np.float32(0.1)
            for shape in ((784, 256), (256, 256), (256, 10))]

    def mlp(a: object) -> object:
        h = ge.es.Relu(a @ w[0] + bias[0])  # type: ignore[operator]
        h = ge.es.Relu(h @ w[1] + bias[1])
        return h @ w[2] + bias[2]

    def xp_mlp(a: Any, xp: Any = np) -> Any:
        h = xp.maximum(a @ w[0] + bias[0], 0)
        h = xp.maximum(h @ w[1] + bias[1], 0)
        return h @ w[2] + bias[2]

    cases.append(("MLP 784-256-256-10 b1024", _graph("mlp", [[1024, 784]], mlp), [xb],
                  lambda: xp_mlp(xb), None, xp_mlp))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller big case, fewer repeats")
    args = parser.parse_args()
    repeat = 7 if args.quick else 31
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    session = Session()
    jax = jax_or_none()
    header = f"{'case':26} {'ge ms':>9} {'numpy ms':>9} {'numba ms':>9} {'jax ms':>9} " \
             f"{'ge/numpy':>9} {'ge/numba':>9}"
    print(header)
    for graph_id, (label, graph, inputs, np_fn, hand_fn, jax_body) in enumerate(
            _cases(args.quick)):
        session.add_graph(graph_id, graph)
        tensors = [Tensor.from_numpy(a).to_device() for a in inputs]
        session.run_graph(graph_id, tensors)  # compile
        fns = {"ge": lambda graph_id=graph_id, tensors=tensors: session.run_graph(graph_id,
                                                                                  tensors),
               "numpy": np_fn}
        if hand_fn is not None:
            fns["hand"] = hand_fn
        if jax is not None and jax_body is not None:
            fn = jax.jit(functools.partial(jax_body, xp=jax.numpy))  # type: ignore[attr-defined]
            jinputs = jax.device_put(inputs)  # type: ignore[attr-defined]  # as ge's are
            fns["jax"] = lambda fn=fn, jinputs=jinputs: fn(*jinputs).block_until_ready()
        times = interleaved_medians(fns, repeat)
        nan = float("nan")
        ge_t, np_t = times["ge"], times["numpy"]
        hand_t, jax_t = times.get("hand", nan), times.get("jax", nan)
        print(f"{label:26} {ge_t * 1e3:9.3f} {np_t * 1e3:9.3f} {hand_t * 1e3:9.3f} "
              f"{jax_t * 1e3:9.3f} {ge_t / np_t:9.2f} {ge_t / hand_t:9.2f}")
    GeApi.ge_finalize()


if __name__ == "__main__":
    main()
