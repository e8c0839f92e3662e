"""Compile graphs' kernels in a worker process, into the disk kernel cache.

Numba needs about a second for a process's first kernel (its own import and warm-up) and
half a second for each one after. ``ge.jit`` keeps that off the caller's path: when a new
trace needs kernels the disk cache lacks, it hands the graph to ``compiler()`` and runs the
call on the reference interpreter meanwhile; once the job is done, the kernels load from the
disk cache in milliseconds.

The worker is one Python process per parent process (``_WORKER_MAIN``, at nice +10 so that
its imports and compiles yield the CPU to the caller's first calls), started on the first
job. Jobs (a graph as AIR bytes, with the ``ge.options`` record to compile it with: the
caller's, not the worker's environment) go down its stdin, one at a time; it compiles each with
``CompiledGraph`` (which stores every kernel built in the disk cache) and answers ``<job> ok``
or ``<job> error <message>`` on stdout, read by a daemon thread. It exits when the parent
closes the pipe (the parent ended) or after ``_IDLE_SECONDS`` without work, and a later job
starts a new one. A job whose worker died unanswered counts as failed: the caller
then compiles in the foreground, as it would have without a worker.

Decisions (ours): the worker compiles the plan of the graph's static input shapes only
(``ge.jit`` traces have them); kernels that a graph compiles later, at run time (control
flow subgraphs), compile where they run. Its stderr goes to ``os.devnull``; its errors come
back as job failures.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import IO, Any

from ge.graph.graph import Graph
from ge.options import Options, current_options

__all__ = ["BackgroundCompiler", "Job", "compiler"]

_IDLE_SECONDS = 60.0

# The worker lowers its priority before anything else: its imports and compiles would
# otherwise take CPU time from the caller's first calls on a machine with few cores.
_WORKER_MAIN = (
    "import os, sys; os.nice(10); "
    "from ge.compiler.background import _serve; _serve(sys.stdin.fileno(), sys.stdout.buffer)"
)


class Job:
    """One graph being compiled by the worker."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.error: str | None = None
        self.worker: Any = None  # the process it was sent to
        self._done = threading.Event()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def failed(self) -> bool:
        return self.error is not None

    def _finish(self, error: str | None) -> None:
        self.error = error
        self._done.set()


