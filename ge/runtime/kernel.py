"""Kernels: compile a Python/Numba kernel to a binary, load a binary, launch it on a stream.

The kernel ABI is ``void kernel(int64 block_idx, int64 block_dim, int64 *args)``: ``args[i]``
holds the i-th address or scalar appended for the launch, and ``kernel_array(addr, count,
dtype)`` views device memory as a 1-D array inside the kernel.

``compile_kernel(py_kernel, name)`` returns bytes: a small header (name, target CPU and
features, ge version), the kernel's LLVM IR with Numba's C wrapper replaced by a plain one, the
machine code built from it, and a SHA-256 of all of that, so the binary needs no Python
objects, no Numba runtime and not the source that produced it. ``load_kernel_binary``
loads it with llvmlite (Numba is not imported), refusing a binary whose digest does not match
(any mutated byte) or that was built for CPU features this machine lacks. A binary built for
exactly this CPU loads its machine code as it is, after checking that every symbol the code
links against exists here (a read of the object's ELF symbol table; an unresolved one would
abort the process inside the JIT); otherwise, or if that code is no sound ELF object, its IR is
compiled again. Parsing the IR was most of an offline model's load time, so it is skipped
when the code fits.
``launch_kernel`` runs blocks ``0..block_dim-1`` on the native thread pool of
``ge.runtime._launcher`` (a Python thread pool where there is none), in ``stream`` order; it
and the other launch-side names live in ``ge.runtime._launch`` (re-exported here), so that
editing them does not change this file, which the kernel cache's key covers.

Memory safety (the device's contract: no kernel writes outside the memory it names):

- Inside a compiled kernel, ``kernel_array(addr, count, dtype)`` checks ``[addr, addr +
  count * itemsize)`` against live device memory once, when the view is made (a lookup in the
  native table of ``ge._device._guard``, ~10 ns). A view of memory that is not live (a wild
  int, host memory, past a block's end, a freed block) stops the kernel, and the launch fails
  with a ``GeError`` naming the kernel, the argument and the range.
- Indexes into a view are not checked unless ``GE_KERNEL_BOUNDSCHECK=1`` is set when kernels
  are compiled (it is part of the kernel cache key): then Numba's bounds checks are compiled in
  and an index past a view fails the launch instead of writing past it. They cost a compare and
  a branch per access that LLVM cannot prove in range: on ge's elementwise chains and softmax
  (whose loops run over a view's own length) the difference is within the noise of
  ``benchmarks/safety_cost.py``; kernels with data-dependent indexes pay more. Off by default;
  turn it on to debug a kernel of your own.
- ``args`` items that are addresses should be passed as ``MemBlock``s, device
  ``ge.graph.Tensor``s or ``DeviceRange``s. Those are checked when the launch is queued (a
  freed block is refused even when its address was reused: a ``MemBlock`` carries its
  allocation's generation), and they are *in use* until the launch has run, so freeing one
  meanwhile is deferred, never under the kernel. Plain ``int`` items go in as they are (a
  kernel that views them is still checked).

    >>> import numpy as np
    >>> from ge import runtime
    >>> def scale(block_idx, block_dim, args):
    ...     x = runtime.kernel_array(args[0], args[1], np.float32)
    ...     for i in range(block_idx, args[1], block_dim):
    ...         x[i] *= 2.0
    >>> binary = runtime.load_kernel_binary(runtime.compile_kernel(scale, "scale"))
    >>> fn = binary.get_function("scale")
    >>> block = runtime.malloc(16); runtime.memcpy_h2d(block.addr, np.ones(4, np.float32))
    >>> s = runtime.Stream(); runtime.launch_kernel(fn, 2, s, [block, 4]); s.synchronize()
    >>> out = np.empty(4, np.float32); runtime.memcpy_d2h(out, block.addr); out
    array([2., 2., 2., 2.], dtype=float32)
    >>> runtime.free(block)
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ge._device.memory import DeviceMemoryError, device_memory
from ge.error import GeError, GeTypeError, GeValueError
from ge.options import Options, current_options, using_options
from ge.runtime._launch import (
    DeviceRange,
    KernelFunction,
    describe_failure,
    failure_mark,
    launch_kernel,
    run_blocks,
)

__all__ = [
    "DeviceRange",
    "KernelBinary",
    "KernelFunction",
    "compile_kernel",
    "describe_failure",
    "failure_mark",
    "kernel_array",
    "launch_kernel",
    "load_kernel_binary",
    "run_blocks",
]

_MAGIC = b"GEKB"
_FORMAT_VERSION = 2
_DIGEST = 32  # the SHA-256 of everything before it, at the end of a binary
_STATUS_SUFFIX = "__ge_status"


def kernel_array(addr: int, count: int, dtype: Any) -> np.ndarray:
    """A 1-D array of ``count`` ``dtype`` elements at device address ``addr``.

    Inside a compiled kernel it is a raw view; called from Python (to debug a kernel without
    compiling it) it is a numpy view, checked against live device memory.
    """
    np_dtype = np.dtype(dtype)
    try:
        view = device_memory().view(int(addr), int(count) * np_dtype.itemsize)
    except DeviceMemoryError as e:
        raise GeValueError(f"kernel_array: {e}") from None
    array: np.ndarray = view.view(np_dtype)
    return array


@contextlib.contextmanager
def bounds_checks() -> Iterator[None]:
    """Kernels compiled on this thread inside the block get index bounds checks, whatever
    ``GE_KERNEL_BOUNDSCHECK`` says (offline models are built so: a model's kernel arguments
    come from a file, and no argument may make a kernel index past its views). An alias of
    ``ge.options.using_options`` with ``kernel_boundscheck=True``."""
    with using_options(current_options().replace(kernel_boundscheck=True)):
        yield


def boundscheck_enabled() -> bool:
    """Whether kernels compiled now get index bounds checks (``GE_KERNEL_BOUNDSCHECK=1``, or
    inside ``bounds_checks()``): ``current_options().kernel_boundscheck``."""
    return current_options().kernel_boundscheck


@functools.cache
def _guarded_llvm() -> Any:
    """llvmlite, with the view check every kernel calls resolvable by its symbol."""
    from ge._device._guard import CHECK_SYMBOL  # noqa: PLC0415

    llvm = _llvm()
    llvm.add_symbol(CHECK_SYMBOL, device_memory().guard().check_address)
    return llvm


# --- compiling ----------------------------------------------------------------------------------
def compile_kernel(
    py_kernel: Callable[..., None], name: str, options: Options | None = None
) -> bytes:
    """Compile ``py_kernel(block_idx, block_dim, args)`` (Numba nopython subset) into a kernel
    binary exporting ``name``, with index bounds checks if ``options`` (default
    ``current_options()``) asks for them. Raises ``GeError`` with Numba's explanation if it does not
    compile, or if it needs runtime support a standalone binary cannot carry (allocating
    arrays, raising exceptions with Python objects)."""
    if not callable(py_kernel):
        raise GeTypeError(f"py_kernel must be a function, got {type(py_kernel).__name__}")
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise GeValueError(f"name must be an ASCII identifier, got {name!r}")
    from ge.runtime import _numba_kernels  # noqa: PLC0415  (imports numba only when compiling)

    _guarded_llvm()
    checks = (current_options() if options is None else options).kernel_boundscheck
    ir, cpu, features = _numba_kernels.kernel_ir(py_kernel, name, _STATUS_SUFFIX, checks)
    _, objects = _jit(ir, None)
    code = objects[0] if len(objects) == 1 else b""
    header = {
        "version": _FORMAT_VERSION,
        "format": "llvm-ir",
        "functions": [name],
        "cpu": cpu,
        "features": features,
        "ge": _ge_version(),
        "boundscheck": checks,
        "object_bytes": len(code),
    }
    head = json.dumps(header, sort_keys=True).encode()
    body = _MAGIC + len(head).to_bytes(4, "little") + head + ir.encode() + code
    return body + hashlib.sha256(body).digest()


def _jit(ir: str, code: bytes | None) -> tuple[Any, list[bytes]]:
    """An MCJIT engine for ``ir``. With ``code`` (machine code this machine built from the
    same IR earlier) the engine loads it instead of generating code again; without, the code
    it generates is returned too."""
    llvm = _guarded_llvm()
    try:
        module = llvm.parse_assembly(ir)
        module.verify()
    except RuntimeError as e:
        raise GeValueError(f"kernel binary is corrupt: {e}") from None
    missing_symbols = _unresolved_symbols(module)
    if missing_symbols:
        raise GeValueError(
            f"kernel binary needs symbols this process does not have: "
            f"{', '.join(missing_symbols[:8])}"
        )
    target = llvm.Target.from_default_triple()
    machine = target.create_target_machine(cpu=host_cpu()[0], features=target_features(), opt=3)
    engine = llvm.create_mcjit_compiler(module, machine)
    built: list[bytes] = []
    if code:
        engine.set_object_cache(getbuffer_func=lambda _module: code)
    else:
        engine.set_object_cache(notify_func=lambda _module, data: built.append(bytes(data)))
    engine.finalize_object()
    return engine, built


def _ge_version() -> str:
    from ge import __version__  # noqa: PLC0415  (ge/__init__ imports the runtime lazily)

    return __version__


# --- loading ------------------------------------------------------------------------------------
@functools.cache
def _llvm() -> Any:
    import llvmlite.binding as llvm  # noqa: PLC0415  (only binaries need the JIT)

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


@functools.cache
def host_cpu() -> tuple[str, str]:
    """The host CPU's LLVM name and feature string (asked of LLVM once: ~1 ms a call)."""
    llvm = _llvm()
    return str(llvm.get_host_cpu_name()), str(llvm.get_host_cpu_features().flatten())


