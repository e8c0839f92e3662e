"""Kernels over contiguous rows: trailing-axis reductions, softmax and layer norm.

When the reduced axes are the input's last ones, the input is ``rows x cols`` in memory and
each output element (or normalised row) is one contiguous stretch: these kernels take that
case, blocks sharing the rows, and ``ge.compiler.kernels.reduction`` keeps the general
strided one. Inner loops are written for the vectoriser: elementwise passes (``exp(x - top)``,
the final scaling) are plain loops over a row, and reductions keep eight independent
accumulators, which gives the CPU eight chains to overlap without fast-math reassociation, so
results do not depend on the vector width. Sums of floating types accumulate in float64 (eight
partial sums, then added pairwise), so float32 sums are accurate to float32 rounding for rows
of any practical length; max/min propagate NaN as numpy does.

Softmax computes ``e = exp(x - max)``, stores it, sums the row, then scales by ``1 / sum``;
for float32 the exponential is ``exp_f32`` (``ge.compiler.kernels._approx``). A row holding a
NaN gives NaN everywhere, and a row whose max is ``inf`` gives NaN (``inf - inf``), as numpy.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ge.compiler.kernels import LOWERINGS, elementwise
from ge.compiler.kernels._codegen import kernel_from_source
from ge.compiler.kernels.elementwise import _HALF, _np_name, _store
from ge.compiler.lower import LowerContext
from ge.compiler.plan import BufferKind, BufferSpec, HostTask, KernelTask, kernel_task
from ge.ops import _rules as rules
from ge.ops.infer import const_value
from ge.ops.shape import _ints

__all__ = ["LANES", "row_lowering"]

LANES = 8  # independent accumulators per reduction
_TYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
_INT_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})

Lowering = Callable[[LowerContext], list[KernelTask | HostTask] | None]


def _load(dtype: np.dtype[Any], expr: str) -> str:
    """A row element in its compute type (float64 sums, float32 for halves elsewhere)."""
    if dtype.name in _HALF:
        return f"{_HALF[dtype.name][0]}({expr})"
    return expr


def _acc(dtype: np.dtype[Any]) -> str:
    if dtype.kind == "f" or dtype.name in _HALF:
        return "np.float64"
    return "np.uint64" if dtype.kind == "u" else "np.int64"


def _fold(kind: str, dtype: np.dtype[Any], src: str, start: str, count: str, ind: str) -> list[str]:
    """Lines reducing ``src[start:start+count]`` into ``acc`` with ``LANES`` accumulators."""
    load = _load(dtype, f"{src}[{start} + j + k]")
    acc = _acc(dtype)
    if kind in ("sum", "mean"):
        init, step = f"{acc}(0)", "a{k} += {v}"
    elif kind == "prod":
        init, step = f"{acc}(1)", "a{k} *= {v}"
    else:
        op = ">" if kind == "max" else "<"
        init = f"{_load(dtype, f'{src}[{start}]')}"
        step = "a{k} = {v} if ({v} " + op + " a{k} or {v} != {v}) else a{k}"
    lines = [f"{ind}a{k} = {init}" for k in range(LANES)]
    lines += [
        f"{ind}whole = {count} // {LANES} * {LANES}",
        f"{ind}for j in range(0, whole, {LANES}):",
    ]
    for k in range(LANES):
        value = f"w{k}"
        lines.append(f"{ind}    {value} = {load.replace(' + k]', f' + {k}]')}")
        lines.append(f"{ind}    " + step.format(k=k, v=value))
    lines += [
        f"{ind}for j in range(whole, {count}):",
        f"{ind}    w0 = {_load(dtype, f'{src}[{start} + j]')}",
    ]
    lines.append(f"{ind}    " + step.format(k=0, v="w0"))
    combine = {"sum": "+", "mean": "+", "prod": "*"}.get(kind)
    if combine is not None:
        lines.append(
            f"{ind}acc = ((a0 {combine} a1) {combine} (a2 {combine} a3)) {combine} "
            f"((a4 {combine} a5) {combine} (a6 {combine} a7))"
        )
    else:
        lines.append(f"{ind}acc = a0")
        for k in range(1, LANES):
            lines.append(f"{ind}acc = a{k} if (a{k} {op} acc or a{k} != a{k}) else acc")
    return lines


def _header() -> list[str]:
    return [
        "def kernel(block_idx, block_dim, args):",
        "    rows = args[0]",
        "    cols = args[1]",
        "    chunk = (rows + block_dim - 1) // block_dim",
        "    begin = block_idx * chunk",
        "    stop = min(rows, begin + chunk)",
    ]


def _reduce_source(kind: str, dtype: np.dtype[Any], out: np.dtype[Any]) -> str:
    lines = [
        *_header(),
        f"    x = kernel_array(args[2], rows * cols, {_np_name(dtype)})",
        f"    y = kernel_array(args[3], rows, {_np_name(out)})",
        "    for r in range(begin, stop):",
        "        base = r * cols",
    ]
    lines += _fold(kind, dtype, "x", "base", "cols", "        ")
    if kind == "mean":
        lines.append("        acc = acc / cols if cols > 0 else np.float64(np.nan)")
    lines.append(f"        y[r] = {_store('acc', out)}")
    return "\n".join(lines) + "\n"


def _exp(work: np.dtype[Any], arg: str) -> str:
    if work == np.float64:
        return f"math.exp({arg})"
    if elementwise.USE_APPROX:
        return elementwise.approximate(f"math.exp({arg})")
    return f"np.float32(math.exp({arg}))"


def _softmax_source(dtype: np.dtype[Any], out: np.dtype[Any], log: bool) -> str:
    work = np.dtype(np.float64 if dtype == np.float64 else np.float32)
    w = f"np.{work.name}"
    lines = [
        *_header(),
        f"    x = kernel_array(args[2], rows * cols, {_np_name(dtype)})",
        f"    y = kernel_array(args[3], rows * cols, {_np_name(out)})",
        f"    tmp = kernel_array(args[4] + block_idx * cols * {work.itemsize}, cols, {w})",
        "    for r in range(begin, stop):",
        "        base = r * cols",
    ]
    lines += _fold("max", dtype, "x", "base", "cols", "        ")
    value = f"{w}({_load(dtype, 'x[base + j]')})"
    lines += [
        f"        top = {w}(acc)",
        "        for j in range(cols):",
        f"            tmp[j] = {_exp(work, f'{value} - top')}",
    ]
    lines += _fold("sum", work, "tmp", "0", "cols", "        ")
    if log:
        result = f"{value} - shift"
        lines += [f"        shift = top + {w}(math.log(acc))"]
    else:
        result = "tmp[j] * inv"
        lines += [f"        inv = {w}(1.0 / acc)"]
    lines += ["        for j in range(cols):", f"            y[base + j] = {_store(result, out)}"]
    return "\n".join(lines) + "\n"


def _trailing(shape: tuple[int, ...], axes: list[int]) -> tuple[int, int] | None:
    """``(rows, cols)`` when ``axes`` are the last ones (or there are none to keep)."""
    rank = len(shape)
    if sorted(axes) != list(range(rank - len(axes), rank)):
        return None
    rows = int(np.prod(shape[: rank - len(axes)], dtype=np.int64))
    return rows, int(np.prod(shape[rank - len(axes) :], dtype=np.int64))


def _blocks(rows: int, cols: int) -> int:
    if rows * cols < (1 << 15):
        return 1
    return max(1, min(os.cpu_count() or 1, rows))


def _reduce(kind: str) -> Lowering:
    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        x, axes_value = ctx.inputs[0], const_value(ctx.node, 1)
        if x is None or axes_value is None:
            return None
        spec, out = ctx.spec(x), ctx.spec(ctx.outputs[0])
        allowed = _TYPES | (_INT_TYPES if kind in ("sum", "max", "min", "prod") else frozenset())
        if not spec.shape or spec.dtype.name not in allowed:
            return None
        axes = rules.normalize_axes(_ints(axes_value), len(spec.shape))
        split = _trailing(tuple(spec.shape), axes) if axes else None
        if split is None or split[1] == 0:
            return None
        rows, cols = split
        source = _reduce_source(kind, spec.dtype, out.dtype)
        return [
            kernel_task(
                ctx.node.name,
                kernel_from_source(source),
                _blocks(rows, cols),
                [rows, cols, 0, 0],
                [(2, x), (3, ctx.outputs[0])],
            )
        ]

    return lower


def _softmax(log: bool) -> Lowering:
    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        x = ctx.inputs[0]
        if x is None:
            return None
        spec = ctx.spec(x)
        if not spec.shape or spec.dtype.name not in _TYPES or 0 in spec.shape:
            return None
        axes = rules.normalize_axes(ctx.attrs["axes"], len(spec.shape))
        split = _trailing(tuple(spec.shape), axes)
        if split is None:
            return None
        rows, cols = split
        blocks = _blocks(rows, cols)
        work = np.dtype(np.float64 if spec.dtype == np.float64 else np.float32)
        scratch = ctx.plan.add_buffer(  # one row per block, in the run's arena
            BufferSpec(BufferKind.INTERMEDIATE, 0, (cols * blocks,), work)
        )
        return [
            kernel_task(
                ctx.node.name,
                kernel_from_source(
                    _softmax_source(spec.dtype, ctx.spec(ctx.outputs[0]).dtype, log)
                ),
                blocks,
                [rows, cols, 0, 0, 0],
                [(2, x), (3, ctx.outputs[0]), (4, scratch)],
            )
        ]

    return lower


def row_lowering(fast: Lowering, general: Lowering | None) -> Lowering:
    """``fast`` where it applies, else ``general`` (else the reference)."""

    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        tasks = fast(ctx)
        return tasks if tasks is not None or general is None else general(ctx)

    return lower


for _op, _fast in {
    "ReduceSum": _reduce("sum"),
    "ReduceMean": _reduce("mean"),
    "ReduceMax": _reduce("max"),
    "ReduceMin": _reduce("min"),
    "ReduceProd": _reduce("prod"),
    "SoftmaxV2": _softmax(log=False),
    "LogSoftmaxV2": _softmax(log=True),
}.items():
    LOWERINGS[_op] = row_lowering(_fast, LOWERINGS.get(_op))
