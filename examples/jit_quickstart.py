"""Quickstart for @ge.jit: a softmax and a small MLP written with numpy, traced into GE graphs,
compiled (fused kernels, BLAS matmuls) and called like the functions they came from.

Run: python examples/jit_quickstart.py
"""

from __future__ import annotations

import time

import numpy as np

import ge


@ge.jit
def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@ge.jit
def mlp(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    h = np.maximum(h @ params["w2"] + params["b2"], 0.0)
    return h @ params["w3"] + params["b3"]


def _ms(fn: object, *args: object, repeat: int = 20) -> float:
    """The median wall time of ``fn(*args)`` in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def numpy_softmax(a: np.ndarray) -> np.ndarray:
    """The whole softmax in numpy (max-subtract, exp, sum, divide): what ge.jit is timed
    against, since the compiled softmax does all four steps too."""
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 512), np.float32)

    # 1. What the function traces to: a GE graph (print it, or display it in Jupyter).
    print("1. softmax traced to a GE graph (Data is the argument x; Const holds the axes):")
    print(softmax.trace(x))

    # 2.-3. The first call traces and compiles; later calls with the same shapes hit the cache.
    #    Kernels found in the disk cache load in milliseconds; new ones compile in a
    #    background worker while calls run on the reference interpreter (numpy).
    start = time.perf_counter()
    probabilities = softmax(x)
    first = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    ge.jit.wait_for_compiles()
    waited = (time.perf_counter() - start) * 1e3
    np.testing.assert_allclose(probabilities, numpy_softmax(x), rtol=1e-5, atol=1e-7)
    print(f"2. first call: {first:.1f} ms (trace, optimise, load or start compiling kernels)")
    print(
        f"   waiting for the background kernel compiles: {waited:.1f} ms more (about 0 "
        "when the kernels were in the disk cache)"
    )
    print(
        f"3. softmax of {x.shape[0]}x{x.shape[1]} float32, median of 20 calls: ge.jit "
        f"{_ms(softmax, x):.3f} ms (cached, compiled kernel), numpy "
        f"{_ms(numpy_softmax, x):.3f} ms (max, subtract, exp, sum, divide)"
    )

    # 4. A new batch size retraces (the ge.jit logger says why) but compiles no new kernel.
    softmax(x[:100])
    info = softmax.cache_info()
    print(
        f"4. after a call with a new batch size: {info.hits} cache hits (calls that ran a "
        f"cached plan), {info.misses} misses (calls that traced: the first call and the new "
        f"batch size), {info.traces} traces (.trace() included), {info.entries} cached "
        "signatures"
    )

    # 5. Pytrees in, arrays out: an MLP whose parameters are a dict.
    sizes = [(784, 256), (256, 256), (256, 10)]
    params = {}
    for k, (fan_in, fan_out) in enumerate(sizes, start=1):
        scale = np.float32(1 / np.sqrt(fan_in))
        params[f"w{k}"] = rng.standard_normal((fan_in, fan_out), np.float32) * scale
        params[f"b{k}"] = np.zeros(fan_out, np.float32)
    batch = rng.standard_normal((1024, 784), np.float32)
    logits = mlp(params, batch)
    ge.jit.wait_for_compiles()

    def numpy_mlp(p: dict[str, np.ndarray], a: np.ndarray) -> np.ndarray:
        h = np.maximum(a @ p["w1"] + p["b1"], 0.0)
        h = np.maximum(h @ p["w2"] + p["b2"], 0.0)
        return h @ p["w3"] + p["b3"]

    np.testing.assert_allclose(logits, numpy_mlp(params, batch), rtol=1e-4, atol=1e-4)
    print(
        f"5. MLP 784-256-256-10 on a batch of {batch.shape[0]}, logits {logits.shape}, median "
        f"of 20 calls: ge.jit {_ms(mlp, params, batch):.2f} ms, numpy "
        f"{_ms(numpy_mlp, params, batch):.2f} ms (both spend most of it in the BLAS matmuls)"
    )

    # 6. The optimised graph and the task plan that runs.
    text = mlp.lower(params, batch).as_text()
    print(
        "6. the MLP's task plan: its buffers (inputs, intermediates at arena offsets, "
        "outputs) and tasks in launch order ('host matmul' runs on BLAS, 'launch K xN' runs "
        "kernel K in N parallel blocks):"
    )
    print(text[text.index("plan:") :])


if __name__ == "__main__":
    main()
