"""Kernels for the scans and sorts: Cumsum, Cumprod, Sort, TopKV2.

Every op works along one axis of a contiguous tensor, seen as ``outer x n x inner``: a *row* is
one ``(outer, inner)`` position, its ``n`` elements ``inner`` apart, so any axis works in place
without a transpose. Blocks share the rows.

- Scans: one kernel per dtype serves Cumsum and Cumprod, exclusive or not, forward or
  reversed (all four are run-time arguments, so they share one compiled kernel). The running
  value is held as the references hold it: float32/float64 in their own type, half types in
  float32 (rounded once per output), integers in int64 (uint64 for unsigned) and wrapped to
  the output type on store, which is the same modular result as accumulating in it.
- Sorts: one kernel per element size and kind serves Sort and TopKV2 (ascending or
  descending, ``k`` of the ``n`` elements written; Sort is ``k = n``). Each element becomes an
  unsigned key of its size whose integer order is the sort's order (floats by the
  sign-magnitude trick, ``-0.0`` equal to ``0.0`` and NaN above +inf; signed ints with the
  sign bit flipped; descending: every bit flipped), so one comparison serves every dtype and
  direction and half types need no conversion. Each row's keys go to a per-block scratch
  row with their positions ``0..n-1``; the (key, position) pairs are sorted stably, and the
  first ``k`` positions are written with the values they point at, copied as raw bits. A
  long row (from 16 elements per 8-bit digit of the key, at least 32: 64 for 4-byte keys) is
  LSD radix sorted, 8 bits a pass from the lowest (stable by construction; keys up to 4
  bytes packed with their position in one uint64 so a pass moves one word; one pass over the
  row builds every digit's histogram; a digit that is the same for the whole row is
  skipped). A shorter row is sorted by insertion sort on runs of 16 then bottom-up merges
  (ping-ponging between two scratch pairs of rows, moving keys with their positions so every
  pass is sequential). A small ``k``
  of a long row (``k <= 64``, ``n >= 16 k``: TopKV2's usual case) is selected instead, by
  keeping the ``k`` first keys sorted while the row streams by. This is the order of
  ``ge.ops.sorting.stable_order``: ties keep their input order in both directions.

The kernels' sources are self-contained (they call no helper: halves are sorted by their bits
and scanned through ``_scalar``'s conversions, which the disk cache already fingerprints), so
the fingerprint needs nothing from this module.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ge.compiler.kernels import Lowering, register_kernels
from ge.compiler.kernels._codegen import kernel_from_source
from ge.compiler.kernels.elementwise import _HALF, _np_name, _store
from ge.compiler.lower import LowerContext
from ge.ops import _rules as rules
from ge.ops.infer import const_value
from ge.ops.shape import _ints
from ge.runtime.plan import BufferKind, BufferSpec, HostTask, KernelTask, kernel_task

__all__ = ["lower_scan", "lower_sort"]

_RUN = 16  # insertion-sorted run length before merging
_SELECT_MAX_K = 64  # TopKV2 with k up to this, and n at least _SELECT_RATIO * k, selects
_SELECT_RATIO = 16
_RADIX_BITS = 8  # bits of the key each radix pass sorts on
_BUCKETS = 1 << _RADIX_BITS
# Rows at least this long per radix pass of the key (and at least _RADIX_MIN_ROW) are radix
# sorted, shorter ones merge sorted: each pass costs the row plus its histogram's buckets
# (measured: float32 radix wins from n ~ 64, float64 from ~ 128, 16-bit keys below 32).
_RADIX_MIN_PER_PASS = 16
_RADIX_MIN_ROW = 32
_PARALLEL_MIN = 1 << 15  # elements below which one block does all rows
_UINT = {1: "np.uint8", 2: "np.uint16", 4: "np.uint32", 8: "np.uint64"}


def _count(shape: tuple[int, ...]) -> int:
    return max(int(np.prod(shape, dtype=np.int64)), 1)


def _split(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """``(outer, n, inner)`` of a contiguous ``shape`` around ``axis`` (a 0-d one: 1, 1, 1)."""
    if not shape:
        return 1, 1, 1
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    return outer, shape[axis], inner


def _blocks(rows: int, n: int) -> int:
    if rows * n < _PARALLEL_MIN:
        return 1
    return max(1, min(os.cpu_count() or 1, rows))


def _rows_loop() -> list[str]:
    """This block's share of the rows, with ``a``/``b`` the outer and inner position."""
    return [
        "    chunk = (rows + block_dim - 1) // block_dim",
        "    begin = block_idx * chunk",
        "    stop = min(rows, begin + chunk)",
        "    for r in range(begin, stop):",
        "        a = r // inner",
        "        b = r - a * inner",
    ]


