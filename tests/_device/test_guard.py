"""The native live-range table kernels check their views against (``ge._device._guard``):
answers against a model over random edits, growth, overlaps, the refusal ring, and readers on
other threads while the table is edited."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from ge._device._guard import _RING, RangeGuard
from ge._device.memory import DeviceMemory


def _model_check(live: list[tuple[int, int]], addr: int, count: int, itemsize: int) -> bool:
    nbytes = count * itemsize
    if count < 0 or nbytes >= 2**64 or addr + nbytes >= 2**64:
        return False
    return nbytes == 0 or any(s <= addr and addr + nbytes <= e for s, e in live)


def test_answers_match_a_model_over_random_inserts_and_removes() -> None:
    guard, live, rng = RangeGuard(), [], random.Random(12)
    for _ in range(3000):  # past the first table's capacity: it grows
        if live and rng.random() < 0.4:
            start, end = live.pop(rng.randrange(len(live)))
            guard.remove(start, end)
        else:
            start = rng.randrange(1, 2**40) * 64
            live.append((start, start + rng.randrange(0, 4096)))
            guard.insert(*live[-1])
    assert guard.ranges() == sorted(live)
    probes = [(s + d, n, 1) for s, e in live[:300] for d, n in ((0, e - s), (1, e - s), (0, 1))]
    probes += [(0x10, 4, 4), (2**64 - 8, 16, 1), (live[0][0], -1, 4), (live[0][0], 2**62, 8)]
    for addr, count, itemsize in probes:
        assert guard.check(addr, count, itemsize) == _model_check(live, addr, count, itemsize)


def test_empty_views_are_accepted_anywhere_and_overlaps_never_accept_dead_memory() -> None:
    guard = RangeGuard()
    assert guard.check(0, 0, 4) and guard.check(0x10, 0, 8)
    guard.insert(1000, 1100)
    guard.insert(1000, 1050)  # the same host array lent twice, once shorter
    guard.insert(1040, 1200)
    assert guard.check(1000, 100, 1) and guard.check(1040, 160, 1)
    assert not guard.check(1000, 201, 1) and not guard.check(990, 20, 1)
    guard.remove(1000, 1100)
    assert guard.ranges() == [(1000, 1050), (1040, 1200)]
    with pytest.raises(KeyError):
        guard.remove(1000, 1100)


def test_refusals_are_recorded_in_order_in_a_bounded_ring() -> None:
    guard = RangeGuard()
    mark = guard.mark()
    for k in range(_RING + 5):
        assert not guard.check(0x1000 + k, 1, 1)
    records = guard.failures_since(mark)
    assert len(records) == _RING  # the oldest were overwritten
    assert [r[1] for r in records] == [0x1000 + k for k in range(5, _RING + 5)]
    assert guard.failures_since(guard.mark()) == []


def test_readers_on_other_threads_see_a_consistent_table_while_it_changes() -> None:
    """A range that stays live is always accepted, one never inserted always refused, while
    another thread inserts, removes and grows the table (the sequence lock's job)."""
    guard = RangeGuard()
    guard.insert(2**30, 2**30 + 4096)
    stop, wrong = threading.Event(), []

    def read() -> None:
        while not stop.is_set():
            if not guard.check(2**30, 1024, 4) or guard.check(2**31, 4, 1):
                wrong.append(1)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    rng = random.Random(5)
    live: list[tuple[int, int]] = []
    for _ in range(20000):
        if live and rng.random() < 0.5:
            guard.remove(*live.pop())
        else:
            start = rng.choice([rng.randrange(1, 2**29), rng.randrange(2**32, 2**40)]) * 64
            live.append((start, start + 64))
            guard.insert(*live[-1])
    stop.set()
    for t in readers:
        t.join()
    assert not wrong


def test_device_memory_keeps_the_table_in_step_with_its_allocations() -> None:
    mem = DeviceMemory()
    before = mem.malloc(100)  # made before the table exists: copied in when it is made
    guard = mem.guard()
    after = mem.malloc(10)
    host = np.zeros(8)
    handle = mem.lend(host)
    assert handle is not None
    assert guard.check(before, 100, 1) and guard.check(after, 10, 1)
    assert guard.check(host.ctypes.data, 8, 8)
    mem.end_loan(handle)
    mem.free(before)
    assert not guard.check(before, 1, 1) and not guard.check(host.ctypes.data, 8, 8)
    mem.lend_to_kernels(host.ctypes.data, host.nbytes)
    assert guard.check(host.ctypes.data, 8, 8) and not mem.contains(host.ctypes.data, 8)
    mem.end_kernel_loan(host.ctypes.data, host.nbytes)
    assert not guard.check(host.ctypes.data, 8, 8)
    mem.free(after)
