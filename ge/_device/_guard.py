"""The native table of live device ranges that compiled kernels check their views against.

``kernel_array(addr, count, dtype)`` inside a compiled kernel calls ``ge_check_view(addr,
count, itemsize, &lo, &hi)`` once per view (not per element). That function, a few lines of
LLVM IR JIT-compiled with llvmlite (no Numba), looks ``[addr, addr + count * itemsize)`` up in
a sorted table of the live allocations' ``[start, end)`` ranges and answers 1 if the range lies
inside one of them (and writes that range to ``lo``/``hi``), else 0; the kernel then stops
with a nonzero status (see ``ge.runtime._numba_kernels``). Each ``kernel_array`` call site
remembers the last range that held its view, so a loop that views rows of one buffer makes
one lookup, then a compare per row. A refused view is also written to a ring of the last
``_RING`` failures, from which the launcher names the range in its error.

The table is kept by ``DeviceMemory`` under its lock (so there is one writer at a time) and read
by kernels on any thread without a lock, as a sequence lock: the writer makes the sequence word
odd, edits the table, and makes it even again; a reader that saw an odd word, or a different
word after its search, searches again. The search never leaves the table it read: each table
records its own capacity, and the count is clamped to it. A table that grows is replaced by a
copy twice its size; the old one is never freed (a kernel may still be reading it), nor is any
of this memory, which comes from the C heap so that it outlives the interpreter's own objects.

The IR names the table's cell and failure ring by symbol (``ge_guard_cell``,
``ge_guard_ring``), bound to this guard's memory when the JIT links the code, so the machine
code is the same in every process: it is kept in the device's code cache
(``ge._device._code_cache``, keyed on the IR, the process triple and llvmlite's version) and
a later process loads it instead of generating it (which cost a fresh process ~20-30 ms).

Decisions (ours):

- A view of 0 bytes is accepted at any address: it can touch nothing.
- A negative count, or a count times itemsize or an end address past 2**64, is refused.
- The table covers only what ``DeviceMemory`` knows: allocations and lent host ranges. A raw
  address inside another live allocation than the one a kernel meant is inside live memory
  and so accepted: the check stops wild and stale pointers, not mix-ups between live blocks.

    >>> guard = RangeGuard()
    >>> guard.insert(4096, 4160)
    >>> guard.check(4096, 16, 4), guard.check(4096, 17, 4), guard.check(0x10, 1, 1)
    (True, False, False)
    >>> [f[1:] for f in guard.failures_since(0)]
    [(4096, 17, 4), (16, 1, 1)]
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CHECK_SYMBOL", "RangeGuard"]

CHECK_SYMBOL = "ge_check_view"
_RING = 64  # failures remembered
_FIRST_CAPACITY = 1024  # ranges in the first table
_LOOKBACK = 8  # ranges starting at or below a view's address that a check looks at

# Cell (int64 slots): 0 seq (even = stable), 1 table address, 2 failures recorded so far.
# Table: 0 count, 1 capacity, then capacity (start, end) pairs sorted by start.
# Ring: _RING records of (stamp, addr, count, itemsize); stamp = failure number + 1.
_IR = r"""
@ge_guard_cell = external global i64
@ge_guard_ring = external global i64
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
declare {i64, i1} @llvm.umul.with.overflow.i64(i64, i64)
declare {i64, i1} @llvm.uadd.with.overflow.i64(i64, i64)
declare i64 @llvm.usub.sat.i64(i64, i64)

; the index of the first pair whose start is > %addr, among the first %n of table %t
define internal i64 @upper(ptr %t, i64 %n, i64 %addr) {
entry:
  br label %loop
loop:
  %lo = phi i64 [0, %entry], [%lo2, %step]
  %hi = phi i64 [%n, %entry], [%hi2, %step]
  %more = icmp ult i64 %lo, %hi
  br i1 %more, label %step, label %done
step:
  %sum = add i64 %lo, %hi
  %mid = lshr i64 %sum, 1
  %k = shl i64 %mid, 1
  %at = add i64 %k, 2
  %p = getelementptr inbounds i64, ptr %t, i64 %at
  %start = load atomic i64, ptr %p monotonic, align 8
  %le = icmp ule i64 %start, %addr
  %mid1 = add i64 %mid, 1
  %lo2 = select i1 %le, i64 %mid1, i64 %lo
  %hi2 = select i1 %le, i64 %hi, i64 %mid
  br label %loop
done:
  ret i64 %lo
}

