"""The first call of a ``@ge.jit`` function whose kernels are in the disk cache, in a fresh
process, against ``jax.jit``'s first call in a fresh process (when JAX is installed).

Each measurement is its own Python process (bytecode cached: a warm-up process runs first),
with the kernel cache in a temporary directory that a first process fills (kernels and the
plan). The sides alternate, so that all see the same load: ge with its plan cache
(``ge.jit._plan_cache``: the first call traces, fingerprints the graph and loads the plan,
importing no ``ge.compiler``), ge with ``GE_JIT_PLAN_CACHE=0`` (the first call traces and
compiles the graph from the cached kernels) and JAX (tracing and XLA's compile). Each row
gives the medians of the import (``import numpy, ge`` / ``import numpy, jax``), the
decoration (``@ge.jit`` imports ``ge.jit``, ``ge.es`` and the op registry), the first call
(wall time, and the process's CPU time over all its threads, which the machine's load
changes less) and the second call. For ge it also says whether the first call imported
protobuf (it should not: no AIR bytes are touched), how many first calls loaded their plan
(a miss means ge's code changed during the run) and how many imported ``ge.compiler`` (none
should), and the slowest imports of a first call that loads its plan (``-X importtime``,
which inflates them).

Then, in a process with an empty kernel cache, the calls made while the worker compiles (run
by the reference interpreter, ``ge.ops.interpreter.Program``) against numpy running the same
function: the chain and an exp/sin chain on 4x the size, a 1024x1024 softmax.

Run: python benchmarks/first_call.py [--runs N] [--size N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

_GE = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import ge
t0d = time.perf_counter()

@ge.jit  # imports ge.jit (and with it ge.es and the op registry)
def chain(x, y):
    return x * y + x * 0.5 - y * y

t1 = time.perf_counter()
x = np.ones({size}, np.float32)
y = x + 1
sys.stderr.write("-- first call --\n")  # where -X importtime's lines of the call begin
t2 = time.perf_counter(); c2 = time.process_time()
chain(x, y)
t3 = time.perf_counter(); c3 = time.process_time()
sys.stderr.write("-- after the first call --\n")
chain(x, y)
t4 = time.perf_counter()
compiler = "ge.compiler" in sys.modules  # imported by the calls (a plan-cache miss)
if {fill}:
    ge.jit.wait_for_compiles()
    chain(x, y)  # the call after the worker is done compiles the plan and stores it
entry = next(iter(chain._cache.values()))
print(json.dumps({{"import_ms": (t0d - t0) * 1e3, "define_ms": (t1 - t0d) * 1e3,
                  "first_ms": (t3 - t2) * 1e3, "first_cpu_ms": (c3 - c2) * 1e3,
                  "second_ms": (t4 - t3) * 1e3, "compiled": entry.runner is not None,
                  "compiler": compiler, "plan_loaded": entry._loaded is not None,
                  "protobuf": any(m.startswith("google.protobuf") for m in sys.modules)}}))
"""

_JAX = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
import jax
import jax.numpy as jnp
t0d = time.perf_counter()

@jax.jit
def chain(x, y):
    return x * y + x * 0.5 - y * y

t1 = time.perf_counter()

x = jnp.ones({size}, jnp.float32)
y = (x + 1).block_until_ready()
t2 = time.perf_counter(); c2 = time.process_time()
chain(x, y).block_until_ready()
t3 = time.perf_counter(); c3 = time.process_time()
chain(x, y).block_until_ready()
t4 = time.perf_counter()
print(json.dumps({{"import_ms": (t0d - t0) * 1e3, "define_ms": (t1 - t0d) * 1e3,
                  "first_ms": (t3 - t2) * 1e3, "first_cpu_ms": (c3 - c2) * 1e3,
                  "second_ms": (t4 - t3) * 1e3}}))
"""


_WHILE = r"""
import json, statistics, time
import numpy as np
import ge

def chain(x, y):
    return x * y + x * 0.5 - y * y

def expsin(x, y):
    return np.exp(x) * y + np.sin(x) * 0.5 - y * y

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

rng = np.random.default_rng(0)
x = rng.random({size}, dtype=np.float32)
y = rng.random({size}, dtype=np.float32)
s = rng.random((1024, 1024), dtype=np.float32)
rows = {{}}
for name, fn, args in (("chain", chain, (x, y)), ("expsin", expsin, (x, y)),
                       ("softmax", softmax, (s,))):
    jitted = ge.jit(fn)
    jitted(*args)  # traces and hands the kernels to the worker
    entry = next(iter(jitted._cache.values()))
    ge_t, np_t = [], []
    for _ in range(7):
        if entry.job is None:
            break
        t0 = time.perf_counter(); jitted(*args); t1 = time.perf_counter()
        fn(*args); t2 = time.perf_counter()
        if entry.runner is None:  # that call ran on the reference interpreter
            ge_t.append(t1 - t0); np_t.append(t2 - t1)
    rows[name] = (statistics.median(ge_t) * 1e3 if ge_t else None,
                  statistics.median(np_t) * 1e3 if np_t else None, len(ge_t))
    ge.jit.wait_for_compiles()
