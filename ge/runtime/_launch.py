"""Launching kernels: ``launch_kernel`` queues a loaded ``KernelFunction`` on a stream and runs
its blocks on the native pool of ``ge.runtime._launcher`` (a Python thread pool where there is
none), checking and holding the device ranges among its arguments, and names what a failed launch
did wrong (``describe_failure``).

Decisions (ours): this is its own module, apart from ``ge.runtime.kernel`` (which compiles and
loads binaries and re-exports these names), because ``kernel.py`` is part of the kernel cache's
fingerprint (``ge.compiler.kernels._disk_cache``): editing it recompiles every cached kernel,
and nothing here changes the code a kernel compiles to.
"""

from __future__ import annotations

import array
import ctypes
import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ge._device.memory import DeviceMemoryError, device_memory
from ge.allocator import MemBlock
from ge.error import GeError, GeTypeError, GeValueError
from ge.runtime import _launcher
from ge.runtime._launcher_ir import _MOVED, _MOVED_BASE
from ge.runtime._record import FrozenRecord
from ge.runtime.stream import _STREAMS, Stream, resolve_stream

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from ge.runtime.kernel import KernelBinary

__all__ = [
    "DeviceRange",
    "KernelFunction",
    "describe_failure",
    "failure_mark",
    "launch_kernel",
    "run_blocks",
]

_ENV_BOUNDSCHECK = "GE_KERNEL_BOUNDSCHECK"
_CFUNC = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)


class DeviceRange(FrozenRecord):
    """An address argument with its extent, checked against live memory at launch.
    ``generation`` (from ``DeviceRange.of(block)``) also refuses it once the block it came
    from was freed, even if its address was reused; 0 checks the range alone."""

    __match_args__ = ("addr", "nbytes", "generation")
    __slots__ = ("addr", "generation", "nbytes")
    addr: int
    nbytes: int
    generation: int

    def __init__(self, addr: int, nbytes: int, generation: int = 0) -> None:
        self._set("addr", addr)
        self._set("nbytes", nbytes)
        self._set("generation", generation)

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


class KernelFunction:
    """One kernel entry point of a loaded binary. ``label`` (``"kernel <name>"``) names its
    launches on a stream, and ``failure_mark`` is the device guard's ``mark``, bound once
    (see ``failure_mark()``): a launch reads both without a lookup."""

    __slots__ = (
        "_binary",
        "_status",
        "address",
        "failure_mark",
        "label",
        "name",
        "status_address",
    )

    def __init__(self, binary: KernelBinary, name: str, address: int, status: int) -> None:
        self._binary = binary  # keeps the JIT engine (and the code) alive
        self.name = name
        self.label = f"kernel {name}"
        self.address = address
        self.status_address = status  # i32 (block_idx, block_dim, args): 0 = ok
        self._status = _CFUNC(status)
        self.failure_mark: Callable[[], int] = device_memory().guard().mark

    def __call__(self, block_idx: int, block_dim: int, args: np.ndarray) -> int:
        """Run one block now, on this thread; returns Numba's status (0 = ok)."""
        return int(self._status(block_idx, block_dim, args.ctypes.data))

    def run_block_at(self, block_idx: int, block_dim: int, args_address: int) -> int:
        """``self(block_idx, block_dim, args)`` with the arguments' address."""
        return int(self._status(block_idx, block_dim, args_address))

    @property
    def binary(self) -> KernelBinary:
        """The loaded binary this function is an entry point of."""
        return self._binary

    def __repr__(self) -> str:
        return f"<KernelFunction {self.name} at {self.address:#x}>"


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


_Packed = ctypes.Array[ctypes.c_int64]


@functools.cache
def _int64s(count: int) -> type[_Packed]:
    """The ctypes type of ``count`` int64s (made once per count)."""
    return ctypes.c_int64 * count


def _run_packed(
    function: KernelFunction, block_dim: int, packed: _Packed | array.array[int], address: int
) -> None:
    """Run ``function``'s blocks on the int64 arguments ``packed`` holds at ``address`` (the
    launch keeps ``packed`` alive until it ran)."""
    mark = function.failure_mark()
    _raise_failed(function, _run_blocks(function, block_dim, address), packed, mark)


def _run_blocks(function: KernelFunction, block_dim: int, address: int) -> int:
    """Run the blocks on the native pool (one call), on Python threads only where it cannot
    run; the launch's status."""
    try:
        return _launcher.launch(function.status_address, block_dim, address)
    except GeError as e:
        return _run_on_python_threads(function, block_dim, address, e)


def _raise_failed(
    function: KernelFunction, status: int, packed: _Packed | array.array[int], mark: int
) -> None:
    """``GeError`` describing a launch whose ``status`` is not 0 (its arguments ``packed``)."""
    if status:
        args = np.frombuffer(memoryview(packed), np.int64)
        raise GeError(describe_failure(function.name, status, args, mark))


