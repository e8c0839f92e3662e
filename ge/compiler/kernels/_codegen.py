"""Compile generated kernel source into loaded kernel functions, once per distinct source.

Kernels are generated as Python source (readable when debugging: ``GE_KERNEL_SOURCE=1``
prints each one), compiled by ``ge.runtime.compile_kernel`` into a standalone binary and
loaded. The same source is never compiled twice in a process, and binaries are kept in the
on-disk cache (``_disk_cache``), so other processes load them instead of compiling (no Numba
import needed then). Both caches key on the source and ``Options.kernel_key()`` of the record
the kernel is compiled with (bounds checks and approximate math): two settings never share a
kernel.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import threading
import time
from collections.abc import Iterator

import numpy as np

from ge.compiler.kernels import _disk_cache
from ge.error import GeError
from ge.options import Options, current_options
from ge.runtime.kernel import (
    KernelBinary,
    KernelFunction,
    compile_kernel,
    kernel_array,
    load_kernel_binary,
)

__all__ = [
    "KernelNotCached",
    "block_loop",
    "built_kernel_count",
    "cached_load_seconds",
    "cached_only",
    "compiled_kernel_count",
    "kernel_from_source",
]

_CACHE: dict[str, KernelFunction] = {}
_BUILT: list[str] = []
_BINARIES: list[KernelBinary] = []
_LOADS: list[float] = []  # seconds each disk-cache load took
_LOCK = threading.Lock()
_MODE = threading.local()  # .cached_only: refuse to compile on this thread


class KernelNotCached(Exception):  # noqa: N818  (a signal, not an error: nothing went wrong)
    """Raised under ``cached_only()`` by a kernel that would have to be compiled. Not a
    ``GeError``, so no handler of real errors swallows it."""


def block_loop(count: str = "n", index: str = "i") -> list[str]:
    """Kernel source lines that loop ``index`` over this block's contiguous share of
    ``range(count)`` (blocks split the range into ``block_dim`` equal chunks)."""
    return [
        f"    chunk = ({count} + block_dim - 1) // block_dim",
        "    begin = block_idx * chunk",
        f"    stop = min({count}, begin + chunk)",
        f"    for {index} in range(begin, stop):",
    ]


@contextlib.contextmanager
def cached_only() -> Iterator[None]:
    """Within this block (on this thread), a kernel that is neither loaded in this process
    nor in the disk cache raises ``KernelNotCached`` instead of compiling: how ``ge.jit``
    learns, in milliseconds, whether a graph can run compiled now."""
    previous = getattr(_MODE, "cached_only", False)
    _MODE.cached_only = True
    try:
        yield
    finally:
        _MODE.cached_only = previous


def kernel_from_source(
    source: str, name: str = "kernel", options: Options | None = None
) -> KernelFunction:
    """The loaded kernel defined as ``def <name>(block_idx, block_dim, args)`` in ``source``,
    compiled with ``options`` (default ``current_options()``)."""
    opts = current_options() if options is None else options
    digest = hashlib.sha256(source.encode()).hexdigest()
    key = f"{digest}|{opts.kernel_key()}"
    function = _CACHE.get(key)
    if function is not None:
        return function
    with _LOCK:
        function = _CACHE.get(key)
        if function is None:
            function = _load_or_build(source, name, f"k_{digest[:16]}", opts)
            _CACHE[key] = function
    return function


def _load_or_build(source: str, name: str, symbol: str, options: Options) -> KernelFunction:
    disk_key = _disk_cache.cache_key(source, options)
    start = time.perf_counter()
    cached = _disk_cache.load_entry(disk_key, options)
    if cached is not None:
        try:
            binary = load_kernel_binary(cached)
            _BINARIES.append(binary)
            _LOADS.append(time.perf_counter() - start)
            return binary.get_function(symbol)
        except GeError:  # an entry that does not load is rebuilt, never used
            _disk_cache.discard(disk_key, options)
    if getattr(_MODE, "cached_only", False):
        raise KernelNotCached(f"kernel {symbol} is not in the disk cache")
    data = _compile(source, name, symbol, options)
    _disk_cache.store_entry(disk_key, data, options)
    binary = load_kernel_binary(data)
    _BINARIES.append(binary)
    _BUILT.append(symbol)
    return binary.get_function(symbol)


def _compile(source: str, name: str, symbol: str, options: Options) -> bytes:
    import numba  # noqa: PLC0415  (compiling kernels is what needs Numba)

    from ge.compiler.kernels._scalar import HELPERS  # noqa: PLC0415

    if options.kernel_source:
        print(f"# ge kernel {symbol}\n{source}")
    namespace = {"np": np, "math": math, "numba": numba, "kernel_array": kernel_array, **HELPERS}
    exec(compile(source, f"<ge kernel {symbol}>", "exec"), namespace)
    return compile_kernel(namespace[name], symbol, options)


def built_kernel_count() -> int:
    """Kernels compiled (not loaded from the disk cache) in this process."""
    return len(_BUILT)


def cached_load_seconds() -> list[float]:
    """How long each kernel loaded from the disk cache took (read, check, JIT-link)."""
    return list(_LOADS)


def compiled_kernel_count() -> int:
    """Kernels compiled in this process (for tests that count compilations)."""
    return len(_CACHE)
