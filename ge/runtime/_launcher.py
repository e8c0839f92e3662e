"""A native thread pool that runs the blocks of kernel launches, with no Python per launch.

The pool is a few functions of LLVM IR (below), JIT-compiled with llvmlite and called through
ctypes, which releases the GIL for the call. ``threads() - 1`` worker threads are started on
first use; each is a daemon ``threading.Thread`` whose target enters the native
``ge_worker_main`` and never comes back, so workers run no Python at all. A launch publishes
``(status_fn, block_dim, args)``, and the workers and the calling thread take blocks from one
atomic counter until they run out, so ``block_dim`` may exceed the thread count and fast
threads take more blocks. ``block_dim == 1`` runs on the caller with no synchronisation.

A kernel's status entry has the ABI ``i32 status_fn(i64 block_idx, i64 block_dim, ptr args)``
and returns 0 on success (see ``ge.runtime.kernel``). Once one block returns a nonzero status,
the blocks not yet started are skipped (counted done, not run) and the launch returns the first
nonzero status that was recorded.

Waiting: an idle worker spins on an atomic generation counter for ``_SPIN_US`` microseconds
(with ``pause`` / ``yield`` hints), then sleeps in ``futex(FUTEX_WAIT_PRIVATE)``. A launch makes
the ``futex(FUTEX_WAKE_PRIVATE)`` syscall only when a sleepers count says someone sleeps, so
back-to-back launches cost no syscalls. The caller likewise spins, then sleeps, until the last
block is done.

Decisions (ours):

- Concurrent launches from several Python threads are serialised by a native spin-then-futex
  mutex (the pool has one job slot). A launch with ``block_dim == 1``, or in a process with
  ``threads() == 1``, runs on its caller and does not take the mutex. Nothing a block does can
  launch again, so the mutex cannot deadlock.
- ``GE_NUM_THREADS=n`` (``ge.options.Options.num_threads``, a positive integer, read once at
  first use) sets ``threads()``, the number of threads that run blocks: ``n - 1`` workers plus
  the caller. The default is ``os.cpu_count()``. With ``n == 1`` no worker starts and every
  launch runs inline. Any other value raises ``GeValueError`` from the first use
  (``available()`` included): a typo in it should not silently change the thread count.
- After ``os.fork`` the child forgets the parent's pool (its workers do not exist in the child)
  and starts a fresh one on first use (``os.register_at_fork``). A process forked by other means
  (C ``fork()`` that skips Python's fork hooks) must not use the launcher.
- Workers are pinned, each to its own CPU other than the one the launching thread runs on,
  and re-pinned when a launch comes from another CPU: the native launch calls
  ``sched_getcpu`` itself and, when the CPU changed, returns at once for Python to re-pin
  the workers (``_Pool.place``) and launch again, so a launch costs one ctypes call.
  Unpinned, a woken worker often lands on its waker's CPU and the two then share it for
  good: blocks meant to run side by side run one after the other. With one CPU or one
  thread nothing is pinned.
- The pool is never torn down: its memory lives as long as the process, and the daemon workers,
  parked in native code, do not delay interpreter exit.
- Only Linux on x86-64 and aarch64 (futex numbers, pause hint) is supported; elsewhere, or if
  the JIT fails, ``available()`` is False and callers keep their Python pool.

    >>> from ge.runtime import _launcher
    >>> _launcher.threads() >= 1
    True
    >>> _launcher.launch(0, 0, 0)  # block_dim 0: nothing to run
    0
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import sys
import threading
from collections.abc import Callable
from typing import Any

from ge.error import GeError
from ge.options import Options, current_options
from ge.runtime._launcher_ir import (  # the pool's record layout and IR
    _CFG_CLOCK,
    _CFG_GETCPU,
    _CFG_SPIN_NS,
    _CFG_SYSCALL,
    _CFG_WORKERS,
    _IR,
    _MOVED,
    _MOVED_BASE,
    _PLACED_FOR,
    _POOL_SLOTS,
    _SPIN_US,
    _TARGETS,
)

__all__ = ["available", "launch", "run_tasks", "run_tasks_function", "threads"]


_LAUNCH = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p
)
_LAUNCH_HERE = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p
)
_RUN_TASKS = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)


class _Code:
    """The JIT-compiled pool functions (shared by every pool of the process, forks included).

    Their machine code is kept in the device's code cache (``ge._device._code_cache``, keyed
    on the IR, the process triple and llvmlite's version), so that any later process, one that
    only runs offline models included, loads it instead of generating it (~25 ms). The IR names
    no address (libc's functions are read from the pool record at run time), so the code is
    the same in every process."""

    def __init__(self, machine: str) -> None:
        futex, sched_yield, pause, pause_decl = _TARGETS[machine]
        ir = (
            _IR.replace("@@PAUSE_DECL@@", pause_decl)
            .replace("@@PAUSE@@", pause)
            .replace("@@FUTEX@@", str(futex))
            .replace("@@YIELD@@", str(sched_yield))
            .replace("@@MOVED_BASE@@", str(_MOVED_BASE))
        )
        import llvmlite.binding as llvm  # noqa: PLC0415  (only the first launch needs the JIT)

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        import llvmlite  # noqa: PLC0415

        from ge._device import _code_cache  # noqa: PLC0415

        key = _code_cache.code_key("launcher", ir, llvm.get_process_triple(), llvmlite.__version__)
        self._engine = _code_cache.jit_engine(llvm, key, ir)
        address = self._engine.get_function_address
        self.launch = _LAUNCH(address("ge_launch_placed"))
        self.launch_here = _LAUNCH_HERE(address("ge_launch"))  # no placement check
        self.run_tasks = _RUN_TASKS(address("ge_run_tasks_placed"))
        self.run_tasks_here = _RUN_TASKS(address("ge_run_tasks"))  # no placement check
        self.worker_main = _WORKER(address("ge_worker_main"))


class _Pool:
    """One process's pool: its record and its threads."""

    def __init__(self, code: _Code, nthreads: int, libc: Any) -> None:
        # The record comes from malloc and is never freed: workers read it until the process
        # ends, also while the interpreter shuts down and frees Python-owned memory.
        libc.aligned_alloc.restype = ctypes.c_void_p
        libc.aligned_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        address = libc.aligned_alloc(64, _POOL_SLOTS * 8)
        if not address:
            raise OSError("out of memory for the launcher's pool record")
        ctypes.memset(address, 0, _POOL_SLOTS * 8)
        self.address: int = address
        slots = (ctypes.c_int64 * _POOL_SLOTS).from_address(address)
        slots[_CFG_SYSCALL] = _function_address(libc.syscall)
        slots[_CFG_CLOCK] = _function_address(libc.clock_gettime)
        slots[_CFG_WORKERS] = nthreads - 1
        slots[_CFG_SPIN_NS] = _SPIN_US * 1000
        self.nthreads = nthreads
        self.launch = code.launch
        self.launch_here = code.launch_here
        self.run_tasks = code.run_tasks
        self.run_tasks_here = code.run_tasks_here
        self.workers = [
            threading.Thread(
                target=code.worker_main, args=(self.address, i), name=f"ge-launch-{i}", daemon=True
            )
            for i in range(nthreads - 1)
        ]
        for worker in self.workers:
            worker.start()
        self._slots = slots
        self._cpus = _allowed_cpus()
        slots[_PLACED_FOR] = -1
        getcpu = getattr(libc, "sched_getcpu", None)
        self._getcpu: Callable[[], int] = getcpu if getcpu is not None else _no_cpu
        if getcpu is None or len(self._cpus) < 2 or not self.workers:
            self.keep_apart = _nothing  # type: ignore[method-assign]
        else:  # the native launch asks sched_getcpu itself (no Python call per launch)
            slots[_CFG_GETCPU] = _function_address(getcpu)

    @property
    def _placed_for(self) -> int:
        """The CPU the workers sit apart from (-1 before the first parallel launch)."""
        return int(self._slots[_PLACED_FOR])

    @_placed_for.setter
    def _placed_for(self, cpu: int) -> None:
        self._slots[_PLACED_FOR] = cpu

    def keep_apart(self) -> None:
        """Keep the workers off the calling thread's CPU (checked each run, changed rarely).

        A worker woken by a launch is often put on its waker's CPU (the scheduler's
        wake-affine rule), and once the two share a CPU they stay together: the caller's
        blocks and the worker's run one after the other, and a kernel that should take
        80 µs takes 170, call after call, while another CPU idles. So each worker is pinned
        to its own CPU other than the caller's, and moved when the caller moves.

        The launches check this natively (``ge_launch_placed``: a ``sched_getcpu`` call, and
        when the CPU changed they run nothing and say so, see ``_MOVED_BASE``); this is the
        same check from Python."""
        cpu = self._getcpu()
        if cpu != self._placed_for:
            self.place(cpu)

    def place(self, cpu: int) -> None:
        """Pin each worker to its own CPU other than ``cpu``."""
        self._placed_for = cpu
        others = [c for c in self._cpus if c != cpu] or self._cpus
        for i, worker in enumerate(self.workers):
            tid = worker.native_id
            if tid is not None:
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(tid, {others[i % len(others)]})


def _nothing() -> None:
    pass


def _no_cpu() -> int:
    return -1


def _allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def _function_address(function: Any) -> int:
    address = ctypes.cast(function, ctypes.c_void_p).value
    if not address:
        raise OSError("libc function has no address")
    return int(address)


def _thread_count(options: Options | None = None) -> int:
    """``options.num_threads`` (default ``current_options()``: ``GE_NUM_THREADS``), 0 meaning
    one thread per CPU."""
    count = (current_options() if options is None else options).num_threads
    return count or os.cpu_count() or 1


_lock = threading.Lock()
_code: _Code | None = None
_pool: _Pool | None = None
_unavailable = ""  # why the native pool cannot run here, once known


def _start() -> _Pool | None:
    global _code, _pool, _unavailable  # noqa: PLW0603  (one pool per process, made lazily)
    with _lock:
        if _pool is not None or _unavailable:
            return _pool
        nthreads = _thread_count()  # a bad GE_NUM_THREADS raises every time, not only once
        machine = platform.machine()
        if not sys.platform.startswith("linux") or machine not in _TARGETS:
            _unavailable = f"no native launcher for {sys.platform}/{machine}"
            return None
        try:
            libc = ctypes.CDLL(None)
            if _code is None:
                _code = _Code(machine)
            _pool = _Pool(_code, nthreads, libc)
        except (OSError, AttributeError, RuntimeError, ImportError) as e:
            _unavailable = f"native launcher failed to start: {e}"
            return None
        return _pool


def _forget_after_fork() -> None:
    # The child has none of the parent's workers; it starts its own pool on first use. The
    # lock may have been held by another parent thread at the fork, so it is replaced too.
    global _pool, _lock  # noqa: PLW0603
    _lock = threading.Lock()
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _require() -> _Pool:
    pool = _pool or _start()
    if pool is None:
        raise GeError(f"{_unavailable}; use the Python block pool")
    return pool


def available() -> bool:
    """Whether the native pool can run here (Linux on x86-64 or aarch64, JIT working).

    >>> isinstance(available(), bool)
    True
    """
    return (_pool or _start()) is not None


def threads() -> int:
    """How many threads run blocks: the workers plus the caller (``GE_NUM_THREADS``, default
    ``os.cpu_count()``).

    >>> threads() >= 1
    True
    """
    pool = _pool or _start()
    return pool.nthreads if pool is not None else _thread_count()


def launch(status_fn_address: int, block_dim: int, args_address: int) -> int:
    """Run blocks ``0..block_dim-1`` of a kernel, calling ``status_fn(block, block_dim, args)``
    on the workers and this thread; return when all are done, with 0 or the first nonzero
    status (blocks not yet started when a block fails are skipped). ``block_dim < 1`` runs
    nothing. Raises ``GeError`` if ``available()`` is False.

    >>> launch(0, 0, 0)
    0
    """
    pool = _pool or _require()
    status: int = pool.launch(pool.address, status_fn_address, block_dim, args_address)
    if status < _MOVED:  # the caller moved to another CPU: pin the workers apart, run
        pool.place(_MOVED_BASE - status)
        status = pool.launch_here(pool.address, status_fn_address, block_dim, args_address)
    return status


def run_tasks_function(parallel: bool = True) -> Callable[[int, int], int]:
    """``run_tasks`` as a function bound to the pool, for callers that launch often;
    ``parallel=False`` promises every task has ``block_dim`` 1 (no worker takes part, so
    where the workers sit is not checked)."""
    pool = _pool or _require()
    launch_many, launch_here, address = pool.run_tasks, pool.run_tasks_here, pool.address

    def run_parallel(table_address: int, count: int) -> int:
        if _pool is not pool:  # forked since: this process has a pool of its own
            return run_tasks(table_address, count)
        done: int = launch_many(address, table_address, count)
        if done < _MOVED:  # nothing ran: the caller moved to another CPU
            pool.place(_MOVED_BASE - done)
            done = launch_here(address, table_address, count)
        return done

    def run_serial(table_address: int, count: int) -> int:
        if _pool is not pool:
            return run_tasks(table_address, count)
        return launch_here(address, table_address, count)  # type: ignore[no-any-return]

    return run_parallel if parallel else run_serial


def run_tasks(table_address: int, count: int) -> int:
    """Run ``count`` launches in order, each finished before the next starts. ``table`` holds
    ``count`` records of three int64: ``(status_fn_address, block_dim, args_address)``.
    Returns 0, or ``k + 1`` for the first task ``k`` that failed (later tasks do not run).

    >>> run_tasks(0, 0)
    0
    """
    pool = _pool or _require()
    done: int = pool.run_tasks(pool.address, table_address, count)
    if done < _MOVED:
        pool.place(_MOVED_BASE - done)
        done = pool.run_tasks_here(pool.address, table_address, count)
    return done
