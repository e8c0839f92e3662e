"""A finalizer that frees device memory can run in the middle of a malloc or free (garbage
collection triggered inside the memory's critical section) without deadlocking."""

from __future__ import annotations

import gc
import threading
import weakref

from ge._device.memory import DeviceMemory


class _Holder:
    pass


def test_free_from_a_finalizer_during_malloc_does_not_deadlock() -> None:
    memory = DeviceMemory()
    done = threading.Event()

    def work() -> None:
        for _ in range(200):
            holder = _Holder()
            addr = memory.malloc(64)
            weakref.finalize(holder, memory.free, addr)
            holder.cycle = holder  # type: ignore[attr-defined]  (only the GC frees it)
            del holder
            with memory._lock:  # a GC here runs the finalizer while the lock is held
                gc.collect(1)  # the young generations hold the new cycle (a full collection
                #                of a large test process's heap, 200 times, takes minutes)
        done.set()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    assert done.wait(60), "device memory deadlocked when a finalizer freed under its lock"
    gc.collect()
    assert memory.live_count() == 0
