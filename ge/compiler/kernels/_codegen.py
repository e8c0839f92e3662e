"""Compile generated kernel source into loaded kernel functions, once per distinct source.

Kernels are generated as Python source (readable when debugging: ``GE_KERNEL_SOURCE=1``
prints each one), compiled by ``ge.runtime.compile_kernel`` into a standalone binary and
loaded; the same source is never compiled twice in a process.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading

import numpy as np

from ge.runtime.kernel import (
    KernelBinary,
    KernelFunction,
    compile_kernel,
    kernel_array,
    load_kernel_binary,
)

__all__ = ["compiled_kernel_count", "kernel_from_source"]

_CACHE: dict[str, KernelFunction] = {}
_BINARIES: list[KernelBinary] = []
_LOCK = threading.Lock()


def kernel_from_source(source: str, name: str = "kernel") -> KernelFunction:
    """The loaded kernel defined as ``def <name>(block_idx, block_dim, args)`` in ``source``."""
    key = hashlib.sha256(source.encode()).hexdigest()
    function = _CACHE.get(key)
    if function is not None:
        return function
    with _LOCK:
        function = _CACHE.get(key)
        if function is None:
            import numba  # noqa: PLC0415  (compiling kernels is what needs Numba)

            from ge.compiler.kernels._scalar import HELPERS  # noqa: PLC0415

            if os.environ.get("GE_KERNEL_SOURCE"):
                print(f"# ge kernel {key[:12]}\n{source}")
            namespace = {
                "np": np,
                "math": math,
                "numba": numba,
                "kernel_array": kernel_array,
                **HELPERS,
            }
            exec(compile(source, f"<ge kernel {key[:12]}>", "exec"), namespace)
            binary = load_kernel_binary(compile_kernel(namespace[name], f"k_{key[:16]}"))
            _BINARIES.append(binary)
            function = binary.get_function(f"k_{key[:16]}")
            _CACHE[key] = function
    return function


def compiled_kernel_count() -> int:
    """Kernels compiled in this process (for tests that count compilations)."""
    return len(_CACHE)