def run_blocks(function: KernelFunction, block_dim: int, args: np.ndarray) -> int:
    """Run blocks ``0..block_dim-1`` now (on the native pool when there is one, else on a
    Python thread pool); returns 0 or a failing block's status."""
    try:  # a third of ``args.ctypes.data``'s cost
        address = ctypes.addressof(ctypes.c_char.from_buffer(args))  # type: ignore[arg-type]
    except (TypeError, ValueError):  # read-only or empty: numpy's own answer
        address = args.ctypes.data
    try:
        return _launcher.launch(function.status_address, block_dim, address)
    except GeError as e:
        return _run_on_python_threads(function, block_dim, address, e)


def _run_on_python_threads(
    function: KernelFunction, block_dim: int, args_address: int, refusal: GeError
) -> int:
    """The blocks run on the Python pool after the native launch raised ``refusal``, which is
    raised again unless the native pool cannot run in this process."""
    if _launcher.available():  # (raises again if GE_NUM_THREADS is wrong)
        raise refusal
    if block_dim == 1:
        return function.run_block_at(0, 1, args_address)
    blocks = [
        _pool().submit(function.run_block_at, b, block_dim, args_address) for b in range(block_dim)
    ]
    return next((s for s in (f.result() for f in blocks) if s), 0)


_INTS = frozenset({int})


def launch_kernel(
    function: KernelFunction, block_dim: int, stream: Stream | int, args: Sequence[Any]
) -> None:
    """Queue ``function`` on ``stream`` with ``block_dim`` parallel blocks and ``args``.

    Returns at once; a failure (bad address, kernel error) surfaces at
    ``stream.synchronize()``.
    """
    if (  # the common case: plain int arguments (no ranges to hold)
        type(function) is KernelFunction
        and type(block_dim) is int
        and 1 <= block_dim < 2**32
        and type(args) is list
        and args
        and _INTS.issuperset(map(type, args))  # (no set made)
    ):
        try:  # an int64 array.array: half a ctypes array's cost, and it refuses (where
            # ctypes would wrap) a value outside int64, which the checked path then names
            packed = array.array("q", args)
        except OverflowError:
            pass
        else:
            address = packed.buffer_info()[0]
            ref = _STREAMS.get(stream) if type(stream) is int else None  # a handle's stream
            target = (ref() if ref is not None else None) or resolve_stream(stream)
            if type(target) in INLINE_STREAMS:  # it runs work at once: no task to queue
                if target._error is None:  # later work is skipped behind a failure
                    # _run_packed written out: one try on the native pool, when it runs
                    mark = function.failure_mark()
                    pool = _launcher._pool
                    status = (
                        _MOVED_BASE
                        if pool is None
                        else pool.launch(pool.address, function.status_address, block_dim, address)
                    )
                    if status:
                        _finish_inline(target, function, block_dim, packed, mark, status)
                return
            run = functools.partial(_run_packed, function, block_dim, packed, address)
            target.submit(run, name=function.label)
            return
    _launch_checked(function, block_dim, stream, args)


def _finish_inline(
    target: Stream,
    function: KernelFunction,
    block_dim: int,
    packed: array.array[int],
    mark: int,
    status: int,
) -> None:
    """The rest of an inline launch whose try on the native pool returned ``status`` != 0:
    run it where it did not run (no pool yet, the caller moved to another CPU, no native
    pool here) and keep a failure for ``synchronize()``, as ``submit`` keeps it."""
    address = packed.buffer_info()[0]
    try:
        if status < _MOVED:  # nothing ran
            status = _run_blocks(function, block_dim, address)
        _raise_failed(function, status, packed, mark)
    except Exception as e:
        target._error, target._failed_task = e, function.label


# Stream classes whose submit() runs the work at once on the queueing thread, keeping a
# failure for synchronize() and skipping work behind one (a custom op's execute stream,
# ge.custom_op._eager, registers its class): launch_kernel runs a plain-int launch on one
# directly, as submit would, without making the task (a partial) and the call to run it.
INLINE_STREAMS: set[type[Stream]] = set()


def _launch_checked(
    function: KernelFunction, block_dim: int, stream: Stream | int, args: Sequence[Any]
) -> None:
    """``launch_kernel`` for any arguments: each checked, ranges held until the launch ran."""
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
    packed = _int64s(len(values))(*values) if values else _int64s(1)()
    memory = device_memory()
    try:
        held = memory.use(ranges)
    except DeviceMemoryError as e:
        refusal = GeValueError(f"launch of {function.name} refused: args[{where[e.position]}]: {e}")
        target.submit(_raiser(refusal), name=function.label)
        return
    target.submit(
        functools.partial(_run_packed, function, block_dim, packed, ctypes.addressof(packed)),
        name=function.label,
        settle=lambda: memory.unuse(held),
    )


def _raiser(error: Exception) -> Callable[[], None]:
    def fail() -> None:
        raise error

    return fail
