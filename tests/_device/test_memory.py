"""The simulated device memory: allocation, views, bounds checks, reuse and thread safety."""

from __future__ import annotations

import ctypes
import itertools
import threading

import numpy as np
import pytest

from ge._device import DeviceMemory, device_memory
from ge._device.memory import ALIGNMENT, DeviceMemoryError


@pytest.fixture
def mem() -> DeviceMemory:
    return DeviceMemory()


def test_device_memory_is_a_process_wide_singleton() -> None:
    assert device_memory() is device_memory()
    assert isinstance(device_memory(), DeviceMemory)


def test_alignment_constant() -> None:
    assert ALIGNMENT == 64


@pytest.mark.parametrize("size", [0, 1, 7, 63, 64, 65, 100, 128, 1000, 4096])
def test_malloc_is_64_byte_aligned(mem: DeviceMemory, size: int) -> None:
    addr = mem.malloc(size)
    assert isinstance(addr, int)
    assert addr % 64 == 0
    assert mem.size_of(addr) == size
    mem.free(addr)


def test_addresses_are_distinct_and_do_not_overlap(mem: DeviceMemory) -> None:
    sizes = [1, 64, 65, 200, 0, 0, 3]
    addrs = [mem.malloc(s) for s in sizes]
    assert len(set(addrs)) == len(addrs)
    spans = sorted((a, a + max(s, 1)) for a, s in zip(addrs, sizes, strict=True))
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start
    for a in addrs:
        mem.free(a)


def test_view_reads_and_writes_the_allocation(mem: DeviceMemory) -> None:
    addr = mem.malloc(16)
    v = mem.view(addr, 16)
    assert v.dtype == np.uint8
    assert v.shape == (16,)
    v[:] = np.arange(16, dtype=np.uint8)
    assert mem.view(addr, 16).tolist() == list(range(16))
    assert mem.view(addr + 4, 4).tolist() == [4, 5, 6, 7]
    mem.view(addr + 8, 2)[:] = 99
    assert mem.view(addr, 16).tolist()[8:11] == [99, 99, 10]
    mem.free(addr)


def test_address_is_the_real_address_of_the_bytes(mem: DeviceMemory) -> None:
    addr = mem.malloc(8)
    mem.view(addr, 8)[:] = np.arange(1, 9, dtype=np.uint8)
    assert ctypes.string_at(addr, 8) == bytes(range(1, 9))
    assert mem.view(addr, 8).ctypes.data == addr
    mem.free(addr)


def test_view_of_a_whole_aligned_block_and_of_nothing(mem: DeviceMemory) -> None:
    addr = mem.malloc(128)
    assert mem.view(addr, 128).size == 128
    assert mem.view(addr + 128, 0).size == 0
    assert mem.view(addr + 17, 0).size == 0
    mem.free(addr)


@pytest.mark.parametrize(("offset", "nbytes"), [(0, 129), (1, 128), (128, 1), (4096, 1), (-1, 1)])
def test_view_refuses_ranges_past_the_block(mem: DeviceMemory, offset: int, nbytes: int) -> None:
    addr = mem.malloc(128)  # a multiple of the alignment: no padding after it
    with pytest.raises(DeviceMemoryError):
        mem.view(addr + offset, nbytes)
    assert not mem.contains(addr + offset, nbytes)
    mem.free(addr)


def test_view_refuses_negative_size(mem: DeviceMemory) -> None:
    addr = mem.malloc(64)
    with pytest.raises(DeviceMemoryError):
        mem.view(addr, -1)
    with pytest.raises(DeviceMemoryError):
        mem.view(addr + 10, -5)
    assert not mem.contains(addr, -1)
    mem.free(addr)


def test_view_refuses_a_freed_block(mem: DeviceMemory) -> None:
    addr = mem.malloc(64)
    mem.free(addr)
    with pytest.raises(DeviceMemoryError):
        mem.view(addr, 1)
    with pytest.raises(DeviceMemoryError):
        mem.view(addr, 0)
    assert not mem.contains(addr, 1)