# --- scans ------------------------------------------------------------------------------------
def _accumulator(dtype: np.dtype[Any]) -> str:
    if dtype.name in _HALF or dtype == np.float32:
        return "np.float32"
    if dtype == np.float64:
        return "np.float64"
    return "np.uint64" if dtype.kind == "u" else "np.int64"


def _scan_source(dtype: np.dtype[Any]) -> str:
    acc = _accumulator(dtype)
    load = f"{_HALF[dtype.name][0]}(x[off])" if dtype.name in _HALF else f"{acc}(x[off])"
    t = _np_name(dtype)
    lines = [
        "def kernel(block_idx, block_dim, args):",
        "    rows = args[0]",
        "    n = args[1]",
        "    inner = args[2]",
        "    prod = args[3] != 0",
        "    exclusive = args[4] != 0",
        "    reverse = args[5] != 0",
        f"    x = kernel_array(args[6], args[8], {t})",
        f"    y = kernel_array(args[7], args[8], {t})",
        "    start = 1 if prod else 0",
        *_rows_loop(),
        "        base = a * n * inner + b",
        f"        acc = {acc}(start)",
        "        for t in range(n):",
        "            j = n - 1 - t if reverse else t",
        "            off = base + j * inner",
        f"            v = {load}",
        "            if exclusive:",
        f"                y[off] = {_store('acc', dtype)}",
        "            if prod:",
        "                acc = acc * v",
        "            else:",
        "                acc = acc + v",
        "            if not exclusive:",
        f"                y[off] = {_store('acc', dtype)}",
    ]
    return "\n".join(lines) + "\n"


def lower_scan(prod: bool) -> Lowering:
    """The lowering of Cumsum (``prod`` False) or Cumprod; needs a constant ``axis``."""

    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        x, axis_value = ctx.inputs[0], const_value(ctx.node, 1)
        if x is None or axis_value is None:
            return None
        spec = ctx.spec(x)
        shape = tuple(spec.shape)
        axis = rules.normalize_axis(_ints(axis_value)[0], len(shape))
        outer, n, inner = _split(shape, axis)
        attrs = ctx.attrs
        template = [outer * inner, n, inner, int(prod), int(bool(attrs["exclusive"]))]
        template += [int(bool(attrs["reverse"])), 0, 0, _count(shape)]
        return [
            kernel_task(
                ctx.node.name,
                kernel_from_source(_scan_source(spec.dtype), options=ctx.ge_options),
                _blocks(outer * inner, n),
                template,
                [(6, x), (7, ctx.outputs[0])],
            )
        ]

    return lower


# --- sorts ------------------------------------------------------------------------------------
# Bits of a float's magnitude, and its +inf, by element size (bfloat16 is the 2-byte key type
# of its own entry: its exponent is float32's).
_FLOAT_BITS = {
    "float16": (0x7FFF, 0x7C00),
    "bfloat16": (0x7FFF, 0x7F80),
    "float32": (0x7FFFFFFF, 0x7F800000),
    "float64": (0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000),
}


