"""The on-disk kernel cache: compiled kernel binaries, shared by processes and notebooks.

An entry is ``GEKC`` + SHA-256 of the payload + the payload (a ``compile_kernel`` binary),
named by a key that covers the kernel source and everything that changes the code built from
it: ge's version, the scalar helpers kernels call (``_scalar.py``, ``_approx.py``), Numba's
and llvmlite's versions, the host CPU and its features, and the ``Options`` fields that
change generated code (``Options.kernel_key()``: approximate math, bounds checks). Entries are
written to a temporary file and renamed into place, so a reader never sees half an entry and
two processes compiling the same kernel at once both succeed (the last rename wins; both
entries are whole). An entry that fails its checksum or does not load is deleted and rebuilt,
never used.

Location: ``$GE_KERNEL_CACHE_DIR`` (``Options.kernel_cache_dir``), else
``$XDG_CACHE_HOME/ge/kernels``, else ``~/.cache/ge/kernels``; ``GE_KERNEL_CACHE=0``
(``Options.kernel_cache``) turns the cache off. Each function takes the ``Options`` record to
follow (default ``current_options()``). A cache directory that
cannot be written only costs compile time.
"""

from __future__ import annotations

import contextlib
import hashlib
from functools import cache
from pathlib import Path

from ge._device._code_cache import cache_directory, read_entry, write_entry
from ge.options import Options, current_options

__all__ = ["cache_dir", "cache_key", "load_entry", "store_entry"]

_MAGIC = b"GEKC"


def cache_dir(options: Options | None = None) -> Path | None:
    """Where entries live, or ``None`` when the cache is off (the device's rule,
    ``ge._device._code_cache.cache_directory``: one directory for all of ge's built code)."""
    return cache_directory(options)


@cache
def _toolchain() -> str:
    """ge's version, the helpers kernels call, and the toolchain and CPU that shape the code
    (``ge.runtime._toolchain.machine``: read without importing Numba)."""
    from ge import __version__  # noqa: PLC0415
    from ge.runtime._toolchain import machine  # noqa: PLC0415

    return "|".join((__version__, _helpers_fingerprint(), machine()))


def _helpers_fingerprint() -> str:
    """The scalar helpers kernels call (``_scalar.py``, ``_approx.py``) and the runtime code
    that compiles ``kernel_array`` and writes binaries are part of what a kernel compiles to:
    editing them must not serve binaries built with the old ones."""
    here = Path(__file__).parent
    runtime = here.parent.parent / "runtime"
    digest = hashlib.sha256()
    for path in (
        here / "_scalar.py",
        here / "_approx.py",
        runtime / "_numba_kernels.py",
        runtime / "kernel.py",
    ):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(source: str, options: Options | None = None) -> str:
    """The entry name for ``source`` built by this toolchain on this CPU with ``options``'
    code settings (``kernel_key()``)."""
    opts = current_options() if options is None else options
    return hashlib.sha256(f"{_toolchain()}|{opts.kernel_key()}\n{source}".encode()).hexdigest()


def load_entry(key: str, options: Options | None = None) -> bytes | None:
    """The binary stored under ``key``; ``None`` if absent or damaged (a damaged entry is
    removed so the next store replaces it)."""
    directory = cache_dir(options)
    return None if directory is None else read_entry(directory / f"{key}.gekb", _MAGIC)


def discard(key: str, options: Options | None = None) -> None:
    directory = cache_dir(options)
    if directory is not None:
        with contextlib.suppress(OSError):
            (directory / f"{key}.gekb").unlink()


def store_entry(key: str, payload: bytes, options: Options | None = None) -> bool:
    """Write an entry atomically; ``False`` (and nothing left behind) if it cannot be."""
    return write_entry(cache_dir(options), f"{key}.gekb", _MAGIC, payload)
