"""@ge.jit against numpy, a hand-written Numba loop and jax.jit (when installed), in one run.

Prints medians (ms, or µs for the tiny call) and ratios for: a cached call of ``x + 1`` on 4
elements, the arithmetic chain, the exp/sin chain, a numpy-spelled softmax, an MLP, a row-wise
cumsum, a row-wise sort, a three-operand einsum and a Jacobi stencil written with an in-place
slice update (``out = u.copy(); out[1:-1, 1:-1] = ...``); then the
cold first call of the chain in fresh processes (empty kernel cache, warm disk cache), a call
with a new batch size (and how many kernels it compiled), and the time of ``import ge``.

Run: python benchmarks/jit_vs_jax.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from _hand import (
    hand_bilinear,
    hand_chain,
    hand_cumsum,
    hand_expsin,
    hand_softmax,
    hand_sort,
    hand_stencil,
)
from _timing import interleaved_medians, jax_or_none

import ge

# Each case is written once against an array namespace ``xp``: numpy for ge.jit and numpy
# itself (ge.jit traces numpy calls), ``jax.numpy`` for jax.jit (which cannot trace numpy's).


def chain(x: Any, y: Any, xp: Any = np) -> Any:
    return x * y + x * 0.5 - y * y


def expsin(x: Any, y: Any, xp: Any = np) -> Any:
    return xp.exp(x) * y + xp.sin(x) * 0.5 - y * y


def softmax(x: Any, xp: Any = np) -> Any:
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mlp(p: Any, x: Any, xp: Any = np) -> Any:
    h = xp.maximum(x @ p["w1"] + p["b1"], 0.0)
    h = xp.maximum(h @ p["w2"] + p["b2"], 0.0)
    return h @ p["w3"] + p["b3"]


def cumsum(x: Any, xp: Any = np) -> Any:
    return xp.cumsum(x, axis=-1)


def sort(x: Any, xp: Any = np) -> Any:
    return xp.sort(x, axis=-1)


def bilinear(a: Any, w: Any, b: Any, xp: Any = np) -> Any:
    return xp.einsum("ni,kij,nj->nk", a, w, b)


def stencil(u: Any, xp: Any = np) -> Any:
    """One Jacobi sweep written as numpy users write it: a copy updated in place (jax.numpy
    arrays are immutable, so the JAX spelling is the functional ``.at[...].set``)."""
    inner = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    if xp is np:
        out = u.copy()
        out[1:-1, 1:-1] = inner
        return out
    return u.at[1:-1, 1:-1].set(inner)


def _add1(a: Any, xp: Any = np) -> Any:
    return a + 1


@numba.njit(cache=False)
def _hand_add1(x: np.ndarray) -> np.ndarray:
    return x + np.float32(1)


Case = tuple[str, Callable[..., Any], tuple[Any, ...], Callable[[], Any] | None]


def _cases(quick: bool) -> list[Case]:
    rng = np.random.default_rng(0)
    n = 1 << 20
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    out = np.empty_like(x)
    s = rng.standard_normal((1024, 1024), np.float32)
    sout = np.empty_like(s)
    params = {}
    for k, (fan_in, fan_out) in enumerate(((784, 256), (256, 256), (256, 10)), start=1):
        scale = np.float32(1 / np.sqrt(fan_in))
        params[f"w{k}"] = rng.standard_normal((fan_in, fan_out), np.float32) * scale
        params[f"b{k}"] = rng.standard_normal(fan_out, np.float32) * np.float32(0.1)
    batch = rng.standard_normal((1024, 784), np.float32)
    tiny = np.ones(4, np.float32)
    rows = rng.standard_normal((1024, 1024), np.float32)
    rows_out = np.empty_like(rows)
    a, b = rng.standard_normal((512, 64), np.float32), rng.standard_normal((512, 64), np.float32)
    w = rng.standard_normal((32, 64, 64), np.float32)
    bl_out = np.empty((512, 32), np.float32)
    return [
        ("x + 1, 4 f32 (us)", _add1, (tiny,), lambda: _hand_add1(tiny)),
        ("chain 1M f32", chain, (x, y), lambda: hand_chain(x, y, out)),
        ("exp/sin chain 1M f32", expsin, (x, y), lambda: hand_expsin(x, y, out)),
        ("softmax 1024x1024 f32", softmax, (s,), lambda: hand_softmax(s, sout)),
        ("MLP 784-256-256-10 b1024", mlp, (params, batch), None),
        ("cumsum rows 1024x1024 f32", cumsum, (rows,), lambda: hand_cumsum(rows, rows_out)),
        ("sort rows 1024x1024 f32", sort, (rows,), lambda: hand_sort(rows, rows_out)),
        ("einsum ni,kij,nj->nk", bilinear, (a, w, b), lambda: hand_bilinear(a, w, b, bl_out)),
        ("stencil 1024^2, in place", stencil, (rows,), lambda: hand_stencil(rows, rows_out)),
    ]


def _table(quick: bool) -> None:
    repeat = 7 if quick else 31
    jax = jax_or_none()
    print(
        f"{'case':26} {'ge.jit':>9} {'numpy':>9} {'numba':>9} {'jax':>9} "
        f"{'ge/numpy':>9} {'ge/numba':>9} {'ge/jax':>9}"
    )
    for label, fn, args, hand in _cases(quick):
        scale = 1e6 if "(us)" in label else 1e3
        inner = 2000 if "(us)" in label else 1
        jitted = ge.jit(fn)
        jitted(*args)
        ge.jit.wait_for_compiles()  # time the compiled plan, not the reference interpreter

        def loop(f: Callable[[], Any], inner: int = inner) -> Callable[[], None]:
            def run() -> None:
                for _ in range(inner):
                    f()

            return run

        fns = {
            "ge": loop(lambda jitted=jitted, args=args: jitted(*args)),
            "numpy": loop(lambda fn=fn, args=args: fn(*args)),
        }
        if hand is not None:
            fns["hand"] = loop(hand)
        if jax is not None:
            jfn = jax.jit(functools.partial(fn, xp=jax.numpy))  # type: ignore[attr-defined]
            jargs = jax.device_put(args)  # type: ignore[attr-defined]  # as JAX users keep them
            fns["jax"] = loop(lambda jfn=jfn, jargs=jargs: jfn(*jargs).block_until_ready())
        times = {k: v / inner * scale for k, v in interleaved_medians(fns, repeat).items()}
        nan = float("nan")
        ge_t, np_t = times["ge"], times["numpy"]
        hand_t, jax_t = times.get("hand", nan), times.get("jax", nan)
        print(
            f"{label:26} {ge_t:9.3f} {np_t:9.3f} {hand_t:9.3f} {jax_t:9.3f} "
            f"{ge_t / np_t:9.2f} {ge_t / hand_t:9.2f} {ge_t / jax_t:9.2f}"
        )


_COLD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import ge

@ge.jit  # imports ge.jit: counted with the import (import ge itself imports almost nothing)
def chain(x, y):
    return x * y + x * 0.5 - y * y

t1 = time.perf_counter()

x = np.ones(1 << 20, np.float32)
t2 = time.perf_counter()
chain(x, x)
t3 = time.perf_counter()
ge.jit.wait_for_compiles()
t4 = time.perf_counter()
chain(x, x)
t5 = time.perf_counter()
from ge.compiler.kernels import _codegen  # after the first call, which imports it: timed there

small = np.ones(1000, np.float32)
before = _codegen.compiled_kernel_count()
t6 = time.perf_counter()
chain(small, small)
t7 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_ms": (t3 - t2) * 1e3,
                  "compiled_ms": (t4 - t2) * 1e3, "switch_ms": (t5 - t4) * 1e3,
                  "new_size_ms": (t7 - t6) * 1e3,
                  "new_size_kernels": _codegen.compiled_kernel_count() - before,
                  "built": _codegen.built_kernel_count()}))
"""