# First-generation AVX-512 cores lower their clock for 512-bit math: there LLVM's preference
# for 256-bit vectors is right, and kept.
_NARROW_AVX512 = frozenset({"skylake-avx512", "cascadelake", "cooperlake"})


@functools.cache
def tuning_features() -> str:
    """Tuning ge adds to the host's LLVM target features when it compiles kernels.

    On x86 CPUs with AVX-512 (past its first generation) this is ``-prefer-256-bit``: LLVM
    tunes such CPUs to vectorise loops 8 float32 lanes wide and to split wider vectors, while
    16 lanes run the compute-bound kernels (exp, tanh, softmax) a tenth to a quarter faster.
    Memory-bound kernels run the same either way. Empty elsewhere.
    """
    llvm = _llvm()
    avx512 = bool(llvm.get_host_cpu_features().get("avx512f"))
    return "-prefer-256-bit" if avx512 and llvm.get_host_cpu_name() not in _NARROW_AVX512 else ""


def target_features() -> str:
    """The LLVM feature string kernels are optimised and compiled for: the host's features
    plus ``tuning_features()``."""
    host = host_cpu()[1]
    tuning = tuning_features()
    return f"{host},{tuning}" if tuning else host


def _parse_header(data: bytes) -> tuple[dict[str, Any], str, bytes]:
    """``(header, ir, machine code)`` of a binary whose digest matches its content."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise GeTypeError(f"data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < 8 + _DIGEST or data[:4] != _MAGIC:
        raise GeValueError("data is not a ge kernel binary (bad magic)")
    data, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(data).digest() != digest:
        raise GeValueError(
            "kernel binary is corrupt: its SHA-256 does not match its content (the binary was "
            "changed or truncated after compile_kernel made it)"
        )
    size = int.from_bytes(data[4:8], "little")
    try:
        header = json.loads(data[8 : 8 + size])
        code = header.get("object_bytes", 0) if isinstance(header, dict) else 0
        if not isinstance(code, int) or not 0 <= code <= len(data) - 8 - size:
            raise ValueError("bad object size")
        ir = data[8 + size : len(data) - code].decode()
    except (ValueError, UnicodeDecodeError):
        raise GeValueError("kernel binary is corrupt (unreadable header or body)") from None
    if not isinstance(header, dict) or header.get("version") != _FORMAT_VERSION:
        raise GeValueError(f"kernel binary format {header!r} is not supported")
    functions = header.get("functions")
    well_formed = (
        isinstance(functions, list)
        and all(isinstance(f, str) and f.isidentifier() for f in functions)
        and isinstance(header.get("cpu", ""), str)
        and isinstance(header.get("features", ""), str)
    )
    if not well_formed:
        raise GeValueError("kernel binary is corrupt (malformed header fields)")
    return header, ir, data[len(data) - code :] if code else b""


def _machine_code(header: dict[str, Any], code: bytes, llvm: Any) -> bytes | None:
    """The binary's machine code if it was built for exactly this CPU (else the IR is compiled
    again: the code is an optimisation, the IR the source of truth)."""
    cpu, features = host_cpu()
    if not code or header.get("cpu") != cpu:
        return None
    if header.get("features") != features:
        return None
    return code


def _unresolved_symbols(module: Any) -> list[str]:
    """External functions/globals of ``module`` this process cannot supply (calling one would
    jump to address 0)."""
    names = [f.name for f in module.functions if f.is_declaration]
    names += [g.name for g in module.global_variables if g.is_declaration]
    return [n for n in names if not n.startswith("llvm.") and not _resolvable(n)]


@functools.cache
def _process() -> ctypes.CDLL:
    return ctypes.CDLL(None)


def _resolvable(name: str) -> bool:
    """Whether the JIT can link a reference to ``name``: a symbol of this process (libc, libm)
    or one ge registered with llvmlite (the view check)."""
    return hasattr(_process(), name) or bool(_llvm().address_of_symbol(name))


def _engine_for(ir: str, code: bytes | None) -> Any:
    """An engine running the binary: its machine code loaded as it is when the binary was built
    for exactly this CPU (no IR is parsed: that took most of a model's load time), else its IR
    compiled (``_jit``)."""
    symbols = _elf_symbols(code) if code else None
    if symbols is None:  # no code for this CPU, or an object that is not a sound ELF file
        return _jit(ir, None)[0]
    missing = sorted(n for n in symbols if not _resolvable(n))
    if missing:
        raise GeValueError(
            f"kernel binary needs symbols this process does not have: {', '.join(missing[:8])}"
        )
    llvm = _guarded_llvm()
    machine = llvm.Target.from_default_triple().create_target_machine(opt=0)  # builds no code
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    return engine


_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_ELF_SECTION = struct.Struct("<IIQQQQIIQQ")
_ELF_SYMBOL = struct.Struct("<IBBHQQ")
_SHT_SYMTAB = 2


def _elf_symbols(code: bytes) -> list[str] | None:
    """The undefined symbols of ELF64 little-endian object ``code`` (what it links against),
    or ``None`` if ``code`` is no such object or any of its tables lies outside it. Only
    objects this check reads whole are loaded as they are."""
    try:
        ident, *_, shoff, _flags, _eh, _ph, _phn, shentsize, shnum, _shstr = (
            _ELF_HEADER.unpack_from(code)
        )
        if ident[:6] != b"\x7fELF\x02\x01" or shentsize != _ELF_SECTION.size:
            return None
        sections = [_ELF_SECTION.unpack_from(code, shoff + i * shentsize) for i in range(shnum)]
        tables = [s for s in sections if s[1] == _SHT_SYMTAB]
        if len(tables) != 1:
            return None
        _, _, _, _, offset, size, link, *_ = tables[0]
        strings = sections[link]
        names = code[strings[4] : strings[4] + strings[5]]
        if offset + size > len(code) or strings[4] + strings[5] > len(code):
            return None
        undefined = []
        for at in range(offset, offset + size - _ELF_SYMBOL.size + 1, _ELF_SYMBOL.size):
            name, _info, _other, shndx, _value, _size = _ELF_SYMBOL.unpack_from(code, at)
            if shndx == 0 and name:
                undefined.append(names[name : names.index(b"\0", name)].decode())
        return undefined
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None


def _missing_features(wanted: str, have: str) -> list[str]:
    host = {f[1:] for f in have.split(",") if f.startswith("+")}
    return sorted(f[1:] for f in wanted.split(",") if f.startswith("+") and f[1:] not in host)


class KernelBinary:
    """A loaded kernel binary; ``get_function(name)`` returns its entry points and ``data``
    the bytes it was loaded from (what a model file stores)."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        header, ir, code = _parse_header(data)
        llvm = _guarded_llvm()
        missing = _missing_features(header.get("features", ""), host_cpu()[1])
        if missing:
            raise GeError(
                f"kernel binary was built for CPU {header.get('cpu')!r}; this machine "
                f"lacks {', '.join(missing[:8])}"
            )
        self._engine = _engine_for(ir, _machine_code(header, code, llvm))
        self._functions: dict[str, KernelFunction] = {}
        for fname in header.get("functions", []):
            address = self._engine.get_function_address(fname)
            status = self._engine.get_function_address(fname + _STATUS_SUFFIX)
            if not address or not status:
                raise GeValueError(f"kernel binary lacks its function {fname!r}")
            self._functions[fname] = KernelFunction(self, fname, address, status)
        self.header = header

    def get_function(self, name: str) -> KernelFunction:
        function = self._functions.get(name)
        if function is None:
            raise GeValueError(
                f"kernel binary has no function {name!r}; it has {sorted(self._functions)}"
            )
        return function

    def function_names(self) -> list[str]:
        return sorted(self._functions)


def load_kernel_binary(data: bytes) -> KernelBinary:
    """Load a binary made by ``compile_kernel`` (in this process or any other)."""
    return KernelBinary(data)
