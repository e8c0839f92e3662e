"""Kernels for MatMul, MatMulV2 and BatchMatMulV2 (with transposes, bias and batch
broadcasting), GEMM, and GatherV2.

float32 and float64 matmuls run on BLAS: numpy's ``matmul`` (its bundled OpenBLAS, threaded)
called on views of the device buffers, writing the output in place, transposes as strided
views and batch dims broadcast by numpy; a bias is added in place after. That is a host task
(one Python call per matmul), which costs ~2 µs against a BLAS call of microseconds to
milliseconds, and BLAS's blocked, vectorised GEMM is far beyond a generated loop.

Other types (half, integers) use a generated kernel that computes each output row of each
batch with a dot-product loop, accumulating in float64 for floating types (int64 for int32),
so it is at least as accurate as numpy's; each block takes a share of the batch*M rows.
Operands are addressed through strides, so transposed operands and broadcast batch dims need
no copies.

GEMM (``y = alpha * op(a) @ op(b) + beta * c``) takes the same two roads: float32/float64 a, b
and y run the BLAS host task, then an epilogue kernel rewrites y in place as
``alpha * y + beta * c``; with alpha and beta Consts equal to 1 and c of y's type (the fused
MatMul + Add) the epilogue is the BLAS task's own bias add. Other types run one generated
kernel with the epilogue in its output loop. alpha and beta are read from their buffers when
the kernel runs (they may be graph inputs), and c broadcasts through zero strides. The
epilogue computes in the type GEMM's reference does (float32 for half and float32 y, float64
for float64, int64 wrapped to int32 for int32), so the two agree on overflow and NaN too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ge.compiler.kernels import register_kernels
from ge.compiler.kernels._codegen import block_loop, kernel_from_source
from ge.compiler.kernels.elementwise import _HALF, _np_name, _store
from ge.compiler.kernels.reduction import _load
from ge.compiler.lower import LowerContext
from ge.ops import _rules as rules
from ge.ops.infer import const_value
from ge.ops.shape import _ints
from ge.runtime.plan import HostTask, KernelTask, host_task, kernel_task

__all__: list[str] = []

MAX_BATCH = 4


def _matmul_source(
    a_t: np.dtype[Any], b_t: np.dtype[Any], bias_t: np.dtype[Any] | None, out_t: np.dtype[Any]
) -> str:
    nb = MAX_BATCH
    lines = [
        "def kernel(block_idx, block_dim, args):",
        f"    p = numba.carray(args, {14 + 3 * nb + 3})",
        f"    out = kernel_array(p[0], p[3], {_np_name(out_t)})",
        f"    A = kernel_array(p[1], p[4], {_np_name(a_t)})",
        f"    B = kernel_array(p[2], p[5], {_np_name(b_t)})",
        "    M = p[6]",
        "    N = p[7]",
        "    K = p[8]",
        "    am = p[9]",
        "    ak = p[10]",
        "    bk = p[11]",
        "    bn = p[12]",
        "    batches = p[13]",
        f"    bd = p[14:{14 + nb}]",
        f"    abs_ = p[{14 + nb}:{14 + 2 * nb}]",
        f"    bbs = p[{14 + 2 * nb}:{14 + 3 * nb}]",
        f"    bias_n = p[{14 + 3 * nb}]",
    ]
    if bias_t is not None:
        lines.append(
            f"    bias = kernel_array(p[{14 + 3 * nb + 1}], p[{14 + 3 * nb + 2}], "
            f"{_np_name(bias_t)})"
        )
    lines += [
        "    rows = batches * M",
        "    chunk = (rows + block_dim - 1) // block_dim",
        "    begin = block_idx * chunk",
        "    stop = min(rows, begin + chunk)",
        "    for row in range(begin, stop):",
        "        batch = row // M",
        "        m = row - batch * M",
        "        rest = batch",
        "        a0 = 0",
        "        b0 = 0",
        f"        for k in range({nb - 1}, -1, -1):",
        "            i = rest % bd[k]",
        "            rest = rest // bd[k]",
        "            a0 += i * abs_[k]",
        "            b0 += i * bbs[k]",
        "        for n in range(N):",
        f"            acc = {_ACC_ZERO[_acc_kind(a_t, b_t)]}",
        "            for k in range(K):",
        f"                acc += {_load(a_t, 'A[a0 + m * am + k * ak]')} * "
        f"{_load(b_t, 'B[b0 + k * bk + n * bn]')}",
    ]
    if bias_t is not None:
        lines.append(f"            acc += {_load(bias_t, 'bias[n * bias_n]')}")
    lines.append(f"            out[row * N + n] = {_store('acc', out_t)}")
    return "\n".join(lines) + "\n"


_ACC_ZERO = {"f": "np.float64(0)", "i": "np.int64(0)"}


def _acc_kind(a_t: np.dtype[Any], b_t: np.dtype[Any]) -> str:
    return "i" if a_t.kind in "iu" and b_t.kind in "iu" else "f"


def _strides(shape: tuple[int, ...]) -> list[int]:
    strides, step = [0] * len(shape), 1
    for k in reversed(range(len(shape))):
        strides[k] = step
        step *= shape[k]
    return strides


def _lower_matmul(
    flags: tuple[str, str],
) -> Callable[[LowerContext], list[KernelTask | HostTask] | None]:
    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        a_buf, b_buf = ctx.inputs[0], ctx.inputs[1]
        bias_buf = ctx.inputs[2] if len(ctx.inputs) > 2 else None
        if a_buf is None or b_buf is None or (len(ctx.inputs) > 3 and ctx.inputs[3] is not None):
            return None
        a, b, out = ctx.spec(a_buf), ctx.spec(b_buf), ctx.spec(ctx.outputs[0])
        if bias_buf is not None and len(ctx.spec(bias_buf).shape) > 1:
            return None  # a bias that is not a vector: the reference handles it
        if a.dtype == b.dtype == out.dtype and a.dtype.name in _BLAS_TYPES:
            flags_set = (bool(ctx.attrs[flags[0]]), bool(ctx.attrs[flags[1]]))
            return [_blas_task(ctx.node.name, a_buf, b_buf, bias_buf, ctx.outputs[0], flags_set)]
        batch = tuple(out.shape[:-2])
        if len(batch) > MAX_BATCH:
            return None
        sa, sb = _strides(tuple(a.shape)), _strides(tuple(b.shape))
        ta, tb = ctx.attrs[flags[0]], ctx.attrs[flags[1]]
        am, ak = (sa[-1], sa[-2]) if ta else (sa[-2], sa[-1])
        bk, bn = (sb[-1], sb[-2]) if tb else (sb[-2], sb[-1])
        m, n = out.shape[-2], out.shape[-1]
        k = a.shape[-2] if ta else a.shape[-1]
        pad = MAX_BATCH - len(batch)
        bd = [1] * pad + list(batch)
        abs_ = [0] * pad + _batch_strides(tuple(a.shape[:-2]), sa[:-2], batch)
        bbs = [0] * pad + _batch_strides(tuple(b.shape[:-2]), sb[:-2], batch)
        bias_shape = () if bias_buf is None else tuple(ctx.spec(bias_buf).shape)
        template = [
            0,
            0,
            0,
            max(int(np.prod(out.shape, dtype=np.int64)), 1),
            max(int(np.prod(a.shape, dtype=np.int64)), 1),
            max(int(np.prod(b.shape, dtype=np.int64)), 1),
            m,
            n,
            k,
            am,
            ak,
            bk,
            bn,
            int(np.prod(batch, dtype=np.int64)) if batch else 1,
            *bd,
            *abs_,
            *bbs,
            1 if bias_shape and bias_shape[0] != 1 else 0,
        ]
        patch_pos, patch_buf = [0, 1, 2], [ctx.outputs[0], a_buf, b_buf]
        if bias_buf is not None:
            patch_pos.append(len(template))
            patch_buf.append(bias_buf)
            template += [0, max(int(np.prod(bias_shape, dtype=np.int64)), 1)]
        source = _matmul_source(
            a.dtype, b.dtype, None if bias_buf is None else ctx.spec(bias_buf).dtype, out.dtype
        )
        rows = (int(np.prod(batch, dtype=np.int64)) if batch else 1) * m
        work = rows * n * max(k, 1)
        blocks = 1 if work < (1 << 16) else max(1, min(os.cpu_count() or 1, rows))
        return [
            kernel_task(
                ctx.node.name,
                kernel_from_source(source, options=ctx.ge_options),
                blocks,
                template,
                list(zip(patch_pos, patch_buf, strict=True)),
            )
        ]

    return lower


_BLAS_TYPES = frozenset({"float32", "float64"})


def _blas_task(
    name: str,
    a_buf: int,
    b_buf: int,
    bias_buf: int | None,
    out_buf: int,
    transposed: tuple[bool, bool],
) -> HostTask:
    operands = [a_buf, b_buf] + ([] if bias_buf is None else [bias_buf])
    ta, tb = transposed
    return host_task(
        name,
        "matmul",
        [*operands, out_buf],
        transpose_a=ta,
        transpose_b=tb,
        bias=bias_buf is not None,
    )


def _batch_strides(shape: tuple[int, ...], strides: list[int], batch: tuple[int, ...]) -> list[int]:
    padded = (1,) * (len(batch) - len(shape)) + shape
    full = [0] * (len(batch) - len(shape)) + strides
    return [0 if padded[k] == 1 and batch[k] != 1 else full[k] for k in range(len(batch))]


def _gather_source(x_t: np.dtype[Any], i_t: np.dtype[Any]) -> str:
    return (
        "\n".join(
            [
                "def kernel(block_idx, block_dim, args):",
                f"    out = kernel_array(args[0], args[3], {_np_name(x_t)})",
                f"    x = kernel_array(args[1], args[4], {_np_name(x_t)})",
                f"    idx = kernel_array(args[2], args[5], {_np_name(i_t)})",
                "    outer = args[6]",
                "    size = args[7]",
                "    count = args[8]",
                "    inner = args[9]",
                "    negative_ok = args[10]",
                "    n = outer * count",
                *block_loop(index="r"),
                "        o = r // count",
                "        j = r - o * count",
                "        i = np.int64(idx[j])",
                "        if i < 0 and negative_ok != 0:",
                "            i += size",
                "        if i < 0 or i >= size:",
                "            raise IndexError()",
                "        for c in range(inner):",
                "            out[r * inner + c] = x[(o * size + i) * inner + c]",
            ]
        )
        + "\n"
    )


def lower_gather(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    x_buf, i_buf = ctx.inputs[0], ctx.inputs[1]
    axis_value = const_value(ctx.node, 2)
    if x_buf is None or i_buf is None or axis_value is None or ctx.attrs["batch_dims"] != 0:
        return None
    x, ind = ctx.spec(x_buf), ctx.spec(i_buf)
    if not x.shape:
        return None
    axis = rules.normalize_axis(_ints(axis_value)[0], len(x.shape))
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1 :], dtype=np.int64))
    count = int(np.prod(ind.shape, dtype=np.int64))
    template = [
        0,
        0,
        0,
        max(int(np.prod(ctx.spec(ctx.outputs[0]).shape, dtype=np.int64)), 1),
        max(int(np.prod(x.shape, dtype=np.int64)), 1),
        max(count, 1),
        outer,
        x.shape[axis],
        count,
        inner,
        1 if ctx.attrs["negative_index_support"] else 0,
    ]
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(_gather_source(x.dtype, ind.dtype), options=ctx.ge_options),
            1,
            template,
            list(zip([0, 1, 2], [ctx.outputs[0], x_buf, i_buf], strict=True)),
        )
    ]


def _compute_type(out_t: np.dtype[Any]) -> str:
    """The epilogue's arithmetic type, the one ``GEMM``'s reference computes in (float32 for
    half and float32 y, so overflow and NaN come out alike); int64 for int32 y gives the
    reference's wrapped int32 results exactly."""
    if out_t.kind in "iu":
        return "int64"
    return "float64" if out_t.itemsize == 8 else "float32"


