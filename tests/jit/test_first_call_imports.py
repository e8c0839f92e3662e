"""A ``ge.jit`` function's first call in a fresh process, its kernels in the disk cache, imports
only what that path needs: no protobuf (no AIR bytes are touched) and no background worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_CALL = r"""
import json, sys
import numpy as np
import ge

@ge.jit
def chain(x, y):
    return x * y + x * 0.5 - y * y

x = np.arange(8, dtype=np.float32)
out = chain(x, x)
if sys.argv[1] == "fill":
    ge.jit.wait_for_compiles()
entry = next(iter(chain._cache.values()))
print(json.dumps({
    "right": bool(np.array_equal(out, x * x + x * 0.5 - x * x)),
    "compiled": entry.runner is not None,
    "imported": sorted(m for m in ("google.protobuf", "ge.compiler.background", "ge.graph._dot")
                       if m in sys.modules),
}))
"""


def _fresh_call(mode: str, cache: Path) -> dict[str, object]:
    env = {**os.environ, "GE_KERNEL_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", _CALL, mode], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_a_first_call_with_cached_kernels_imports_no_protobuf_and_no_worker(
    tmp_path: Path,
) -> None:
    filled = _fresh_call("fill", tmp_path)  # compiles the kernels (in the worker)
    assert filled["right"]
    warm = _fresh_call("warm", tmp_path)
    assert warm == {"right": True, "compiled": True, "imported": []}
