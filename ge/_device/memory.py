"""Device memory: allocations with stable integer addresses, sizes and owners.

Each allocation is a 64-byte-aligned slice of a numpy buffer, and its address is the real
address of that slice, so a compiled kernel can read and write it directly. The memory knows
every live allocation, so it can map an address range back to a numpy view and refuse a range
that is not inside one allocation (instead of touching a wild pointer). Freed buffers are kept
in a small per-size pool and reused.

    >>> mem = device_memory()
    >>> addr = mem.malloc(16, owner="doc")
    >>> mem.view(addr, 16).fill(7); int(mem.view(addr, 1)[0])
    7
    >>> mem.free(addr)
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass

import numpy as np

__all__ = ["ALIGNMENT", "DeviceMemory", "DeviceMemoryError", "device_memory"]

ALIGNMENT = 64
_HUGE_PAGE = 2 << 20
_STAGGER = 81 * 4096  # large blocks start 64 + colour * _STAGGER % 2 MiB past a boundary
_COLOURS = 16
_LENT = "lent"  # the owner of ranges registered by DeviceMemory.lend
_POOL_LIMIT_BYTES = 256 << 20  # freed bytes kept for reuse before buffers go back to the OS


class DeviceMemoryError(RuntimeError):
    """A device address or size was invalid (``ge.runtime`` re-raises it as a ``GeError``)."""


@dataclass(slots=True)
class _Allocation:
    addr: int
    size: int  # bytes the caller asked for
    capacity: int  # bytes usable at addr (size rounded up to the alignment)
    owner: str
    buffer: np.ndarray  # keeps the memory alive
    loans: int = 0  # for a lent range: the lends not yet ended


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

    def malloc(self, size: int, owner: str = "") -> int:
        """Allocate ``size`` bytes (0 is allowed and still gets a unique address)."""
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
            self._live[addr] = _Allocation(addr, size, capacity, owner, buffer)
            bisect.insort(self._starts, addr)
        return addr

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
            raw = np.empty(capacity + ALIGNMENT, dtype=np.uint8)
            offset = -raw.ctypes.data % ALIGNMENT
            return raw[offset : offset + capacity]
        self._colour = (self._colour + 1) % _COLOURS
        stagger = ALIGNMENT + (self._colour * _STAGGER) % _HUGE_PAGE
        raw = np.empty(capacity + _HUGE_PAGE + stagger, dtype=np.uint8)
        offset = -raw.ctypes.data % _HUGE_PAGE + stagger
        return raw[offset : offset + capacity]

    def free(self, addr: int) -> None:
        """Release the allocation that starts at ``addr``."""
        with self._lock:
            alloc = self._live.pop(addr, None)
            if alloc is None:
                raise DeviceMemoryError(f"addr: {addr:#x} is not the start of a live allocation")
            del self._starts[bisect.bisect_left(self._starts, addr)]
            if self._pool_bytes + alloc.capacity <= _POOL_LIMIT_BYTES:
                self._pool.setdefault(alloc.capacity, []).append(alloc.buffer)
                self._pool_bytes += alloc.capacity

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
            self._live[addr] = _Allocation(addr, nbytes, nbytes, _LENT, raw, loans=1)
            bisect.insort(self._starts, addr)
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
                del self._live[handle]
                del self._starts[bisect.bisect_left(self._starts, handle)]

    def _find(self, addr: int, nbytes: int) -> _Allocation | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        alloc = self._live[self._starts[i]]
        inside = addr + nbytes <= alloc.addr + alloc.size
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
        if alloc is None:
            raise DeviceMemoryError(f"addr: {addr:#x} is not the start of a live allocation")
        return alloc.size

    def live_bytes(self) -> int:
        """Bytes requested by all live allocations (for leak tests)."""
        with self._lock:
            return sum(a.size for a in self._live.values())

    def live_count(self) -> int:
        with self._lock:
            return len(self._live)


_MEMORY = DeviceMemory()


def device_memory() -> DeviceMemory:
    """The process-wide device memory."""
    return _MEMORY
