"""The toolchain and machine that compiled kernels depend on, read without importing Numba or
``ge.compiler``: one text for every on-disk cache of built code.

``machine()`` is Numba's version (a fingerprint of its version file, found without importing
it, and without ``importlib.metadata``, which costs tens of milliseconds), llvmlite's version,
the host CPU's LLVM name and the target features kernels are compiled for. The kernel cache
(``ge.compiler.kernels._disk_cache``) and ``ge.jit``'s plan cache (``ge.jit._plan_cache``) both
key on it; it lives in the runtime, below both, so that a process loading a cached plan needs
no compiler.
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache
from pathlib import Path

__all__ = ["machine", "numba_version"]


@cache
def machine() -> str:
    """``numba|llvmlite|cpu|features`` (asked of LLVM once per process)."""
    import llvmlite  # noqa: PLC0415

    from ge.runtime.kernel import host_cpu, target_features  # noqa: PLC0415

    return "|".join((numba_version(), llvmlite.__version__, host_cpu()[0], target_features()))


def numba_version() -> str:
    """A fingerprint of the installed Numba: its version file, found without importing it."""
    spec = importlib.util.find_spec("numba")
    if spec is None or spec.origin is None:
        return "no-numba"
    version_file = Path(spec.origin).parent / "_version.py"
    try:
        return hashlib.sha256(version_file.read_bytes()).hexdigest()[:16]
    except OSError:
        return "numba-unknown"
