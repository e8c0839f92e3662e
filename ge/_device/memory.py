"""Device memory: allocations with stable integer addresses, sizes and owners.

Each allocation is a 64-byte-aligned slice of a numpy buffer, and its address is the real
address of that slice, so a compiled kernel can read and write it directly. The memory knows
every live allocation, so it can map an address range back to a numpy view and refuse a range
that is not inside one allocation (instead of touching a wild pointer). Freed buffers are kept
in a small per-size pool and reused.

Safety, for kernels that are handed raw addresses:

- Once kernels are in use (``guard()``), every live range is also kept in a native table that
  compiled kernels check each view against (``ge._device._guard``).
- Each allocation has a *generation*, a number never reused: a handle that carries the
  generation it was made for (``MemBlock``) is refused once its memory was freed, even when a
  new allocation got the same address.
- ``use``/``unuse`` count the queued or running work that reads an allocation. ``free`` of an
  allocation in use is stream-ordered, as CUDA's ``cudaFreeAsync`` is: the allocation stops
  being usable at once (new views and uses are refused) but its memory is released only when
  the last use ends, so no kernel ever runs on freed memory.
- ``free`` can be restricted to an owner, so memory that a ``ge.graph.Tensor`` owns is never
  freed through ``ge.runtime.free``.

    >>> mem = device_memory()
    >>> addr = mem.malloc(16, owner="doc")
    >>> mem.view(addr, 16).fill(7); int(mem.view(addr, 1)[0])
    7
    >>> mem.free(addr)
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ge.error import GeError

if TYPE_CHECKING:
    from ge._device._guard import RangeGuard

__all__ = ["ALIGNMENT", "DeviceMemory", "DeviceMemoryError", "device_memory"]

ALIGNMENT = 64
_HUGE_PAGE = 2 << 20
_STAGGER = 81 * 4096  # large blocks start 64 + colour * _STAGGER % 2 MiB past a boundary
_COLOURS = 16
_LENT = "lent"  # the owner of ranges registered by DeviceMemory.lend
_POOL_LIMIT_BYTES = 256 << 20  # freed bytes kept for reuse before buffers go back to the OS


class DeviceMemoryError(GeError):
    """A device address, size or handle was invalid, or device memory ran out (a
    ``RuntimeError``; ``ge.runtime`` re-raises address errors as ``GeValueError``).
    ``position``: for ``use``, the index of the range refused."""

    position = 0


_GENERATIONS = itertools.count(1)  # 0 is "no generation known" (a hand-made handle)


@dataclass(slots=True)
class _Allocation:
    addr: int
    size: int  # bytes the caller asked for
    capacity: int  # bytes usable at addr (size rounded up to the alignment)
    owner: str
    buffer: np.ndarray  # keeps the memory alive
    generation: int
    loans: int = 0  # for a lent range: the lends not yet ended
    uses: int = 0  # queued or running work that reads or writes it
    freed: bool = False  # free() was called while it was in use: released at the last unuse


def _round_up(size: int) -> int:
    return max(ALIGNMENT, -(-size // ALIGNMENT) * ALIGNMENT)


class DeviceMemory:
    """All live device allocations of this process. Thread-safe."""

    def __init__(self) -> None:
        # Re-entrant: a garbage collection inside a locked section can run finalizers that
        # free device memory (tensors, plans) on this very thread.
        self._lock = threading.RLock()
        self._live: dict[int, _Allocation] = {}
        self._starts: list[int] = []  # sorted addresses of live allocations
        self._pool: dict[int, list[np.ndarray]] = {}  # capacity -> spare aligned buffers
        self._pool_bytes = 0
        self._colour = 0  # the stagger of the next large block
        self._guard: RangeGuard | None = None

    def malloc(self, size: int, owner: str = "") -> int:
        """Allocate ``size`` bytes (0 is allowed and still gets a unique address)."""
        return self.allocate(size, owner)[0]

    def allocate(self, size: int, owner: str = "") -> tuple[int, int]:
        """``malloc`` that also returns the allocation's generation: ``(addr, generation)``."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise DeviceMemoryError(f"size: expected a non-negative int, got {size!r}")
        capacity = _round_up(size)
        with self._lock:
            spares = self._pool.get(capacity)
            if spares:
                buffer = spares.pop()
                self._pool_bytes -= capacity
            else:
                buffer = self._new_buffer(capacity)
            addr = buffer.ctypes.data
            generation = next(_GENERATIONS)
            self._live[addr] = _Allocation(addr, size, capacity, owner, buffer, generation)
            bisect.insort(self._starts, addr)
            if self._guard is not None:
                self._guard.insert(addr, addr + size)
        return addr, generation

    def _new_buffer(self, capacity: int) -> np.ndarray:
        # Large blocks start past a 2 MiB boundary (so transparent huge pages back nearly all
        # of them), each at its own offset in its huge page: 64 bytes plus a rotating colour
        # times 324 KiB, modulo 2 MiB. Blocks that all start on the boundary put a kernel's
        # input and output streams at one offset in their huge pages, the slowest placement
        # measured. On the 16M-element chain (our kernel on three device blocks, three runs
        # of five interleaved rounds each): 4 KiB steps 5.75 ms, 324 KiB steps 5.66 ms,
        # 1.23 MiB steps 5.67 ms (a hand-written loop on the same blocks: 5.48, 5.30, 5.32).
        # This VM's bandwidth swings more than that from minute to minute; only interleaved
        # rounds show the order.
        if capacity < _HUGE_PAGE:
            raw = _host_bytes(capacity + ALIGNMENT)
            offset = -raw.ctypes.data % ALIGNMENT
            return raw[offset : offset + capacity]
        self._colour = (self._colour + 1) % _COLOURS
        stagger = ALIGNMENT + (self._colour * _STAGGER) % _HUGE_PAGE
        raw = _host_bytes(capacity + _HUGE_PAGE + stagger)
        offset = -raw.ctypes.data % _HUGE_PAGE + stagger
        return raw[offset : offset + capacity]

    def free(self, addr: int, generation: int = 0, owner: str | None = None) -> None:
        """Release the allocation that starts at ``addr``. With ``generation`` (nonzero), only
        if it is still the allocation of that generation; with ``owner``, only if that owner
        made it. An allocation in use is released when its last use ends (see the module)."""
        with self._lock:
            alloc = self._live.get(addr)
            if alloc is None or alloc.freed or alloc.owner == _LENT:
                raise DeviceMemoryError(f"addr: {addr:#x} is not the start of a live allocation")
            if generation and alloc.generation != generation:
                raise DeviceMemoryError(
                    f"addr: the block at {addr:#x} was already freed (its memory now belongs "
                    f"to a newer allocation)"
                )
            if owner is not None and alloc.owner != owner:
                raise DeviceMemoryError(
                    f"addr: the allocation at {addr:#x} is owned by {alloc.owner or 'ge'}, "
                    f"not by {owner}; free it through its owner"
                )
            if alloc.uses:
                alloc.freed = True
                return
            self._release(alloc)

    def _release(self, alloc: _Allocation) -> None:
        del self._live[alloc.addr]
        del self._starts[bisect.bisect_left(self._starts, alloc.addr)]
        if self._guard is not None:
            self._guard.remove(alloc.addr, alloc.addr + alloc.size)
        if alloc.owner != _LENT and self._pool_bytes + alloc.capacity <= _POOL_LIMIT_BYTES:
            self._pool.setdefault(alloc.capacity, []).append(alloc.buffer)
            self._pool_bytes += alloc.capacity

    def use(self, ranges: Iterable[tuple[int, int, int]]) -> list[_Allocation]:
        """Count one use of the allocations holding ``(addr, nbytes, generation)`` ranges
        (generation 0: any) until ``unuse``; refuses, using none, if a range is not inside a
        live allocation or its generation has passed."""
        with self._lock:
            found: list[_Allocation] = []
            for position, (addr, nbytes, generation) in enumerate(ranges):
                alloc = self._find(addr, nbytes) if nbytes >= 0 else None
                if alloc is None or (generation and alloc.generation != generation):
                    why = (
                        "is not inside live device memory"
                        if alloc is None
                        else "belongs to a block that was freed (its memory now belongs to a "
                        "newer allocation)"
                    )
                    error = DeviceMemoryError(f"range {addr:#x}+{nbytes} {why}")
                    error.position = position
                    raise error
                found.append(alloc)
            for alloc in found:
                alloc.uses += 1
        return found

    def require(self, ranges: Iterable[tuple[int, int, int]]) -> None:
        """Refuse, as ``use`` does, ranges that are not live, without counting a use."""
        self.unuse(self.use(ranges))

    def unuse(self, allocations: list[_Allocation]) -> None:
        """End the uses ``use`` counted; releases allocations freed meanwhile."""
        with self._lock:
            for alloc in allocations:
                alloc.uses -= 1
                if alloc.freed and not alloc.uses:
                    self._release(alloc)

    def lend_to_kernels(self, addr: int, nbytes: int) -> None:
        """Let compiled kernels view host memory ``[addr, addr + nbytes)`` until
        ``end_kernel_loan(addr, nbytes)``: it enters only the kernels' range table, not this
        memory's allocations (``view``/``contains`` do not see it), for ~0.5 µs against the
        ~3 µs of ``lend``. For callers that hand a host array straight to kernels and keep
        it alive meanwhile."""
        with self._lock:
            self.guard().insert(addr, addr + nbytes)

    def end_kernel_loan(self, addr: int, nbytes: int) -> None:
        with self._lock:
            self.guard().remove(addr, addr + nbytes)

    def generation_of(self, addr: int) -> int:
        """The generation of the live allocation starting at ``addr`` (0 if there is none)."""
        with self._lock:
            alloc = self._live.get(addr)
            return 0 if alloc is None or alloc.freed else alloc.generation

    def guard(self) -> RangeGuard:
        """The native table of live ranges that compiled kernels check (made on first use,
        with every range live at that moment)."""
        guard = self._guard
        if guard is not None:
            return guard
        with self._lock:
            if self._guard is None:
                from ge._device._guard import RangeGuard  # noqa: PLC0415  (needs llvmlite)

                guard = RangeGuard()
                for alloc in self._live.values():
                    guard.insert(alloc.addr, alloc.addr + alloc.size)
                self._guard = guard
            return self._guard

    def lend(self, array: np.ndarray) -> int | None:
        """Treat a C-contiguous host array's memory as a live allocation (owner ``"lent"``)
        until ``end_loan``, so work that checks device ranges can read it where it is.
        Returns the loan's handle (its start address); a range inside an earlier loan, as
        when two threads lend one array, shares that loan, counted, so it lasts until both
        end. ``None`` (nothing registered) when the range lies in or overlaps real device
        memory."""
        raw = array.reshape(-1).view(np.uint8)
        addr, nbytes = raw.ctypes.data, int(raw.size)
        if nbytes == 0:
            return None
        with self._lock:
            inside = self._find(addr, nbytes)
            if inside is not None and inside.owner == _LENT:
                inside.loans += 1
                return inside.addr
            j = bisect.bisect_left(self._starts, addr + nbytes) - 1
            if j >= 0:
                near = self._live[self._starts[j]]
                if near.addr + near.capacity > addr:
                    return None
            self._live[addr] = _Allocation(
                addr, nbytes, nbytes, _LENT, raw, next(_GENERATIONS), loans=1
            )
            bisect.insort(self._starts, addr)
            if self._guard is not None:
                self._guard.insert(addr, addr + nbytes)
        return addr

    def end_loan(self, handle: int) -> None:
        """End one ``lend`` of the loan ``handle`` (the memory stays the lender's); the range
        stops being device memory when its last loan ends."""
        with self._lock:
            alloc = self._live.get(handle)
            if alloc is None or alloc.owner != _LENT:
                raise DeviceMemoryError(f"addr: {handle:#x} is not a lent range")
            alloc.loans -= 1
            if alloc.loans == 0:
                if alloc.uses:
                    alloc.freed = True
                else:
                    self._release(alloc)

    def _find(self, addr: int, nbytes: int) -> _Allocation | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        alloc = self._live[self._starts[i]]
        inside = addr + nbytes <= alloc.addr + alloc.size and not alloc.freed
        return alloc if inside else None

    def contains(self, addr: int, nbytes: int) -> bool:
        """Whether ``[addr, addr + nbytes)`` lies inside one live allocation."""
        with self._lock:
            return nbytes >= 0 and self._find(addr, nbytes) is not None

    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """Writable uint8 view of ``[addr, addr + nbytes)``; refuses ranges outside live memory."""
        with self._lock:
            alloc = self._find(addr, nbytes) if nbytes >= 0 else None
            if alloc is None:
                raise DeviceMemoryError(
                    f"range {addr:#x}+{nbytes} is not inside live device memory"
                )
            start = addr - alloc.addr
            return alloc.buffer[start : start + nbytes]

    def size_of(self, addr: int) -> int:
        """Requested size of the allocation that starts at ``addr``."""
        with self._lock:
            alloc = self._live.get(addr)
        if alloc is None or alloc.freed:
            raise DeviceMemoryError(f"addr: {addr:#x} is not the start of a live allocation")
        return alloc.size

    def live_bytes(self) -> int:
        """Bytes requested by all live allocations (for leak tests)."""
        with self._lock:
            return sum(a.size for a in self._live.values())

    def live_count(self) -> int:
        with self._lock:
            return len(self._live)


def _host_bytes(nbytes: int) -> np.ndarray:
    try:
        return np.empty(nbytes, dtype=np.uint8)
    except (MemoryError, ValueError):
        raise DeviceMemoryError(f"out of device memory: cannot allocate {nbytes} bytes") from None


_MEMORY = DeviceMemory()


def device_memory() -> DeviceMemory:
    """The process-wide device memory."""
    return _MEMORY
