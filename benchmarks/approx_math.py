"""float32 exp/log/sin/cos/tanh/erf on 1M elements: numpy's ufuncs, a serial Numba loop calling
libm (``math.exp``...; LLVM cannot vectorise the calls), and the same loop calling the
vectorisable approximations of ge.compiler.kernels._approx that float32 kernels use, built as
a ge kernel binary (so vectorised as kernels are).

numpy has no erf, so its column is empty for erf (its libm loop is Numba's ``math.erf``).

Run: python benchmarks/approx_math.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from _timing import median_seconds

from ge import runtime
from ge.compiler.kernels import _approx

N = 1 << 20


def _loop(fn: Callable[[float], float]) -> Callable[[np.ndarray, np.ndarray], None]:
    @numba.njit(parallel=False, cache=False)  # type: ignore[untyped-decorator]
    def loop(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            out[i] = fn(x[i])

    return loop  # type: ignore[no-any-return]


def _kernel_loop(fn: Callable[[float], float]) -> Callable[[np.ndarray, np.ndarray], None]:
    """The same loop as a ge kernel binary (one block), so it is vectorised and compiled as
    ge's kernels are (16 lanes on AVX-512: ``ge.runtime.kernel.tuning_features``)."""

    def kernel(block_idx: int, block_dim: int, args: Any) -> None:
        n = args[2]
        x = runtime.kernel_array(args[0], n, np.float32)
        out = runtime.kernel_array(args[1], n, np.float32)
        for i in range(n):
            out[i] = fn(x[i])

    function = runtime.load_kernel_binary(runtime.compile_kernel(kernel, "loop")).get_function(
        "loop"
    )

    def run(x: np.ndarray, out: np.ndarray) -> None:
        function(0, 1, np.array([x.ctypes.data, out.ctypes.data, x.size], np.int64))

    return run


def _cases() -> list[
    tuple[str, np.ndarray, Callable[..., object] | None, Callable[..., float], Callable[..., float]]
]:
    """(name, input, numpy ufunc or None, libm scalar, approximation)."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    return [
        ("exp", rng.uniform(-20, 20, N).astype(f32), np.exp, math.exp, _approx.exp_f32),
        ("log", np.exp(rng.uniform(-20, 20, N)).astype(f32), np.log, math.log, _approx.log_f32),
        ("sin", rng.uniform(-100, 100, N).astype(f32), np.sin, math.sin, _approx.sin_f32),
        ("cos", rng.uniform(-100, 100, N).astype(f32), np.cos, math.cos, _approx.cos_f32),
        ("tanh", (rng.standard_normal(N) * 3).astype(f32), np.tanh, math.tanh, _approx.tanh_f32),
        ("erf", (rng.standard_normal(N) * 2).astype(f32), None, math.erf, _approx.erf_f32),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeat = 5 if args.quick else 25
    print(
        f"1M float32, median of {repeat} (ms); ratios: how many times faster the approximation is"
    )
    print(
        f"{'fn':5} {'numpy':>8} {'libm loop':>10} {'approx':>8} {'numpy/approx':>13} "
        f"{'libm/approx':>12}"
    )
    for name, x, ufunc, libm, approx in _cases():
        out = np.empty_like(x)
        libm_loop, approx_loop = _loop(libm), _kernel_loop(approx)
        libm_loop(x, out)  # compile
        approx_loop(x, out)
        np_t = median_seconds(functools.partial(ufunc, x), repeat) if ufunc else math.nan
        libm_t = median_seconds(functools.partial(libm_loop, x, out), repeat)
        approx_t = median_seconds(functools.partial(approx_loop, x, out), repeat)
        print(
            f"{name:5} {np_t * 1e3:8.3f} {libm_t * 1e3:10.3f} {approx_t * 1e3:8.3f} "
            f"{np_t / approx_t:13.2f} {libm_t / approx_t:12.2f}"
        )


if __name__ == "__main__":
    main()
