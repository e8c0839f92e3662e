"""``ge.runtime._launcher``: the native block pool runs every block of a launch exactly once,
on several threads at a time, returns the first failing status without deadlocking, keeps
``run_tasks`` in order with a barrier between tasks, serialises launches from many Python
threads, wakes workers that went to sleep, honours ``GE_NUM_THREADS`` and survives ``fork``.

Kernels are compiled once per module. Every launch that could hang on a broken pool runs under
a deadlock guard (a thread joined with a timeout). Nothing here asserts on elapsed time; one
test bounds the CPU time an idle pool burns.
"""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ge.runtime import KernelFunction, compile_kernel, kernel_array, load_kernel_binary, memory
from ge.runtime import _launcher as launcher

GUARD_S = 30.0  # deadlock guard only
SPIN_CAP = 2**28  # iteration cap of the rendezvous kernel's spin

# checked without starting the pool, which starts on first use (not at collection)
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"),
    reason="the native launcher is for Linux on x86-64 and aarch64",
)


# --- kernels (module level so Numba resolves their globals) -------------------------------------
def index_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """out[block_idx] = block_idx + args[1]."""
    out = kernel_array(args[0], block_dim, np.int64)
    out[block_idx] = block_idx + args[1]


def add_one_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """dst[i] = src[i] + 1, blocks interleaved over n = args[2] elements."""
    n = args[2]
    src = kernel_array(args[0], n, np.int64)
    dst = kernel_array(args[1], n, np.int64)
    for i in range(block_idx, n, block_dim):
        dst[i] = src[i] + 1


def count_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """counts[block_idx] += 1: a block run twice or never shows in the count."""
    counts = kernel_array(args[0], block_dim, np.int64)
    counts[block_idx] += 1


def fail_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """Sets tried[block_idx] = 1, then raises (a nonzero status) if block_idx >= args[0]."""
    tried = kernel_array(args[1], block_dim, np.int64)
    tried[block_idx] = 1
    if block_idx >= args[0]:
        raise ValueError("block failed")


# A block that checks in on a shared counter and waits until block_dim blocks have: it ends
# (status 0) only if block_dim blocks run at the same time, else gives up with status 9. The
# last block to check in then keeps its thread busy for args[2] more turns. Each block checks
# out (adds 1 again) as it ends, so the counter ends at 2 * block_dim.
_RENDEZVOUS_IR = """
define i32 @rendezvous(i64 %block_idx, i64 %block_dim, ptr %args) {
entry:
  %counter = load ptr, ptr %args, align 8
  %capp = getelementptr inbounds i64, ptr %args, i64 1
  %cap = load i64, ptr %capp, align 8
  %delayp = getelementptr inbounds i64, ptr %args, i64 2
  %delay = load i64, ptr %delayp, align 8
  %in = atomicrmw add ptr %counter, i64 1 seq_cst, align 8
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %again ]
  %n = load atomic i64, ptr %counter seq_cst, align 8
  %all = icmp sge i64 %n, %block_dim
  br i1 %all, label %met, label %again
again:
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %cap
  br i1 %more, label %loop, label %gave_up
met:
  %last_in = sub i64 %block_dim, 1
  %last = icmp eq i64 %in, %last_in
  br i1 %last, label %busy, label %done
busy:
  %j = phi i64 [ 0, %met ], [ %j1, %busy ]
  %m = load atomic i64, ptr %counter seq_cst, align 8
  %j1 = add i64 %j, 1
  %busier = icmp slt i64 %j1, %delay
  br i1 %busier, label %busy, label %done
done:
  %out = atomicrmw add ptr %counter, i64 1 seq_cst, align 8
  ret i32 0
gave_up:
  ret i32 9
}
"""


class _IrKernel:
    """A status function JIT-compiled from IR text, kept alive with its engine."""

    def __init__(self, ir: str, name: str) -> None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        module = llvm.parse_assembly(ir)
        machine = llvm.Target.from_default_triple().create_target_machine()
        self._engine = llvm.create_mcjit_compiler(module, machine)
        self._engine.finalize_object()
        self.address = self._engine.get_function_address(name)


