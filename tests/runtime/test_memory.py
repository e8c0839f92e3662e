"""``ge.runtime`` device memory: malloc/free, MemBlock, live-memory accounting, the four memcpy
directions and the address checks that refuse (and never write through) a bad address."""

from __future__ import annotations

import contextlib
import ctypes
import itertools
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from ge import runtime
from ge.allocator import MemBlock
from ge.error import GeError


def _raw(addr: int, nbytes: int) -> bytes:
    """Read bytes straight from the process (bypassing the runtime's checks). Only used on
    memory the test knows is inside an allocation's buffer (size rounded up to 64 bytes)."""
    return ctypes.string_at(addr, nbytes)


@pytest.fixture
def blocks() -> Iterator[list[MemBlock]]:
    """Collects blocks a test allocates and frees those still live afterwards."""
    made: list[MemBlock] = []
    yield made
    for block in made:
        with contextlib.suppress(ValueError):  # already freed by the test
            runtime.free(block)


def _alloc(blocks: list[MemBlock], size: int) -> MemBlock:
    block = runtime.malloc(size)
    blocks.append(block)
    return block


# --- malloc / free ------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 1, 3, 63, 64, 65, 1000, 4096, 1 << 20])
def test_malloc_returns_an_aligned_memblock_of_the_requested_size(size: int) -> None:
    block = runtime.malloc(size)
    try:
        assert type(block) is MemBlock
        assert runtime.MemBlock is MemBlock
        assert isinstance(block.addr, int)
        assert block.addr > 0
        assert block.addr % 64 == 0
        assert block.size == size
        # the whole requested range is live, one byte more is not
        assert runtime.device_view(block.addr, size).shape == (size,)
        with pytest.raises(ValueError):
            runtime.device_view(block.addr, size + 1)
    finally:
        runtime.free(block)


def test_addresses_are_distinct_and_stable(blocks: list[MemBlock]) -> None:
    made = [_alloc(blocks, s) for s in (0, 0, 1, 64, 100, 7)]
    assert len({b.addr for b in made}) == len(made)
    before = [b.addr for b in made]
    # allocating and freeing other memory does not move live blocks
    extra = [runtime.malloc(256) for _ in range(10)]
    for e in extra:
        runtime.free(e)
    assert [b.addr for b in made] == before
    spans = sorted((b.addr, b.addr + max(b.size, 1)) for b in made)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start


def test_data_survives_at_a_stable_address(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 80)
    data = np.arange(10, dtype=np.int64)
    runtime.memcpy_h2d(block.addr, data)
    churn = [runtime.malloc(80) for _ in range(5)]
    for c in churn:
        runtime.memcpy_h2d(c.addr, np.full(10, -1, np.int64))
        runtime.free(c)
    out = np.empty(10, np.int64)
    runtime.memcpy_d2h(out, block.addr)
    np.testing.assert_array_equal(out, data)


def test_live_bytes_and_allocations_return_to_baseline() -> None:
    bytes0, count0 = runtime.live_bytes(), runtime.live_allocations()
    sizes = [0, 1, 100, 4096, 65]
    made = [runtime.malloc(s) for s in sizes]
    assert runtime.live_bytes() == bytes0 + sum(sizes)
    assert runtime.live_allocations() == count0 + len(sizes)
    runtime.free(made[2])
    assert runtime.live_bytes() == bytes0 + sum(sizes) - 100
    assert runtime.live_allocations() == count0 + len(sizes) - 1
    for i, block in enumerate(made):
        if i != 2:
            runtime.free(block)
    assert runtime.live_bytes() == bytes0
    assert runtime.live_allocations() == count0


def test_failed_operations_do_not_leak() -> None:
    bytes0, count0 = runtime.live_bytes(), runtime.live_allocations()
    for bad in (-1, 1.5, "8", None, True):
        with pytest.raises((TypeError, ValueError)):
            runtime.malloc(bad)  # type: ignore[arg-type]
    block = runtime.malloc(16)
    with pytest.raises(ValueError):
        runtime.memcpy_h2d(block.addr, np.zeros(5, np.float32))
    runtime.free(block)
    with pytest.raises(ValueError):
        runtime.free(block)
    assert runtime.live_bytes() == bytes0
    assert runtime.live_allocations() == count0


def test_free_accepts_the_block_or_its_start_address() -> None:
    count0 = runtime.live_allocations()
    a, b, c = runtime.malloc(8), runtime.malloc(8), runtime.malloc(8)
    runtime.free(a)
    runtime.free(b.addr)
    runtime.free(np.int64(c.addr))  # type: ignore[arg-type]
    assert runtime.live_allocations() == count0