def _as(compute: str, dtype: np.dtype[Any], expr: str) -> str:
    """``expr`` (stored as ``dtype``) converted to the ``compute`` type."""
    if dtype.name in _HALF:
        expr = f"{_HALF[dtype.name][0]}({expr})"
    return f"np.{compute}({expr})"


# GEMM kernel arguments: addresses, element counts, then the loop sizes and strides
_GEMM_ARGS = ("out", "C", "AL", "BE", "A", "B")
_GEMM_SIZES = ("M", "N", "K", "am", "ak", "bk", "bn", "cm", "cn")


def _gemm_source(
    out_t: np.dtype[Any],
    c_t: np.dtype[Any],
    scale_t: tuple[np.dtype[Any], np.dtype[Any]],
    ab_t: tuple[np.dtype[Any], np.dtype[Any]] | None,
) -> str:
    """``out[m, n] = alpha * acc + beta * C[m * cm + n * cn]`` over a block's rows, where
    ``acc`` is the dot product of row m of A and column n of B (accumulated as the MatMul
    kernel does), or (``ab_t`` None: the epilogue after a BLAS matmul) what ``out`` holds."""
    compute = _compute_type(out_t)
    types = (out_t, c_t, *scale_t, *(ab_t or ()))
    nargs = len(_GEMM_ARGS)
    lines = ["def kernel(block_idx, block_dim, args):"]
    lines += [
        f"    {name} = kernel_array(args[{i}], args[{nargs + i}], {_np_name(t)})"
        for i, (name, t) in enumerate(zip(_GEMM_ARGS, types, strict=False))
    ]
    lines += [f"    {name} = args[{2 * nargs + i}]" for i, name in enumerate(_GEMM_SIZES)]
    lines += [
        f"    alpha = {_as(compute, scale_t[0], 'AL[0]')}",
        f"    beta = {_as(compute, scale_t[1], 'BE[0]')}",
        "    chunk = (M + block_dim - 1) // block_dim",
        "    for m in range(block_idx * chunk, min(M, (block_idx + 1) * chunk)):",
        "        for n in range(N):",
    ]
    if ab_t is None:
        lines.append(f"            acc = {_as(compute, out_t, 'out[m * N + n]')}")
    else:
        a_t, b_t = ab_t
        lines += [
            f"            dot = {_ACC_ZERO[_acc_kind(a_t, b_t)]}",
            "            for k in range(K):",
            f"                dot += {_load(a_t, 'A[m * am + k * ak]')} * "
            f"{_load(b_t, 'B[k * bk + n * bn]')}",
            f"            acc = np.{compute}(dot)",
        ]
    c_value = _as(compute, c_t, "C[m * cm + n * cn]")
    lines.append(f"            out[m * N + n] = {_store(f'alpha * acc + beta * {c_value}', out_t)}")
    return "\n".join(lines) + "\n"