def _key_lines(dtype: np.dtype[Any], indent: str) -> list[str]:
    """``kk`` = the element at ``x[at]`` as an unsigned key whose order is the sort's order:
    unsigned ints as they are, signed ints with the sign bit flipped, floats by the
    sign-magnitude trick (negative: all bits flipped; else the sign bit set) after mapping
    ``-0.0`` to ``0.0`` and every NaN to one NaN above +inf. Descending flips every bit."""
    u = _UINT[dtype.itemsize]
    lines = ["kk = x[at]"]
    if dtype.kind == "i":
        lines.append("kk = kk ^ sign")
    elif dtype.name in _FLOAT_BITS:
        magnitude, inf = _FLOAT_BITS[dtype.name]
        lines += [
            f"mag = kk & {u}({magnitude:#x})",
            f"if mag == {u}(0):",
            f"    kk = {u}(0)",
            f"elif mag > {u}({inf:#x}):",
            f"    kk = {u}({magnitude:#x})",
            # negative: every bit flipped, else the sign bit set (no branch: signs are random)
            f"kk = {u}(kk ^ (({u}(0) - (kk >> {u}({8 * dtype.itemsize - 1}))) | sign))",
        ]
    lines += ["if descending:", f"    kk = {u}(~kk)"]
    return [indent + line for line in lines]


def _sort_body(indent: str) -> list[str]:
    """Sort the pairs (``sk`` keys, ``sv`` positions) stably by key (ties keep their order),
    moving keys with their positions so every pass reads and writes sequentially; the result
    ends in ``sk``/``sv`` (``dk``/``dv`` are the other pair of rows)."""
    move = ["dk[o] = sk[{0}]", "dv[o] = sv[{0}]", "{0} += 1", "o += 1"]

    def tail(var: str, end: str) -> list[str]:
        return [f"        while {var} < {end}:"] + [f"            {m.format(var)}" for m in move]

    body = [
        f"for lo in range(0, n, {_RUN}):",
        f"    hi = min(lo + {_RUN}, n)",
        "    for i in range(lo + 1, hi):",
        "        kv = sk[i]",
        "        v = sv[i]",
        "        j = i - 1",
        "        while j >= lo and kv < sk[j]:",
        "            sk[j + 1] = sk[j]",
        "            sv[j + 1] = sv[j]",
        "            j -= 1",
        "        sk[j + 1] = kv",
        "        sv[j + 1] = v",
        f"width = {_RUN}",
        "while width < n:",
        "    lo = 0",
        "    while lo < n:",
        "        mid = min(lo + width, n)",
        "        hi = min(lo + 2 * width, n)",
        "        i = lo",
        "        j = mid",
        "        o = lo",
        "        while i < mid and j < hi:",
        "            if sk[j] < sk[i]:",
        *[f"                {m.format('j')}" for m in move[:3]],
        "            else:",
        *[f"                {m.format('i')}" for m in move[:3]],
        "            o += 1",
        *tail("i", "mid"),
        *tail("j", "hi"),
        "        lo += 2 * width",
        "    tk = sk",
        "    sk = dk",
        "    dk = tk",
        "    tv = sv",
        "    sv = dv",
        "    dv = tv",
        "    width *= 2",
    ]
    return [indent + line for line in body]


def _select_body(dtype: np.dtype[Any], indent: str) -> list[str]:
    """The ``k`` first keys of the row in order, kept sorted in ``keys_a``/``pos_a`` while
    the row streams by: an element enters when it is below the current ``k``-th key, after
    the equal keys already in (so ties keep their order). ``O(n k)`` at worst, ``O(n)``
    typically: for a small ``k`` of a long row (TopKV2's usual case) it beats sorting."""
    body = [
        "m = 0",
        "for j in range(n):",
        "    at = ib + j * inner",
        *_key_lines(dtype, "    "),
        "    if m == k:",
        "        if not kk < keys_a[k - 1]:",
        "            continue",
        "        i = k - 1",
        "    else:",
        "        i = m",
        "        m += 1",
        "    while i > 0 and kk < keys_a[i - 1]:",
        "        keys_a[i] = keys_a[i - 1]",
        "        pos_a[i] = pos_a[i - 1]",
        "        i -= 1",
        "    keys_a[i] = kk",
        "    pos_a[i] = j",
    ]
    return [indent + line for line in body]


def _digit(var: str, shift: int) -> str:
    """The radix digit of the uint64 ``var`` at bit ``shift``, as an index."""
    return f"np.intp(({var} >> np.uint64({shift})) & np.uint64({_BUCKETS - 1}))"


