"""Scalar helpers that generated kernels call (Numba-compiled, inlined into each kernel).

Half types: numpy stores float16 and bfloat16 in 2 bytes, Numba cannot compute with them, so
kernels read their bits as uint16, compute in float32 (as GE's kernels do) and round back to
nearest-even when storing. Integer division truncates toward zero and gives 0 for a zero
divisor (ge's documented rule, see ge.ops.elementwise).

Imported only when a kernel is compiled (it imports Numba).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types as nt
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ge.runtime._numba_kernels import _address_as_pointer
from ge.runtime.kernel import kernel_array

__all__ = ["HELPERS"]


@intrinsic  # type: ignore[untyped-decorator]
def f32_bits(typingctx: Any, x: Any) -> Any:
    """The IEEE bits of a float32, as uint32 (a register bit-cast, no memory)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(32))

    return nt.uint32(nt.float32), codegen


@intrinsic  # type: ignore[untyped-decorator]
def bits_f32(typingctx: Any, x: Any) -> Any:
    """The float32 whose IEEE bits are the given uint32."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())

    return nt.float32(nt.uint32), codegen


@intrinsic  # type: ignore[untyped-decorator]
def f64_bits(typingctx: Any, x: Any) -> Any:
    """The IEEE bits of a float64, as uint64."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(64))

    return nt.uint64(nt.float64), codegen


@intrinsic  # type: ignore[untyped-decorator]
def bits_f64(typingctx: Any, x: Any) -> Any:
    """The float64 whose IEEE bits are the given uint64."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return nt.float64(nt.uint64), codegen


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def f16_to_f32(bits: int) -> Any:
    b = np.uint32(bits)
    sign = (b >> np.uint32(15)) & np.uint32(1)
    exp = (b >> np.uint32(10)) & np.uint32(0x1F)
    frac = b & np.uint32(0x3FF)
    if exp == 0:
        value = np.float32(frac) * np.float32(2.0**-24)
    elif exp == 31:
        value = np.float32(np.inf) if frac == 0 else np.float32(np.nan)
    else:
        value = np.float32(
            (np.float32(frac) / np.float32(1024.0) + np.float32(1.0))
            * np.float32(2.0 ** (np.int32(exp) - 15))
        )
    return -value if sign else value


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def f32_to_f16(value: float) -> Any:
    x = np.float32(value)
    sign = np.uint32(0x8000) if math.copysign(1.0, x) < 0 else np.uint32(0)
    if math.isnan(x):
        return np.uint16(sign | np.uint32(0x7E00))
    ax = abs(np.float64(x))
    if ax >= 65520.0:
        return np.uint16(sign | np.uint32(0x7C00))
    if ax < 2.0**-24 * 0.5:
        return np.uint16(sign)
    if ax < 2.0**-14:  # subnormal: multiples of 2**-24, ties to even
        q = ax / 2.0**-24
        r = np.float64(np.floor(q))
        diff = q - r
        n = np.int64(r)
        if diff > 0.5 or (diff == 0.5 and n % 2 == 1):
            n += 1
        return np.uint16(sign | np.uint32(n))
    e = np.int64(math.floor(math.log2(ax)))
    if 2.0**e > ax:
        e -= 1
    m = ax / 2.0**e - 1.0  # in [0, 1)
    q = m * 1024.0
    r = np.float64(np.floor(q))
    diff = q - r
    n = np.int64(r)
    if diff > 0.5 or (diff == 0.5 and n % 2 == 1):
        n += 1
    if n == 1024:
        n = 0
        e += 1
    if e > 15:
        return np.uint16(sign | np.uint32(0x7C00))
    return np.uint16(sign | np.uint32((e + 15) << 10) | np.uint32(n))


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def bf16_to_f32(bits: int) -> Any:
    return bits_f32(np.uint32(bits) << np.uint32(16))


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def f32_to_bf16(value: float) -> Any:
    x = np.float32(value)
    bits = f32_bits(x)
    if math.isnan(x):
        return np.uint16((bits >> np.uint32(16)) | np.uint32(0x40))
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return np.uint16((bits + rounding) >> np.uint32(16))


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def int_div(a: int, b: int) -> int:
    if b == 0:
        return 0
    if b == -1:  # -a wraps for the most negative value, as numpy's quotient does
        return -a  # (numba's a // -1 gives 0 there in int64)
    q = a // b
    if q * b != a and (a < 0) != (b < 0):
        q += 1
    return q


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def floor_div_i(a: int, b: int) -> int:
    """numpy's integer ``a // b``: floor, 0 for a division by 0, wrapping for MIN // -1."""
    if b == 0:
        return 0
    if b == -1:
        return -a
    return a // b  # Numba's integer // floors, as Python's


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def floor_mod_i(a: int, b: int) -> int:
    """numpy's integer ``a % b``: the divisor's sign, 0 for a division by 0."""
    if b == 0 or b == -1:  # noqa: PLR1714  (Numba: plain comparisons)
        return 0
    return a % b  # Numba's integer % takes the divisor's sign, as Python's


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def int_fmod(a: int, b: int) -> int:
    """C's ``fmod`` of integers (numpy's ``np.fmod``): the dividend's sign, 0 for b == 0."""
    if b == 0 or b == -1:  # noqa: PLR1714  (Numba: plain comparisons)
        return 0
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def floor_div_f(a: float, b: float) -> Any:
    """numpy's float ``a // b`` (``npy_floor_divide``): from fmod, so 1.0 // 0.1 is 9."""
    if b == 0:  # a / b, written out (no division by zero whatever the error model)
        if a == 0 or math.isnan(a):
            return b - b + np.nan  # b - b: a zero of the operands' type
        return np.copysign(b - b + np.inf, a) * np.copysign(b - b + 1, b)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1
    if div != 0:
        floordiv = np.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1
        return floordiv
    return np.copysign(div - div, a) * np.copysign(div - div + 1, b)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def floor_mod_f(a: float, b: float) -> Any:
    """numpy's float ``a % b`` (``npy_remainder``): the divisor's sign, a zero takes it too."""
    mod = np.fmod(a, b)
    if b == 0:
        return mod
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
        return mod
    return np.copysign(mod, b)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def left_shift(a: int, b: int, bits: int) -> int:
    """numpy's ``a << b``: 0 for a shift by the width or more, or a negative one."""
    if b < 0 or b >= bits:
        return 0
    return a << b


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def right_shift(a: int, b: int, bits: int) -> int:
    """numpy's ``a >> b``: the sign (0 or -1) for a shift by the width or more, or a
    negative one."""
    if b < 0 or b >= bits:
        return -1 if a < 0 else 0
    return a >> b


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def next_after_f32(a: float, b: float) -> Any:
    """numpy's ``nextafter`` of float32 values: the next float32 after ``a`` toward ``b``
    (bit arithmetic; Numba's own calls a runtime helper a standalone kernel cannot carry)."""
    x, y = np.float32(a), np.float32(b)
    if math.isnan(x) or math.isnan(y):
        return x + y
    if x == y:
        return y
    if x == 0:
        return np.float32(math.copysign(bits_f32(np.uint32(1)), y))
    bits = f32_bits(x)
    bits = bits + np.uint32(1) if (y > x) == (x > 0) else bits - np.uint32(1)
    return bits_f32(bits)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def next_after_f64(a: float, b: float) -> Any:
    """numpy's ``nextafter`` of float64 values (see ``next_after_f32``)."""
    x, y = np.float64(a), np.float64(b)
    if math.isnan(x) or math.isnan(y):
        return x + y
    if x == y:
        return y
    if x == 0:
        return math.copysign(bits_f64(np.uint64(1)), y)
    bits = f64_bits(x)
    bits = bits + np.uint64(1) if (y > x) == (x > 0) else bits - np.uint64(1)
    return bits_f64(bits)


