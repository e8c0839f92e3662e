"""``donate_argnums``: donated device tensors lend their memory to the results and are
unusable afterwards; numpy arrays are never donated (they cannot be invalidated)."""

from __future__ import annotations

import gc
import logging
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeError, GeTypeError, GeValueError
from ge.graph import Tensor
from ge.runtime import memory


def _device(array: np.ndarray) -> Tensor:
    return Tensor.from_numpy(array).to_device()


def test_elementwise_result_is_written_over_the_donated_memory() -> None:
    @ge.jit(donate_argnums=0)
    def step(x: Any, y: Any) -> Any:
        return x * 0.5 + y

    x = np.arange(1000, dtype=np.float32)
    y = np.ones_like(x)
    tensor = _device(x)
    addr = tensor.addr
    out = step(tensor, y)
    np.testing.assert_array_equal(out, x * np.float32(0.5) + y)
    assert out.ctypes.data == addr  # no new memory: the donated block holds the result
    with pytest.raises(GeError, match=r"donated to .*step \(test_donation.py:\d+\).*use the"):
        tensor.numpy()
    with pytest.raises(GeError, match="donated"):
        _ = tensor.addr
    with pytest.raises(GeError, match="donated"):
        tensor.to_host()
    assert "<donated>" in repr(tensor)


def test_the_donated_block_lives_as_long_as_its_result() -> None:
    @ge.jit(donate_argnums=0)
    def double(x: Any) -> Any:
        return x * 2.0

    first = double(_device(np.ones(4096, np.float32)))  # compile (and any workspace) first
    del first
    tensor = _device(np.ones(4096, np.float32))
    gc.collect()
    live = memory.live_bytes()
    out = double(tensor)
    assert memory.live_bytes() == live  # the block changed hands, nothing was allocated
    view = out[10:20]
    del out, tensor
    gc.collect()
    assert memory.live_bytes() == live  # a view keeps it
    np.testing.assert_array_equal(view, np.full(10, 2.0, np.float32))
    del view
    gc.collect()
    assert memory.live_bytes() == live - 4096 * 4


def test_a_donated_tensor_is_unusable_even_when_its_memory_is_not_reused() -> None:
    @ge.jit(donate_argnums=(0,))
    def matmul(a: Any, b: Any) -> Any:
        return a @ b  # a matmul reads all of `a` for every output element

    a = np.eye(32, dtype=np.float32) * 3
    b = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    matmul(_device(a), b)  # compile (and any workspace) first
    tensor = _device(a)
    addr = tensor.addr
    gc.collect()
    live = memory.live_bytes()
    out = matmul(tensor, b)
    np.testing.assert_array_equal(out, a @ b)
    assert out.ctypes.data != addr
    assert memory.live_bytes() == live - a.nbytes  # freed: nobody can use it any more
    with pytest.raises(GeError, match="donated"):
        tensor.numpy()


def test_donated_tensor_read_twice_is_not_overwritten_early() -> None:
    @ge.jit(donate_argnums=0)
    def f(x: Any) -> Any:
        y = x + 1.0
        return y * x.sum()  # x is read again by the reduction after y is made

    x = np.arange(64, dtype=np.float32)
    out = f(_device(x))
    np.testing.assert_allclose(out, (x + 1) * x.sum(), rtol=1e-6)


def test_only_matching_outputs_take_donated_memory() -> None:
    @ge.jit(donate_argnums=(0, 1))
    def f(a: Any, b: Any) -> Any:
        return {"sum": a + b, "small": (a * 2.0)[:3], "ints": (a > 0).astype(np.int32)}

    a, b = np.linspace(-1, 1, 256, dtype=np.float32), np.ones(256, np.float32)
    ta, tb = _device(a), _device(b)
    addrs = {ta.addr, tb.addr}
    out = f(ta, tb)
    np.testing.assert_array_equal(out["sum"], a + b)
    np.testing.assert_array_equal(out["small"], a[:3] * 2)
    np.testing.assert_array_equal(out["ints"], (a > 0).astype(np.int32))
    assert out["sum"].ctypes.data in addrs
    assert out["small"].ctypes.data not in addrs
    for t in (ta, tb):
        with pytest.raises(GeError, match="donated"):
            t.numpy()


