"""The kernel tests again, with every kernel compiled with index bounds checks
(``GE_KERNEL_BOUNDSCHECK=1``) into an empty kernel cache: no built-in kernel indexes past the
views it makes, and every result still matches. The default tier runs the runtime's kernel
tests and the streaming kernels; ``-m slow`` adds every compiled op, row kernel and fusion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
_FAST = ["tests/runtime/test_kernel.py", "tests/compiler/test_streaming.py"]
_SLOW = [
    "tests/compiler/test_compiled_ops.py",
    "tests/compiler/test_rows.py",
    "tests/compiler/test_fuse.py",
    "tests/compiler/test_layer_norm.py",
]


def _run_with_boundscheck(files: list[str], cache: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *files],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        env={**os.environ, "GE_KERNEL_BOUNDSCHECK": "1", "GE_KERNEL_CACHE_DIR": str(cache)},
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1]


def test_kernel_tests_pass_with_bounds_checks(tmp_path: Path) -> None:
    _run_with_boundscheck(_FAST, tmp_path)


@pytest.mark.slow
def test_every_compiled_kernel_test_passes_with_bounds_checks(tmp_path: Path) -> None:
    _run_with_boundscheck(_SLOW, tmp_path)
