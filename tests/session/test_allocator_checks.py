"""An external allocator's blocks are checked before any kernel can write them (issue #12):
a block outside device memory, one the allocator already freed, or one too small is refused
by ``run_graph_with_stream_async`` at the call, with nothing queued and nothing leaked."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

from ge import runtime
from ge.allocator import Allocator, MemBlock
from ge.error import GeError
from ge.ge_global import GeApi
from ge.runtime import Stream
from ge.session import Session
from tests.session.test_session import CONFIG, chain_graph, host


@pytest.fixture(autouse=True)
def initialized() -> Iterator[None]:
    GeApi.ge_initialize(CONFIG)
    yield
    GeApi.ge_finalize()


class _Serving(Allocator):
    """Hands out whatever ``make(size)`` returns; records what it is given back."""

    def __init__(self, make) -> None:  # type: ignore[no-untyped-def]
        self.make = make
        self.freed: list[MemBlock] = []

    def malloc(self, size: int) -> MemBlock:
        block: MemBlock = self.make(size)
        return block

    def free(self, block: MemBlock) -> None:
        self.freed.append(block)


def _freed_block(size: int) -> MemBlock:
    block = runtime.malloc(size)
    runtime.free(block)
    return block


_host_memory = np.zeros(1024, np.uint8)

BAD = {
    "nowhere": lambda size: MemBlock(0x1000, size),
    "host memory": lambda size: MemBlock(_host_memory.ctypes.data, size),
    "already freed": _freed_block,
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_block_that_is_not_live_device_memory_is_refused_before_any_kernel(kind: str) -> None:
    session, stream = Session(CONFIG), Stream()
    session.add_graph(1, chain_graph(16))
    session.register_external_allocator(stream, _Serving(BAD[kind]))
    session.run_graph(1, [host(np.ones(16, np.float32))])  # compiled: its constants are live
    gc.collect()  # earlier tests' garbage must not free device memory while this one counts
    live = runtime.live_bytes()
    with pytest.raises(GeError, match="which is not live device memory"):
        session.run_graph_with_stream_async(1, stream, [host(np.ones(16, np.float32))])
    stream.synchronize()  # nothing was queued
    assert runtime.live_bytes() == live


def test_a_block_freed_and_reused_is_refused_by_its_generation() -> None:
    stale = _freed_block(64)
    reuse = runtime.malloc(64)  # the freed block's address, now another allocation's
    assert reuse.addr == stale.addr
    try:
        session, stream = Session(CONFIG), Stream()
        session.add_graph(1, chain_graph(16))
        session.register_external_allocator(stream, _Serving(lambda size: stale))
        with pytest.raises(GeError, match="belongs to a block that was freed"):
            session.run_graph_with_stream_async(1, stream, [host(np.ones(16, np.float32))])
    finally:
        runtime.free(reuse)


def test_good_blocks_from_an_allocator_are_used() -> None:
    session, stream = Session(CONFIG), Stream()
    session.add_graph(1, chain_graph(16))
    allocator = _Serving(runtime.malloc)
    session.register_external_allocator(stream, allocator)
    (out,) = session.run_graph_with_stream_async(1, stream, [host(np.ones(16, np.float32))])
    stream.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.full(16, 6.0, np.float32))