define internal void @record(i64 %addr, i64 %count, i64 %itemsize) {
  %headp = getelementptr inbounds i64, ptr @ge_guard_cell, i64 2
  %h = atomicrmw add ptr %headp, i64 1 monotonic
  %slot = and i64 %h, @@RINGMASK@@
  %base = shl i64 %slot, 2
  %p0 = getelementptr inbounds i64, ptr @ge_guard_ring, i64 %base
  store atomic i64 0, ptr %p0 monotonic, align 8
  %p1 = getelementptr inbounds i64, ptr %p0, i64 1
  store atomic i64 %addr, ptr %p1 monotonic, align 8
  %p2 = getelementptr inbounds i64, ptr %p0, i64 2
  store atomic i64 %count, ptr %p2 monotonic, align 8
  %p3 = getelementptr inbounds i64, ptr %p0, i64 3
  store atomic i64 %itemsize, ptr %p3 monotonic, align 8
  %stamp = add i64 %h, 1
  store atomic i64 %stamp, ptr %p0 release, align 8
  ret void
}

define i32 @ge_check_view(i64 %addr, i64 %count, i64 %itemsize, ptr %lo_out, ptr %hi_out) {
entry:
  %neg = icmp slt i64 %count, 0
  br i1 %neg, label %fail, label %size
size:
  %m = call {i64, i1} @llvm.umul.with.overflow.i64(i64 %count, i64 %itemsize)
  %nbytes = extractvalue {i64, i1} %m, 0
  %mov = extractvalue {i64, i1} %m, 1
  br i1 %mov, label %fail, label %empty
empty:
  %none = icmp eq i64 %nbytes, 0
  br i1 %none, label %ok, label %span
span:
  %e = call {i64, i1} @llvm.uadd.with.overflow.i64(i64 %addr, i64 %nbytes)
  %end = extractvalue {i64, i1} %e, 0
  %eov = extractvalue {i64, i1} %e, 1
  br i1 %eov, label %fail, label %read
read:
  %seq1 = load atomic i64, ptr @ge_guard_cell acquire, align 8
  %odd = and i64 %seq1, 1
  %busy = icmp ne i64 %odd, 0
  br i1 %busy, label %read, label %search
search:
  %tpp = getelementptr inbounds i64, ptr @ge_guard_cell, i64 1
  %ti = load atomic i64, ptr %tpp monotonic, align 8
  %t = inttoptr i64 %ti to ptr
  %count0 = load atomic i64, ptr %t monotonic, align 8
  %capp = getelementptr inbounds i64, ptr %t, i64 1
  %cap = load atomic i64, ptr %capp monotonic, align 8
  %small = icmp ult i64 %count0, %cap
  %n = select i1 %small, i64 %count0, i64 %cap
  %u = call i64 @upper(ptr %t, i64 %n, i64 %addr)
  %stop = call i64 @llvm.usub.sat.i64(i64 %u, i64 @@LOOKBACK@@)
  br label %compare
compare:
  ; the ranges that start at or below %addr, nearest first: normally the first one decides;
  ; overlapping ranges (one array lent twice) get a few more looks
  %j = phi i64 [%u, %search], [%i, %further]
  %more = icmp ugt i64 %j, %stop
  br i1 %more, label %probe, label %verdict
probe:
  %i = sub i64 %j, 1
  %k = shl i64 %i, 1
  %at = add i64 %k, 3
  %pe = getelementptr inbounds i64, ptr %t, i64 %at
  %limit = load atomic i64, ptr %pe monotonic, align 8
  %fits = icmp ule i64 %end, %limit
  br i1 %fits, label %hold, label %further
hold:
  %ps = getelementptr inbounds i64, ptr %pe, i64 -1
  %first = load atomic i64, ptr %ps monotonic, align 8
  br label %verdict
further:
  br label %compare
verdict:
  %inside = phi i1 [false, %compare], [true, %hold]
  %lo = phi i64 [0, %compare], [%first, %hold]
  %hi = phi i64 [0, %compare], [%limit, %hold]
  fence acquire
  %seq2 = load atomic i64, ptr @ge_guard_cell monotonic, align 8
  %same = icmp eq i64 %seq1, %seq2
  br i1 %same, label %decide, label %read
decide:
  br i1 %inside, label %hit, label %fail
hit:
  ; the range that holds the view, for the caller to accept later views inside it at once
  store i64 %lo, ptr %lo_out, align 8
  store i64 %hi, ptr %hi_out, align 8
  ret i32 1
ok:
  ret i32 1
fail:
  call void @record(i64 %addr, i64 %count, i64 %itemsize)
  ret i32 0
}

define internal void @begin() {
  %s = load atomic i64, ptr @ge_guard_cell monotonic, align 8
  %odd = add i64 %s, 1
  store atomic i64 %odd, ptr @ge_guard_cell monotonic, align 8
  fence release
  ret void
}