def _radix_pass(digit: int, shift: int, moves: list[str], packed: bool) -> list[str]:
    """One stable counting-sort pass of ``rk`` (and ``rp`` unless ``packed``) into
    ``rd``/``rq`` on the digit at ``shift``, skipped when every key has the same digit there
    (its one bucket holds the whole row); the result is left in ``rk``/``rp``."""
    base = digit * _BUCKETS
    swap = ["rt = rk", "rk = rd", "rd = rt"]
    if not packed:
        swap += ["ru = rp", "rp = rq", "rq = ru"]
    return [
        f"if counts[{base} + {_digit('rk[0]', shift)}] != n:",
        "    total = 0",
        f"    for c in range({base}, {base + _BUCKETS}):",
        "        t = counts[c]",
        "        counts[c] = total",
        "        total += t",
        "    for q in range(n):",
        "        rv = rk[q]",
        f"        c = {base} + {_digit('rv', shift)}",
        "        ro = counts[c]",
        "        counts[c] = ro + 1",
        *[f"        {m}" for m in moves],
        *[f"    {line}" for line in swap],
    ]


def _radix_body(dtype: np.dtype[Any], indent: str) -> list[str]:
    """LSD radix sort of the row's keys, ``_RADIX_BITS`` a pass (stable by construction, so
    ties keep their input order), then the first ``k`` written. Keys up to 4 bytes travel
    packed with their position in one uint64 (key in the high half, so the position rides
    along and each pass moves one word); 8-byte keys move with their positions (int32, as
    the positions written are) in a second row. One pass over the row makes the keys and
    every digit's histogram at once."""
    size = dtype.itemsize
    digits = size * 8 // _RADIX_BITS
    packed = size <= 4
    offset = 32 if packed else 0
    if packed:
        store = ["rk[j] = (np.uint64(kk) << np.uint64(32)) | np.uint64(j)", "rv = rk[j]"]
        moves = ["rd[ro] = rv"]
        position = "np.intp(rk[j] & np.uint64(0xFFFFFFFF))"
        rows = ["rk = packed_a", "rd = packed_b"]
    else:
        store = ["rk[j] = kk", "rp[j] = j", "rv = kk"]
        moves = ["rd[ro] = rv", "rq[ro] = rp[q]"]
        position = "np.intp(rp[j])"
        rows = ["rk = keys_a", "rd = keys_b", "rp = narrow_a", "rq = narrow_b"]
    histogram = [
        f"    counts[{d * _BUCKETS} + {_digit('rv', offset + d * _RADIX_BITS)}] += 1"
        for d in range(digits)
    ]
    body = [
        *rows,
        f"for c in range({digits * _BUCKETS}):",
        "    counts[c] = 0",
        "for j in range(n):",
        "    at = ib + j * inner",
        *_key_lines(dtype, "    "),
        *[f"    {line}" for line in store],
        *histogram,
    ]
    for d in range(digits):
        body += _radix_pass(d, offset + d * _RADIX_BITS, moves, packed)
    body += _write_lines(position)
    return [indent + line for line in body]


