"""The background compile worker: jobs land kernels in the disk cache; failures are answers."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ge.compiler import background
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import _codegen
from ge.es import GraphBuilder
from ge.graph.graph import Graph

TIMEOUT = 180.0


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("kernels")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GE_KERNEL_CACHE_DIR", str(directory))
        yield directory


@pytest.fixture(scope="module")
def worker(cache: Path) -> Iterator[background.BackgroundCompiler]:
    compiler = background.BackgroundCompiler()
    yield compiler
    if compiler._process is not None:
        compiler._process.kill()
        compiler._process.wait()


@pytest.fixture
def fresh_process_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no kernel loaded yet, so lookups go to the disk cache."""
    monkeypatch.setattr(_codegen, "_CACHE", {})


def _graph(size: int = 64) -> Graph:
    b = GraphBuilder("bg")
    x, y = b.create_input(0, shape=[size]), b.create_input(1, shape=[size])
    return b.build_and_reset([(x * y + x * 0.5 - y * y) * 3.0 - x])


def test_cached_only_refuses_to_compile(cache: Path, fresh_process_cache: None) -> None:
    built = _codegen.built_kernel_count()
    with (
        pytest.raises(_codegen.KernelNotCached, match="not in the disk cache"),
        _codegen.cached_only(),
    ):
        CompiledGraph(_graph())
    assert _codegen.built_kernel_count() == built
    assert not _codegen._CACHE  # nothing half-registered


def test_job_puts_the_kernels_in_the_disk_cache(
    worker: background.BackgroundCompiler, cache: Path, fresh_process_cache: None
) -> None:
    job = worker.submit(_graph())
    assert job.wait(TIMEOUT), "the worker did not answer"
    assert not job.failed, job.error
    assert worker.pending() == 0
    built = _codegen.built_kernel_count()
    with _codegen.cached_only():  # every kernel loads from the disk now
        compiled = CompiledGraph(_graph())
    assert _codegen.built_kernel_count() == built
    x, y = np.arange(64, dtype=np.float32), np.full(64, 2.0, np.float32)
    expected = (x * y + x * np.float32(0.5) - y * y) * np.float32(3.0) - x
    np.testing.assert_allclose(compiled.run_arrays([x, y])[0], expected, rtol=1e-6)


def test_a_bad_job_fails_and_the_worker_goes_on(
    worker: background.BackgroundCompiler, cache: Path
) -> None:
    bad = worker._send(b"not an AIR model")
    assert bad.wait(TIMEOUT)
    assert bad.failed and "Error" in (bad.error or "")
    good = worker.submit(_graph(16))
    assert good.wait(TIMEOUT) and not good.failed, good.error


def test_a_dead_worker_fails_its_jobs_and_a_new_one_starts(
    worker: background.BackgroundCompiler, cache: Path
) -> None:
    job = worker.submit(_graph(32))
    old = _delivered(job)
    os.kill(old.pid, signal.SIGKILL)
    assert job.wait(TIMEOUT)
    if job.failed:  # killed before it answered (the usual case)
        assert "exited" in (job.error or "")
    assert worker.pending() == 0
    old.wait(TIMEOUT)  # gone for sure (it may have answered before the signal landed)
    again = worker.submit(_graph(32))
    assert again.wait(TIMEOUT) and not again.failed, again.error
    assert again.worker is not old


def _delivered(job: background.Job) -> Any:
    """The worker process ``job`` was sent to (``submit`` sends from a thread of its own)."""
    deadline = time.monotonic() + TIMEOUT
    while job.worker is None and not job.done():
        assert time.monotonic() < deadline, "the job was never sent"
        time.sleep(0.01)
    assert job.worker is not None, job.error
    return job.worker


def test_submit_returns_before_the_graph_is_encoded(
    worker: background.BackgroundCompiler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller does not wait for AIR encoding (protobuf's import, on a first job): a slow
    encoder holds up only the job."""
    import ge.graph._air as air

    release = threading.Event()
    real = air.model_to_bytes

    def slow(graph: Any) -> bytes:
        release.wait(TIMEOUT)
        return real(graph)

    monkeypatch.setattr(air, "model_to_bytes", slow)
    job = worker.submit(_graph(40))
    assert not job.done() and job.worker is None  # returned while the encoder waits
    release.set()
    assert job.wait(TIMEOUT) and not job.failed, job.error


def test_a_graph_that_cannot_be_encoded_fails_its_job(
    worker: background.BackgroundCompiler, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ge.graph._air as air

    def broken(graph: Any) -> bytes:
        raise ValueError("no AIR for this")

    monkeypatch.setattr(air, "model_to_bytes", broken)
    job = worker.submit(_graph(44))
    assert job.wait(TIMEOUT) and job.failed
    assert job.error == "could not encode the graph for the worker: no AIR for this"
    assert worker.pending() == 0


def test_wait_times_out_while_a_job_runs(worker: background.BackgroundCompiler) -> None:
    b = GraphBuilder("slow")
    x = b.create_input(0, shape=[8])
    job = worker.submit(b.build_and_reset([np.tanh(x) * np.exp(x) - np.sin(x)]))
    returned = worker.wait(0.0)
    assert returned is False or job.done()  # True only if it had finished (done stays done)
    assert worker.wait(TIMEOUT)


def test_compiler_is_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    first = background.compiler()
    assert background.compiler() is first
    monkeypatch.setattr(background, "_OWNER", -1)  # as a forked child sees it
    assert background.compiler() is not first


def test_jobs_of_a_replaced_worker_still_fail_when_it_dies(
    worker: background.BackgroundCompiler, cache: Path
) -> None:
    first = worker.submit(_graph(48))
    old = worker._process
    assert old is not None
    worker._process = None  # as if it had looked dead: the next job starts another worker
    second = worker.submit(_graph(48))
    assert worker._process is not old
    os.kill(old.pid, signal.SIGKILL)
    assert first.wait(TIMEOUT), "a job of the dead worker was never answered"
    if first.failed:
        assert "exited" in (first.error or "")
    assert second.wait(TIMEOUT) and not second.failed, second.error
    assert worker.wait(TIMEOUT)