define internal void @end() {
  %s = load atomic i64, ptr @ge_guard_cell monotonic, align 8
  %even = add i64 %s, 1
  store atomic i64 %even, ptr @ge_guard_cell release, align 8
  ret void
}

define internal ptr @table() {
  %tpp = getelementptr inbounds i64, ptr @ge_guard_cell, i64 1
  %ti = load atomic i64, ptr %tpp monotonic, align 8
  %t = inttoptr i64 %ti to ptr
  ret ptr %t
}

; 0: inserted; 1: the table is full
define i32 @ge_guard_insert(i64 %start, i64 %end) {
entry:
  %t = call ptr @table()
  %count = load i64, ptr %t, align 8
  %capp = getelementptr inbounds i64, ptr %t, i64 1
  %cap = load i64, ptr %capp, align 8
  %full = icmp uge i64 %count, %cap
  br i1 %full, label %refuse, label %place
place:
  %pos = call i64 @upper(ptr %t, i64 %count, i64 %start)
  call void @begin()
  %k = shl i64 %pos, 1
  %at = add i64 %k, 2
  %src = getelementptr inbounds i64, ptr %t, i64 %at
  %dst = getelementptr inbounds i64, ptr %src, i64 2
  %tail = sub i64 %count, %pos
  %bytes = shl i64 %tail, 4
  call void @llvm.memmove.p0.p0.i64(ptr %dst, ptr %src, i64 %bytes, i1 false)
  store atomic i64 %start, ptr %src monotonic, align 8
  %pend = getelementptr inbounds i64, ptr %src, i64 1
  store atomic i64 %end, ptr %pend monotonic, align 8
  %count1 = add i64 %count, 1
  store atomic i64 %count1, ptr %t monotonic, align 8
  call void @end()
  ret i32 0
refuse:
  ret i32 1
}

; 0: removed; 1: no range [%start, %end) (of several equal ones, the last goes)
define i32 @ge_guard_remove(i64 %start, i64 %end) {
entry:
  %t = call ptr @table()
  %count = load i64, ptr %t, align 8
  %u = call i64 @upper(ptr %t, i64 %count, i64 %start)
  br label %look
look:
  %j = phi i64 [%u, %entry], [%pos, %next]
  %any = icmp ne i64 %j, 0
  br i1 %any, label %probe, label %refuse
probe:
  %pos = sub i64 %j, 1
  %k = shl i64 %pos, 1
  %at = add i64 %k, 2
  %dst = getelementptr inbounds i64, ptr %t, i64 %at
  %found = load i64, ptr %dst, align 8
  %same = icmp eq i64 %found, %start
  br i1 %same, label %ends, label %refuse
ends:
  %pe = getelementptr inbounds i64, ptr %dst, i64 1
  %found_end = load i64, ptr %pe, align 8
  %match = icmp eq i64 %found_end, %end
  br i1 %match, label %cut, label %next
next:
  br label %look
cut:
  call void @begin()
  %src = getelementptr inbounds i64, ptr %dst, i64 2
  %rest = sub i64 %count, %j
  %bytes = shl i64 %rest, 4
  call void @llvm.memmove.p0.p0.i64(ptr %dst, ptr %src, i64 %bytes, i1 false)
  %count1 = sub i64 %count, 1
  store atomic i64 %count1, ptr %t monotonic, align 8
  call void @end()
  ret i32 0
refuse:
  ret i32 1
}

; makes %new (a filled copy of the table with a larger capacity) the table
define void @ge_guard_publish(i64 %new) {
  call void @begin()
  %tpp = getelementptr inbounds i64, ptr @ge_guard_cell, i64 1
  store atomic i64 %new, ptr %tpp monotonic, align 8
  call void @end()
  ret void
}
"""

_CHECK = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ctypes.c_uint64),
)
_INSERT = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64)
_REMOVE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64)
_PUBLISH = ctypes.CFUNCTYPE(None, ctypes.c_uint64)


def _c_heap(nslots: int) -> Any:
    """``nslots`` zeroed int64s from the C heap, never freed."""
    libc = ctypes.CDLL(None)
    libc.calloc.restype = ctypes.c_void_p
    libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    addr = libc.calloc(nslots, 8)
    if not addr:
        raise MemoryError(f"cannot allocate the device range table ({nslots * 8} bytes)")
    return (ctypes.c_int64 * nslots).from_address(addr)


_CELL_SYMBOL, _RING_SYMBOL = "ge_guard_cell", "ge_guard_ring"
_IR = _IR.replace("@@RINGMASK@@", str(_RING - 1)).replace("@@LOOKBACK@@", str(_LOOKBACK))
# the JIT links the code's references to the cell and ring when it loads it, through
# process-wide symbols: one guard at a time binds them
_LINKING = threading.Lock()


def _compile(llvm: Any, cell: Any, ring: Any) -> Any:
    """An engine running the check code, its cell and ring at ``cell`` and ``ring``. The code
    names them by symbol (not by address), so the object code is the same in every process and
    is loaded from the device's code cache when an earlier process built it."""
    from ge._device import _code_cache  # noqa: PLC0415

    key = _code_cache.code_key("guard", _IR, llvm.get_process_triple(), _llvmlite_version())

    def link(engine: Any) -> None:
        with _LINKING:
            llvm.add_symbol(_CELL_SYMBOL, ctypes.addressof(cell))
            llvm.add_symbol(_RING_SYMBOL, ctypes.addressof(ring))
            engine.finalize_object()

    return _code_cache.jit_engine(llvm, key, _IR, link)