def test_freed_memory_is_reused() -> None:
    block = runtime.malloc(200)
    addr = block.addr
    runtime.free(block)
    again = runtime.malloc(200)
    try:
        assert again.addr == addr
        assert again.size == 200
        # the reused block is fully usable
        runtime.memcpy_h2d(again.addr, np.arange(50, dtype=np.float32))
        out = np.empty(50, np.float32)
        runtime.memcpy_d2h(out, again.addr)
        np.testing.assert_array_equal(out, np.arange(50, dtype=np.float32))
    finally:
        runtime.free(again)


def test_freed_memory_is_reused_for_a_size_of_the_same_capacity() -> None:
    block = runtime.malloc(10)  # rounded up to one 64-byte line
    addr = block.addr
    runtime.free(block)
    again = runtime.malloc(50)
    try:
        assert again.addr == addr
        assert again.size == 50
        assert runtime.device_view(again.addr, 50).size == 50
    finally:
        runtime.free(again)


def test_double_free_is_a_value_error() -> None:
    block = runtime.malloc(32)
    runtime.free(block)
    with pytest.raises(ValueError, match="free"):
        runtime.free(block)
    with pytest.raises(GeError):
        runtime.free(block.addr)


def test_free_of_interior_or_unknown_address_is_a_value_error(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 128)
    count = runtime.live_allocations()
    for addr in (block.addr + 1, block.addr + 64, 0, 8, 2**62):
        with pytest.raises(ValueError):
            runtime.free(addr)
    with pytest.raises(ValueError):
        runtime.free(MemBlock(block.addr + 64, 64))
    assert runtime.live_allocations() == count
    runtime.device_view(block.addr, 128)  # still live


@pytest.mark.parametrize("bad", [1.5, "0x1000", None, True, [1], MemBlock])
def test_free_with_a_wrong_type_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        runtime.free(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [1.0, "8", None, True, False, [8], np.float64(8)])
def test_malloc_with_a_wrong_type_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        runtime.malloc(bad)  # type: ignore[arg-type]


def test_malloc_of_a_negative_size_is_a_value_error() -> None:
    count = runtime.live_allocations()
    with pytest.raises(ValueError, match="size"):
        runtime.malloc(-1)
    assert runtime.live_allocations() == count


def test_zero_size_blocks_get_unique_addresses_and_copy_nothing() -> None:
    a, b = runtime.malloc(0), runtime.malloc(0)
    try:
        assert a.addr != b.addr
        runtime.memcpy_h2d(a.addr, np.zeros(0, np.float32))
        runtime.memcpy_d2h(np.zeros(0, np.float32), a.addr)
        runtime.memcpy_d2d(b.addr, a.addr, 0)
        with pytest.raises(ValueError):
            runtime.memcpy_h2d(a.addr, np.zeros(1, np.uint8))
    finally:
        runtime.free(a)
        runtime.free(b)


# --- memcpy -------------------------------------------------------------------------------------
_ROUND_TRIP_CASES = [
    (np.float32, (7,)),
    (np.float64, (3, 4)),
    (np.int8, (5, 1, 3)),
    (np.int32, ()),
    (np.int64, (2, 0, 3)),
    (np.uint16, (0,)),
    (np.uint64, (4,)),
    (np.bool_, (9,)),
    (np.float16, (2, 5)),
    (np.complex128, (3,)),
]


@pytest.mark.parametrize(("dtype", "shape"), _ROUND_TRIP_CASES)
def test_memcpy_round_trip(dtype: type, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    if dtype is np.bool_:
        data = rng.integers(0, 2, size=shape).astype(np.bool_)
    elif np.issubdtype(dtype, np.complexfloating):
        data = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    elif np.issubdtype(dtype, np.floating):
        data = rng.standard_normal(shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    block = runtime.malloc(data.nbytes)
    try:
        runtime.memcpy_h2d(block.addr, data)
        out = np.empty(shape, dtype)
        runtime.memcpy_d2h(out, block.addr)
        np.testing.assert_array_equal(out, data)
        assert out.dtype == data.dtype
        # the device holds the plain C-order bytes
        assert runtime.device_view(block.addr, data.nbytes).tobytes() == data.tobytes()
    finally:
        runtime.free(block)


def test_memcpy_extreme_values_are_bit_exact(blocks: list[MemBlock]) -> None:
    data = np.array([np.nan, -0.0, np.inf, -np.inf, 5e-324, np.finfo(np.float64).max])
    block = _alloc(blocks, data.nbytes)
    runtime.memcpy_h2d(block.addr, data)
    out = np.empty_like(data)
    runtime.memcpy_d2h(out, block.addr)
    assert out.tobytes() == data.tobytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[:, ::2],  # strided columns
        lambda a: a.T,  # Fortran order
        lambda a: a[::-1],  # negative stride
        np.asfortranarray,
    ],
)
def test_memcpy_h2d_copies_a_non_contiguous_source_in_c_order(
    make: Callable[[np.ndarray], np.ndarray], blocks: list[MemBlock]
) -> None:
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    src = make(base)
    block = _alloc(blocks, src.nbytes)
    runtime.memcpy_h2d(block.addr, src)
    out = np.empty(src.shape, src.dtype)
    runtime.memcpy_d2h(out, block.addr)
    np.testing.assert_array_equal(out, src)
    assert (
        runtime.device_view(block.addr, src.nbytes).tobytes() == np.ascontiguousarray(src).tobytes()
    )
    np.testing.assert_array_equal(base, np.arange(48, dtype=np.float32).reshape(6, 8))