def _radix_min(dtype: np.dtype[Any]) -> int:
    """The shortest row the radix sort takes for keys of ``dtype``."""
    return max(_RADIX_MIN_ROW, _RADIX_MIN_PER_PASS * dtype.itemsize * 8 // _RADIX_BITS)


def _write_lines(position: str) -> list[str]:
    """Write the first ``k`` sorted elements (the values as raw bits) and their positions."""
    return [
        "for j in range(k):",
        f"    p = {position}",
        "    y[ob + j * inner] = x[ib + p * inner]",
        "    yi[ob + j * inner] = np.int32(p)",
    ]


def _indented(lines: list[str], indent: str) -> list[str]:
    return [indent + line for line in lines]


def _sort_source(dtype: np.dtype[Any]) -> str:
    size = dtype.itemsize
    u = _UINT[size]
    digits = size * 8 // _RADIX_BITS
    lines = [
        "def kernel(block_idx, block_dim, args):",
        "    rows = args[0]",
        "    n = args[1]",
        "    k = args[2]",
        "    inner = args[3]",
        "    descending = args[4] != 0",
        f"    sign = {u}({1 << (8 * size - 1):#x})",
        f"    x = kernel_array(args[5], args[13], {u})",
        f"    y = kernel_array(args[6], args[14], {u})",
        "    yi = kernel_array(args[7], args[14], np.int32)",
        f"    keys_a = kernel_array(args[8] + block_idx * n * {size}, n, {u})",
        f"    keys_b = kernel_array(args[9] + block_idx * n * {size}, n, {u})",
        "    pos_a = kernel_array(args[10] + block_idx * n * 8, n, np.int64)",
        "    pos_b = kernel_array(args[11] + block_idx * n * 8, n, np.int64)",
        "    packed_a = kernel_array(args[10] + block_idx * n * 8, n, np.uint64)",
        "    packed_b = kernel_array(args[11] + block_idx * n * 8, n, np.uint64)",
        "    narrow_a = kernel_array(args[10] + block_idx * n * 8, n, np.int32)",
        "    narrow_b = kernel_array(args[11] + block_idx * n * 8, n, np.int32)",
        f"    counts = kernel_array(args[12] + block_idx * {digits * _BUCKETS * 8}, "
        f"{digits * _BUCKETS}, np.int64)",
        *_rows_loop(),
        "        ib = a * n * inner + b",
        "        ob = a * k * inner + b",
        f"        if 0 < k <= {_SELECT_MAX_K} and {_SELECT_RATIO} * k <= n:",
        *_select_body(dtype, "            "),
        *_indented(_write_lines("pos_a[j]"), "            "),
        f"        elif n >= {_radix_min(dtype)}:",
        *_radix_body(dtype, "            "),
        "        else:",
        "            for j in range(n):",
        "                at = ib + j * inner",
        *_key_lines(dtype, "                "),
        "                keys_a[j] = kk",
        "                pos_a[j] = j",
        "            sk = keys_a",
        "            sv = pos_a",
        "            dk = keys_b",
        "            dv = pos_b",
        *_sort_body("            "),
        *_indented(_write_lines("sv[j]"), "            "),
    ]
    return "\n".join(lines) + "\n"


def _scratch(ctx: LowerContext, count: int, dtype: np.dtype[Any]) -> int:
    """A scratch buffer in the run's arena (one row per block)."""
    return ctx.plan.add_buffer(BufferSpec(BufferKind.INTERMEDIATE, 0, (count,), dtype))


def lower_sort(axis_attr: str, descending_attr: str) -> Lowering:
    """The lowering of Sort / TopKV2 (the axis and direction under those attribute names);
    ``k`` is the output's size along the axis."""

    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        x = ctx.inputs[0]
        if x is None:
            return None
        spec, out_spec = ctx.spec(x), ctx.spec(ctx.outputs[0])
        shape = tuple(spec.shape)
        axis = rules.normalize_axis(int(ctx.attrs[axis_attr]), len(shape))
        outer, n, inner = _split(shape, axis)
        k = out_spec.shape[axis] if shape else 1
        rows = outer * inner
        blocks = _blocks(rows, n)
        width = max(n, 1) * blocks
        keys = np.dtype(_UINT[spec.dtype.itemsize][3:])
        index = np.dtype(np.int64)
        scratch = [_scratch(ctx, width, t) for t in (keys, keys, index, index)]
        histograms = blocks * spec.dtype.itemsize * 8 // _RADIX_BITS * _BUCKETS
        scratch.append(_scratch(ctx, histograms, index))
        descending = int(bool(ctx.attrs[descending_attr]))
        template = [rows, n, k, inner, descending, 0, 0, 0, 0, 0, 0, 0, 0]
        template += [_count(shape), _count(tuple(out_spec.shape))]
        buffers = [x, ctx.outputs[0], ctx.outputs[1], *scratch]
        return [
            kernel_task(
                ctx.node.name,
                kernel_from_source(_sort_source(spec.dtype), options=ctx.ge_options),
                blocks,
                template,
                list(zip(range(5, 13), buffers, strict=True)),
            )
        ]

    return lower


register_kernels("Cumsum", lowering=lower_scan(prod=False))
register_kernels("Cumprod", lowering=lower_scan(prod=True))
register_kernels("Sort", lowering=lower_sort("axis", "descending"))
register_kernels("TopKV2", lowering=lower_sort("dim", "largest"))
