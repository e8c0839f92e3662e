"""Kernels that reduce: ReduceSum/Mean/Max/Min/Prod, ArgMaxV2, SoftmaxV2, LogSoftmaxV2,
LayerNorm.

The input's dims split into kept ("outer") and reduced ("inner") dims, each with its strides,
so any axes work without moving data; each block handles a share of the outer elements.
Floating sums accumulate in float64 and integer ones in int64, then round to the output type
(as the references do); max/min/argmax propagate NaN like numpy.
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
from ge.runtime.plan import BufferSpec, HostTask, KernelTask, kernel_task

__all__ = ["MAX_RANK", "lower_layer_norm", "lower_reduce", "lower_softmax"]


MAX_RANK = 6
_ACC = {"f": "np.float64", "i": "np.int64", "u": "np.uint64", "b": "np.int64"}


def _load(dtype: np.dtype[Any], expr: str) -> str:
    if dtype.name in _HALF:
        return f"np.float64({_HALF[dtype.name][0]}({expr}))"
    return f"{_ACC[dtype.kind]}({expr})"


def _split(
    shape: tuple[int, ...], axes: list[int]
) -> tuple[list[int], list[int], list[int], list[int]]:
    strides, step = [0] * len(shape), 1
    for k in reversed(range(len(shape))):
        strides[k] = step
        step *= shape[k]
    outer = [k for k in range(len(shape)) if k not in axes]
    return (
        [shape[k] for k in outer],
        [strides[k] for k in outer],
        [shape[k] for k in axes],
        [strides[k] for k in axes],
    )


def _pad(values: list[int], fill: int) -> list[int]:
    return [fill] * (MAX_RANK - len(values)) + values


def _header(out_t: str, in_t: str) -> list[str]:
    """Shared prologue: views, the outer/inner dims and strides, and the loop over this
    block's outer elements with ``base`` = the input offset of outer element ``o``. Dims are
    walked with loops (not unrolled) to keep Numba's compile time low."""
    r = MAX_RANK
    return [
        "def kernel(block_idx, block_dim, args):",
        f"    a = numba.carray(args, {6 + 4 * r})",
        f"    out = kernel_array(a[0], a[2], {out_t})",
        f"    x = kernel_array(a[1], a[3], {in_t})",
        "    n_out = a[4]",
        "    n_red = a[5]",
        f"    od = a[6:{6 + r}]",
        f"    os_ = a[{6 + r}:{6 + 2 * r}]",
        f"    rd = a[{6 + 2 * r}:{6 + 3 * r}]",
        f"    rs = a[{6 + 3 * r}:{6 + 4 * r}]",
        "    chunk = (n_out + block_dim - 1) // block_dim",
        "    begin = block_idx * chunk",
        "    stop = min(n_out, begin + chunk)",
        "    for o in range(begin, stop):",
        "        rest = o",
        "        base = 0",
        f"        for k in range({r - 1}, -1, -1):",
        "            base += (rest % od[k]) * os_[k]",
        "            rest = rest // od[k]",
    ]


def _inner_offset(indent: str) -> list[str]:
    return [
        f"{indent}rest = j",
        f"{indent}off = base",
        f"{indent}for k in range({MAX_RANK - 1}, -1, -1):",
        f"{indent}    off += (rest % rd[k]) * rs[k]",
        f"{indent}    rest = rest // rd[k]",
    ]


