"""The device never lets a kernel touch memory it does not name (issue #12).

Every case that would write through a wild pointer if the checks regressed runs in a child
process, so a regression is reported as a failed test (with the child's signal), not as a dead
test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ge import runtime
from ge.allocator import MemBlock
from ge.error import GeError, GeTypeError, GeValueError
from ge.runtime import DeviceRange, Stream, compile_kernel, launch_kernel, load_kernel_binary

_KERNELS = """
import numpy as np
from ge import runtime

def fill(block_idx, block_dim, args):
    x = runtime.kernel_array(args[0], args[1], np.float32)
    for i in range(block_idx, args[1], block_dim):
        x[i] = 7.0

def fill_at(block_idx, block_dim, args):  # views an address computed from its argument
    x = runtime.kernel_array(args[0] + args[2], args[1], np.float32)
    for i in range(block_idx, args[1], block_dim):
        x[i] = 7.0

def poke(block_idx, block_dim, args):  # writes index args[2] of a view of args[1] elements
    x = runtime.kernel_array(args[0], args[1], np.float32)
    x[args[2]] = 7.0
"""


def _child(body: str, env: dict[str, str] | None = None, timeout: float = 300) -> list[str]:
    """Run ``body`` after the kernels above in a fresh process; its stdout lines. A crash
    fails the test with the child's exit status and output."""
    script = textwrap.dedent(_KERNELS) + textwrap.dedent(body)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, f"child died ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.splitlines()


def test_views_of_memory_that_is_not_live_are_refused_inside_the_kernel() -> None:
    lines = _child(
        """
        import json
        fn = runtime.load_kernel_binary(runtime.compile_kernel(fill, "fill")).get_function("fill")
        at = runtime.load_kernel_binary(runtime.compile_kernel(fill_at, "fill_at"))
        at = at.get_function("fill_at")
        s = runtime.Stream()
        host = np.zeros(4, np.float32)
        raw = b"0123456789abcdef" * 4
        import ctypes
        raw_addr = ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p).value
        block = runtime.malloc(16)
        freed = runtime.malloc(4096); runtime.free(freed)
        cases = {
            "nowhere": (fn, [0x10, 4]),
            "numpy host array": (fn, [host.ctypes.data, 4]),
            "bytes object": (fn, [raw_addr, 4]),
            "past the end": (fn, [block.addr, 5]),
            "freed block": (fn, [freed.addr, 4]),
            "negative count": (fn, [block.addr, -1]),
            "count overflowing": (fn, [block.addr, 2**62]),
            "computed address": (at, [block.addr, 4, 4096]),
        }
        for name, (kernel, args) in cases.items():
            runtime.launch_kernel(kernel, 2, s, args)
            try:
                s.synchronize()
                print(json.dumps([name, "ran"]))
            except runtime.GeError if hasattr(runtime, "GeError") else Exception as e:
                print(json.dumps([name, type(e).__name__, str(e)]))
        print(json.dumps(["host untouched", host.tolist() == [0.0] * 4]))
        print(json.dumps(["bytes untouched", raw == b"0123456789abcdef" * 4]))
        runtime.launch_kernel(fn, 2, s, [block, 4]); s.synchronize()
        out = np.empty(4, np.float32); runtime.memcpy_d2h(out, block.addr)
        print(json.dumps(["stream works after", out.tolist()]))
        """
    )
    results = {r[0]: r[1:] for r in map(json.loads, lines)}
    for name in (
        "nowhere",
        "numpy host array",
        "bytes object",
        "past the end",
        "freed block",
        "negative count",
        "count overflowing",
        "computed address",
    ):
        kind, message = results[name]
        assert kind == "GeError", (name, results[name])
        assert "kernel fill" in message and "not inside live device memory" in message, message
        source = "an address computed in it" if name == "computed address" else "args[0]"
        assert f"(from {source})" in message, message
    assert results["host untouched"] == [True]
    assert results["bytes untouched"] == [True]
    assert results["stream works after"] == [[7.0] * 4]


def test_index_past_a_view_is_a_kernel_error_with_boundscheck(tmp_path: Path) -> None:
    body = """
        fn = runtime.load_kernel_binary(runtime.compile_kernel(poke, "poke")).get_function("poke")
        s = runtime.Stream()
        block = runtime.malloc(64)  # 16 floats; the view covers 4 of them
        runtime.memcpy_h2d(block.addr, np.zeros(16, np.float32))
        for index in INDEXES:
            runtime.launch_kernel(fn, 1, s, [block, 4, index])
            try:
                s.synchronize()
                print("ran", index)
            except Exception as e:
                print("refused", index, type(e).__name__)
        out = np.empty(16, np.float32); runtime.memcpy_d2h(out, block.addr)
        print("written", *np.flatnonzero(out).tolist())
        """
    env = {"GE_KERNEL_BOUNDSCHECK": "1", "GE_KERNEL_CACHE_DIR": str(tmp_path)}
    assert _child(body.replace("INDEXES", "(3, 4, 15, -5)"), env) == [
        "ran 3",
        "refused 4 GeError",
        "refused 15 GeError",
        "refused -5 GeError",  # Numba wraps negative indexes: -5 of 4 is out of range
        "written 3",
    ]
    # without checks the stray write of index 4 lands inside the live block (the checked run's
    # -5 wraps to -1 and would write before the block: the child could corrupt its C heap)
    unchecked = _child(
        body.replace("INDEXES", "(3, 4)"),
        {"GE_KERNEL_BOUNDSCHECK": "0", "GE_KERNEL_CACHE_DIR": str(tmp_path)},
    )
    assert unchecked[1] == "ran 4"


