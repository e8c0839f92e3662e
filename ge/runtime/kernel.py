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
``ge.runtime._launcher`` (a Python thread pool where there is none), in ``stream`` order.

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
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ge._device.memory import DeviceMemoryError, device_memory
from ge.allocator import MemBlock
from ge.error import GeError, GeTypeError, GeValueError
from ge.options import Options, current_options, using_options
from ge.runtime import _launcher
from ge.runtime.stream import Stream, resolve_stream

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "DeviceRange",
    "KernelBinary",
    "KernelFunction",
    "compile_kernel",
    "kernel_array",
    "launch_kernel",
    "load_kernel_binary",
]

_MAGIC = b"GEKB"
_FORMAT_VERSION = 2
_DIGEST = 32  # the SHA-256 of everything before it, at the end of a binary
_STATUS_SUFFIX = "__ge_status"
_ENV_BOUNDSCHECK = "GE_KERNEL_BOUNDSCHECK"
_CFUNC = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)


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


@dataclass(frozen=True, slots=True)
class DeviceRange:
    """An address argument with its extent, checked against live memory at launch.
    ``generation`` (from ``DeviceRange.of(block)``) also refuses it once the block it came
    from was freed, even if its address was reused; 0 checks the range alone."""

    addr: int
    nbytes: int
    generation: int = 0

    @classmethod
    def of(cls, block: MemBlock, offset: int = 0, nbytes: int | None = None) -> DeviceRange:
        """The range ``[block.addr + offset, +nbytes)`` of ``block`` (to its end by default),
        tied to the block's generation."""
        size = block.size - offset if nbytes is None else nbytes
        if offset < 0 or size < 0 or offset + size > block.size:
            raise GeValueError(
                f"DeviceRange.of: offset {offset} and nbytes {size} do not fit in {block!r}"
            )
        return cls(block.addr + offset, size, block.generation)


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


class KernelFunction:
    """One kernel entry point of a loaded binary."""

    __slots__ = ("_binary", "_status", "address", "name", "status_address")

    def __init__(self, binary: KernelBinary, name: str, address: int, status: int) -> None:
        self._binary = binary  # keeps the JIT engine (and the code) alive
        self.name = name
        self.address = address
        self.status_address = status  # i32 (block_idx, block_dim, args): 0 = ok
        self._status = _CFUNC(status)

    def __call__(self, block_idx: int, block_dim: int, args: np.ndarray) -> int:
        """Run one block now, on this thread; returns Numba's status (0 = ok)."""
        return int(self._status(block_idx, block_dim, args.ctypes.data))

    @property
    def binary(self) -> KernelBinary:
        """The loaded binary this function is an entry point of."""
        return self._binary

    def __repr__(self) -> str:
        return f"<KernelFunction {self.name} at {self.address:#x}>"


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


# --- launching ----------------------------------------------------------------------------------
@functools.cache
def _pool() -> ThreadPoolExecutor:
    """Python threads for blocks where the native launcher is missing (imported only then: the
    module and the logging it pulls in cost a fresh process ~10 ms)."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="ge-block")


if hasattr(os, "register_at_fork"):  # a forked child has none of the parent's pool threads
    os.register_at_fork(after_in_child=_pool.cache_clear)


_Range = tuple[int, int, int]  # (addr, nbytes, generation or 0)


def _ranges(args: Sequence[Any]) -> tuple[list[int], list[_Range], list[int]]:
    """The packed values of ``args``, the device ranges among them, and each range's index."""
    values: list[int] = []
    ranges: list[_Range] = []
    where: list[int] = []
    for i, arg in enumerate(args):
        if isinstance(arg, MemBlock):
            ranges.append((*arg.checked(), arg.generation))  # a hand-made one may hold anything
        elif isinstance(arg, DeviceRange):
            ranges.append((arg.addr, arg.nbytes, arg.generation))
        elif hasattr(arg, "addr") and hasattr(arg, "nbytes"):  # a device ge.graph.Tensor
            ranges.append((int(arg.addr), int(arg.nbytes), 0))
        elif isinstance(arg, (int, np.integer)) and not isinstance(arg, bool):
            value = int(arg)
            if not -(2**63) <= value < 2**64:
                raise GeValueError(f"args[{i}] = {value} does not fit in 64 bits")
            values.append(value - 2**64 if value >= 2**63 else value)
            continue
        else:
            raise GeTypeError(
                f"args[{i}] must be an int, MemBlock, DeviceRange or device "
                f"Tensor, got {type(arg).__name__}"
            )
        values.append(ranges[-1][0])
        where.append(i)
    return values, ranges, where