def test_view_refuses_a_range_spanning_two_blocks(mem: DeviceMemory) -> None:
    a = mem.malloc(64)
    b = mem.malloc(64)
    lo, hi = sorted((a, b))
    with pytest.raises(DeviceMemoryError):
        mem.view(lo, hi - lo + 1)
    mem.free(a)
    mem.free(b)


def test_view_with_nothing_allocated(mem: DeviceMemory) -> None:
    with pytest.raises(DeviceMemoryError):
        mem.view(64, 1)
    assert not mem.contains(64, 1)


def test_device_memory_error_is_a_runtime_error() -> None:
    assert issubclass(DeviceMemoryError, RuntimeError)


def test_contains(mem: DeviceMemory) -> None:
    addr = mem.malloc(64)
    assert mem.contains(addr, 64)
    assert mem.contains(addr, 0)
    assert mem.contains(addr + 63, 1)
    assert mem.contains(addr + 10, 20)
    assert not mem.contains(addr, 65)
    assert not mem.contains(addr + 64, 1)
    assert not mem.contains(addr - 1, 2)
    mem.free(addr)
    assert not mem.contains(addr, 1)


def test_size_of(mem: DeviceMemory) -> None:
    addr = mem.malloc(100)
    assert mem.size_of(addr) == 100
    with pytest.raises(DeviceMemoryError):
        mem.size_of(addr + 1)  # not the start of an allocation
    mem.free(addr)
    with pytest.raises(DeviceMemoryError):
        mem.size_of(addr)


def test_live_bytes_and_count(mem: DeviceMemory) -> None:
    assert mem.live_bytes() == 0
    assert mem.live_count() == 0
    a = mem.malloc(10)
    b = mem.malloc(100)
    c = mem.malloc(0)
    assert mem.live_bytes() == 110  # requested sizes, not padded capacity
    assert mem.live_count() == 3
    mem.free(b)
    assert mem.live_bytes() == 10
    mem.free(a)
    mem.free(c)
    assert mem.live_bytes() == 0
    assert mem.live_count() == 0


def test_zero_size_malloc(mem: DeviceMemory) -> None:
    a = mem.malloc(0)
    b = mem.malloc(0)
    assert a != b  # each still gets its own address
    assert a % 64 == 0
    assert mem.size_of(a) == 0
    assert mem.live_bytes() == 0
    assert mem.live_count() == 2
    assert mem.view(a, 0).size == 0
    assert mem.contains(a, 0)
    mem.free(a)
    mem.free(b)
    assert mem.live_count() == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "8", None, True])
def test_malloc_rejects_bad_sizes(mem: DeviceMemory, bad: object) -> None:
    with pytest.raises(DeviceMemoryError):
        mem.malloc(bad)  # type: ignore[arg-type]
    assert mem.live_count() == 0


def test_double_free_is_refused(mem: DeviceMemory) -> None:
    addr = mem.malloc(32)
    mem.free(addr)
    with pytest.raises(DeviceMemoryError):
        mem.free(addr)
    assert mem.live_bytes() == 0


def test_free_of_an_interior_or_unknown_address_is_refused(mem: DeviceMemory) -> None:
    addr = mem.malloc(128)
    with pytest.raises(DeviceMemoryError):
        mem.free(addr + 64)
    with pytest.raises(DeviceMemoryError):
        mem.free(12345)
    assert mem.size_of(addr) == 128  # the real block survives the refused frees
    mem.free(addr)


def test_freed_memory_is_reused(mem: DeviceMemory) -> None:
    addr = mem.malloc(200)
    mem.free(addr)
    again = mem.malloc(200)
    assert again == addr
    assert mem.size_of(again) == 200
    mem.free(again)


def test_reused_block_is_usable_and_tracked(mem: DeviceMemory) -> None:
    first = mem.malloc(64, owner="a")
    mem.free(first)
    seen = {mem.malloc(64, owner="b") for _ in range(3)}
    assert first in seen
    assert len(seen) == 3
    for a in seen:
        mem.view(a, 64)[:] = 1
        mem.free(a)
    assert mem.live_count() == 0