def test_memcpy_h2d_accepts_a_read_only_source(blocks: list[MemBlock]) -> None:
    src = np.arange(4, dtype=np.int32)
    src.flags.writeable = False
    block = _alloc(blocks, src.nbytes)
    runtime.memcpy_h2d(block.addr, src)
    assert runtime.device_view(block.addr, 16).view(np.int32).tolist() == [0, 1, 2, 3]


def test_memcpy_h2d_into_the_middle_of_a_block(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 64)
    runtime.memcpy_h2d(block.addr, np.zeros(64, np.uint8))
    runtime.memcpy_h2d(block.addr + 8, np.full(4, 0xAB, np.uint8))
    got = runtime.device_view(block.addr, 64)
    assert got[:8].tolist() == [0] * 8
    assert got[8:12].tolist() == [0xAB] * 4
    assert got[12:].tolist() == [0] * 52


def test_memcpy_d2h_refuses_a_read_only_destination(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 16)
    runtime.memcpy_h2d(block.addr, np.arange(4, dtype=np.int32))
    dst = np.full(4, 9, np.int32)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        runtime.memcpy_d2h(dst, block.addr)
    assert dst.tolist() == [9, 9, 9, 9]


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[:, ::2],
        lambda a: a.T,
        lambda a: a[::-1],
    ],
)
def test_memcpy_d2h_refuses_a_non_contiguous_destination(
    make: Callable[[np.ndarray], np.ndarray], blocks: list[MemBlock]
) -> None:
    base = np.full((4, 6), -1.0)
    dst = make(base)
    block = _alloc(blocks, dst.nbytes)
    runtime.memcpy_h2d(block.addr, np.zeros(dst.size))
    with pytest.raises(ValueError, match="contiguous"):
        runtime.memcpy_d2h(dst, block.addr)
    assert (base == -1.0).all()


def test_memcpy_d2d_copies_between_blocks(blocks: list[MemBlock]) -> None:
    src = _alloc(blocks, 40)
    dst = _alloc(blocks, 40)
    runtime.memcpy_h2d(src.addr, np.arange(10, dtype=np.int32))
    runtime.memcpy_h2d(dst.addr, np.zeros(10, np.int32))
    runtime.memcpy_d2d(dst.addr + 8, src.addr + 4, 12)  # elements 1..3 -> slots 2..4
    out = np.empty(10, np.int32)
    runtime.memcpy_d2h(out, dst.addr)
    assert out.tolist() == [0, 0, 1, 2, 3, 0, 0, 0, 0, 0]
    runtime.memcpy_d2h(out, src.addr)
    assert out.tolist() == list(range(10))


@pytest.mark.parametrize(("dst_off", "src_off"), [(0, 4), (4, 0)])
def test_memcpy_d2d_with_overlap_behaves_like_memmove(
    dst_off: int, src_off: int, blocks: list[MemBlock]
) -> None:
    block = _alloc(blocks, 32)
    runtime.memcpy_h2d(block.addr, np.arange(32, dtype=np.uint8))
    expected = bytearray(range(32))
    expected[dst_off : dst_off + 24] = bytes(range(32))[src_off : src_off + 24]
    runtime.memcpy_d2d(block.addr + dst_off, block.addr + src_off, 24)
    assert runtime.device_view(block.addr, 32).tobytes() == bytes(expected)


