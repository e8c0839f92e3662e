"""Kernels for elementwise ops: one generated kernel per (op, dtypes), any shape.

A kernel computes ``out[i] = f(x0[o0], x1[o1], ...)`` for its share of the ``n`` output
elements; ``o_j`` comes from the output index and input j's strides (0 on broadcast dims), all
passed as arguments, so one kernel serves every shape of a given rank limit (``MAX_RANK``) and
dtype combination. Inputs that are contiguous and full-size (or a single element) take a fast
path without index arithmetic. Half types are loaded from their bits into float32, computed in
float32 and rounded back to nearest-even, matching the references.

Argument layout: ``[out, n, contiguous, d_0..d_{R-1}, (x_j, s_j_0..s_j_{R-1}, step_j)..., params]``
where ``step_j`` is 1 for a full-size contiguous input and 0 for a single element.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ge.compiler.kernels import LOWERINGS
from ge.compiler.kernels._codegen import kernel_from_source
from ge.compiler.lower import LowerContext
from ge.compiler.plan import BufferSpec, HostTask, KernelTask, kernel_task

__all__ = ["MAX_RANK", "block_dim_for"]

MAX_RANK = 6
_PARALLEL_MIN = 1 << 16
_HALF = {"float16": ("f16_to_f32", "f32_to_f16"), "bfloat16": ("bf16_to_f32", "f32_to_bf16")}

# Scalar bodies: a, b, c are the loaded inputs in the compute type; p0..p2 are float params.
_UNARY: dict[str, str] = {
    "Neg": "-a",
    "Abs": "abs(a)",
    "Exp": "math.exp((a * p0 + p1) * p2)",
    "Log": "math.log(a * p0 + p1) * p2",
    "Sqrt": "np.sqrt(a)",
    "Rsqrt": "1.0 / np.sqrt(a)",
    "Square": "a * a",
    "Reciprocal": "1.0 / a",
    "Sin": "math.sin(a)",
    "Cos": "math.cos(a)",
    "Tanh": "math.tanh(a)",
    "Sigmoid": "1.0 / (1.0 + math.exp(-a))",
    "Relu": "a if (a > 0 or a != a) else a * 0",
    "Gelu": "0.5 * a * (1.0 + math.tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))",
    "Erf": "math.erf(a)",
    "Sign": "np.sign(a)",
    "Floor": "np.floor(a)",
    "Ceil": "np.ceil(a)",
    "LogicalNot": "not a",
    "Identity": "a",
    "Cast": "a",
    "ZerosLike": "0",
    "OnesLike": "1",
}
_BINARY: dict[str, str] = {
    "Add": "a + b",
    "Sub": "a - b",
    "Mul": "a * b",
    "Maximum": "a if (a >= b or a != a) else b",
    "Minimum": "a if (a <= b or a != a) else b",
    "Equal": "a == b",
    "NotEqual": "a != b",
    "Less": "a < b",
    "LessEqual": "a <= b",
    "Greater": "a > b",
    "GreaterEqual": "a >= b",
    "LogicalAnd": "a and b",
    "LogicalOr": "a or b",
    "BiasAdd": "a + b",
}
_FLOAT_ONLY_DIV = "a / b"
_INT_DIV = "int_div(a, b)"


def block_dim_for(n: int) -> int:
    """Blocks for ``n`` elements: serial below 64K elements, else one per core."""
    return 1 if n < _PARALLEL_MIN else max(1, min(os.cpu_count() or 1, n // (_PARALLEL_MIN // 2)))


def _np_name(dtype: np.dtype[Any]) -> str:
    return "np.uint16" if dtype.name in _HALF else f"np.{dtype.name}"


def _compute_dtype(dtypes: Sequence[np.dtype[Any]]) -> np.dtype[Any]:
    widened = [np.dtype(np.float32) if d.name in _HALF else d for d in dtypes]
    return np.result_type(*widened) if len(set(widened)) > 1 else widened[0]


def _load(j: int, dtype: np.dtype[Any], compute: np.dtype[Any], index: str) -> str:
    raw = f"x{j}[{index}]"
    if dtype.name in _HALF:
        raw = f"{_HALF[dtype.name][0]}({raw})"
        return raw if compute == np.float32 else f"np.{compute.name}({raw})"
    return raw if dtype == compute else f"np.{compute.name}({raw})"


def _store(value: str, out: np.dtype[Any]) -> str:
    if out.name in _HALF:
        return f"{_HALF[out.name][1]}({value})"
    if out == np.bool_:
        return f"({value}) != 0"
    return f"np.{out.name}({value})"


Load = tuple[np.dtype[Any], np.dtype[Any]]  # (stored dtype, compute dtype) of an input


def _source(body: str, loads: Sequence[Load], out: np.dtype[Any], nparams: int) -> str:
    k = len(loads)
    names = "abcdefghijklmnopqrstuvwxyz"
    lines = [
        "def kernel(block_idx, block_dim, args):",
        "    n = args[1]",
        f"    out = kernel_array(args[0], n, {_np_name(out)})",
    ]
    lines += [f"    d{r} = args[{3 + r}]" for r in range(MAX_RANK)]
    base = 3 + MAX_RANK
    for j, (dtype, _) in enumerate(loads):
        at = base + j * (MAX_RANK + 2)
        lines.append(f"    x{j} = kernel_array(args[{at}], n, {_np_name(dtype)})")
        lines += [f"    s{j}_{r} = args[{at + 1 + r}]" for r in range(MAX_RANK)]
        lines.append(f"    m{j} = args[{at + 1 + MAX_RANK}]")
    if nparams:
        at = base + k * (MAX_RANK + 2)
        lines.append(f"    p = kernel_array(args[{at}], {nparams}, np.float64)")
        lines += [f"    p{i} = p[{i}]" for i in range(nparams)]
    lines += [
        "    chunk = (n + block_dim - 1) // block_dim",
        "    start = block_idx * chunk",
        "    stop = min(n, start + chunk)",
        "    if args[2] != 0:",
        "        for i in range(start, stop):",
    ]
    lines += [
        f"            {names[j]} = {_load(j, d, c, f'i * m{j}')}" for j, (d, c) in enumerate(loads)
    ]
    lines += [
        f"            out[i] = {_store(body, out)}",
        "    else:",
        "        for i in range(start, stop):",
        "            r = i",
    ]
    for r in reversed(range(1, MAX_RANK)):
        lines += [f"            i{r} = r % d{r}", f"            r = r // d{r}"]
    lines.append("            i0 = r")
    for j, (d, c) in enumerate(loads):
        offset = " + ".join(f"i{r} * s{j}_{r}" for r in range(MAX_RANK))
        lines.append(f"            {names[j]} = {_load(j, d, c, offset)}")
    lines.append(f"            out[i] = {_store(body, out)}")
    return "\n".join(lines) + "\n"


def _strides(spec: BufferSpec, out_shape: tuple[int, ...]) -> list[int]:
    """Element strides of an input broadcast to ``out_shape``, padded to ``MAX_RANK``."""
    rank = len(out_shape)
    shape = (1,) * (rank - len(spec.shape)) + tuple(spec.shape)
    strides = [0] * rank
    step = 1
    for axis in reversed(range(rank)):
        strides[axis] = step if shape[axis] == out_shape[axis] and shape[axis] != 1 else 0
        step *= shape[axis]
    return [0] * (MAX_RANK - rank) + strides


def _params(ctx: LowerContext) -> list[float]:
    if ctx.op.type == "Exp":
        base = ctx.attrs["base"]
        return [ctx.attrs["scale"], ctx.attrs["shift"], 1.0 if base == -1.0 else math.log(base)]
    if ctx.op.type == "Log":
        base = ctx.attrs["base"]
        return [
            ctx.attrs["scale"],
            ctx.attrs["shift"],
            1.0 if base == -1.0 else 1.0 / math.log(base),
        ]
    return []


def _param_block(ctx: LowerContext, values: list[float]) -> int:
    return ctx.plan.device_constant(np.asarray(values, np.float64))


def _bias_view(ctx: LowerContext, bias: BufferSpec, out_shape: tuple[int, ...]) -> BufferSpec:
    fmt = ctx.attrs["data_format"]
    axis = 1 if fmt.startswith("NC") and len(out_shape) > 1 else len(out_shape) - 1
    shape = [1] * len(out_shape)
    shape[axis] = bias.shape[0]
    return BufferSpec(bias.kind, bias.index, tuple(shape), bias.dtype)


def _body(
    ctx: LowerContext, in_dtypes: Sequence[np.dtype[Any]], compute: np.dtype[Any]
) -> str | None:
    op = ctx.op.type
    if op in _UNARY:
        return _UNARY[op]
    if op in _BINARY:
        return _BINARY[op]
    if op in ("Div", "RealDiv"):
        return _INT_DIV if compute.kind in "iu" else _FLOAT_ONLY_DIV
    if op == "Pow":
        return "np.trunc(np.float64(a) ** np.float64(b))" if compute.kind in "iu" else "a ** b"
    if op in ("Select", "SelectV2"):
        return "b if a else c"
    if op == "AddN":
        return " + ".join("abcdefghijklmnopqrstuvwxyz"[: len(in_dtypes)])
    return None


def _picks_rows(cond: BufferSpec, out: BufferSpec) -> bool:
    """TF's Select: a vector condition as long as dim 0 picks whole rows."""
    return (
        len(cond.shape) == 1
        and len(out.shape) > 1
        and cond.shape[0] == out.shape[0]
        and cond.shape[0] != 1
    )


