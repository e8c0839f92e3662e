"""Kernels of the linear-algebra ops (``ge.ops.linalg``): Cholesky, MatrixSolve.

One generated kernel per op and dtype (float32, float64); shapes and the batch layout are
run-time arguments, so every batch size and matrix size shares it. Each block factors a share
of the batch's matrices, accumulating in float64:

- ``Cholesky``: Cholesky-Banachiewicz row by row, written straight into the output (the
  factor's lower triangle, zeros above); a pivot ``<= 0`` or NaN fills that matrix with NaN.
- ``MatrixSolve``: the matrix (transposed with ``adjoint``) and the right-hand sides are copied
  to a float64 scratch row of the block, factored by LU with partial pivoting (the largest
  ``|pivot|``, first on ties, as LAPACK's ``getrf``), then solved by back substitution; an
  exact zero pivot gives NaN for that batch element. Batch dims broadcast: each of up to
  ``MAX_BATCH_RANK`` output batch dims has a matrix and a rhs stride (0 where broadcast).

Inputs with a 0-size dim run the op's reference (there is nothing to compute).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ge.compiler.kernels import register_kernels
from ge.compiler.kernels._codegen import kernel_from_source
from ge.compiler.lower import LowerContext
from ge.runtime.plan import BufferKind, BufferSpec, HostTask, KernelTask, kernel_task

__all__ = ["MAX_BATCH_RANK"]

MAX_BATCH_RANK = 6
_TYPES = {"float32": "np.float32", "float64": "np.float64"}


def _blocks(batch: int, work: int) -> int:
    """Blocks for ``batch`` matrices of ``work`` flops each: one for small jobs."""
    if batch <= 1 or batch * work < (1 << 16):
        return 1
    return max(1, min(os.cpu_count() or 1, batch))


def _count(shape: tuple[int, ...]) -> int:
    return max(int(np.prod(shape, dtype=np.int64)), 1)


def _cholesky_source(dtype: np.dtype[Any]) -> str:
    t = _TYPES[dtype.name]
    lines = [
        "def kernel(block_idx, block_dim, args):",
        "    batch = args[0]",
        "    n = args[1]",
        f"    x = kernel_array(args[2], args[4], {t})",
        f"    y = kernel_array(args[3], args[4], {t})",
        "    chunk = (batch + block_dim - 1) // block_dim",
        "    for m in range(block_idx * chunk, min(batch, (block_idx + 1) * chunk)):",
        "        base = m * n * n",
        "        failed = False",
        "        for i in range(n):",
        "            for j in range(i + 1):",
        "                s = np.float64(x[base + i * n + j])",
        "                for k in range(j):",
        "                    lk = np.float64(y[base + i * n + k])",
        "                    s -= lk * np.float64(y[base + j * n + k])",
        "                if i == j:",
        "                    if not s > 0.0:",
        "                        failed = True",
        "                        break",
        f"                    y[base + i * n + i] = {t}(math.sqrt(s))",
        "                else:",
        f"                    y[base + i * n + j] = {t}(s / np.float64(y[base + j * n + j]))",
        "            if failed:",
        "                break",
        "            for j in range(i + 1, n):",
        f"                y[base + i * n + j] = {t}(0.0)",
        "        if failed:",
        "            for e in range(n * n):",
        f"                y[base + e] = {t}(np.nan)",
    ]
    return "\n".join(lines) + "\n"


def lower_cholesky(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    x = ctx.inputs[0]
    if x is None:
        return None
    spec = ctx.spec(x)
    shape = tuple(spec.shape)
    if spec.dtype.name not in _TYPES or len(shape) < 2 or 0 in shape:
        return None
    n = shape[-1]
    batch = _count(shape[:-2])
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(_cholesky_source(spec.dtype), options=ctx.ge_options),
            _blocks(batch, n * n * n),
            [batch, n, 0, 0, _count(shape)],
            [(2, x), (3, ctx.outputs[0])],
        )
    ]


def _solve_source(dtype: np.dtype[Any]) -> str:
    t = _TYPES[dtype.name]
    r = MAX_BATCH_RANK
    lines = [
        "def kernel(block_idx, block_dim, argv):",
        f"    args = numba.carray(argv, {11 + 3 * r})",
        "    batch = args[0]",
        "    n = args[1]",
        "    k = args[2]",
        "    adjoint = args[3] != 0",
        f"    a = kernel_array(args[4], args[8], {t})",
        f"    b = kernel_array(args[5], args[9], {t})",
        f"    y = kernel_array(args[6], args[10], {t})",
        "    width = n * n + n * k",
        "    lu = kernel_array(args[7] + block_idx * width * 8, width, np.float64)",
        f"    dims = args[11:{11 + r}]",
        f"    a_strides = args[{11 + r}:{11 + 2 * r}]",
        f"    b_strides = args[{11 + 2 * r}:{11 + 3 * r}]",
        "    w = n * n",
        "    chunk = (batch + block_dim - 1) // block_dim",
        "    for m in range(block_idx * chunk, min(batch, (block_idx + 1) * chunk)):",
        "        rest = m",
        "        a_base = 0",
        "        b_base = 0",
        f"        for d in range({r - 1}, -1, -1):",
        "            at = rest % dims[d]",
        "            rest = rest // dims[d]",
        "            a_base += at * a_strides[d]",
        "            b_base += at * b_strides[d]",
        "        a_base *= n * n",
        "        b_base *= n * k",
        "        for i in range(n):",
        "            for j in range(n):",
        "                src = a_base + (j * n + i if adjoint else i * n + j)",
        "                lu[i * n + j] = np.float64(a[src])",
        "        for e in range(n * k):",
        "            lu[w + e] = np.float64(b[b_base + e])",
        "        singular = False",
        "        for c in range(n):",
        "            p = c",
        "            best = abs(lu[c * n + c])",
        "            for i in range(c + 1, n):",
        "                v = abs(lu[i * n + c])",
        "                if v > best:",
        "                    best = v",
        "                    p = i",
        "            if not best > 0.0:",
        "                singular = True",
        "                break",
        "            if p != c:",
        "                for j in range(n):",
        "                    t0 = lu[c * n + j]",
        "                    lu[c * n + j] = lu[p * n + j]",
        "                    lu[p * n + j] = t0",
        "                for j in range(k):",
        "                    t0 = lu[w + c * k + j]",
        "                    lu[w + c * k + j] = lu[w + p * k + j]",
        "                    lu[w + p * k + j] = t0",
        "            pivot = lu[c * n + c]",
        "            for i in range(c + 1, n):",
        "                f = lu[i * n + c] / pivot",
        "                for j in range(c + 1, n):",
        "                    lu[i * n + j] -= f * lu[c * n + j]",
        "                for j in range(k):",
        "                    lu[w + i * k + j] -= f * lu[w + c * k + j]",
        "        out = m * n * k",
        "        if singular:",
        "            for e in range(n * k):",
        f"                y[out + e] = {t}(np.nan)",
        "            continue",
        "        for i in range(n - 1, -1, -1):",
        "            for j in range(k):",
        "                s = lu[w + i * k + j]",
        "                for q in range(i + 1, n):",
        "                    s -= lu[i * n + q] * lu[w + q * k + j]",
        "                lu[w + i * k + j] = s / lu[i * n + i]",
        "        for e in range(n * k):",
        f"            y[out + e] = {t}(lu[w + e])",
    ]
    return "\n".join(lines) + "\n"


def _batch_strides(batch: tuple[int, ...], full: tuple[int, ...]) -> list[int]:
    """Matrix-index strides of a batch shape ``batch`` broadcast to ``full`` (0: broadcast),
    left-padded to ``MAX_BATCH_RANK``."""
    padded = (1,) * (len(full) - len(batch)) + batch
    strides, step = [0] * len(full), 1
    for d in reversed(range(len(full))):
        strides[d] = step if padded[d] != 1 else 0
        step *= padded[d]
    return [0] * (MAX_BATCH_RANK - len(full)) + strides


def lower_solve(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    matrix, rhs = ctx.inputs
    if matrix is None or rhs is None:
        return None
    a_spec, b_spec = ctx.spec(matrix), ctx.spec(rhs)
    out_shape = tuple(ctx.spec(ctx.outputs[0]).shape)
    if (
        a_spec.dtype.name not in _TYPES
        or b_spec.dtype != a_spec.dtype
        or len(out_shape) - 2 > MAX_BATCH_RANK
        or 0 in out_shape
        or 0 in a_spec.shape
    ):
        return None
    n, k = out_shape[-2], out_shape[-1]
    full = out_shape[:-2]
    batch = _count(full)
    blocks = _blocks(batch, n * n * (n + k))
    scratch = ctx.plan.add_buffer(  # one float64 LU + rhs block per kernel block
        BufferSpec(BufferKind.INTERMEDIATE, 0, (blocks * (n * n + n * k),), np.dtype(np.float64))
    )
    template = [batch, n, k, int(bool(ctx.attrs["adjoint"])), 0, 0, 0, 0]
    template += [_count(tuple(a_spec.shape)), _count(tuple(b_spec.shape)), _count(out_shape)]
    template += [1] * (MAX_BATCH_RANK - len(full)) + list(full)
    template += _batch_strides(tuple(a_spec.shape[:-2]), full)
    template += _batch_strides(tuple(b_spec.shape[:-2]), full)
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(_solve_source(a_spec.dtype), options=ctx.ge_options),
            blocks,
            template,
            [(4, matrix), (5, rhs), (6, ctx.outputs[0]), (7, scratch)],
        )
    ]


register_kernels("Cholesky", lowering=lower_cholesky)
register_kernels("MatrixSolve", lowering=lower_solve)