# --- refusing bad addresses ---------------------------------------------------------------------
def test_out_of_range_h2d_is_refused_and_writes_nothing(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 60)  # capacity 64: the 4 padding bytes are real memory
    neighbour = _alloc(blocks, 64)
    runtime.memcpy_h2d(block.addr, np.full(60, 0x11, np.uint8))
    runtime.memcpy_h2d(neighbour.addr, np.full(64, 0x22, np.uint8))
    before_block = _raw(block.addr, 64)
    before_neighbour = _raw(neighbour.addr, 64)
    for addr, n in [
        (block.addr + 56, 8),  # straddles the end of the requested size
        (block.addr, 61),  # one byte too many
        (block.addr + 60, 1),  # only the padding
        (block.addr - 8, 8),  # before the block
        (block.addr - 1, 2),
    ]:
        with pytest.raises(ValueError, match="not inside live device memory"):
            runtime.memcpy_h2d(addr, np.full(n, 0xFF, np.uint8))
    assert _raw(block.addr, 64) == before_block
    assert _raw(neighbour.addr, 64) == before_neighbour


def test_a_range_spanning_two_blocks_is_refused(blocks: list[MemBlock]) -> None:
    a = _alloc(blocks, 64)
    b = _alloc(blocks, 64)
    lo, hi = sorted((a, b), key=lambda blk: blk.addr)
    # A view is asked for (no host array as large as the gap, which can be terabytes when the
    # two blocks come from different arenas).
    with pytest.raises(ValueError):
        runtime.device_view(lo.addr, hi.addr - lo.addr + 1)


def test_freed_address_is_refused_everywhere() -> None:
    block = runtime.malloc(64)
    runtime.memcpy_h2d(block.addr, np.full(64, 0x5A, np.uint8))
    other = runtime.malloc(64)
    runtime.memcpy_h2d(other.addr, np.full(64, 0x33, np.uint8))
    runtime.free(block)
    try:
        with pytest.raises(ValueError):
            runtime.memcpy_h2d(block.addr, np.zeros(8, np.uint8))
        out = np.full(8, 7, np.uint8)
        with pytest.raises(ValueError):
            runtime.memcpy_d2h(out, block.addr)
        assert out.tolist() == [7] * 8
        with pytest.raises(ValueError):
            runtime.memcpy_d2d(block.addr, other.addr, 8)
        with pytest.raises(ValueError):
            runtime.memcpy_d2d(other.addr, block.addr, 8)
        with pytest.raises(ValueError):
            runtime.device_view(block.addr, 1)
        assert _raw(block.addr, 64) == b"\x5a" * 64  # the refused copies wrote nothing
        assert runtime.device_view(other.addr, 64).tolist() == [0x33] * 64
    finally:
        runtime.free(other)


def test_out_of_range_d2h_is_refused_and_leaves_the_destination(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 16)
    out = np.full(5, -7, np.int32)  # 20 bytes > 16
    with pytest.raises(ValueError):
        runtime.memcpy_d2h(out, block.addr)
    assert out.tolist() == [-7] * 5


def test_out_of_range_d2d_is_refused_and_writes_nothing(blocks: list[MemBlock]) -> None:
    src = _alloc(blocks, 32)
    dst = _alloc(blocks, 32)
    runtime.memcpy_h2d(src.addr, np.full(32, 1, np.uint8))
    runtime.memcpy_h2d(dst.addr, np.full(32, 2, np.uint8))
    before = _raw(dst.addr, 64)
    with pytest.raises(ValueError):
        runtime.memcpy_d2d(dst.addr + 16, src.addr, 32)  # dst too short
    with pytest.raises(ValueError):
        runtime.memcpy_d2d(dst.addr, src.addr + 16, 32)  # src too short
    with pytest.raises(ValueError):
        runtime.memcpy_d2d(dst.addr, src.addr, -1)
    assert _raw(dst.addr, 64) == before


def test_addresses_that_were_never_allocated_are_refused() -> None:
    for addr in (0, 1, 64, -64, 2**63, 2**70):
        with pytest.raises(ValueError):
            runtime.memcpy_h2d(addr, np.zeros(1, np.uint8))
        with pytest.raises(ValueError):
            runtime.device_view(addr, 1)


def test_device_view_is_a_live_writable_window(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 16)
    view = runtime.device_view(block.addr, 16)
    assert view.dtype == np.uint8
    assert view.flags.writeable
    assert view.ctypes.data == block.addr
    view[:] = 3
    out = np.empty(16, np.uint8)
    runtime.memcpy_d2h(out, block.addr)
    assert out.tolist() == [3] * 16
    assert runtime.device_view(block.addr + 4, 4).ctypes.data == block.addr + 4
    with pytest.raises(ValueError):
        runtime.device_view(block.addr, -1)