def describe_failure(name: str, status: int, args: np.ndarray, mark: int | None = None) -> str:
    """What went wrong in a launch of kernel ``name`` with ``args`` that returned ``status``:
    the view it was refused, naming the argument that holds the refused address, or else
    Numba's status. ``mark`` (from ``failure_mark()`` before the launch) also attributes a
    refused view at an address the kernel computed; without it only refusals of an argument's
    own address are attributed (another launch may have been refused meanwhile)."""
    refused = device_memory().guard().failures_since(0 if mark is None else mark)
    values = [int(v) % 2**64 for v in args.tolist()]
    ours = [r for r in refused if r[1] in values]
    if not ours and mark is not None:
        ours = refused
    if not ours:
        return (
            f"kernel {name} failed (status {status}): it raised, or an index was out of range "
            f"of a view (with {_ENV_BOUNDSCHECK}=1), or it viewed memory that is not live"
        )
    _, addr, count, itemsize = ours[-1] if mark is None else ours[0]
    source = f"args[{values.index(addr)}]" if addr in values else "an address computed in it"
    return (
        f"kernel {name}: its kernel_array view of {count} elements of {itemsize} bytes at "
        f"{addr:#x} (from {source}) is not inside live device memory (a wild, host, freed "
        f"or past-the-end address)"
    )


def failure_mark() -> int:
    """A mark to pass to ``describe_failure`` after a launch that starts now."""
    return device_memory().guard().mark()


def _run_blocks(function: KernelFunction, block_dim: int, args: np.ndarray) -> None:
    mark = failure_mark()
    status = run_blocks(function, block_dim, args)
    if status:
        raise GeError(describe_failure(function.name, status, args, mark))


def run_blocks(function: KernelFunction, block_dim: int, args: np.ndarray) -> int:
    """Run blocks ``0..block_dim-1`` now (on the native pool when there is one, else on a
    Python thread pool); returns 0 or a failing block's status."""
    if block_dim == 1:
        return function(0, 1, args)
    if _launcher.available():
        return _launcher.launch(function.status_address, block_dim, args.ctypes.data)
    futures = [_pool().submit(function, b, block_dim, args) for b in range(block_dim)]
    return next((s for s in (f.result() for f in futures) if s), 0)


def launch_kernel(
    function: KernelFunction, block_dim: int, stream: Stream | int, args: Sequence[Any]
) -> None:
    """Queue ``function`` on ``stream`` with ``block_dim`` parallel blocks and ``args``.

    Returns at once; a failure (bad address, kernel error) surfaces at
    ``stream.synchronize()``.
    """
    if (  # the common case, checked in one pass: plain int64 arguments (no ranges to hold)
        type(function) is KernelFunction
        and type(block_dim) is int
        and 1 <= block_dim < 2**32
        and type(args) is list
        and args
        and all(type(a) is int and -(2**63) <= a < 2**63 for a in args)
    ):
        packed = np.array(args, dtype=np.int64)
        resolve_stream(stream).submit(
            lambda: _run_blocks(function, block_dim, packed), name=f"kernel {function.name}"
        )
        return
    if not isinstance(function, KernelFunction):
        raise GeTypeError(f"function must be a KernelFunction, got {type(function).__name__}")
    if isinstance(block_dim, bool) or not isinstance(block_dim, int):
        raise GeTypeError(f"block_dim must be an int, got {type(block_dim).__name__}")
    if not 1 <= block_dim <= 2**32 - 1:
        raise GeValueError(f"block_dim must be in [1, 2**32 - 1], got {block_dim}")
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise GeTypeError(
            f"args must be a list of ints, MemBlocks, DeviceRanges or device Tensors, "
            f"got {type(args).__name__}"
        )
    target = resolve_stream(stream)
    values, ranges, where = _ranges(args)
    packed = np.array(values, dtype=np.int64) if values else np.zeros(1, np.int64)
    memory = device_memory()
    try:
        held = memory.use(ranges)
    except DeviceMemoryError as e:
        refusal = GeValueError(f"launch of {function.name} refused: args[{where[e.position]}]: {e}")
        target.submit(_raiser(refusal), name=f"kernel {function.name}")
        return
    target.submit(
        lambda: _run_blocks(function, block_dim, packed),
        name=f"kernel {function.name}",
        settle=lambda: memory.unuse(held),
    )


def _raiser(error: Exception) -> Callable[[], None]:
    def fail() -> None:
        raise error

    return fail