print(json.dumps(rows))
"""


def _while_compiling(size: int, env: dict[str, str]) -> None:
    """Calls made while the worker compiles (on the reference interpreter) against numpy."""
    with tempfile.TemporaryDirectory() as cache:
        fresh = {**env, "GE_KERNEL_CACHE_DIR": cache}
        out = subprocess.run(
            [sys.executable, "-c", _WHILE.format(size=size)],
            env=fresh,
            capture_output=True,
            text=True,
            check=True,
        )
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\ncalls while the kernels compile (reference interpreter), {size} float32")
    print(f"{'case':26} {'ge.jit ms':>10} {'numpy ms':>10} {'ge/numpy':>9} {'calls':>6}")
    for name, (ge_ms, np_ms, count) in rows.items():
        if ge_ms is None:
            print(f"{name:26} (compiled before a second call)")
            continue
        print(f"{name:26} {ge_ms:10.2f} {np_ms:10.2f} {ge_ms / np_ms:9.2f} {count:6d}")


def _run(code: str, env: dict[str, str], flags: tuple[str, ...] = ()) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, *flags, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["stderr"] = out.stderr
    return result


def _medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = ("import_ms", "define_ms", "first_ms", "first_cpu_ms", "second_ms")
    return {k: statistics.median(r[k] for r in runs) for k in keys}


_STAGES = ("import_ms", "define_ms", "first_ms")


def _row(label: str, t: dict[str, float]) -> str:
    return (
        f"{label:26} {t['import_ms']:10.1f} {t['define_ms']:12.1f} {t['first_ms']:14.1f} "
        f"{t['first_cpu_ms']:10.1f} {t['second_ms']:10.1f}"
    )


def _slowest_imports(importtime: str, count: int = 8) -> list[tuple[str, float]]:
    """The first call's imports with the largest cumulative time (a module's includes those
    it imports): the ``-X importtime`` lines between the script's two markers."""
    rows = []
    inside = False
    for line in importtime.splitlines():
        if line.startswith("-- "):
            inside = line == "-- first call --"
            continue
        parts = line.split("|")
        if inside and len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((parts[2].strip(), int(parts[1]) / 1e3))
    return sorted(rows, key=lambda r: -r[1])[:count]


def _jax_installed() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True, check=False)
    return probe.returncode == 0


def _report(
    args: argparse.Namespace,
    ge_runs: list[dict[str, Any]],
    kernel_runs: list[dict[str, Any]],
    jax_runs: list[dict[str, Any]],
    filled: dict[str, Any],
    traced: dict[str, Any],
) -> None:
    hits = [r for r in ge_runs if r["plan_loaded"]] or ge_runs
    ge = _medians(hits)
    print(f"first call of x * y + x * 0.5 - y * y on {args.size} float32, fresh processes")
    print(
        f"{'':26} {'import ms':>10} {'decorate ms':>12} {'first call ms':>14} {'(CPU ms)':>10} "
        f"{'second ms':>10}"
    )
    print(_row("ge.jit (plan on disk)", ge))
    print(_row("ge.jit (kernels on disk)", _medians(kernel_runs)))
    if jax_runs:
        jx = _medians(jax_runs)
        print(_row("jax.jit", jx))
        both = sum(ge[k] for k in _STAGES) / sum(jx[k] for k in _STAGES)
        ratio = ge["first_ms"] / jx["first_ms"]
        cpu = ge["first_cpu_ms"] / jx["first_cpu_ms"]
        print(
            f"ge/jax first call: {ratio:.2f} (CPU time, all threads: {cpu:.2f}); "
            f"import + decorate + first call: {both:.2f}"
        )
    else:
        print("jax.jit: not installed (pip install jax jaxlib to compare)")
    compiled = all(r["compiled"] for r in ge_runs)
    protobuf = any(r["protobuf"] for r in ge_runs)
    loaded = sum(r["plan_loaded"] for r in ge_runs)
    compiler = sum(r["compiler"] for r in ge_runs)
    print(
        f"ge first calls ran compiled: {compiled}; imported protobuf: {protobuf}; "
        f"kernel-filling run's first call: {filled['first_ms']:.0f} ms"
    )
    print(
        f"ge first calls that loaded their plan from the plan cache: {loaded} of {len(ge_runs)} "
        f"(the first row's medians are theirs; a miss means ge's code changed meanwhile); "
        f"that imported ge.compiler: {compiler} of {len(ge_runs)}"
    )
    print("slowest imports of a first call (plan on disk; cumulative ms, -X importtime):")
    for name, ms in _slowest_imports(traced["stderr"]):
        print(f"  {ms:8.1f}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per side")
    parser.add_argument("--size", type=int, default=1 << 20, help="elements of x and y")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        # bytecode is written (to a prefix in the temporary directory, so that the checkout
        # is left as it is) even where the environment turns it off
        env = {**os.environ, "GE_KERNEL_CACHE_DIR": cache, "PYTHONPYCACHEPREFIX": cache + "/pyc"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        filled = _run(_GE.format(size=args.size, fill=True), env)  # fills the kernel cache
        _run(_GE.format(size=args.size, fill=False), env)  # and the bytecode, for the rest
        jax = _jax_installed()
        if jax:
            _run(_JAX.format(size=args.size), env)  # its bytecode
        # the sides alternate, so that all see the same load on a busy machine
        no_plans = {**env, "GE_JIT_PLAN_CACHE": "0"}  # the trace compiles from cached kernels
        ge_runs, kernel_runs, jax_runs = [], [], []
        for _ in range(args.runs):
            ge_runs.append(_run(_GE.format(size=args.size, fill=False), env))
            kernel_runs.append(_run(_GE.format(size=args.size, fill=False), no_plans))
            if jax:
                jax_runs.append(_run(_JAX.format(size=args.size), env))
        traced = _run(_GE.format(size=args.size, fill=False), env, ("-X", "importtime"))
        _report(args, ge_runs, kernel_runs, jax_runs, filled, traced)
        _while_compiling(args.size * 4, env)


if __name__ == "__main__":
    main()