def _reduce_source(kind: str, in_dtype: np.dtype[Any], out_dtype: np.dtype[Any]) -> str:
    floating = in_dtype.kind == "f" or in_dtype.name in _HALF
    acc = "np.float64" if floating or kind == "mean" else _ACC[in_dtype.kind]  # numpy's mean
    lines = _header(_np_name(out_dtype), _np_name(in_dtype))
    init = {"sum": "0", "mean": "0", "prod": "1"}.get(kind)
    if init is not None:
        lines.append(f"        acc = {acc}({init})")
    else:
        lines += [
            "        j = 0",
            *_inner_offset("        "),
            f"        acc = {_load(in_dtype, 'x[off]')}",
        ]
    lines += [
        "        for j in range(n_red):",
        *_inner_offset("            "),
        f"            v = {acc}({_load(in_dtype, 'x[off]')})",
    ]
    step = {
        "sum": "acc += v",
        "mean": "acc += v",
        "prod": "acc *= v",
        "max": "if acc == acc and (v > acc or v != v):\n                acc = v",
        "min": "if acc == acc and (v < acc or v != v):\n                acc = v",
    }[kind]
    lines.append(f"            {step}")
    if kind == "mean":
        lines.append("        acc = acc / n_red if n_red > 0 else np.float64(np.nan)")
    lines.append(f"        out[o] = {_store('acc', out_dtype)}")
    return "\n".join(lines) + "\n"


def _task(
    ctx: LowerContext,
    source: str,
    in_buf: int,
    out_buf: int,
    n_out: int,
    n_red: int,
    dims: tuple[list[int], list[int], list[int], list[int]],
    extra: list[int] | None = None,
    extra_bufs: list[int] | None = None,
) -> KernelTask:
    od, os_, rd, rs = dims
    in_count = max(int(np.prod(ctx.spec(in_buf).shape, dtype=np.int64)), 1)
    template = [
        0,
        0,
        max(n_out, 1) if extra is None else max(n_out * max(n_red, 1), 1),
        in_count,
        n_out,
        n_red,
        *_pad(od, 1),
        *_pad(os_, 0),
        *_pad(rd, 1),
        *_pad(rs, 0),
    ]
    if extra is not None:
        template[2] = max(int(np.prod(ctx.spec(out_buf).shape, dtype=np.int64)), 1)
    patch_pos, patch_buf = [0, 1], [out_buf, in_buf]
    for buf in extra_bufs or []:
        patch_pos.append(len(template))
        patch_buf.append(buf)
        template += [0, max(int(np.prod(ctx.spec(buf).shape, dtype=np.int64)), 1)]
    template += extra or []
    blocks = 1 if n_out * max(n_red, 1) < (1 << 16) else max(1, min(os.cpu_count() or 1, n_out))
    return kernel_task(
        ctx.node.name,
        kernel_from_source(source, options=ctx.ge_options),
        blocks,
        template,
        list(zip(patch_pos, patch_buf, strict=True)),
    )


def _const(ctx: LowerContext, port: int) -> np.ndarray | None:
    return const_value(ctx.node, port)


def lower_reduce(kind: str) -> Lowering:
    """The general (strided, any axes) lowering of a ``kind`` reduction."""

    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        axes_value = _const(ctx, 1)
        x = ctx.inputs[0]
        if axes_value is None or x is None:
            return None
        spec: BufferSpec = ctx.spec(x)
        shape = tuple(spec.shape)
        if not shape:
            return None
        axes = rules.normalize_axes(_ints(axes_value), len(shape))
        if not axes:
            if ctx.attrs.get("noop_with_empty_axes", True):
                return None
            axes = list(range(len(shape)))
        dims = _split(shape, axes)
        if len(dims[0]) > MAX_RANK or len(dims[2]) > MAX_RANK:
            return None
        n_out = int(np.prod(dims[0], dtype=np.int64)) if dims[0] else 1
        n_red = int(np.prod(dims[2], dtype=np.int64)) if dims[2] else 1
        out_dtype = ctx.spec(ctx.outputs[0]).dtype
        source = _reduce_source(kind, spec.dtype, out_dtype)
        return [_task(ctx, source, x, ctx.outputs[0], n_out, n_red, dims)]

    return lower


def _argmax_source(in_dtype: np.dtype[Any], out_dtype: np.dtype[Any]) -> str:
    lines = _header(_np_name(out_dtype), _np_name(in_dtype))
    lines += [
        "        j = 0",
        *_inner_offset("        "),
        f"        best = {_load(in_dtype, 'x[off]')}",
        "        where = 0",
        "        for j in range(1, n_red):",
        *_inner_offset("            "),
        f"            v = {_load(in_dtype, 'x[off]')}",
        "            if best == best and (v > best or v != v):",
        "                best = v",
        "                where = j",
        f"        out[o] = {_np_name(out_dtype)}(where)",
    ]
    return "\n".join(lines) + "\n"


