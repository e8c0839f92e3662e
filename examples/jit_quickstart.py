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
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 512), np.float32)

    # 1. What the function traces to: a GE graph (print it, or display it in Jupyter).
    print(softmax.trace(x))

    # 2. The first call traces and compiles; later calls with the same shapes hit the cache.
    #    Kernels found in the disk cache load in milliseconds; new ones compile in a
    #    background worker while calls run on the reference interpreter (numpy).
    start = time.perf_counter()
    probabilities = softmax(x)
    print(f"first call (trace + compile or load): {(time.perf_counter() - start) * 1e3:.1f} ms")
    start = time.perf_counter()
    ge.jit.wait_for_compiles()
    print(f"background compiles done {(time.perf_counter() - start) * 1e3:.1f} ms later")
    reference = np.exp(x - x.max(-1, keepdims=True))
    reference /= reference.sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities, reference, rtol=1e-5, atol=1e-7)
    print(
        f"cached call: {_ms(softmax, x):.3f} ms   numpy: "
        f"{_ms(lambda a: np.exp(a - a.max(-1, keepdims=True)), x):.3f} ms (exp alone)"
    )

    # 3. A new batch size retraces (the ge.jit logger says why) but compiles no new kernel.
    softmax(x[:100])
    print(softmax.cache_info())

    # 4. Pytrees in, arrays out: an MLP whose parameters are a dict.
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
        f"MLP logits {logits.shape}: ge.jit {_ms(mlp, params, batch):.2f} ms, numpy "
        f"{_ms(numpy_mlp, params, batch):.2f} ms"
    )

    # 5. The optimised graph and the task plan that runs.
    print(mlp.lower(params, batch).as_text().split("plan:")[-1].join(["plan:", ""]))


if __name__ == "__main__":
    main()