# Row reductions of float32 that LLVM vectorises. The sum is its own function so its fast-math
# flags cover its loop alone: it may reassociate (a float64 sum of float32 values, in the
# order of the row's vector lanes). Max/min compare the floats' bits as ordered integers and
# find NaN in a separate exact pass. They take an address and a count, not an array (no
# reference counts).
@numba.njit(fastmath={"reassoc", "nsz", "contract"})  # type: ignore[untyped-decorator]
def row_sum_f32(addr: int, n: int) -> Any:
    x = kernel_array(addr, n, np.float32)
    total = np.float64(0)
    for i in range(n):
        total += np.float64(x[i])
    return total


@numba.njit  # type: ignore[untyped-decorator]
def row_has_nan_f32(addr: int, n: int) -> Any:
    x = kernel_array(addr, n, np.float32)
    found = 0
    for i in range(n):
        found |= np.int32(x[i] != x[i])
    return found != 0


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def _order_key(bits: Any) -> Any:
    """float32 bits -> an int32 that orders as the floats do (negatives flipped); its own
    inverse. Integer max/min reductions vectorise without fast-math flags."""
    return bits ^ ((bits >> np.int32(31)) & np.int32(0x7FFFFFFF))


@numba.njit  # type: ignore[untyped-decorator]
def _row_max_no_nan(addr: int, n: int) -> Any:
    x = kernel_array(addr, n, np.int32)
    top = _order_key(x[0])
    for i in range(1, n):
        top = max(top, _order_key(x[i]))
    return bits_f32(np.uint32(_order_key(top)))


@numba.njit  # type: ignore[untyped-decorator]
def _row_min_no_nan(addr: int, n: int) -> Any:
    x = kernel_array(addr, n, np.int32)
    low = _order_key(x[0])
    for i in range(1, n):
        low = min(low, _order_key(x[i]))
    return bits_f32(np.uint32(_order_key(low)))


@numba.njit  # type: ignore[untyped-decorator]
def row_max_f32(addr: int, n: int) -> Any:
    """Max of a float32 row (n >= 1); NaN if the row holds one, as numpy."""
    return np.float32(np.nan) if row_has_nan_f32(addr, n) else _row_max_no_nan(addr, n)


