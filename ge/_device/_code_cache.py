"""Machine code the device builds for itself (the memory guard's view check), kept on disk so
that a fresh process loads it instead of generating it again (that took ~20-30 ms of every
process's first kernel load).

An entry is ``GEOC`` + the SHA-256 of the code + the code (an object file), named by a key
that covers what the code is built from (``key(...)``: the IR and the toolchain that compiles
it). It is written to a temporary file and renamed into place, so a reader never sees half an
entry; one that fails its checksum is removed and rebuilt, never loaded.

Decisions (ours):

- The entries live with the kernel cache (``$GE_KERNEL_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/ge/kernels``, else ``~/.cache/ge/kernels``) and follow its switch
  (``GE_KERNEL_CACHE=0``: nothing is read or written), both read from ``current_options()``.
  The rule for that directory is ``cache_directory`` here, in the lowest layer; the compiler's
  kernel cache (``ge.compiler.kernels._disk_cache.cache_dir``) uses it too.
- Users: the memory guard's view check (``ge._device._guard``) and the native launcher's
  pool (``ge.runtime._launcher``), so that a process that only loads and runs offline
  models (no compiler imported) builds neither.
- ``jit_engine`` gives MCJIT a cached entry's object code for an empty module (only the
  target triple): MCJIT never compiles a module whose object the cache returns, so parsing
  and verifying the IR (~0.5-1 ms a user, every process) was wasted; the IR is parsed only
  when there is no entry to load.
- A directory that cannot be read or written only costs the build: every failure here is
  silent, and the caller builds the code itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ge.options import Options, current_options

__all__ = [
    "cache_directory",
    "code_key",
    "jit_engine",
    "load_code",
    "read_entry",
    "store_code",
    "write_entry",
]

_MAGIC = b"GEOC"
_DIGEST = 32
_SUFFIX = ".geobj"


def cache_directory(options: Options | None = None) -> Path | None:
    """Where ge caches built code, or ``None`` when ``options`` (default ``current_options()``)
    turn the cache off: ``kernel_cache_dir`` (``$GE_KERNEL_CACHE_DIR``), else
    ``$XDG_CACHE_HOME/ge/kernels``, else ``~/.cache/ge/kernels``."""
    opts = current_options() if options is None else options
    if not opts.kernel_cache:
        return None
    if opts.kernel_cache_dir:
        return Path(opts.kernel_cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ge" / "kernels"


def code_key(*parts: str) -> str:
    """The entry name for code built from ``parts`` (its source and every toolchain detail
    that changes the code)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def load_code(key: str) -> bytes | None:
    """The code stored under ``key``; ``None`` if there is none or it is damaged (a damaged
    entry is removed)."""
    directory = cache_directory()
    if directory is None:
        return None
    return read_entry(directory / f"{key}{_SUFFIX}", _MAGIC)


def store_code(key: str, code: bytes) -> bool:
    """Write an entry atomically; ``False`` (and nothing left behind) if it cannot be."""
    return write_entry(cache_directory(), f"{key}{_SUFFIX}", _MAGIC, code)


def jit_engine(llvm: Any, key: str, ir: str, finalize: Callable[[Any], None] | None = None) -> Any:
    """An MCJIT engine (llvmlite's ``llvm``, initialised for the native target) running the
    code of ``ir``: the object code stored under ``key`` when there is an entry (the IR is not
    parsed then), else ``ir`` compiled at ``opt=2`` and stored under ``key``. ``finalize``
    (default: ``engine.finalize_object()``) loads the code; a caller that links symbols while
    it loads passes its own. Raises what llvmlite raises for IR that does not parse."""
    cached = load_code(key)
    if cached is not None:
        module = llvm.parse_assembly(f'target triple = "{llvm.get_process_triple()}"\n')
    else:
        module = llvm.parse_assembly(ir)
        module.verify()
    target = llvm.Target.from_default_triple()
    engine = llvm.create_mcjit_compiler(module, target.create_target_machine(opt=2))
    built: list[bytes] = []
    if cached is not None:
        engine.set_object_cache(getbuffer_func=lambda _module: cached)
    else:
        engine.set_object_cache(notify_func=lambda _module, data: built.append(bytes(data)))
    if finalize is None:
        engine.finalize_object()
    else:
        finalize(engine)
    if built:
        store_code(key, built[0])
    return engine


def read_entry(path: Path, magic: bytes) -> bytes | None:
    """The payload of the entry at ``path`` (``magic`` + its SHA-256 + the payload); ``None``
    if it is absent, empty or damaged (a damaged entry is removed, so a store replaces it)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    payload = data[len(magic) + _DIGEST :]
    digest = data[len(magic) : len(magic) + _DIGEST]
    if data[: len(magic)] == magic and hashlib.sha256(payload).digest() == digest and payload:
        return payload
    with contextlib.suppress(OSError):
        path.unlink()
    return None


def write_entry(directory: Path | None, name: str, magic: bytes, payload: bytes) -> bool:
    """Write ``magic`` + the SHA-256 of ``payload`` + ``payload`` to ``directory/name``
    atomically (a temporary file renamed into place); ``False``, and nothing left behind, if it
    cannot be (or ``directory`` is ``None``: the cache is off)."""
    import tempfile  # noqa: PLC0415  (only a process that builds code writes it)

    if directory is None:
        return False
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name[:16]}.", suffix=".tmp", dir=directory)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(magic + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, directory / name)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