def lower_argmax(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    axis_value, x = _const(ctx, 1), ctx.inputs[0]
    if axis_value is None or x is None:
        return None
    spec = ctx.spec(x)
    if not spec.shape or len(spec.shape) > MAX_RANK:
        return None
    axis = rules.normalize_axis(_ints(axis_value)[0], len(spec.shape))
    dims = _split(tuple(spec.shape), [axis])
    n_out = int(np.prod(dims[0], dtype=np.int64)) if dims[0] else 1
    source = _argmax_source(spec.dtype, ctx.spec(ctx.outputs[0]).dtype)
    return [_task(ctx, source, x, ctx.outputs[0], n_out, spec.shape[axis], dims)]


def _softmax_source(in_dtype: np.dtype[Any], out_dtype: np.dtype[Any], log: bool) -> str:
    lines = _header(_np_name(out_dtype), _np_name(in_dtype))
    lines += [
        "        j = 0",
        *_inner_offset("        "),
        f"        top = {_load(in_dtype, 'x[off]')}",
        "        for j in range(n_red):",
        *_inner_offset("            "),
        f"            v = {_load(in_dtype, 'x[off]')}",
        "            if top == top and (v > top or v != v):",
        "                top = v",
        "        total = np.float64(0)",
        "        for j in range(n_red):",
        *_inner_offset("            "),
        f"            total += math.exp({_load(in_dtype, 'x[off]')} - top)",
        "        for j in range(n_red):",
        *_inner_offset("            "),
        f"            v = {_load(in_dtype, 'x[off]')} - top",
    ]
    value = "v - math.log(total)" if log else "math.exp(v) / total"
    lines.append(f"            out[off] = {_store(value, out_dtype)}")
    return "\n".join(lines) + "\n"


def lower_softmax(log: bool) -> Lowering:
    """The general (strided, any axes) lowering of SoftmaxV2 / LogSoftmaxV2."""

    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        x = ctx.inputs[0]
        if x is None:
            return None
        spec = ctx.spec(x)
        shape = tuple(spec.shape)
        if not shape or 0 in shape or len(shape) > MAX_RANK:
            return None
        axes = rules.normalize_axes(ctx.attrs["axes"], len(shape))
        if not axes:  # each element its own row: the reference's ones (zeros for log), even
            return None  # for inf and NaN, which a kernel's x - max would make NaN
        dims = _split(shape, axes)
        n_out = int(np.prod(dims[0], dtype=np.int64)) if dims[0] else 1
        n_red = int(np.prod(dims[2], dtype=np.int64))
        source = _softmax_source(spec.dtype, ctx.spec(ctx.outputs[0]).dtype, log)
        return [_task(ctx, source, x, ctx.outputs[0], n_out, n_red, dims, extra=[])]

    return lower


def _layer_norm_source(dtype: np.dtype[Any]) -> str:
    t = _np_name(dtype)
    lines = [
        "def kernel(block_idx, block_dim, args):",
        "    rows = args[0]",
        "    cols = args[1]",
        "    eps = kernel_array(args[2], 1, np.float64)[0]",
        f"    x = kernel_array(args[3], rows * cols, {t})",
        f"    y = kernel_array(args[4], rows * cols, {t})",
        f"    mean_out = kernel_array(args[5], rows, {t})",
        f"    var_out = kernel_array(args[6], rows, {t})",
        f"    gamma = kernel_array(args[7], args[8], {t})",
        f"    beta = kernel_array(args[9], args[10], {t})",
    ]
    r = MAX_RANK
    lines += [
        f"    a = numba.carray(args, {11 + 3 * r})",
        f"    d = a[11:{11 + r}]",
        f"    gs = a[{11 + r}:{11 + 2 * r}]",
        f"    bs = a[{11 + 2 * r}:{11 + 3 * r}]",
    ]
    lines += [
        "    chunk = (rows + block_dim - 1) // block_dim",
        "    begin = block_idx * chunk",
        "    stop = min(rows, begin + chunk)",
        "    for r in range(begin, stop):",
        "        total = np.float64(0)",
        "        for c in range(cols):",
        f"            total += {_load(dtype, 'x[r * cols + c]')}",
        "        mean = total / cols",
        "        sq = np.float64(0)",
        "        for c in range(cols):",
        f"            dv = {_load(dtype, 'x[r * cols + c]')} - mean",
        "            sq += dv * dv",
        "        var = sq / cols",
        "        inv = 1.0 / math.sqrt(var + eps)",
        f"        mean_out[r] = {_store('mean', dtype)}",
        f"        var_out[r] = {_store('var', dtype)}",
        "        for c in range(cols):",
        "            i = r * cols + c",
        "            rest = i",
        "            g = 0",
        "            b = 0",
    ]
    lines += [
        f"            for k in range({MAX_RANK - 1}, -1, -1):",
        "                idx = rest % d[k]",
        "                rest = rest // d[k]",
        "                g += idx * gs[k]",
        "                b += idx * bs[k]",
    ]
    lines += [
        f"            v = ({_load(dtype, 'x[i]')} - mean) * inv",
        f"            v = v * {_load(dtype, 'gamma[g]')} + {_load(dtype, 'beta[b]')}",
        f"            y[i] = {_store('v', dtype)}",
    ]
    return "\n".join(lines) + "\n"


def _broadcast_strides(shape: tuple[int, ...], full: tuple[int, ...]) -> list[int]:
    rank = len(full)
    padded = (1,) * (rank - len(shape)) + shape
    strides, step = [0] * rank, 1
    for k in reversed(range(rank)):
        strides[k] = step if padded[k] == full[k] and padded[k] != 1 else 0
        step *= padded[k]
    return strides


def lower_layer_norm(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    x, gamma, beta = ctx.inputs
    if x is None or gamma is None or beta is None:
        return None
    spec = ctx.spec(x)
    shape = tuple(spec.shape)
    if (
        not shape
        or 0 in shape
        or len(shape) > MAX_RANK
        or any(ctx.spec(b).dtype != spec.dtype for b in (gamma, beta))
    ):
        return None
    norm = rules.normalize_axis(ctx.attrs["begin_norm_axis"], len(shape))
    params = rules.normalize_axis(ctx.attrs["begin_params_axis"], len(shape))
    rows = int(np.prod(shape[:norm], dtype=np.int64)) if norm else 1
    cols = int(np.prod(shape[norm:], dtype=np.int64))
    tail = shape[params:]
    gs = [0] * params + _broadcast_strides(tuple(ctx.spec(gamma).shape), tail)
    bs = [0] * params + _broadcast_strides(tuple(ctx.spec(beta).shape), tail)
    eps = ctx.constant(np.asarray([ctx.attrs["epsilon"]], np.float64))
    y, mean, var = ctx.outputs
    template = [
        rows,
        cols,
        0,
        0,
        0,
        0,
        0,
        0,
        max(int(np.prod(ctx.spec(gamma).shape, dtype=np.int64)), 1),
        0,
        max(int(np.prod(ctx.spec(beta).shape, dtype=np.int64)), 1),
        *_pad(list(shape), 1),
        *_pad(gs, 0),
        *_pad(bs, 0),
    ]
    blocks = 1 if rows * cols < (1 << 16) else max(1, min(os.cpu_count() or 1, rows))
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(_layer_norm_source(spec.dtype), options=ctx.ge_options),
            blocks,
            template,
            list(zip([2, 3, 4, 5, 6, 7, 9], [eps, x, y, mean, var, gamma, beta], strict=True)),
        )
    ]


# The reductions, softmax and layer norm are registered by ``rows``, which tries its
# contiguous-row kernels first and falls back to these.
register_kernels("ArgMaxV2", lowering=lower_argmax)