def _llvmlite_version() -> str:
    import llvmlite  # noqa: PLC0415

    return str(llvmlite.__version__)


class RangeGuard:
    """The process's table of live ranges and the compiled check that reads it. Its writers
    (``insert``, ``remove``) must be serialised by the caller."""

    def __init__(self) -> None:
        import llvmlite.binding as llvm  # noqa: PLC0415  (kernels, which need llvmlite, need it)

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self._cell = _c_heap(8)
        self._ring = _c_heap(4 * _RING)
        self._table = self._new_table(_FIRST_CAPACITY)
        self._cell[1] = ctypes.addressof(self._table)
        self._engine = _compile(llvm, self._cell, self._ring)
        address = self._engine.get_function_address
        self.check_address = address(CHECK_SYMBOL)
        self._check = _CHECK(self.check_address)
        self._insert = _INSERT(address("ge_guard_insert"))
        self._remove = _REMOVE(address("ge_guard_remove"))
        self._publish = _PUBLISH(address("ge_guard_publish"))
        # mark(): how many refusals were recorded so far (pass it to failures_since). A read
        # of the cell's slot 2 bound in C: every launch takes a mark, at no Python call.
        self.mark: Callable[[], int] = functools.partial(self._cell.__getitem__, 2)

    @staticmethod
    def _new_table(capacity: int) -> Any:
        table = _c_heap(2 + 2 * capacity)
        table[1] = capacity
        return table

    def insert(self, start: int, end: int) -> None:
        """Add the live range ``[start, end)``. Ranges may overlap (one host array lent by two
        threads): a view is accepted if one of the ``_LOOKBACK`` ranges that start nearest
        below it holds it, so overlaps can only refuse a view that straddles two ranges or
        hides behind many, never accept memory that is not live."""
        if self._insert(start, end):
            self._grow()
            self._insert(start, end)

    def _grow(self) -> None:
        old = self._table
        count, capacity = old[0], old[1]
        new = self._new_table(2 * capacity)
        ctypes.memmove(ctypes.addressof(new) + 16, ctypes.addressof(old) + 16, 16 * count)
        new[0] = count
        self._publish(ctypes.addressof(new))
        self._retired = [*getattr(self, "_retired", []), old]  # read by late kernels: kept
        self._table = new

    def remove(self, start: int, end: int) -> None:
        """Drop the range ``[start, end)`` (one of them, if it was inserted more than once)."""
        if self._remove(start, end):
            raise KeyError(f"no live range [{start:#x}, {end:#x})")

    def check(self, addr: int, count: int, itemsize: int) -> bool:
        """What a kernel's view check answers (for tests and host-side checks)."""
        return self.holder(addr, count, itemsize) is not None

    def holder(self, addr: int, count: int, itemsize: int) -> tuple[int, int] | None:
        """``None`` if the view is refused, else the live range that holds it (``(0, 0)``
        for an empty view, which needs none)."""
        lo, hi = ctypes.c_uint64(0), ctypes.c_uint64(0)
        if not self._check(addr, count, itemsize, ctypes.byref(lo), ctypes.byref(hi)):
            return None
        return lo.value, hi.value

    def failures_since(self, mark: int) -> list[tuple[int, int, int, int]]:
        """``(number, addr, count, itemsize)`` of the refusals recorded after ``mark``
        (the last ``_RING`` of them at most), oldest first; ``mark`` 0 means all of them."""
        records = []
        for slot in range(_RING):
            stamp = self._ring[4 * slot]
            if stamp > mark:
                addr, count, itemsize = (self._ring[4 * slot + k] for k in (1, 2, 3))
                records.append((stamp - 1, addr % 2**64, count, itemsize))
        return sorted(records)

    def ranges(self) -> list[tuple[int, int]]:
        """The table's ranges, in order (for tests)."""
        table = self._table
        return [(table[2 + 2 * i] % 2**64, table[3 + 2 * i] % 2**64) for i in range(table[0])]