class BackgroundCompiler:
    """The parent's side: starts the worker, sends jobs, collects answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._jobs: dict[int, Job] = {}
        self._count = 0

    def submit(self, graph: Graph, options: Options | None = None) -> Job:
        """Start compiling ``graph``'s kernels with ``options`` (default
        ``current_options()``); the job is done once they are in the cache.

        Returns at once: a thread encodes the graph as AIR (importing protobuf, on the first
        job, takes tens of milliseconds) and sends it, so the caller's first calls run on the
        reference interpreter meanwhile. ``graph`` must not change afterwards (``ge.jit``
        traces do not); a graph AIR cannot hold fails the job (its caller then compiles in
        the foreground)."""
        opts = current_options() if options is None else options
        job = self._register()
        threading.Thread(
            target=self._encode_and_deliver,
            args=(job, graph, opts),
            name="ge-compile-send",
            daemon=True,
        ).start()
        return job

    def _send(self, payload: bytes, options: Options | None = None) -> Job:
        """Send AIR bytes as a job (on the caller's thread)."""
        job = self._register()
        self._deliver(job, payload, current_options() if options is None else options)
        return job

    def _register(self) -> Job:
        with self._lock:
            self._count += 1
            job = self._jobs[self._count] = Job(self._count)
        return job

    def _encode_and_deliver(self, job: Job, graph: Graph, options: Options) -> None:
        from ge.graph._air import model_to_bytes  # noqa: PLC0415

        try:
            payload = model_to_bytes(graph)
        except Exception as error:  # any failure fails the job, as the worker's do
            self._fail(job, f"could not encode the graph for the worker: {error}")
            return
        self._deliver(job, payload, options)

    def _deliver(self, job: Job, payload: bytes, options: Options) -> None:
        header = f"{len(payload)} {options.key()}"  # key(): JSON on one line
        with self._lock:
            try:
                job.worker = self._worker()
                assert job.worker.stdin is not None
                job.worker.stdin.write(f"{job.number} {header}\n".encode() + payload)
                job.worker.stdin.flush()
                return
            except OSError as error:
                message = f"could not reach the compile worker: {error}"
        self._fail(job, message)

    def _fail(self, job: Job, message: str) -> None:
        with self._lock:
            self._jobs.pop(job.number, None)
        job._finish(message)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for every job sent so far; ``False`` if ``timeout`` seconds passed first."""
        with self._lock:
            jobs = list(self._jobs.values())
        deadline = None if timeout is None else time.monotonic() + timeout
        for job in jobs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not job.wait(left):
                return False
        return True

    def pending(self) -> int:
        with self._lock:
            return len(self._jobs)

    def _worker(self) -> subprocess.Popen[bytes]:
        process = self._process
        if process is None or process.poll() is not None:
            process = self._process = self._start()
        return process

    def _start(self) -> subprocess.Popen[bytes]:
        import ge  # noqa: PLC0415

        root = os.path.dirname(os.path.dirname(os.path.abspath(ge.__file__)))
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
        process = subprocess.Popen(
            [sys.executable, "-c", _WORKER_MAIN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        threading.Thread(
            target=self._collect, args=(process,), name="ge-compile-answers", daemon=True
        ).start()
        return process

    def _collect(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            number, _, rest = line.decode(errors="replace").strip().partition(" ")
            status, _, message = rest.partition(" ")
            with self._lock:
                job = self._jobs.pop(int(number), None) if number.isdigit() else None
            if job is not None:
                job._finish(None if status == "ok" else message or "the worker failed")
        process.wait()
        with self._lock:  # the worker is gone: what it had not answered failed
            orphans = [job for job in self._jobs.values() if job.worker is process]
            for job in orphans:
                del self._jobs[job.number]
        for job in orphans:
            job._finish(f"the compile worker exited with status {process.returncode}")


_COMPILER: BackgroundCompiler | None = None
_OWNER = 0
_GLOBAL_LOCK = threading.Lock()


def compiler() -> BackgroundCompiler:
    """This process's background compiler (a forked child gets its own)."""
    global _COMPILER, _OWNER
    with _GLOBAL_LOCK:
        if _COMPILER is None or os.getpid() != _OWNER:
            _COMPILER, _OWNER = BackgroundCompiler(), os.getpid()
        return _COMPILER


# --- the worker ----------------------------------------------------------------------------------
def _compile_job(payload: bytes, options: Options) -> None:
    from ge.compiler.executable import CompiledGraph  # noqa: PLC0415
    from ge.graph._air import model_from_bytes  # noqa: PLC0415

    CompiledGraph(model_from_bytes(payload), ge_options=options)


def _read(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_header(fd: int) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        line += _read(fd, 1)  # headers are a dozen bytes: unbuffered, so select() sees the rest
    return line


def _serve(stdin: int, stdout: IO[bytes]) -> None:
    while True:
        ready, _, _ = select.select([stdin], [], [], _IDLE_SECONDS)
        if not ready:
            return
        try:
            number, size, key = _read_header(stdin).decode().rstrip("\n").split(" ", 2)
            payload = _read(stdin, int(size))
        except EOFError:
            return
        try:
            # the worker's stdout carries the answers: kernel sources are not printed into it
            options = Options.from_dict(json.loads(key)).replace(kernel_source=False)
            _compile_job(payload, options)
            answer = f"{int(number)} ok"
        except Exception as error:  # any failure is the job's answer
            answer = f"{int(number)} error {type(error).__name__}: {error}".replace("\n", " ")
        stdout.write(answer.encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    _serve(sys.stdin.fileno(), sys.stdout.buffer)