def _status_address(function: KernelFunction) -> int:
    # The status entry (i32 name__ge_status(...)) that the launcher calls.
    address = ctypes.cast(function._status, ctypes.c_void_p).value
    assert address
    return int(address)


_LOANS: list[int] = []


def _args(*values: int | np.ndarray) -> np.ndarray:
    """Packed launch arguments; a host array goes in as its address, lent to the device for
    the test (kernels view only live device memory)."""
    return np.array([_lent(v) if isinstance(v, np.ndarray) else v for v in values], np.int64)


def _lent(array: np.ndarray) -> int:
    handle = memory.lend(array)
    if handle is not None:
        _LOANS.append(handle)
    return int(array.ctypes.data)


@pytest.fixture(autouse=True)
def _end_loans() -> Any:
    yield
    while _LOANS:
        memory.end_loan(_LOANS.pop())


def _guarded(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` on a thread; fail (instead of hanging the suite) if it does not return."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def body() -> None:
        try:
            result.append(fn(*args))
        except BaseException as e:  # reported on the test's thread
            errors.append(e)

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    worker.join(GUARD_S)
    assert not worker.is_alive(), "launcher deadlocked"
    if errors:
        raise errors[0]
    return result[0]


def _launch(status_address: int, block_dim: int, args: np.ndarray) -> int:
    return int(_guarded(launcher.launch, status_address, block_dim, args.ctypes.data))


# --- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def binaries() -> dict[str, bytes]:
    kernels = {
        "index": index_kernel,
        "add_one": add_one_kernel,
        "count": count_kernel,
        "fail": fail_kernel,
    }
    return {name: compile_kernel(kernel, name) for name, kernel in kernels.items()}


@pytest.fixture(scope="module")
def functions(binaries: dict[str, bytes]) -> dict[str, KernelFunction]:
    return {name: load_kernel_binary(data).get_function(name) for name, data in binaries.items()}


@pytest.fixture(scope="module")
def status(functions: dict[str, KernelFunction]) -> dict[str, int]:
    """Status-entry addresses (``functions`` keeps the code alive for the module)."""
    return {name: _status_address(fn) for name, fn in functions.items()}


@pytest.fixture(scope="module")
def fail_status(functions: dict[str, KernelFunction]) -> int:
    """The status one failing block of ``fail_kernel`` returns when called directly."""
    tried = np.zeros(1, np.int64)
    code = functions["fail"](0, 1, _args(0, tried))
    assert code != 0
    return code


@pytest.fixture(scope="module")
def rendezvous() -> _IrKernel:
    return _IrKernel(_RENDEZVOUS_IR, "rendezvous")


# --- launch -------------------------------------------------------------------------------------
def test_threads_defaults_to_cpu_count_or_the_environment() -> None:
    assert launcher.available()
    env = os.environ.get("GE_NUM_THREADS")
    assert launcher.threads() == (int(env) if env else os.cpu_count())
    workers = [t for t in threading.enumerate() if t.name.startswith("ge-launch-")]
    assert len(workers) == launcher.threads() - 1
    assert all(t.daemon for t in workers)


@pytest.mark.parametrize("block_dim", [1, 2, 7, 1000])
def test_every_block_runs_once_with_its_index(status: dict[str, int], block_dim: int) -> None:
    out = np.full(block_dim, -1, np.int64)
    args = _args(out, 5)
    assert _launch(status["index"], block_dim, args) == 0
    np.testing.assert_array_equal(out, np.arange(block_dim) + 5)

    counts = np.zeros(block_dim, np.int64)
    args = _args(counts)
    for _ in range(3):
        assert _launch(status["count"], block_dim, args) == 0
    np.testing.assert_array_equal(counts, np.full(block_dim, 3))


def test_block_dim_below_one_runs_nothing(status: dict[str, int]) -> None:
    counts = np.zeros(4, np.int64)
    args = _args(counts)
    assert launcher.launch(status["count"], 0, args.ctypes.data) == 0
    assert launcher.launch(status["count"], -3, args.ctypes.data) == 0
    assert not counts.any()


def test_blocks_run_on_threads_at_the_same_time(rendezvous: _IrKernel) -> None:
    # block_dim == threads(): the kernel only succeeds if every thread holds a block at once
    n = launcher.threads()
    if n < 2:
        pytest.skip("one thread runs blocks")
    for _ in range(20):
        counter = np.zeros(1, np.int64)
        args = _args(counter, SPIN_CAP, 0)
        assert _launch(rendezvous.address, n, args) == 0
        assert counter[0] == 2 * n


def test_the_caller_waits_for_a_slow_block_on_another_thread(rendezvous: _IrKernel) -> None:
    # The last block to check in stays busy for ~ms, far past the caller's spin: whenever that
    # block is a worker's, the caller sleeps until the worker wakes it.
    n = launcher.threads()
    if n < 2:
        pytest.skip("one thread runs blocks")
    for _ in range(12):
        counter = np.zeros(1, np.int64)
        args = _args(counter, SPIN_CAP, 2_000_000)
        assert _launch(rendezvous.address, n, args) == 0
        assert counter[0] == 2 * n  # every block ended before launch returned


def test_many_back_to_back_launches_run_each_block_once(status: dict[str, int]) -> None:
    counts = {dim: np.zeros(dim, np.int64) for dim in (2, 3, 16)}
    args = {dim: _args(c) for dim, c in counts.items()}
    fn = status["count"]

    def run() -> None:
        for i in range(3000):
            dim = (2, 3, 16)[i % 3]
            assert launcher.launch(fn, dim, args[dim].ctypes.data) == 0

    _guarded(run)
    for c in counts.values():
        np.testing.assert_array_equal(c, np.full(len(c), 1000))


def test_launches_after_idle_wake_the_sleeping_workers(
    status: dict[str, int], rendezvous: _IrKernel
) -> None:
    n = max(2, launcher.threads())
    for dim in (2, 7, n):
        out = np.full(dim, -1, np.int64)
        args = _args(out, dim)
        time.sleep(0.05)  # well past the spin: the workers sleep in futex_wait
        assert _launch(status["index"], dim, args) == 0
        np.testing.assert_array_equal(out, np.arange(dim) + dim)
    if launcher.threads() >= 2:
        for _ in range(3):
            time.sleep(0.05)  # every sleeper must wake for the rendezvous to meet
            counter = np.zeros(1, np.int64)
            args = _args(counter, SPIN_CAP, 0)
            assert _launch(rendezvous.address, n, args) == 0
            assert counter[0] == 2 * n


def test_idle_workers_sleep_instead_of_spinning(status: dict[str, int]) -> None:
    # After a launch, workers spin for tens of microseconds, then sleep: over 0.3 s of idle
    # the process uses far less CPU than one spinning thread would (0.3 s each).
    if launcher.threads() < 2:
        pytest.skip("no workers")
    counts = np.zeros(2, np.int64)
    args = _args(counts)
    assert _launch(status["count"], 2, args) == 0
    before = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - before < 0.1


# --- failures -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("block_dim", "first_bad"), [(1, 0), (2, 1), (7, 0), (1000, 500)])
def test_a_failing_block_returns_its_status_and_the_pool_goes_on(
    status: dict[str, int], fail_status: int, block_dim: int, first_bad: int
) -> None:
    tried = np.zeros(block_dim, np.int64)
    args = _args(first_bad, tried)
    code = _launch(status["fail"], block_dim, args)
    assert code == fail_status
    assert tried[first_bad:].any()
    # the pool is healthy afterwards
    out = np.full(block_dim, -1, np.int64)
    ok = _args(out, 0)
    assert _launch(status["index"], block_dim, ok) == 0
    np.testing.assert_array_equal(out, np.arange(block_dim))


def test_a_failure_skips_blocks_not_yet_started(status: dict[str, int], fail_status: int) -> None:
    # every block fails: each thread runs at most one before it sees the recorded failure
    block_dim = 100_000
    tried = np.zeros(block_dim, np.int64)
    args = _args(0, tried)
    code = _launch(status["fail"], block_dim, args)
    assert code == fail_status
    assert 1 <= tried.sum() <= launcher.threads()


# --- run_tasks ----------------------------------------------------------------------------------
def _table(*tasks: tuple[int, int, int]) -> np.ndarray:
    return np.array(tasks, np.int64).reshape(len(tasks), 3)


def test_run_tasks_finishes_each_task_before_the_next(status: dict[str, int]) -> None:
    n = 64
    a, b, c = (np.full(n, -1, np.int64) for _ in range(3))
    args_index = _args(a, 100)
    args_ab = _args(a, b, n)
    args_bc = _args(b, c, n)
    args_ca = _args(c, a, n)
    table = _table(
        (status["index"], n, args_index.ctypes.data),  # a = arange + 100
        (status["add_one"], 5, args_ab.ctypes.data),  # b = a + 1
        (status["add_one"], 3, args_bc.ctypes.data),  # c = b + 1
        (status["add_one"], 1, args_ca.ctypes.data),  # a = c + 1
        (status["add_one"], 7, args_ab.ctypes.data),  # b = a + 1
    )

    def run() -> None:
        for _ in range(200):
            for x in (a, b, c):
                x.fill(-1)
            assert launcher.run_tasks(table.ctypes.data, len(table)) == 0
            np.testing.assert_array_equal(a, np.arange(n) + 103)
            np.testing.assert_array_equal(b, np.arange(n) + 104)
            np.testing.assert_array_equal(c, np.arange(n) + 102)

    _guarded(run)


def test_run_tasks_returns_one_plus_the_first_failing_task_and_stops(
    status: dict[str, int],
) -> None:
    ran_ok = np.zeros(4, np.int64)
    tried = np.zeros(6, np.int64)
    after = np.zeros(3, np.int64)
    table = _table(
        (status["count"], 4, _keep(_args(ran_ok))),
        (status["count"], 4, _keep(_args(ran_ok))),
        (status["fail"], 6, _keep(_args(3, tried))),
        (status["count"], 3, _keep(_args(after))),
    )
    assert _guarded(lambda: launcher.run_tasks(table.ctypes.data, len(table))) == 3
    np.testing.assert_array_equal(ran_ok, [2, 2, 2, 2])
    assert tried[3:].any()
    assert not after.any()  # the task behind the failure did not run
    assert launcher.run_tasks(table.ctypes.data, 2) == 0
    np.testing.assert_array_equal(ran_ok, [4, 4, 4, 4])
    assert launcher.run_tasks(table.ctypes.data, 0) == 0


_KEEP: list[np.ndarray] = []


def _keep(args: np.ndarray) -> int:
    _KEEP.append(args)  # the table holds only the address
    return int(args.ctypes.data)


# --- concurrency --------------------------------------------------------------------------------
def test_concurrent_launches_from_python_threads(status: dict[str, int]) -> None:
    # Four threads launch at once; each checks its own results after every launch. The
    # launches are long enough (20k elements) for native calls to overlap despite the GIL.
    n = 20_000
    errors: list[str] = []

    def client(t: int) -> None:
        src = np.arange(n, dtype=np.int64) + t * 10**6
        dst = np.empty(n, np.int64)
        args = _args(src, dst, n)
        for i in range(200):
            dim = (2, 7, 33, 1)[(i + t) % 4]
            dst.fill(-1)
            code = launcher.launch(status["add_one"], dim, args.ctypes.data)
            if code != 0 or not np.array_equal(dst, src + 1):
                errors.append(f"thread {t} launch {i} (block_dim {dim}): status {code}")

    def run() -> None:
        clients = [threading.Thread(target=client, args=(t,)) for t in range(4)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()

    _guarded(run)
    assert errors == []


# --- processes ----------------------------------------------------------------------------------
_CHILD = """
import ctypes, sys, threading
import numpy as np
from ge.runtime import load_kernel_binary, memory
from ge.runtime import _launcher as launcher

data = open(sys.argv[1], "rb").read()
keep = [load_kernel_binary(data).get_function("index")]
fn = ctypes.cast(keep[0]._status, ctypes.c_void_p).value
for dim in (1, 2, 7, 1000):
    out = np.full(dim, -1, np.int64)
    handle = memory.lend(out)  # kernels view only live device memory
    args = np.array([out.ctypes.data, 3], np.int64)
    assert launcher.launch(fn, dim, args.ctypes.data) == 0
    memory.end_loan(handle)
    assert (out == np.arange(dim) + 3).all(), out
workers = [t for t in threading.enumerate() if t.name.startswith("ge-launch-")]
print(launcher.threads(), len(workers))
"""


def _child(tmp_path: Path, binary: bytes, threads: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "index.gekb"
    path.write_bytes(binary)
    env = {**os.environ, "GE_NUM_THREADS": threads}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=GUARD_S,
        check=False,
    )


@pytest.mark.parametrize(("threads", "workers"), [("1", 0), ("3", 2)])
def test_ge_num_threads_sets_the_pool_size_and_exit_is_prompt(
    tmp_path: Path, binaries: dict[str, bytes], threads: str, workers: int
) -> None:
    # the child exits with its workers parked in native code: returning at all is the check
    done = _child(tmp_path, binaries["index"], threads)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [threads, str(workers)]


def test_a_bad_ge_num_threads_is_reported(tmp_path: Path, binaries: dict[str, bytes]) -> None:
    done = _child(tmp_path, binaries["index"], "zero")
    assert done.returncode != 0
    assert "GE_NUM_THREADS must be a positive integer, got 'zero'" in done.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # forking a threaded process
def test_a_forked_child_gets_a_pool_of_its_own(status: dict[str, int]) -> None:
    fn = status["index"]
    out = np.full(7, -1, np.int64)
    args = _args(out, 1)
    assert launcher.launch(fn, 7, args.ctypes.data) == 0  # the parent's pool is running
    pid = os.fork()
    if pid == 0:  # child: exits without returning to pytest
        code = 1
        try:
            for dim in (2, 7, 1000):
                child_out = np.full(dim, -1, np.int64)
                child_args = _args(child_out, 2)
                ok = launcher.launch(fn, dim, child_args.ctypes.data) == 0
                if not ok or not np.array_equal(child_out, np.arange(dim) + 2):
                    break
            else:
                code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + GUARD_S
    while True:
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("forked child deadlocked")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(wait_status) == 0
    out.fill(-1)
    assert launcher.launch(fn, 7, args.ctypes.data) == 0  # the parent's pool still works
    np.testing.assert_array_equal(out, np.arange(7) + 1)


def test_workers_keep_off_the_callers_cpu(status: dict[str, int]) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if launcher.threads() < 2 or len(cpus) < 2:
        pytest.skip("needs two threads and two CPUs")
    counts = np.zeros(4, np.int64)
    assert _launch(status["count"], 4, _args(counts)) == 0
    pool = launcher._pool
    assert pool is not None
    workers = [t for t in threading.enumerate() if t.name.startswith("ge-launch-")]

    def placed() -> list[set[int]]:
        return [os.sched_getaffinity(w.native_id) for w in workers if w.native_id]

    assert pool._placed_for in cpus
    assert all(len(a) == 1 and pool._placed_for not in a for a in placed())
    for w in workers:  # as if the caller had moved onto the workers' CPUs
        os.sched_setaffinity(w.native_id, set(cpus))
    pool._placed_for = -2
    assert _launch(status["count"], 4, _args(counts)) == 0  # places them again
    assert pool._placed_for in cpus
    assert all(len(a) == 1 and pool._placed_for not in a for a in placed())
    np.testing.assert_array_equal(counts, np.full(4, 2))


def test_a_process_without_the_compiler_caches_the_pool_code(tmp_path: Path) -> None:
    """The pool's machine code goes to the device's code cache (one ``.geobj`` entry keyed on
    its IR), so a process that imports no compiler (one that only runs offline models)
    builds it once and later processes load it."""
    code = textwrap.dedent(
        """
        import sys
        from ge.runtime import _launcher
        assert _launcher.available() and _launcher.launch(0, 0, 0) == 0
        assert not [m for m in sys.modules if m.startswith(("ge.compiler", "numba"))]
        print("ok")
        """
    )
    env = {**os.environ, "GE_KERNEL_CACHE_DIR": str(tmp_path), "GE_KERNEL_CACHE": "1"}

    def run() -> list[tuple[str, int]]:
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.stdout.strip() == "ok", done.stderr
        return [(p.name, p.stat().st_mtime_ns) for p in sorted(tmp_path.glob("*.geobj"))]

    first = run()
    assert len(first) == 1, "the pool's machine code was stored, once"
    assert run() == first  # loaded, not built and stored again
    assert not list(tmp_path.glob("*.tmp"))
