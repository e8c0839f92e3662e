"""``ge.jit`` with background compilation: first calls run on the reference interpreter
while a worker compiles, later calls switch to the compiled plan without compiling."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import ge
from ge.compiler import background
from ge.compiler.kernels import _codegen
from ge.graph import Tensor

TIMEOUT = 180.0


@pytest.fixture
def on(worker: background.BackgroundCompiler, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GE_JIT_BACKGROUND", "1")
    monkeypatch.setattr(_codegen, "_CACHE", {})  # as a new process: nothing loaded yet


def _entry(f: Any) -> Any:
    (entry,) = f._cache.values()
    return entry


def _inputs(n: int = 257) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)


def test_first_call_runs_on_the_reference_then_switches(on: None) -> None:
    @ge.jit
    def f(x: Any, y: Any) -> Any:
        return np.exp(x) * y + np.sin(x) * 0.25 - y * y

    x, y = _inputs()
    expected = np.exp(x) * y + np.sin(x) * np.float32(0.25) - y * y
    built = _codegen.built_kernel_count()
    first = f(x, y)
    assert first.dtype == np.float32 and first.shape == x.shape
    np.testing.assert_array_equal(first, expected)  # the reference is numpy itself
    assert _entry(f).job is not None and _entry(f).runner is None
    assert ge.jit.wait_for_compiles(TIMEOUT)
    second = f(x, y)
    assert _entry(f).job is None and _entry(f).runner is not None
    assert _codegen.built_kernel_count() == built  # loaded from the disk, compiled elsewhere
    np.testing.assert_allclose(second, expected, rtol=2e-6, atol=2e-6)
    assert f.cache_info().traces == 1


def test_reference_results_keep_the_tree_dtypes_and_constants(on: None) -> None:
    @ge.jit
    def f(a: Any, b: Any) -> Any:
        return {"sum": a + b, "twice": (a * 2, None, "tag"), "view": a.reshape(2, -1)}

    a, b = np.arange(6, dtype=np.int32), np.ones(6, np.int32)
    out = f(a, b)
    assert _entry(f).job is not None
    np.testing.assert_array_equal(out["sum"], a + b)
    assert out["sum"].dtype == np.int32
    assert out["twice"][1:] == (None, "tag")
    assert out["view"].shape == (2, 3) and not np.shares_memory(out["view"], a)
    out["view"][0, 0] = 99  # a result of its own: the input is untouched
    assert a[0] == 0
    assert ge.jit.wait_for_compiles(TIMEOUT)
    again = f(a, b)
    np.testing.assert_array_equal(again["twice"][0], a * 2)


def test_device_tensors_on_the_reference(on: None) -> None:
    @ge.jit
    def f(x: Any) -> Any:
        return x * 3 - 1

    x = np.linspace(-1, 1, 10, dtype=np.float32)
    tensor = Tensor(x).to_device()
    np.testing.assert_array_equal(f(tensor), x * np.float32(3) - np.float32(1))


def test_lower_waits_for_the_worker(on: None) -> None:
    @ge.jit
    def f(x: Any) -> Any:
        return np.maximum(x, 0.0) * x + 7.0

    x, _ = _inputs(33)
    f(x)
    assert _entry(f).job is not None
    lowered = f.lower(x)
    assert lowered.plan is not None and _entry(f).job is None
    np.testing.assert_allclose(f(x), np.maximum(x, 0) * x + np.float32(7), rtol=1e-6)


def test_a_failed_job_compiles_in_the_foreground(on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    class Failing:
        def submit(self, graph: Any) -> background.Job:
            job = background.Job(1)
            job._finish("the worker crashed")
            return job

    monkeypatch.setattr(background, "compiler", Failing)

    @ge.jit
    def f(x: Any) -> Any:
        return (x - 1.5) * (x + 2.5)

    x, _ = _inputs(20)
    expected = (x - np.float32(1.5)) * (x + np.float32(2.5))
    built = _codegen.built_kernel_count()
    np.testing.assert_allclose(f(x), expected, rtol=1e-6)  # the failure is seen at once
    assert _entry(f).job is None and _entry(f).runner is not None
    assert _codegen.built_kernel_count() > built


@pytest.mark.parametrize(
    ("variable", "value"), [("GE_JIT_BACKGROUND", "0"), ("GE_KERNEL_CACHE", "0")]
)
def test_switched_off_compiles_on_the_first_call(
    on: None, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)

    @ge.jit
    def f(x: Any) -> Any:
        return x * x - 0.125

    x, _ = _inputs(40)
    np.testing.assert_allclose(f(x), x * x - np.float32(0.125), rtol=1e-6)
    assert _entry(f).job is None and _entry(f).runner is not None


def test_cached_kernels_run_compiled_at_once(on: None, worker: Any) -> None:
    @ge.jit
    def f(x: Any) -> Any:
        return x * 0.75 + 0.5 * x * x

    x, _ = _inputs(50)
    f(x)
    assert ge.jit.wait_for_compiles(TIMEOUT)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(_codegen, "_CACHE", {})  # a new process, a warm disk cache

    @ge.jit
    def g(x: Any) -> Any:
        return x * 0.75 + 0.5 * x * x

    try:
        g(x)
        assert _entry(g).job is None and _entry(g).runner is not None
    finally:
        monkey.undo()


def test_donation_on_the_reference_path(on: None) -> None:
    @ge.jit(donate_argnums=0)
    def f(x: Any) -> Any:
        return x * x * x + 0.375  # a kernel no other test here builds

    t = Tensor.from_numpy(np.full(12, 2.0, np.float32)).to_device()
    out = f(t)
    assert _entry(f).job is not None  # ran on the reference
    np.testing.assert_array_equal(out, np.full(12, 8.375, np.float32))
    with pytest.raises(ge.GeError, match="donated"):
        t.numpy()


def test_the_worker_runs_at_a_lower_priority(on: None, worker: Any) -> None:
    # its imports and compiles must not take CPU time from the caller's first calls
    @ge.jit
    def f(x: Any) -> Any:
        return x * 3 - 1

    f(_inputs()[0])
    assert ge.jit.wait_for_compiles(TIMEOUT)
    process = worker._process
    assert process is not None and process.poll() is None
    parent = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, process.pid) == min(19, parent + 10)