def lower_elementwise(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    out = ctx.spec(ctx.outputs[0])
    if len(out.shape) > MAX_RANK or any(b is None for b in ctx.inputs) or len(ctx.inputs) > 26:
        return None
    ins = [ctx.spec(b) for b in ctx.inputs if b is not None]
    if ctx.op.type == "BiasAdd":
        ins[1] = _bias_view(ctx, ins[1], out.shape)
    in_dtypes = [s.dtype for s in ins]
    if ctx.op.type in ("Select", "SelectV2"):
        compute = _compute_dtype(in_dtypes[1:])
        loads = [(in_dtypes[0], in_dtypes[0])] + [(d, compute) for d in in_dtypes[1:]]
        if ctx.op.type == "Select" and _picks_rows(ins[0], out):
            ins[0] = BufferSpec(
                ins[0].kind, ins[0].index, ins[0].shape + (1,) * (len(out.shape) - 1), ins[0].dtype
            )
    elif ctx.op.type == "Cast":
        compute = np.dtype(np.float32) if in_dtypes[0].name in _HALF else in_dtypes[0]
        loads = [(in_dtypes[0], compute)]
    else:
        compute = _compute_dtype(in_dtypes)
        loads = [(d, compute) for d in in_dtypes]
    body = _body(ctx, in_dtypes, compute)
    if body is None:
        return None
    params = _params(ctx)
    source = _source(body, loads, out.dtype, len(params))
    function = kernel_from_source(source)
    n = int(np.prod(out.shape, dtype=np.int64))
    dims = [1] * (MAX_RANK - len(out.shape)) + list(out.shape)
    template: list[int] = [0, n, 0, *dims]
    patch_pos, patch_buf = [0], [ctx.outputs[0]]
    contiguous = True
    for buf, spec in zip([b for b in ctx.inputs if b is not None], ins, strict=True):
        strides = _strides(spec, out.shape)
        count = int(np.prod(spec.shape, dtype=np.int64))
        full = tuple(spec.shape) == tuple(out.shape)
        contiguous &= full or count == 1
        patch_pos.append(len(template))
        patch_buf.append(buf)
        template += [0, *strides, 1 if full else 0]
    template[2] = 1 if contiguous else 0
    if params:
        template.append(_param_block(ctx, params))
    return [
        kernel_task(
            ctx.node.name,
            function,
            block_dim_for(n),
            template,
            list(zip(patch_pos, patch_buf, strict=True)),
        )
    ]


_OPS: tuple[str, ...] = (*_UNARY, *_BINARY, "Div", "RealDiv", "Pow", "Select", "SelectV2", "AddN")
LOWERINGS.update(dict.fromkeys(_OPS, lower_elementwise))
