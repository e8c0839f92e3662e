"""``ge.allocator``: the ``MemBlock`` value type and the abstract ``Allocator`` interface, with a
counting allocator backed by ``ge.runtime.malloc``/``free``."""

from __future__ import annotations

import numpy as np
import pytest

from ge import runtime
from ge.allocator import Allocator, MemBlock
from ge.error import GeError


# --- MemBlock -----------------------------------------------------------------------------------
def test_memblock_fields() -> None:
    block = MemBlock(0x1000, 64)
    assert block.addr == 0x1000
    assert block.size == 64
    assert MemBlock(0, 0).addr == 0
    assert MemBlock(2**64 - 1, 2**40).addr == 2**64 - 1


def test_memblock_fields_are_read_only() -> None:
    block = MemBlock(64, 8)
    with pytest.raises(AttributeError):
        block.addr = 128  # type: ignore[misc]
    with pytest.raises(AttributeError):
        block.size = 16  # type: ignore[misc]
    with pytest.raises(AttributeError):
        block.extra = 1  # type: ignore[attr-defined]
    assert (block.addr, block.size) == (64, 8)


@pytest.mark.parametrize(("addr", "size"), [(-1, 8), (64, -1), (-(2**70), 0)])
def test_memblock_keeps_negative_values_and_checked_refuses_them(addr: int, size: int) -> None:
    """GE_ERRORS.md §7: ``MemBlock(addr, size)`` validates nothing; ``checked()`` (what the
    session applies to an allocator's blocks) refuses them."""
    block = MemBlock(addr, size)
    assert (block.addr, block.size) == (addr, size)
    with pytest.raises(ValueError, match=r"(addr|size) must be >= 0"):
        block.checked()


@pytest.mark.parametrize("bad", [1.0, "64", None, True, False, [64], 1 + 0j])
def test_memblock_keeps_non_integers_and_checked_refuses_them(bad: object) -> None:
    assert MemBlock(bad, 8).addr is bad  # type: ignore[arg-type]
    assert MemBlock(64, bad).size is bad  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^addr must be an integer"):
        MemBlock(bad, 8).checked()  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^size must be an integer"):
        MemBlock(64, bad).checked()  # type: ignore[arg-type]


def test_memblock_checked_errors_are_ge_errors() -> None:
    with pytest.raises(GeError):
        MemBlock(-1, 0).checked()
    with pytest.raises(GeError):
        MemBlock("1", 0).checked()  # type: ignore[arg-type]
    assert MemBlock(np.int64(64), np.uint32(8)).checked() == (64, 8)
    assert type(MemBlock(np.int64(64), 8).addr) is int


def test_memblock_equality_and_hash() -> None:
    a, b = MemBlock(0x40, 16), MemBlock(0x40, 16)
    assert a == b
    assert hash(a) == hash(b)
    assert a != MemBlock(0x40, 32)
    assert a != MemBlock(0x80, 16)
    assert a != (0x40, 16)
    assert a != 0x40
    assert (a == "x") is False
    assert len({a, b, MemBlock(0x80, 16)}) == 2
    table = {a: "first"}
    assert table[b] == "first"


def test_memblock_repr() -> None:
    text = repr(MemBlock(0x1000, 64))
    assert text == "MemBlock(addr=0x1000, size=64)"
    assert "size=0" in repr(MemBlock(0, 0))
    assert repr(MemBlock("a", None)) == "MemBlock(addr='a', size=None)"  # type: ignore[arg-type]


# --- Allocator ----------------------------------------------------------------------------------
def test_allocator_is_abstract() -> None:
    with pytest.raises(TypeError):
        Allocator()  # type: ignore[abstract]


def test_a_subclass_missing_a_method_cannot_be_instantiated() -> None:
    class OnlyMalloc(Allocator):
        def malloc(self, size: int) -> MemBlock:
            return MemBlock(0, size)

    class OnlyFree(Allocator):
        def free(self, block: MemBlock) -> None:
            pass

    with pytest.raises(TypeError, match="free"):
        OnlyMalloc()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="malloc"):
        OnlyFree()  # type: ignore[abstract]


class CountingAllocator(Allocator):
    """Serves device memory from ge.runtime and counts what it hands out."""

    def __init__(self) -> None:
        self.mallocs = 0
        self.frees = 0
        self.live: dict[int, MemBlock] = {}

    def malloc(self, size: int) -> MemBlock:
        block = runtime.malloc(size)
        self.mallocs += 1
        self.live[block.addr] = block
        return block

    def free(self, block: MemBlock) -> None:
        if self.live.pop(block.addr, None) is None:
            raise ValueError(f"{block!r} was not allocated here")
        runtime.free(block)
        self.frees += 1


def test_a_counting_allocator_backed_by_the_runtime() -> None:
    bytes0, count0 = runtime.live_bytes(), runtime.live_allocations()
    alloc = CountingAllocator()
    assert isinstance(alloc, Allocator)
    blocks = [alloc.malloc(size) for size in (4, 64, 100, 0)]
    assert alloc.mallocs == 4
    assert [b.size for b in blocks] == [4, 64, 100, 0]
    assert all(isinstance(b, MemBlock) for b in blocks)
    assert all(b.addr % 64 == 0 for b in blocks)
    assert runtime.live_bytes() == bytes0 + 168
    assert runtime.live_allocations() == count0 + 4

    data = np.arange(25, dtype=np.float32)
    runtime.memcpy_h2d(blocks[2].addr, data)
    out = np.empty(25, np.float32)
    runtime.memcpy_d2h(out, blocks[2].addr)
    np.testing.assert_array_equal(out, data)

    for block in blocks:
        alloc.free(block)
    assert alloc.frees == 4
    assert alloc.live == {}
    assert runtime.live_bytes() == bytes0
    assert runtime.live_allocations() == count0
    with pytest.raises(ValueError):
        alloc.free(blocks[0])
    with pytest.raises(ValueError):
        runtime.free(blocks[0])  # the runtime agrees the block is gone


def test_a_block_from_the_allocator_can_back_a_kernel_launch_argument() -> None:
    """Blocks the allocator hands out are exactly what launch checks against live memory."""
    from ge._device import device_memory

    alloc = CountingAllocator()
    block = alloc.malloc(48)
    try:
        assert device_memory().contains(block.addr, block.size)
        assert not device_memory().contains(block.addr, block.size + 1)
    finally:
        alloc.free(block)
    assert not device_memory().contains(block.addr, 1)