# --- wrong types --------------------------------------------------------------------------------
@pytest.mark.parametrize("bad_addr", [1.5, "0", None, True, [0]])
def test_memcpy_with_a_non_integer_address_is_a_type_error(
    bad_addr: object, blocks: list[MemBlock]
) -> None:
    block = _alloc(blocks, 8)
    with pytest.raises(TypeError):
        runtime.memcpy_h2d(bad_addr, np.zeros(1, np.uint8))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        runtime.memcpy_d2h(np.zeros(1, np.uint8), bad_addr)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        runtime.memcpy_d2d(bad_addr, block.addr, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        runtime.memcpy_d2d(block.addr, bad_addr, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        runtime.device_view(bad_addr, 1)  # type: ignore[arg-type]


def test_memcpy_with_a_memblock_for_an_address_is_a_type_error(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 8)
    with pytest.raises(TypeError):
        runtime.memcpy_h2d(block, np.zeros(1, np.uint8))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad_array", [[1, 2], b"ab", (1,), None, 3.0, memoryview(b"ab")])
def test_memcpy_with_a_non_ndarray_is_a_type_error(
    bad_array: object, blocks: list[MemBlock]
) -> None:
    block = _alloc(blocks, 8)
    runtime.memcpy_h2d(block.addr, np.arange(8, dtype=np.uint8))
    with pytest.raises(TypeError):
        runtime.memcpy_h2d(block.addr, bad_array)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        runtime.memcpy_d2h(bad_array, block.addr)  # type: ignore[arg-type]
    assert runtime.device_view(block.addr, 8).tolist() == list(range(8))


def test_memcpy_with_an_object_array_is_refused(blocks: list[MemBlock]) -> None:
    block = _alloc(blocks, 64)
    runtime.memcpy_h2d(block.addr, np.zeros(64, np.uint8))
    with pytest.raises(TypeError):
        runtime.memcpy_h2d(block.addr, np.array([object()], dtype=object))
    dst = np.array([None, None], dtype=object)
    with pytest.raises(TypeError):
        runtime.memcpy_d2h(dst, block.addr)
    assert dst.tolist() == [None, None]
    assert runtime.device_view(block.addr, 64).tolist() == [0] * 64


@pytest.mark.parametrize("bad_nbytes", ["8", 8.0, 8.5, None, True])
def test_memcpy_d2d_with_a_non_integer_size_is_a_type_error(
    bad_nbytes: object, blocks: list[MemBlock]
) -> None:
    src = _alloc(blocks, 16)
    dst = _alloc(blocks, 16)
    runtime.memcpy_h2d(src.addr, np.full(16, 1, np.uint8))
    runtime.memcpy_h2d(dst.addr, np.zeros(16, np.uint8))
    with pytest.raises(TypeError):
        runtime.memcpy_d2d(dst.addr, src.addr, bad_nbytes)  # type: ignore[arg-type]
    assert runtime.device_view(dst.addr, 16).tolist() == [0] * 16


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(10, dtype=np.float32),
        lambda: np.arange(10, dtype=np.float64)[3:],
        lambda: np.ones((4, 6), np.int8)[:, ::2],
        lambda: np.zeros(0, np.float32),
        lambda: np.asarray(7.0),
        lambda: np.frombuffer(bytes(16), np.uint8),  # read-only
    ],
)
def test_data_address_is_ctypes_data(make: Callable[[], np.ndarray]) -> None:
    from ge.runtime.memory import _FAST_ADDRESS, data_address

    array = make()
    assert _FAST_ADDRESS  # CPython with numpy's documented PyArrayObject layout
    assert data_address(array) == array.ctypes.data


@pytest.mark.parametrize(
    ("addr", "size", "error"),
    [("x", 3, TypeError), (16, "y", TypeError), (None, None, TypeError), (1.5, 2, TypeError),
     (-1, 3, ValueError)],
)
def test_hand_made_blocks_with_bad_fields_are_refused_with_a_ge_error(
    addr: object, size: object, error: type[Exception]
) -> None:
    """``MemBlock`` stores what it is given (GE-PY's class checks nothing); whatever takes one
    checks it, so a bad field is a named GeError, never a raw formatting error."""
    block = MemBlock(addr, size)  # type: ignore[arg-type]
    with pytest.raises(error, match="(addr|size) must be") as info:
        runtime.free(block)
    assert isinstance(info.value, GeError)
    kernel = runtime.load_kernel_binary(
        runtime.compile_kernel(_noop_kernel, "noop")
    ).get_function("noop")
    stream = runtime.Stream()
    try:
        with pytest.raises(error, match="(addr|size) must be"):
            runtime.launch_kernel(kernel, 1, stream, [block])
    finally:
        stream.synchronize()


def _noop_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    pass
