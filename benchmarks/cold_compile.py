"""Cold start of the arithmetic chain ``x*y + x*0.5 - y*y``: compile with an empty kernel cache,
then with a warm disk cache in a fresh process, then a graph of the same pattern at another
size (which must compile no kernel). Each measurement runs in its own Python process.

Run: python benchmarks/cold_compile.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, time
start = time.perf_counter()
import numpy as np
import ge
from ge.es import GraphBuilder
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import _codegen
imported = time.perf_counter()

def chain(n):
    b = GraphBuilder("chain")
    x, y = b.create_input(0, shape=[n]), b.create_input(1, shape=[n])
    return b.build_and_reset([x * y + x * 0.5 - y * y])

n = int(sys.argv[1])
t0 = time.perf_counter()
compiled = CompiledGraph(chain(n))
compiled.run_arrays([np.ones(n, np.float32), np.ones(n, np.float32)])
t1 = time.perf_counter()
print(json.dumps({
    "import_s": imported - start,
    "compile_s": t1 - t0,
    "kernels": _codegen.compiled_kernel_count(),
    "built": _codegen.built_kernel_count(),
    "numba_imported": "numba" in sys.modules,
    "load_ms": [round(t * 1e3, 2) for t in _codegen.cached_load_seconds()],
}))
"""


def _run(n: int, cache: str) -> dict[str, object]:
    env = {**os.environ, "GE_KERNEL_CACHE_DIR": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time imports as users see them (bytecode cached)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n)], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        _run(16, os.path.join(cache, "warm-up"))  # writes the bytecode of ge's modules once
        rows = [
            ("empty kernel cache, 1M", _run(1 << 20, cache)),
            ("warm disk cache, fresh process, 1M", _run(1 << 20, cache)),
            ("warm disk cache, another size (4096)", _run(4096, cache)),
        ]
    print(f"{'case':40} {'compile+run ms':>14} {'kernels':>8} {'built':>6} "
          f"{'load ms/kernel':>15} {'numba':>6}")
    for label, r in rows:
        ms = float(r["compile_s"]) * 1e3  # type: ignore[arg-type]
        loads = r["load_ms"]
        per = max(loads) if isinstance(loads, list) and loads else float("nan")
        print(f"{label:40} {ms:14.1f} {r['kernels']!s:>8} {r['built']!s:>6} {per:15.2f} "
              f"{r['numba_imported']!s:>6}")


if __name__ == "__main__":
    main()