def test_boundscheck_takes_only_0_or_1() -> None:
    lines = _child(
        """
        try:
            runtime.compile_kernel(fill, "fill")
        except Exception as e:
            print(type(e).__name__, e)
        """,
        {"GE_KERNEL_BOUNDSCHECK": "yes"},
    )
    assert lines == ["GeValueError GE_KERNEL_BOUNDSCHECK must be 0 or 1, got 'yes'"]


@pytest.fixture(scope="module")
def fill_fn() -> runtime.KernelFunction:
    namespace: dict[str, object] = {}
    exec(compile(textwrap.dedent(_KERNELS), "<kernels>", "exec"), namespace)
    return load_kernel_binary(compile_kernel(namespace["fill"], "fill")).get_function("fill")  # type: ignore[arg-type]


def test_a_stale_block_is_refused_even_when_its_address_was_reused(
    fill_fn: runtime.KernelFunction,
) -> None:
    stream = Stream()
    old = runtime.malloc(16)
    runtime.free(old)
    new = runtime.malloc(16)
    assert new.addr == old.addr and new.generation != old.generation
    try:
        for stale in (old, DeviceRange.of(old)):
            launch_kernel(fill_fn, 1, stream, [stale, 4])
            with pytest.raises(GeError, match=r"args\[0\].*belongs to a block that was freed"):
                stream.synchronize()
        with pytest.raises(GeValueError, match="already freed"):
            runtime.free(old)
        launch_kernel(fill_fn, 1, stream, [DeviceRange.of(new, 0, 16), 4])  # the live one works
        stream.synchronize()
    finally:
        runtime.free(new)


def test_device_range_of_checks_its_bounds() -> None:
    block = runtime.malloc(32)
    try:
        assert DeviceRange.of(block, 8) == DeviceRange(block.addr + 8, 24, block.generation)
        for offset, nbytes in ((-1, None), (0, 33), (30, 4)):
            with pytest.raises(GeValueError, match="do not fit"):
                DeviceRange.of(block, offset, nbytes)
    finally:
        runtime.free(block)


def test_a_hand_made_block_is_checked_by_its_range() -> None:
    block = runtime.malloc(16)
    try:
        assert MemBlock(block.addr, 16).generation == 0
        assert runtime.memory.contains(block.addr, 16)
    finally:
        runtime.free(MemBlock(block.addr, 16))  # no generation known: the range decides
    with pytest.raises(GeValueError, match="not the start of a live allocation"):
        runtime.free(block)


def test_memory_a_tensor_owns_cannot_be_freed_through_the_runtime() -> None:
    from ge.graph import Tensor

    tensor = Tensor([0.0, 1.0, 2.0, 3.0], shape=[4]).to_device()
    with pytest.raises(GeValueError, match=r"owned by ge\.graph\.Tensor"):
        runtime.free(tensor.addr)
    assert tensor.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_huge_malloc_is_a_ge_error_not_a_memory_error() -> None:
    live = runtime.live_bytes()
    with pytest.raises(GeError, match="out of device memory: cannot allocate"):
        runtime.malloc(2**50)
    assert runtime.live_bytes() == live


@pytest.mark.parametrize("args", [None, 5, "abc", object()])
def test_launch_args_must_be_a_list(fill_fn: runtime.KernelFunction, args: object) -> None:
    with pytest.raises(GeTypeError, match="args must be a list"):
        launch_kernel(fill_fn, 1, Stream(), args)  # type: ignore[arg-type]


def test_a_freed_block_in_a_queued_launch_is_released_after_it(
    fill_fn: runtime.KernelFunction,
) -> None:
    import threading

    stream, gate = Stream(), threading.Event()
    live = runtime.live_bytes()
    block = runtime.malloc(4096)
    stream.submit(lambda: gate.wait(30), name="gate")
    launch_kernel(fill_fn, 2, stream, [block, 1024])
    runtime.free(block)
    assert runtime.live_bytes() == live + 4096  # held by the queued launch
    gate.set()
    stream.synchronize()
    assert runtime.live_bytes() == live


def test_a_kernel_that_raises_is_not_blamed_on_a_view() -> None:
    lines = _child(
        """
        def boom(block_idx, block_dim, args):
            if args[0] == 0:
                raise ValueError("boom")

        fn = runtime.load_kernel_binary(runtime.compile_kernel(boom, "boom")).get_function("boom")
        s = runtime.Stream()
        runtime.launch_kernel(fn, 1, s, [0, 0])
        try:
            s.synchronize()
        except Exception as e:
            print(e)
        """
    )
    assert "kernel boom failed (status 1): it raised" in lines[-1], lines