def _is_one(ctx: LowerContext, port: int) -> bool:
    value = const_value(ctx.node, port)
    return value is not None and value.size == 1 and bool(value.reshape(()) == 1)


def _c_strides(c_shape: tuple[int, ...]) -> tuple[int, int]:
    """(row, column) strides of c broadcast to [M, N]: 0 along a dim it lacks or has as 1."""
    padded = (1,) * (2 - len(c_shape)) + c_shape
    return (padded[1] if padded[0] != 1 else 0, 1 if padded[1] != 1 else 0)


def _lower_gemm(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    present = [buf for buf in ctx.inputs[:5] if buf is not None]
    if len(present) < 5:
        return None
    a_buf, b_buf, c_buf, al_buf, be_buf = present
    out_buf = ctx.outputs[0]
    a, b, c, out = (ctx.spec(buf) for buf in (a_buf, b_buf, c_buf, out_buf))
    ta, tb = bool(ctx.attrs["transpose_a"]), bool(ctx.attrs["transpose_b"])
    tasks: list[KernelTask | HostTask] = []
    ab_t: tuple[np.dtype[Any], np.dtype[Any]] | None = (a.dtype, b.dtype)
    if a.dtype == b.dtype == out.dtype and a.dtype.name in _BLAS_TYPES:
        if c.dtype == out.dtype and _is_one(ctx, 3) and _is_one(ctx, 4):
            return [_blas_task(ctx.node.name, a_buf, b_buf, c_buf, out_buf, (ta, tb))]
        tasks.append(_blas_task(ctx.node.name, a_buf, b_buf, None, out_buf, (ta, tb)))
        ab_t = None
    m, n = out.shape
    k = a.shape[0] if ta else a.shape[1]
    a1, b1 = a.shape[1], b.shape[1]  # row strides of the row-major operands
    am, ak = (1, a1) if ta else (a1, 1)
    bk, bn = (1, b1) if tb else (b1, 1)
    buffers = [out_buf, c_buf, al_buf, be_buf, a_buf, b_buf]
    counts = [max(int(np.prod(ctx.spec(buf).shape, dtype=np.int64)), 1) for buf in buffers]
    template = [0] * len(buffers) + counts + [m, n, k, am, ak, bk, bn, *_c_strides(c.shape)]
    scale_t = (ctx.spec(al_buf).dtype, ctx.spec(be_buf).dtype)
    source = _gemm_source(out.dtype, c.dtype, scale_t, ab_t)
    used = len(buffers) if ab_t is not None else 4
    work = m * n * (max(k, 1) if ab_t is not None else 1)
    blocks = 1 if work < (1 << 16) else max(1, min(os.cpu_count() or 1, m))
    patches = list(enumerate(buffers[:used]))
    tasks.append(
        kernel_task(
            ctx.node.name,
            kernel_from_source(source, options=ctx.ge_options),
            blocks,
            template,
            patches,
        )
    )
    return tasks


register_kernels("MatMul", lowering=_lower_matmul(("transpose_x1", "transpose_x2")))
register_kernels("MatMulV2", lowering=_lower_matmul(("transpose_x1", "transpose_x2")))
register_kernels("BatchMatMulV2", lowering=_lower_matmul(("adj_x1", "adj_x2")))
register_kernels("GEMM", lowering=_lower_gemm)
register_kernels("GatherV2", lowering=lower_gather)