@numba.njit  # type: ignore[untyped-decorator]
def row_min_f32(addr: int, n: int) -> Any:
    """Min of a float32 row (n >= 1); NaN if the row holds one, as numpy."""
    return np.float32(np.nan) if row_has_nan_f32(addr, n) else _row_min_no_nan(addr, n)


# --- streaming stores ---------------------------------------------------------------------------
# Outputs much larger than the caches are written with non-temporal stores: they go to memory
# through write-combining buffers instead of first reading every line into the cache (the
# "read for ownership" a plain store costs). Kernels compute a tile into a stack buffer, with
# the same vectorised code as always, then stream the tile out with ``stream_store``.
TILE_BYTES = 16384  # a tile fits in L1 next to the inputs being read


@intrinsic  # type: ignore[untyped-decorator]
def stack_tile(typingctx: Any) -> Any:
    """The address of a ``TILE_BYTES`` buffer on the kernel's stack, 64-byte aligned (one per
    call site, allocated once in the function's entry block)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        # "alloca i8, i64 N", not an array type: LLVM's scalar replacement would otherwise
        # take the buffer apart byte by byte (tens of seconds of compile time)
        with builder.goto_entry_block():
            buffer = builder.alloca(ir.IntType(8), size=ir.Constant(ir.IntType(64), TILE_BYTES))
        buffer.align = 64
        return builder.ptrtoint(buffer, ir.IntType(64))

    return nt.int64(), codegen


def tile_array(addr: int, count: int, dtype: Any) -> Any:
    """A 1-D view of ``count`` elements of a ``stack_tile``: ``kernel_array`` without the
    live-memory check, which refuses the kernel's own stack (it is not device memory). For
    ``stack_tile`` addresses only."""
    raise NotImplementedError("tile_array runs only inside compiled kernels")


@overload(tile_array)  # type: ignore[untyped-decorator]
def _tile_array(addr: Any, count: Any, dtype: Any) -> Any:
    def impl(addr: Any, count: Any, dtype: Any) -> Any:
        return numba.carray(_address_as_pointer(addr, dtype), count)

    return impl


@intrinsic  # type: ignore[untyped-decorator]
def stream_store(typingctx: Any, dst: Any, src: Any, nbytes: Any) -> Any:
    """Copy ``nbytes`` from the 64-byte aligned ``src`` to ``dst``, whole 64-byte lines with
    non-temporal stores (``dst`` must be 64-byte aligned), the rest with plain ones."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        to, source, count = args
        i64 = ir.IntType(64)
        line = ir.VectorType(ir.IntType(32), 16)
        hint = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
        lines = builder.lshr(count, ir.Constant(i64, 6))
        with cgutils.for_range(builder, lines) as loop:
            at = builder.shl(loop.index, ir.Constant(i64, 6))
            value = builder.load(builder.inttoptr(builder.add(source, at), line.as_pointer()))
            value.align = 64
            store = builder.store(value, builder.inttoptr(builder.add(to, at), line.as_pointer()))
            store.align = 64
            store.set_metadata("nontemporal", hint)
        done = builder.shl(lines, ir.Constant(i64, 6))
        byte = ir.IntType(8).as_pointer()
        cgutils.raw_memcpy(
            builder,
            builder.inttoptr(builder.add(to, done), byte),
            builder.inttoptr(builder.add(source, done), byte),
            builder.sub(count, done),
            1,
        )
        return context.get_dummy_value()

    return nt.void(nt.int64, nt.int64, nt.int64), codegen


@intrinsic  # type: ignore[untyped-decorator]
def store_fence(typingctx: Any) -> Any:
    """Order the streaming stores before anything after (they are weakly ordered on x86):
    a block's results must be in memory before the launch reports it finished."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return nt.void(), codegen


HELPERS = {
    "row_sum_f32": row_sum_f32,
    "row_max_keys_f32": _row_max_no_nan,  # NaN-blind: for softmax, where NaN spreads anyway
    "row_max_f32": row_max_f32,
    "row_min_f32": row_min_f32,
    "f16_to_f32": f16_to_f32,
    "f32_to_f16": f32_to_f16,
    "bf16_to_f32": bf16_to_f32,
    "f32_to_bf16": f32_to_bf16,
    "int_div": int_div,
    "floor_div_i": floor_div_i,
    "floor_mod_i": floor_mod_i,
    "int_fmod": int_fmod,
    "floor_div_f": floor_div_f,
    "floor_mod_f": floor_mod_f,
    "next_after_f32": next_after_f32,
    "next_after_f64": next_after_f64,
    "left_shift": left_shift,
    "right_shift": right_shift,
    "stack_tile": stack_tile,
    "tile_array": tile_array,
    "stream_store": stream_store,
    "store_fence": store_fence,
}

from ge.compiler.kernels._approx import APPROX_HELPERS  # noqa: E402  (it uses the bit casts above)

HELPERS.update(APPROX_HELPERS)