def _cold() -> None:
    """Fresh processes sharing one kernel cache directory. ``first`` is the first call;
    with an empty cache it runs on the reference interpreter while a worker compiles the
    kernels (``compiled`` is when they are in the cache, ``switch`` the call that loads
    them); ``built`` counts kernels compiled in the calling process itself. ``import`` is
    ``import numpy, ge`` and the ``@ge.jit`` decoration (which imports ``ge.jit``); the first
    call imports the rest it needs (``ge.compiler``, llvmlite), as it would for a user."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "GE_KERNEL_CACHE_DIR": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # time imports as users see them
        subprocess.run(
            [sys.executable, "-c", "import ge.jit, ge.compiler.executable"], env=env, check=True
        )  # bytecode written, as after any first import
        runs = []
        for label in ("empty kernel cache", "warm disk cache"):
            out = subprocess.run(
                [sys.executable, "-c", _COLD], env=env, capture_output=True, text=True, check=True
            )
            runs.append((label, json.loads(out.stdout.strip().splitlines()[-1])))
        env["GE_JIT_BACKGROUND"] = "0"
        with tempfile.TemporaryDirectory() as empty:
            env["GE_KERNEL_CACHE_DIR"] = empty
            out = subprocess.run(
                [sys.executable, "-c", _COLD], env=env, capture_output=True, text=True, check=True
            )
            runs.append(
                (
                    "empty cache, GE_JIT_BACKGROUND=0",
                    json.loads(out.stdout.strip().splitlines()[-1]),
                )
            )
    jax_first = _jax_cold(env)
    print(
        f"\n{'cold first call of the chain':34} {'first ms':>9} {'compiled ms':>12} "
        f"{'switch ms':>10} {'built':>6} {'new size ms':>12} {'new-size kernels':>17} "
        f"{'import ms':>13}"
    )
    for label, r in runs:
        print(
            f"{label:34} {r['first_ms']:9.1f} {r['compiled_ms']:12.1f} {r['switch_ms']:10.2f} "
            f"{r['built']:6d} {r['new_size_ms']:12.2f} {r['new_size_kernels']:17d} "
            f"{r['import_ms']:13.1f}"
        )
    if jax_first is not None:
        first, import_ms = jax_first
        print(
            f"{'jax.jit, fresh process':34} {first:9.1f} {first:12.1f} {'':10} {'':6} {'':12} "
            f"{'':17} {import_ms:13.1f}"
        )


_JAX_COLD = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
import jax
t1 = time.perf_counter()
chain = jax.jit(lambda x, y: x * y + x * 0.5 - y * y)
x = np.ones(1 << 20, np.float32)
t2 = time.perf_counter()
chain(x, x).block_until_ready()
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_ms": (t3 - t2) * 1e3}))
"""


def _jax_cold(env: dict[str, str]) -> tuple[float, float] | None:
    """jax.jit's first call of the chain in a fresh process (its import timed apart)."""
    if jax_or_none() is None:
        return None
    out = subprocess.run(
        [sys.executable, "-c", _JAX_COLD], env=env, capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["first_ms"], r["import_ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cold", action="store_true", help="only the cold first-call table")
    args = parser.parse_args()
    if not args.cold:
        _table(args.quick)
    _cold()


if __name__ == "__main__":
    main()
