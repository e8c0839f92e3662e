"""Elementwise kernels whose outputs are larger than the caches write them with streaming
(non-temporal) stores, tile by tile (``elementwise.streams``): the same values as the plain
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


def _f32(program_outputs: list[str]) -> elementwise.Program:
    program = elementwise.Program()
    for name in program_outputs:
        program.outputs.append((f"t_{name}", np.dtype(name)))
    return program


@pytest.mark.parametrize(
    ("outputs", "kinds", "n", "expected"),
    [
        (["float32"], ["full", "full"], N32, True),
        (["float32"], ["full", "scalar"], N32, True),
        (["float32"], ["full", "full"], elementwise._STREAM_MIN_BYTES // 4 - 1, False),
        (["float32"], ["row", "full"], N32, False),  # not a flat loop
        (["float16"], ["full"], N32 * 2, False),  # 2-byte elements: tiles of 16 would misalign
        (["bool"], ["full"], N32 * 4, False),
        (["float64", "int64"], ["full"], N32 // 4, True),  # the outputs' bytes add up
        (["float32"] * 5, ["full"], N32, False),  # a stack tile each: at most four
    ],
)
def test_which_kernels_stream(outputs: list[str], kinds: list[str], n: int, expected: bool) -> None:
    assert elementwise.streams(_f32(outputs), kinds, n) is expected


def test_the_tile_size_is_the_helpers() -> None:
    from ge.compiler.kernels import _scalar

    assert elementwise._TILE_BYTES == _scalar.TILE_BYTES


def _compiled(
    build: Any, shapes: list[list[int]], data_type: DataType = DataType.DT_FLOAT
) -> CompiledGraph:
    b = GraphBuilder("big")
    inputs = [b.create_input(i, shape=s, data_type=data_type) for i, s in enumerate(shapes)]
    return CompiledGraph(b.build_and_reset(build(*inputs)))


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many kernels were generated with the streaming stretch."""
    count: list[int] = []
    stretch = elementwise._streaming_stretch

    def counted(*args: Any) -> list[str]:
        count.append(1)
        return stretch(*args)

    monkeypatch.setattr(elementwise, "_streaming_stretch", counted)
    return count


def test_a_large_chain_streams_and_matches_numpy(streamed: list[int]) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N32, np.float32), rng.standard_normal(N32, np.float32)
    compiled = _compiled(lambda a, b: [a * b + a * 0.5 - b * b], [[N32], [N32]])
    assert streamed == [1]
    (out,) = compiled.run_arrays([x, y])
    np.testing.assert_array_equal(out, x * y + x * np.float32(0.5) - y * y)
    (again,) = compiled.run_arrays([y, x])  # the pooled output block is streamed again
    np.testing.assert_array_equal(again, y * x + y * np.float32(0.5) - x * x)


def test_two_float64_outputs_and_a_scalar_input_stream(streamed: list[int]) -> None:
    n = elementwise._STREAM_MIN_BYTES // 16 + 2048 + 5
    rng = np.random.default_rng(1)
    x, s = rng.standard_normal(n), np.array([1.5])

    def build(a: Any, c: Any) -> list[Any]:
        t = a * c + 1.0
        return [t, t * t - c]  # t is used outside the fused group too: a second output

    compiled = _compiled(build, [[n], [1]], DataType.DT_DOUBLE)
    assert streamed == [1]
    t, u = compiled.run_arrays([x, s])
    np.testing.assert_array_equal(t, x * 1.5 + 1.0)
    np.testing.assert_array_equal(u, (x * 1.5 + 1.0) ** 2 - 1.5)


def test_an_unaligned_output_takes_the_plain_loop() -> None:
    compiled = _compiled(lambda a: [a * 3.0 - 1.0], [[N32]])
    (plan,) = compiled._plans.values()
    assert plan is not None
    runner = compiled.runner(plan)
    x = np.random.default_rng(2).standard_normal(N32, np.float32)
    nbytes = N32 * 4
    block = runtime.malloc(nbytes + 64)
    try:
        at = block.addr + 4  # 4 bytes past a 64-byte boundary
        view = runtime.memory.device_view(at, nbytes)
        (raw,) = runner.run([x], [(at, view)])
        np.testing.assert_array_equal(raw.view(np.float32), x * np.float32(3) - np.float32(1))
    finally:
        runtime.free(block)
