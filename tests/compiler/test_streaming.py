"""Elementwise kernels whose outputs are larger than the caches write them with streaming
(non-temporal) stores, tile by tile (``elementwise._streams``): the same values as the plain
loop, for every tail length, several outputs, 8-byte types, scalar inputs, and outputs that
are not 64-byte aligned (which take the plain loop)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ge import runtime
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import elementwise
from ge.es import GraphBuilder
from ge.graph import DataType

# just past the threshold for one float32 output, with a tail that is no whole tile or line
N32 = (elementwise._STREAM_MIN_BYTES // 4) + 4096 * 3 + 13


def _program_with_outputs(dtypes: list[str]) -> elementwise.Program:
    program = elementwise.Program()
    for name in dtypes:
        program.outputs.append((f"t_{name}", np.dtype(name)))
    return program


@pytest.mark.parametrize(
    ("outputs", "kinds", "expected"),
    [
        (["float32"], ["full", "full"], True),
        (["float32"], ["full", "scalar"], True),
        (["float32"], ["row", "full"], False),  # not a flat loop
        (["float16"], ["full"], False),  # 2-byte elements: blocks of 16 would misalign tiles
        (["bool"], ["full"], False),
        (["float64", "int64"], ["full"], True),
        (["float32"] * 5, ["full"], False),  # a stack tile each: at most four
    ],
)
def test_which_kernels_can_stream(outputs: list[str], kinds: list[str], expected: bool) -> None:
    assert elementwise._streams(_program_with_outputs(outputs), kinds) is expected


def test_the_tile_size_is_the_helpers() -> None:
    from ge.compiler.kernels import _scalar

    assert elementwise._TILE_BYTES == _scalar.TILE_BYTES


def _compiled(
    build: Any, shapes: list[list[int]], data_type: DataType = DataType.DT_FLOAT
) -> CompiledGraph:
    b = GraphBuilder("big")
    inputs = [b.create_input(i, shape=s, data_type=data_type) for i, s in enumerate(shapes)]
    return CompiledGraph(b.build_and_reset(build(*inputs)))


def _chain(n: int) -> CompiledGraph:
    return _compiled(lambda a, b: [a * b + a * 0.5 - b * b], [[n], [n]])


def _check_chain(compiled: CompiledGraph, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    (out,) = compiled.run_arrays([x, y])
    np.testing.assert_array_equal(out, x * y + x * np.float32(0.5) - y * y)


def test_a_large_chain_streams_with_the_kernel_small_ones_use() -> None:
    from ge.compiler.kernels import _codegen

    _check_chain(_chain(1000), 1000)
    before = _codegen.compiled_kernel_count()
    large = _chain(N32)
    assert _codegen.compiled_kernel_count() == before  # the size does not enter the key
    _check_chain(large, N32)
    _check_chain(large, N32, seed=1)  # the pooled output block is streamed again


def _run_into(compiled: CompiledGraph, inputs: list[np.ndarray], offset: int) -> np.ndarray:
    """Output 0 written into device memory ``offset`` bytes past a 64-byte boundary."""
    (plan,) = compiled._plans.values()
    assert plan is not None
    nbytes = plan.buffers[plan.outputs[0]].nbytes
    block = runtime.malloc(nbytes + 64)
    try:
        assert block.addr % 64 == 0
        at = block.addr + offset
        (raw,) = compiled.runner(plan).run(inputs, [(at, runtime.memory.device_view(at, nbytes))])
        return raw.copy()
    finally:
        runtime.free(block)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 4095, 4096, 4097, 70_001])
def test_every_tail_streams_right(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.setattr(elementwise, "_STREAM_MIN_BYTES", 4)  # stream from the first element
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    out = _run_into(_chain(n), [x, y], 0)  # aligned: the streaming stretch runs
    np.testing.assert_array_equal(out.view(np.float32), x * y + x * np.float32(0.5) - y * y)


def test_two_float64_outputs_and_a_scalar_input_stream() -> None:
    n = elementwise._STREAM_MIN_BYTES // 16 + 2048 + 5
    rng = np.random.default_rng(1)
    x, s = rng.standard_normal(n), np.array([1.5])

    def build(a: Any, c: Any) -> list[Any]:
        t = a * c + 1.0
        return [t, t * t - c]  # t is used outside the fused group too: a second output

    compiled = _compiled(build, [[n], [1]], DataType.DT_DOUBLE)
    t, u = compiled.run_arrays([x, s])
    np.testing.assert_array_equal(t, x * 1.5 + 1.0)
    np.testing.assert_array_equal(u, (x * 1.5 + 1.0) ** 2 - 1.5)


def test_an_unaligned_output_takes_the_plain_loop() -> None:
    compiled = _compiled(lambda a: [a * 3.0 - 1.0], [[N32]])
    x = np.random.default_rng(2).standard_normal(N32, np.float32)
    out = _run_into(compiled, [x], 4)  # 4 bytes past a 64-byte boundary
    np.testing.assert_array_equal(out.view(np.float32), x * np.float32(3) - np.float32(1))
