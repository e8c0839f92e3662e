"""Kernels for the indexing ops: ReverseV2, MirrorPad, GatherNd, ScatterNd, TensorScatterUpdate,
TensorScatterAdd (``ge.ops.indexing``).

* ``ReverseV2`` with a constant ``axis`` is one launch of the shared affine copy kernel
  (``movement``): a reversed dim starts at its last element with step -1. A computed ``axis``
  (a value only known at run time) runs a kernel that reads it first (a bad axis stops it and
  the reference explains).
* ``MirrorPad`` with constant ``paddings``: one kernel per element size maps each output
  index back into ``x`` by one reflection (``c < 0``: ``-c - m``; ``c >= d``: ``2d - 2 + m - c``,
  ``m`` 1 for SYMMETRIC and 0 for REFLECT; the op refuses pads needing a second reflection).
* ``GatherNd``: each output row reads the slice of ``x`` its index names; each index is checked
  before it is used (a bad one stops the kernel; the host then builds the message from the
  reference, as for GatherV2).
* The scatters run one block (duplicate indices must apply in order): every index is checked
  first, so a bad one fails the launch before anything is written; then ``y`` is set (zeros
  for ScatterNd, ``x`` for the tensor scatters) and the updates stored (last one wins) or
  added (computed as numpy adds that dtype: half types through float32, integers wrapping).
* ``TensorScatterUpdate`` whose constant indices name a strided box of ``x`` (one progression
  per leading dim, all in range: what ``x[1:-1, ::2] = v`` traced from numpy becomes,
  ``ge.compiler.patterns``) is launches of the affine copy kernel: the updates into the box
  and ``x`` around it (for unit steps, one slab before and one after the box along each boxed
  dim; else all of ``x`` first), so each element of ``y`` is written once.

Elements that are only moved are moved as unsigned integers of their size, so one kernel
serves every dtype of that size; the add kernels are generated per dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.compiler.kernels import first_lowering, register_kernels
from ge.compiler.kernels._codegen import block_loop, kernel_from_source
from ge.compiler.kernels.elementwise import _HALF, _np_name, _store, block_dim_for
from ge.compiler.kernels.movement import MAX_RANK, Affine, _contiguous_strides, affine_task
from ge.compiler.lower import LowerContext
from ge.ops.indexing import MIRROR_SLACK, mirror_pad_pairs, reverse_axes
from ge.ops.infer import const_value
from ge.runtime.plan import HostTask, KernelTask, kernel_task

__all__: list[str] = []

Tasks = list[KernelTask | HostTask]
_UINT = {1: "np.uint8", 2: "np.uint16", 4: "np.uint32", 8: "np.uint64"}


def _count(shape: Any) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _lines(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# --- ReverseV2 ---------------------------------------------------------------------------------
def lower_reverse(ctx: LowerContext) -> Tasks | None:
    axis_value, x_buf = const_value(ctx.node, 1), ctx.inputs[0]
    if axis_value is None or x_buf is None:
        return None
    shape = list(ctx.spec(x_buf).shape)
    axes = reverse_axes(axis_value, len(shape))
    if 0 in shape:
        return []  # nothing to move (and no zero-size buffer to view)
    strides = _contiguous_strides(shape)
    copy = Affine(
        shape,
        strides,
        [d - 1 if k in axes else 0 for k, d in enumerate(shape)],
        [-1 if k in axes else 1 for k in range(len(shape))],
        strides,
    )
    task = affine_task(ctx, x_buf, ctx.outputs[0], copy)
    return None if task is None else [task]


def _reverse_source(itemsize: int, axis_t: np.dtype[Any]) -> str:
    """ReverseV2 with ``axis`` read when the kernel runs: each block finds the reversed dims
    (an axis out of range or repeated stops the kernel), then copies element by element."""
    r = range(MAX_RANK)
    t = _UINT[itemsize]
    lines = [
        "def kernel(block_idx, block_dim, args):",
        f"    out = kernel_array(args[0], args[3], {t})",
        f"    src = kernel_array(args[1], args[3], {t})",
        f"    axes = kernel_array(args[2], args[4], np.{axis_t.name})",
        "    n = args[5]",
        "    rank = args[6]",
        "    naxes = args[7]",
    ]
    lines += [f"    d{k} = args[{8 + k}]" for k in r]
    lines += [f"    f{k} = 0" for k in r]
    lines += [
        "    for j in range(naxes):",
        "        a = np.int64(axes[j])",
        "        if a < 0:",
        "            a += rank",
        "        if a < 0 or a >= rank:",
        "            raise IndexError()",
        f"        a += {MAX_RANK} - rank",
    ]
    for k in r:
        lines += [
            f"        if a == {k}:",
            f"            if f{k} != 0:",
            "                raise IndexError()",
            f"            f{k} = 1",
        ]
    lines += [
        *block_loop(),
        "        rest = i",
        "        s = 0",
        "        step = 1",
    ]
    for k in reversed(r):
        lines += [
            f"        c = rest % d{k}",
            f"        rest = rest // d{k}",
            f"        if f{k} != 0:",
            f"            c = d{k} - 1 - c",
            "        s += c * step",
            f"        step *= d{k}",
        ]
    lines.append("        out[i] = src[s]")
    return _lines(*lines)


def lower_reverse_computed(ctx: LowerContext) -> Tasks | None:
    """ReverseV2 whose ``axis`` is only known at run time."""
    x_buf, a_buf = ctx.inputs
    if x_buf is None or a_buf is None:
        return None
    x, axes = ctx.spec(x_buf), ctx.spec(a_buf)
    if len(x.shape) > MAX_RANK or x.dtype.itemsize not in _UINT or 0 in x.shape:
        return None  # an empty x: the reference (which still checks the axes)
    n, naxes = _count(x.shape), _count(axes.shape)
    if not naxes:  # nothing to read: a one-element plan constant stands in for the axes
        a_buf = ctx.constant(np.zeros(1, axes.dtype))
    dims = [1] * (MAX_RANK - len(x.shape)) + list(x.shape)
    template = [0, 0, 0, max(n, 1), max(naxes, 1), n, len(x.shape), naxes, *dims]
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(
                _reverse_source(x.dtype.itemsize, axes.dtype), options=ctx.ge_options
            ),
            block_dim_for(n),
            template,
            [(0, ctx.outputs[0]), (1, x_buf), (2, a_buf)],
        )
    ]


# --- MirrorPad ---------------------------------------------------------------------------------
def _mirror_source(itemsize: int) -> str:
    r = range(MAX_RANK)
    t = _UINT[itemsize]
    lines = [
        "def kernel(block_idx, block_dim, args):",
        f"    out = kernel_array(args[0], args[2], {t})",
        f"    src = kernel_array(args[1], args[3], {t})",
        "    n = args[4]",
        "    m = args[5]",
    ]
    for at, name in enumerate(("d", "lo", "e", "si")):
        lines += [f"    {name}{k} = args[{6 + at * MAX_RANK + k}]" for k in r]
    lines += [
        *block_loop(),
        "        rest = i",
        "        s = 0",
    ]
    for k in reversed(r):
        lines += [
            f"        c = rest % d{k} - lo{k}",
            f"        rest = rest // d{k}",
            "        if c < 0:",
            "            c = -c - m",
            f"        elif c >= e{k}:",
            f"            c = 2 * e{k} - 2 + m - c",
            f"        s += c * si{k}",
        ]
    lines.append("        out[i] = src[s]")
    return _lines(*lines)


def lower_mirror_pad(ctx: LowerContext) -> Tasks | None:
    paddings, x_buf = const_value(ctx.node, 1), ctx.inputs[0]
    if paddings is None or x_buf is None:
        return None
    x, y = ctx.spec(x_buf), ctx.spec(ctx.outputs[0])
    shape, mode = list(x.shape), ctx.attrs["mode"]
    if len(shape) > MAX_RANK or x.dtype.itemsize not in _UINT:
        return None
    pairs = mirror_pad_pairs(paddings, shape, mode)
    pad = MAX_RANK - len(shape)
    n = _count(y.shape)
    if n == 0:
        return []  # nothing to write (an empty x may only be padded along its other dims)
    template = [0, 0, max(n, 1), max(_count(shape), 1), n, 1 - MIRROR_SLACK[mode]]
    template += [1] * pad + list(y.shape)
    template += [0] * pad + [a for a, _ in pairs]
    template += [1] * pad + shape
    template += [0] * pad + _contiguous_strides(shape)
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(_mirror_source(x.dtype.itemsize), options=ctx.ge_options),
            block_dim_for(n),
            template,
            [(0, ctx.outputs[0]), (1, x_buf)],
        )
    ]


# --- GatherNd ----------------------------------------------------------------------------------
# Shared argument layout of the gather and scatter kernels: addresses, element counts, sizes.
_CHECK = (
    "    for r in range(row_begin, row_stop):",
    "        for k in range(depth):",
    "            v = np.int64(idx[r * depth + k])",
    "            if v < 0 or v >= meta[k]:",
    "                raise IndexError()",
)
_OFFSET = (
    "        off = 0",
    "        for k in range(depth):",
    "            off += np.int64(idx[r * depth + k]) * meta[depth + k]",
)


def _gather_nd_source(itemsize: int, index_t: np.dtype[Any]) -> str:
    t = _UINT[itemsize]
    return _lines(
        "def kernel(block_idx, block_dim, args):",
        f"    out = kernel_array(args[0], args[4], {t})",
        f"    x = kernel_array(args[1], args[5], {t})",
        f"    idx = kernel_array(args[2], args[6], np.{index_t.name})",
        "    meta = kernel_array(args[3], args[7], np.int64)",
        "    rows = args[8]",
        "    depth = args[9]",
        "    inner = args[10]",
        "    chunk = (rows + block_dim - 1) // block_dim",
        "    row_begin = block_idx * chunk",
        "    row_stop = min(rows, row_begin + chunk)",
        *_CHECK,
        "    for r in range(row_begin, row_stop):",
        *_OFFSET,
        "        for c in range(inner):",
        "            out[r * inner + c] = x[off * inner + c]",
    )


def _meta(ctx: LowerContext, dims: list[int], depth: int) -> int:
    """A plan constant: the first ``depth`` dims, then their strides in slices (``0`` pad)."""
    lead = dims[:depth]
    return ctx.constant(np.asarray([*lead, *_contiguous_strides(lead), 0], dtype=np.int64))


def lower_gather_nd(ctx: LowerContext) -> Tasks | None:
    x_buf, i_buf = ctx.inputs
    if x_buf is None or i_buf is None:
        return None
    x, ind, y = ctx.spec(x_buf), ctx.spec(i_buf), ctx.spec(ctx.outputs[0])
    if x.dtype.itemsize not in _UINT or not ind.shape:
        return None
    if _count(y.shape) == 0:
        return []  # nothing to gather
    if _count(x.shape) == 0:
        return None  # every index is out of range: the reference says which
    depth = ind.shape[-1]
    rows = _count(ind.shape[:-1])
    inner = _count(x.shape[depth:])
    meta = _meta(ctx, list(x.shape), depth)
    counts = [_count(s.shape) for s in (y, x, ind)]
    template = [0, 0, 0, 0, *(max(c, 1) for c in counts), 2 * depth + 1, rows, depth, inner]
    source = _gather_nd_source(x.dtype.itemsize, ind.dtype)
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(source, options=ctx.ge_options),
            block_dim_for(rows * max(inner, 1)),
            template,
            list(enumerate([ctx.outputs[0], x_buf, i_buf, meta])),
        )
    ]


# --- ScatterNd / TensorScatterUpdate / TensorScatterAdd ----------------------------------------
def _load(dtype: np.dtype[Any], expr: str) -> str:
    return f"{_HALF[dtype.name][0]}({expr})" if dtype.name in _HALF else expr


def _scatter_source(dtype: np.dtype[Any], index_t: np.dtype[Any], add: bool) -> str:
    """``y`` = zeros or ``x`` (argument ``copy``, so ScatterNd and TensorScatterAdd share a
    kernel), then each update row stored or added (``add``)."""
    t = _np_name(dtype) if add else _UINT[dtype.itemsize]
    at = "out[off * inner + c]"
    update = "upd[r * inner + c]"
    store = _store(f"{_load(dtype, at)} + {_load(dtype, update)}", dtype) if add else update
    return _lines(
        "def kernel(block_idx, block_dim, args):",
        f"    out = kernel_array(args[0], args[5], {t})",
        f"    base = kernel_array(args[1], args[6], {t})",
        f"    idx = kernel_array(args[2], args[7], np.{index_t.name})",
        f"    upd = kernel_array(args[3], args[8], {t})",
        "    meta = kernel_array(args[4], args[9], np.int64)",
        "    rows = args[10]",
        "    depth = args[11]",
        "    inner = args[12]",
        "    total = args[13]",
        "    row_begin = 0",
        "    row_stop = rows",
        *_CHECK,
        "    if args[14] != 0:",  # copy x (a uint64 `x if c else 0` would go through float64)
        "        for i in range(total):",
        "            out[i] = base[i]",
        "    else:",
        "        for i in range(total):",
        "            out[i] = 0",
        "    for r in range(rows):",
        *_OFFSET,
        "        for c in range(inner):",
        f"            {at} = {store}",
    )


def _lower_scatter(add: bool, order: tuple[int, int, int]) -> Any:
    """The lowering of a scatter op whose (base or None, indices, updates) are at ``order``
    among its inputs (``-1``: no base, ScatterNd's zeros)."""

    def lower(ctx: LowerContext) -> Tasks | None:
        base_at, idx_at, upd_at = order
        i_buf, u_buf = ctx.inputs[idx_at], ctx.inputs[upd_at]
        b_buf = ctx.outputs[0] if base_at < 0 else ctx.inputs[base_at]
        if i_buf is None or u_buf is None or b_buf is None:
            return None
        y, ind, upd = ctx.spec(ctx.outputs[0]), ctx.spec(i_buf), ctx.spec(u_buf)
        if y.dtype.itemsize not in _UINT or not ind.shape or upd.dtype != y.dtype:
            return None
        if _count(y.shape) == 0:
            return None  # an empty y: the reference (indices may still be out of range)
        depth = ind.shape[-1]
        rows, inner = _count(ind.shape[:-1]), _count(y.shape[depth:])
        meta = _meta(ctx, list(y.shape), depth)
        if rows and not inner:
            return None  # indices to check but nothing to write: the reference checks them
        if not rows:  # no update is read: one-element plan constants stand in for them
            i_buf = ctx.constant(np.zeros(1, ind.dtype))
            u_buf = ctx.constant(np.zeros(1, upd.dtype))
        buffers = [ctx.outputs[0], b_buf, i_buf, u_buf]
        counts = [max(_count(ctx.spec(b).shape), 1) for b in buffers] + [2 * depth + 1]
        copy = 1 if base_at >= 0 else 0
        template = [0] * 5 + counts + [rows, depth, inner, _count(y.shape), copy]
        source = _scatter_source(y.dtype, ind.dtype, add)
        return [
            kernel_task(
                ctx.node.name,
                kernel_from_source(source, options=ctx.ge_options),
                1,
                template,
                list(enumerate([*buffers, meta])),
            )
        ]

    return lower


def _box_of(coords: np.ndarray, shape: list[int]) -> list[tuple[int, int]] | None:
    """``(start, step)`` per leading dim when ``coords`` (``box dims + [depth]``) is a strided
    box of ``shape`` in row-major order with every coordinate in range, else ``None``."""
    depth = coords.shape[-1] if coords.ndim else 0
    dims = list(coords.shape[:-1])
    if coords.ndim != depth + 1 or depth > len(shape) or coords.size == 0:
        return None
    grids = np.indices(dims, dtype=np.int64)
    box = []
    for k in range(depth):
        start = int(coords[(0,) * depth + (k,)])
        step = (
            int(coords[(0,) * k + (1,) + (0,) * (depth - k - 1) + (k,)]) - start
            if dims[k] > 1
            else 1
        )
        last = start + step * (dims[k] - 1)
        if step == 0 or not (0 <= start < shape[k] and 0 <= last < shape[k]):
            return None
        if not np.array_equal(coords[..., k], start + step * grids[k]):
            return None
        box.append((start, step))
    return box


def lower_box_update(ctx: LowerContext) -> Tasks | None:
    """TensorScatterUpdate into a constant strided box: copy ``x``, then the updates."""
    coords, x_buf, u_buf = const_value(ctx.node, 1), ctx.inputs[0], ctx.inputs[2]
    y_buf = ctx.outputs[0]
    if coords is None or x_buf is None or u_buf is None:
        return None
    shape = list(ctx.spec(y_buf).shape)
    box = _box_of(np.asarray(coords), shape)
    dims = list(ctx.spec(u_buf).shape)
    if box is None or len(dims) != len(shape) or len(dims) > MAX_RANK:
        return None
    strides = _contiguous_strides(shape)
    out_strides = [strides[k] * step for k, (_, step) in enumerate(box)] + strides[len(box) :]
    base = sum(strides[k] * start for k, (start, _) in enumerate(box))
    rank = len(dims)
    into = Affine(
        dims, out_strides, [0] * rank, [1] * rank, _contiguous_strides(dims), out_base=base
    )
    copies = [] if x_buf == y_buf else _outside(shape, box, dims)
    tasks = [affine_task(ctx, x_buf, y_buf, c) for c in copies]
    tasks.append(affine_task(ctx, u_buf, y_buf, into))
    return None if any(t is None for t in tasks) else [t for t in tasks if t is not None]


def _outside(shape: list[int], box: list[tuple[int, int]], dims: list[int]) -> list[Affine]:
    """Copies of ``x`` into ``y`` around the box: for a box of unit steps, the slabs before
    and after it along each boxed dim (within the box along the dims before), so no element
    is written twice; otherwise the whole of ``x``."""
    strides = _contiguous_strides(shape)
    rank = len(shape)
    if any(step != 1 for _, step in box):
        return [Affine([_count(shape)], [1], [0], [1], [1])]
    copies = []
    for k, (start, _) in enumerate(box):
        before = [(s, s + dims[j]) for j, (s, _) in enumerate(box[:k])]
        after = [(0, d) for d in shape[k + 1 :]]
        for lo, hi in ((0, start), (start + dims[k], shape[k])):
            spans = [*before, (lo, hi), *after]
            sizes = [b - a for a, b in spans]
            if 0 in sizes:
                continue
            starts = [a for a, _ in spans]
            base = sum(a * st for a, st in zip(starts, strides, strict=True))
            copies.append(Affine(sizes, strides, starts, [1] * rank, strides, out_base=base))
    return copies


for _op, _lowering in (
    ("ReverseV2", first_lowering(lower_reverse, lower_reverse_computed)),
    ("MirrorPad", lower_mirror_pad),
    ("GatherNd", lower_gather_nd),
    ("ScatterNd", _lower_scatter(True, (-1, 0, 1))),
    ("TensorScatterUpdate", first_lowering(lower_box_update, _lower_scatter(False, (0, 1, 2)))),
    ("TensorScatterAdd", _lower_scatter(True, (0, 1, 2))),
):
    register_kernels(_op, lowering=_lowering)
