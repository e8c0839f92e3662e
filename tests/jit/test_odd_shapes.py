"""``ge.jit`` gives the same shapes, dtypes and values on its two paths (issue #12): the first
call of a new trace, run on the reference interpreter while a worker compiles (an empty kernel
cache), and later calls on the compiled plan. Odd shapes: 0-d arrays and numpy scalars, 0-size
arrays, shape (1,), and 0-d values broadcast against vectors; each compared with numpy itself.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import ge
from ge.compiler import background
from ge.compiler.kernels import _codegen
from ge.graph import Placement, Tensor

TIMEOUT = 180.0


@contextlib.contextmanager
def _never_cached() -> Iterator[None]:
    raise _codegen.KernelNotCached("as a new process: no kernel is loaded or on disk")
    yield  # pragma: no cover


@pytest.fixture
def reference_first(
    worker: background.BackgroundCompiler, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], None]:
    """Every new trace goes to the worker and its first call runs on the reference, even
    when an earlier case left its kernels in the cache. The worker's jobs read as unfinished
    until the returned function is called: a graph with no kernel to build (``lambda x: x``)
    can be done before the first call looks, which then (rightly) runs compiled."""
    monkeypatch.setenv("GE_JIT_BACKGROUND", "1")
    monkeypatch.setattr(_codegen, "_CACHE", {})
    monkeypatch.setattr(_codegen, "cached_only", _never_cached)
    held = threading.Event()
    held.set()
    done = background.Job.done
    monkeypatch.setattr(background.Job, "done", lambda job: not held.is_set() and done(job))
    return held.clear


def _host(value: Any) -> Any:
    return value.numpy() if isinstance(value, Tensor) else value


def _device(array: np.ndarray) -> Tensor:
    return Tensor.from_numpy(array, placement=Placement.PLACEMENT_DEVICE)


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [leaf for v in tree for leaf in _leaves(v)]
    return [tree]


F32 = np.float32
CASES: list[tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]]]] = [
    ("0d", lambda x: x * 2.0 + 1.0, lambda: (np.array(3.0, F32),)),
    ("0d-int", lambda x: x + 1, lambda: (np.array(3, np.int32),)),
    ("numpy-scalar", lambda x: x * x, lambda: (np.float64(1.5),)),
    (
        "0d-times-vector",
        lambda x, y: x * y + x,
        lambda: (np.array(2.0, F32), np.arange(4, dtype=F32)),
    ),
    ("vector-max-0d", np.maximum, lambda: (np.arange(4, dtype=F32), np.array(2.0, F32))),
    ("0d-returned-as-is", lambda x: x, lambda: (np.array(3.0, F32),)),
    ("0d-and-python-scalar", lambda x, s: x * s, lambda: (np.array(2.0, F32), 3.0)),
    ("0d-host-tensor", lambda x: x * 3.0, lambda: (Tensor.from_numpy(np.array(2.0, F32)),)),
    ("0d-device-tensor", lambda x: x * 3.0, lambda: (_device(np.array(2.0, F32)),)),
    ("0d-in-a-tree", lambda x: {"a": x + 1, "b": (x.sum(), 3)}, lambda: (np.array(1.0, F32),)),
    ("0-size", lambda x: np.exp(x) + 1, lambda: (np.zeros((0, 3), F32),)),
    ("0-size-broadcast", lambda x, y: x + y, lambda: (np.zeros((0, 3), F32), np.ones(3, F32))),
    ("0-size-reduced", lambda x: x.sum(axis=0), lambda: (np.zeros((0, 3), F32),)),
    ("shape-1", lambda x: x + 1, lambda: (np.ones(1, F32),)),
    ("shape-1-plus-0d", lambda x, y: x + y, lambda: (np.ones(1, F32), np.array(5.0, F32))),
    (
        "1x1-times-vector",
        lambda x, y: x * y,
        lambda: (np.ones((1, 1), F32), np.arange(3, dtype=F32)),
    ),
    ("sum-to-0d", lambda x: x.sum(), lambda: (np.arange(6, dtype=F32).reshape(2, 3),)),
    ("reshape-to-0d", lambda x: x.reshape(()), lambda: (np.ones((1, 1), F32),)),
    ("index-to-0d", lambda x: x[1], lambda: (np.arange(3, dtype=F32),)),
]


@pytest.mark.parametrize(("fn", "make"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reference_and_compiled_calls_agree_on_odd_shapes(
    reference_first: Callable[[], None],
    fn: Callable[..., Any],
    make: Callable[[], tuple[Any, ...]],
) -> None:
    args = make()
    expected = _leaves(fn(*(_host(a) for a in args)))
    f = ge.jit(fn)
    first = _leaves(f(*args))
    (entry,) = f._cache.values()
    assert entry.job is not None and entry.runner is None  # that call ran on the reference
    reference_first()
    assert ge.jit.wait_for_compiles(TIMEOUT)
    second = _leaves(f(*args))
    assert entry.job is None
    assert len(first) == len(second) == len(expected)
    for path, got in (("reference", first), ("compiled", second)):
        for a, e in zip(got, expected, strict=True):
            assert np.shape(a) == np.shape(e), f"{path}: shape {np.shape(a)} != {np.shape(e)}"
            assert np.asarray(a).dtype == np.asarray(e).dtype, path
            np.testing.assert_allclose(a, e, rtol=1e-6, err_msg=path)