def test_distinct_memories_do_not_share_allocations() -> None:
    m1, m2 = DeviceMemory(), DeviceMemory()
    addr = m1.malloc(64)
    assert not m2.contains(addr, 1)
    with pytest.raises(DeviceMemoryError):
        m2.free(addr)
    m1.free(addr)


@pytest.mark.parametrize("shared", [False, True], ids=["fresh", "process-wide"])
def test_concurrent_malloc_free(shared: bool) -> None:
    mem = device_memory() if shared else DeviceMemory()
    start_bytes = mem.live_bytes()
    start_count = mem.live_count()
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            barrier.wait()
            held: list[tuple[int, int, int]] = []
            for i in range(300):
                size = int(rng.integers(0, 300))
                addr = mem.malloc(size, owner=f"t{seed}")
                fill = (seed * 31 + i) % 256
                mem.view(addr, size)[:] = fill
                held.append((addr, size, fill))
                if len(held) > 4 or rng.random() < 0.5:
                    a, s, f = held.pop(int(rng.integers(0, len(held))))
                    assert mem.size_of(a) == s
                    assert np.all(mem.view(a, s) == f), "another thread wrote into my block"
                    mem.free(a)
            for a, s, f in held:
                assert np.all(mem.view(a, s) == f)
                mem.free(a)
        except BaseException as e:  # collected and re-raised on the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert mem.live_bytes() == start_bytes
    assert mem.live_count() == start_count


def test_large_blocks_are_staggered_past_huge_page_boundaries(mem: DeviceMemory) -> None:
    from ge._device.memory import _COLOURS, _HUGE_PAGE, _STAGGER

    addrs = [mem.malloc(_HUGE_PAGE + 100) for _ in range(_COLOURS + 1)]
    try:
        offsets = [a % _HUGE_PAGE for a in addrs]
        assert all(o % ALIGNMENT == 0 and (o - ALIGNMENT) % 4096 == 0 for o in offsets)
        colours = {ALIGNMENT + (c * _STAGGER) % _HUGE_PAGE for c in range(_COLOURS)}
        assert set(offsets) <= colours
        assert len(set(offsets[:_COLOURS])) == _COLOURS  # each its own offset, then around
        for a in addrs:
            mem.view(a, _HUGE_PAGE + 100)[-1] = 1  # the whole block is usable
    finally:
        for a in addrs:
            mem.free(a)


def test_a_host_array_can_be_lent_for_a_while(mem: DeviceMemory) -> None:
    host = np.arange(256, dtype=np.float32)
    addr = mem.lend(host)
    assert addr == host.ctypes.data
    assert mem.contains(addr, host.nbytes)
    np.testing.assert_array_equal(mem.view(addr + 4, 8).view(np.float32), host[1:3])
    with pytest.raises(DeviceMemoryError, match="not the start of a live allocation"):
        mem.free(addr + 4)
    mem.end_loan(addr)
    assert not mem.contains(addr, 4)
    assert mem.live_count() == 0
    with pytest.raises(DeviceMemoryError, match="not a lent range"):
        mem.end_loan(addr)


def test_device_memory_is_never_lent_again(mem: DeviceMemory) -> None:
    addr = mem.malloc(1024)
    inside = mem.view(addr, 1024)
    assert mem.lend(inside[100:200]) is None  # already device memory: used as it is
    assert mem.lend(np.zeros(0, np.uint8)) is None
    with pytest.raises(DeviceMemoryError, match="not a lent range"):
        mem.end_loan(addr)  # a real allocation is not ended as a loan
    mem.free(addr)


def test_a_range_lent_twice_stays_until_both_loans_end(mem: DeviceMemory) -> None:
    host = np.arange(64, dtype=np.float64)
    first = mem.lend(host)
    second = mem.lend(host[8:16])  # inside the first loan: the same loan, counted
    assert first == second == host.ctypes.data
    mem.end_loan(first)
    assert mem.contains(host.ctypes.data + 64, 64)  # the other lender still reads it
    mem.end_loan(second)
    assert not mem.contains(host.ctypes.data, 8)
    assert mem.live_count() == 0