def test_donated_pytree_and_the_same_tensor_twice() -> None:
    @ge.jit(donate_argnums=0)
    def f(state: Any) -> Any:
        return {"p": state["p"] - 0.1 * state["g"], "g": state["g"] * 0.9}

    p, g = np.ones(128, np.float32), np.full(128, 2.0, np.float32)
    shared = _device(g)
    out = f({"p": _device(p), "g": shared})
    np.testing.assert_allclose(out["p"], p - np.float32(0.1) * g, rtol=1e-6)
    np.testing.assert_allclose(out["g"], g * np.float32(0.9), rtol=1e-6)

    @ge.jit(donate_argnums=0)
    def h(pair: Any) -> Any:
        a, b = pair
        return a * b + 1.0

    t = _device(np.full(16, 3.0, np.float32))
    np.testing.assert_array_equal(h((t, t)), np.full(16, 10.0, np.float32))


def test_a_loop_with_donation_keeps_memory_flat() -> None:
    @ge.jit(donate_argnums=0)
    def decay(x: Any) -> Any:
        return x * 0.5

    x = np.full(2048, 1024.0, np.float32)
    state = _device(x)
    state = _device(decay(state))
    gc.collect()
    live = memory.live_bytes()
    for _ in range(5):
        state = _device(decay(state))
    gc.collect()
    assert memory.live_bytes() == live
    np.testing.assert_array_equal(state.numpy(), np.full(2048, 16.0, np.float32))  # 1024 / 2**6


def test_using_a_donated_tensor_again_in_a_call_says_so() -> None:
    @ge.jit(donate_argnums=0)
    def f(x: Any) -> Any:
        return x + 1.0

    t = _device(np.zeros(8, np.float32))
    f(t)
    with pytest.raises(GeError, match=r"donated to .*f \(test_donation"):
        f(t)
    with pytest.raises(GeError, match="donated"):
        ge.jit(lambda x: x * 2.0)(t)


def test_a_failed_call_donates_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    @ge.jit(donate_argnums=0)
    def f(x: Any) -> Any:
        return x + 1.0

    t = _device(np.zeros(8, np.float32))
    f(_device(np.zeros(8, np.float32)))
    (entry,) = f._cache.values()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise GeError("kernel failed")

    monkeypatch.setattr(entry.runner, "run", broken)
    with pytest.raises(GeError, match="kernel failed"):
        f(t)
    np.testing.assert_array_equal(t.numpy(), np.zeros(8, np.float32))


def test_numpy_arrays_are_not_donated_and_a_warning_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @ge.jit(donate_argnums=0)
    def f(x: Any) -> Any:
        return x + 1.0

    x = np.zeros(8, np.float32)
    with caplog.at_level(logging.WARNING, logger="ge.jit"):
        f(x)
        f(x)
    messages = [r.getMessage() for r in caplog.records if "donates" in r.getMessage()]
    assert len(messages) == 1
    assert "donates x, a numpy array; numpy arrays cannot be invalidated" in messages[0]
    np.testing.assert_array_equal(x, np.zeros(8, np.float32))  # untouched, still usable


def test_donation_arguments_are_checked() -> None:
    def f(x: Any, y: Any) -> Any:
        return x + y

    with pytest.raises(GeValueError, match=r"donate_argnums 2 is out of range for .*f\(x, y\)"):
        ge.jit(f, donate_argnums=2)
    with pytest.raises(GeTypeError, match="donate_argnums must be an int"):
        ge.jit(f, donate_argnums="x")
    with pytest.raises(GeValueError, match="both static and donated"):
        ge.jit(f, static_argnums=1, donate_argnums=(-1,))


def test_host_tensors_are_invalidated_too() -> None:
    @ge.jit(donate_argnums=0)
    def f(x: Any) -> Any:
        return x - 1.0

    t = Tensor.from_numpy(np.ones(5, np.float32))
    np.testing.assert_array_equal(f(t), np.zeros(5, np.float32))
    with pytest.raises(GeError, match="donated"):
        t.numpy()
