"""Elementwise kernels: one generated loop per elementwise *program*, any shape.

A program is a straight-line list of scalar steps over the loaded inputs: a single elementwise
op is a one-step program, the body of a ``FusedElementwise`` node (``ge.compiler.fuse``) a
longer one. A step is its op's ``OpDef.scalar`` body (``ge.ops.schema.ScalarBody``, written in
the op's row in ``ge.ops``), so this module holds no table of ops: any op with a scalar body,
built in or registered at run time, gets a single-op kernel here (``lower_elementwise``, which
``ge.compiler.kernels.kernels_of`` derives for it) and can be a step of a fused one.

The kernel makes one pass over the output elements and writes every output of the
program, so a fused chain reads its inputs once and keeps intermediates in registers.

Kernels are keyed by what their source depends on: the steps and their dtypes, the output rank
after collapsing, and each input's *access kind*, never by sizes, so a new batch size reuses
the compiled kernel:

    full    same element count as the output: read at the output index
    scalar  one element: read once per block
    row     broadcast, varying along the last axis: a contiguous row at a computed base
    col     broadcast, constant along the last axis: one element per row

Before that, the output's axes of size 1 are dropped and neighbouring axes that every input
walks the same way are merged, so ``(N, C, H, W) + (1, C, 1, 1)`` is a rank-3 loop and an
all-``full`` program is a flat loop. Constants (scalar Consts fused into a body, the ``Exp``
and ``Log`` attributes) travel in a parameter block, not in the source.

A flat kernel (4- or 8-byte outputs) also has a streaming stretch: when its outputs add up to
``_STREAM_MIN_BYTES`` (32 MiB) or more, each block is computed tile by tile into stack buffers
and every tile is written out with streaming (non-temporal) stores, skipping the read of each
output line into the cache that a plain store costs. The kernel picks it at run time (and only
where the block's outputs start 64-byte aligned), so the choice does not enter the kernel key.

Numerics: each step computes in its op's compute type and rounds to its output type, as the
references do (half types are held in float32 and rounded to half after every step). float32
``exp``/``log``/``sin``/``cos``/``tanh``/``erf`` use the vectorisable approximations of
``ge.compiler.kernels._approx`` (accuracy documented there) unless ``Options.approx_math`` is
off (``GE_APPROX_MATH=0``); float64 uses libm.

Argument layout: ``[n, last, out_0.., d_0..d_{R-2}, per input: (addr, strides if row/col),
params]``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ge.compiler.kernels._codegen import kernel_from_source
from ge.compiler.lower import LowerContext
from ge.ops.registry import registry
from ge.ops.schema import OpDef
from ge.runtime.plan import BufferSpec, HostTask, KernelTask, kernel_task

__all__ = ["FUSIBLE_OPS", "MAX_RANK", "block_dim_for", "lower_elementwise", "lower_program"]

MAX_RANK = 8
_PARALLEL_MIN = 1 << 15
# Outputs this large are streamed past the caches (see _scalar's streaming stores): measured
# 15% faster for a 16M-element float32 chain here, 5-7% slower at 1M-4M elements (whose
# outputs still fit in the caches for whoever reads them next). The stretch adds ~0.1 s to a
# flat kernel's compile.
_STREAM_MIN_BYTES = 32 << 20
_STREAM_MAX_OUTPUTS = 4  # each takes a stack tile
_TILE_BYTES = 16384  # _scalar.TILE_BYTES (that module imports Numba, this one does not)
_HALF = {"float16": ("f16_to_f32", "f32_to_f16"), "bfloat16": ("bf16_to_f32", "f32_to_bf16")}
_LETTERS = "abcdefghijklmnopqrstuvwxyz"

# float32 spellings of the libm calls (ge.compiler.kernels._approx)
_APPROX = {f"math.{f}(": f"{f}_f32(" for f in ("exp", "log", "sin", "cos", "tanh", "erf")}


class _FusibleOps(AbstractSet[str]):
    """The op types a ``FusedElementwise`` body may hold: derived from the registry
    (``OpDef.fusible``), so it includes ops registered at run time."""

    def __contains__(self, op_type: object) -> bool:
        ops = registry()
        return isinstance(op_type, str) and op_type in ops and ops.get(op_type).fusible

    def __iter__(self) -> Iterator[str]:
        return iter([op.type for op in registry() if op.fusible])

    def __len__(self) -> int:
        return sum(1 for _ in self)


FUSIBLE_OPS: AbstractSet[str] = _FusibleOps()
_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    | {"float16", "bfloat16", "float32", "float64"}
)


def block_dim_for(n: int) -> int:
    """Blocks for ``n`` elements: serial below 32K elements, else one per core."""
    return 1 if n < _PARALLEL_MIN else max(1, min(os.cpu_count() or 1, n // (_PARALLEL_MIN // 2)))


@functools.cache
def _name(dtype: np.dtype[Any]) -> str:
    """``dtype.name``, remembered: numpy computes it in Python on every read, and codegen reads
    it for every op of every body."""
    return str(dtype.name)


def supports_dtype(dtype: np.dtype[Any]) -> bool:
    return _name(dtype) in _DTYPES


def _np_name(dtype: np.dtype[Any]) -> str:
    return "np.uint16" if _name(dtype) in _HALF else f"np.{_name(dtype)}"


def _store(value: str, out: np.dtype[Any]) -> str:
    """``value`` (in any type) converted to the stored form of ``out``."""
    if _name(out) in _HALF:
        return f"{_HALF[_name(out)][1]}({value})"
    if out == np.bool_:
        return f"({value}) != 0"
    return f"np.{_name(out)}({value})"


def _held(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The type a value of ``dtype`` is held in inside a kernel (half types in float32)."""
    return np.dtype(np.float32) if _name(dtype) in _HALF else dtype


def _compute_dtype(dtypes: Sequence[np.dtype[Any]]) -> np.dtype[Any]:
    widened = [_held(d) for d in dtypes]
    return np.result_type(*widened) if len(set(widened)) > 1 else widened[0]


def _convert(var: str, held: np.dtype[Any], to: np.dtype[Any]) -> str:
    return var if held == to else f"np.{_name(to)}({var})"


def _round(value: str, out: np.dtype[Any]) -> str:
    """``value`` rounded to ``out`` and held (half types round-trip through their bits)."""
    if _name(out) in _HALF:
        to_bits, from_bits = _HALF[_name(out)][1], _HALF[_name(out)][0]
        return f"{from_bits}({to_bits}({value}))"
    if out == np.bool_:
        return f"({value}) != 0"
    return f"np.{_name(out)}({value})"


def approximate(expr: str) -> str:
    """Swap libm calls for the float32 approximations, their argument cast to float32."""
    for call, approx in _APPROX.items():
        while call in expr:
            start = expr.index(call)
            depth, end = 0, start + len(call) - 1
            for end in range(start + len(call) - 1, len(expr)):
                depth += {"(": 1, ")": -1}.get(expr[end], 0)
                if depth == 0:
                    break
            arg = expr[start + len(call) : end]
            expr = f"{expr[:start]}{approx}np.float32({arg}){expr[end:]}"
    return expr


# --- programs -----------------------------------------------------------------------------------
@dataclass
class Program:
    """Scalar steps over inputs; ``values`` maps a value id to (variable, dtype). ``approx``:
    float32 libm calls become ge's approximations (``Options.approx_math``)."""

    inputs: list[np.dtype[Any]] = field(default_factory=list)
    params: list[tuple[str, float | int]] = field(default_factory=list)  # ("f"|"i", value)
    hoisted: list[str] = field(default_factory=list)  # lines run once per block
    steps: list[str] = field(default_factory=list)  # lines run per element
    outputs: list[tuple[str, np.dtype[Any]]] = field(default_factory=list)
    approx: bool = True

    def input(self, dtype: np.dtype[Any]) -> tuple[str, np.dtype[Any]]:
        self.inputs.append(dtype)
        return f"v{len(self.inputs) - 1}", dtype

    def param(self, kind: str, value: float | int) -> str:
        self.params.append((kind, value))
        return f"{'pf' if kind == 'f' else 'pi'}[{len(self.params) - 1}]"

    def constant(self, value: Any, dtype: np.dtype[Any]) -> tuple[str, np.dtype[Any]]:
        """A scalar constant held in a variable set once per block."""
        var = f"c{len(self.hoisted)}"
        if dtype.kind == "f" or _name(dtype) in _HALF:
            self.hoisted.append(
                f"{var} = np.{_name(_held(dtype))}({self.param('f', float(value))})"
            )
        elif dtype == np.bool_:
            self.hoisted.append(f"{var} = {self.param('i', int(bool(value)))} != 0")
        else:
            self.hoisted.append(f"{var} = np.{_name(dtype)}({self.param('i', int(value))})")
        return var, dtype

    def step(
        self,
        op: OpDef,
        attrs: dict[str, Any],
        args: Sequence[tuple[str, np.dtype[Any]]],
        out: np.dtype[Any],
    ) -> tuple[str, np.dtype[Any]] | None:
        """Append ``op`` (its ``OpDef.scalar`` body) on ``args``; returns its value, or
        ``None`` if it has no scalar body."""
        scalar = op.scalar
        if scalar is None or not args or len(args) > len(_LETTERS):
            return None
        dtypes = [d for _, d in args]
        if scalar.compute == "select":
            compute = _compute_dtype(dtypes[1:])
            computes = [_held(dtypes[0]), *[compute] * (len(args) - 1)]
        elif scalar.compute == "source":
            compute = _held(dtypes[0])
            computes = [compute] * len(args)
        else:
            compute = _compute_dtype(dtypes)
            computes = [compute] * len(args)
        body = scalar.expression(attrs, len(args), compute)
        names: dict[str, str] = {}
        for letter, (var, dtype), to in zip(_LETTERS, args, computes, strict=False):
            names[letter] = _convert(var, _held(dtype), to)
        for k, value in enumerate(scalar.parameters(attrs)):
            names[f"p{k}"] = self.param("f", value)
        expr = re.sub(r"\b([a-z]|p[0-9])\b", lambda m: names.get(m[1], m[1]), body)
        if compute == np.float32 and self.approx:
            expr = approximate(expr)
        var = f"t{len(self.steps)}"
        self.steps.append(f"{var} = {_round(expr, out)}")
        return var, out


# --- layout: collapsed dims and access kinds ------------------------------------------------------
def _strides(shape: Sequence[int], out_shape: Sequence[int]) -> list[int]:
    """Element strides of an input broadcast to ``out_shape`` (0 on broadcast axes)."""
    rank = len(out_shape)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    strides = [0] * rank
    step = 1
    for axis in reversed(range(rank)):
        strides[axis] = step if padded[axis] == out_shape[axis] and padded[axis] != 1 else 0
        step *= padded[axis]
    return strides


def _collapse(
    out_shape: Sequence[int], strides: list[list[int]]
) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 output axes and merge neighbours every input walks contiguously."""
    keep = [k for k, d in enumerate(out_shape) if d != 1]
    dims = [out_shape[k] for k in keep]
    walks = [[s[k] for k in keep] for s in strides]
    k = len(dims) - 1
    while k > 0:
        mergeable = all(
            (w[k - 1] == 0 and w[k] == 0) or (w[k - 1] != 0 and w[k - 1] == w[k] * dims[k])
            for w in walks
        )
        if mergeable:
            dims[k - 1] *= dims[k]
            del dims[k]
            for w in walks:
                w[k - 1] = w[k]
                del w[k]
        k -= 1
    return dims or [1], [w or [0] for w in walks]


def _kind(count: int, n: int, walk: list[int]) -> str:
    if count == n:
        return "full"
    if count == 1:
        return "scalar"
    return "row" if walk[-1] != 0 else "col"


# --- source -------------------------------------------------------------------------------------
def _load(j: int, dtype: np.dtype[Any], index: str) -> str:
    raw = f"x{j}[{index}]"
    return f"{_HALF[_name(dtype)][0]}({raw})" if _name(dtype) in _HALF else raw


def _prologue(program: Program, kinds: list[str], rank: int) -> list[str]:
    """Arguments, parameters and per-block values (scalar inputs, constants)."""
    nout = len(program.outputs)
    lines = [
        "def kernel(block_idx, block_dim, args):",
        "    n = args[0]",
        "    if n == 0:",
        "        return",
        "    last = args[1]",
    ]
    lines += [f"    d{r} = args[{2 + nout + r}]" for r in range(rank - 1)]
    pos = 2 + nout + rank - 1
    for j, kind in enumerate(kinds):
        lines.append(f"    a{j} = args[{pos}]")
        pos += 1
        if kind in ("row", "col"):
            lines += [f"    s{j}_{r} = args[{pos + r}]" for r in range(rank - 1)]
            pos += rank - 1
    if program.params:
        count = len(program.params)
        lines += [
            f"    pf = kernel_array(args[{pos}], {count}, np.float64)",
            f"    pi = kernel_array(args[{pos}], {count}, np.int64)",
        ]
    lines += [f"    {h}" for h in program.hoisted]
    for j, kind in enumerate(kinds):
        if kind == "scalar":
            dtype = program.inputs[j]
            lines.append(f"    x{j} = kernel_array(a{j}, 1, {_np_name(dtype)})")
            lines.append(f"    v{j} = {_load(j, dtype, '0')}")
    return lines


def _views(
    program: Program, kinds: list[str], rank: int, ind: str, offset: str, count: str
) -> list[str]:
    """Views of this stretch of the outputs and inputs (so the loop index starts at 0)."""
    lines = []
    for o, (_, dtype) in enumerate(program.outputs):
        lines.append(
            f"{ind}o{o} = kernel_array(args[{2 + o}] + ({offset}) * {dtype.itemsize}, {count}, "
            f"{_np_name(dtype)})"
        )
    return lines + _input_views(program, kinds, rank, ind, offset, count)


def _input_views(
    program: Program, kinds: list[str], rank: int, ind: str, offset: str, count: str
) -> list[str]:
    lines = []
    for j, kind in enumerate(kinds):
        dtype = program.inputs[j]
        at = {
            "full": (f"({offset})", count),
            "row": (" + ".join(f"i{r} * s{j}_{r}" for r in range(rank - 1)), count),
            "col": (" + ".join(f"i{r} * s{j}_{r}" for r in range(rank - 1)), "1"),
        }.get(kind)
        if at is None:
            continue
        lines.append(
            f"{ind}x{j} = kernel_array(a{j} + ({at[0]}) * {dtype.itemsize}, {at[1]}, "
            f"{_np_name(dtype)})"
        )
        if kind == "col":
            lines.append(f"{ind}v{j} = {_load(j, dtype, '0')}")
    return lines


def _element_loop(program: Program, kinds: list[str], ind: str, count: str, out: str) -> list[str]:
    """The loop over this stretch's elements, storing output ``o`` into ``{out}{o}``."""
    body = ind + "    "
    lines = [f"{ind}for i in range({count}):"]
    lines += [
        f"{body}v{j} = {_load(j, program.inputs[j], 'i')}"
        for j, k in enumerate(kinds)
        if k in ("full", "row")
    ]
    lines += [f"{body}{s}" for s in program.steps]
    for o, (var, dtype) in enumerate(program.outputs):
        value = f"{_HALF[_name(dtype)][1]}({var})" if _name(dtype) in _HALF else var
        lines.append(f"{body}{out}{o}[i] = {value}")
    return lines


def _streams(program: Program, kinds: Sequence[str]) -> bool:
    """Whether the kernel can write its outputs with streaming (non-temporal) stores: a flat
    loop with at most ``_STREAM_MAX_OUTPUTS`` outputs of 4- or 8-byte elements."""
    sizes = [dtype.itemsize for _, dtype in program.outputs]
    return (
        all(k in ("full", "scalar") for k in kinds)
        and 0 < len(sizes) <= _STREAM_MAX_OUTPUTS
        and all(size in (4, 8) for size in sizes)
    )


def _streaming_stretch(program: Program, kinds: list[str]) -> list[str]:
    """A block's stretch computed tile by tile into stack buffers, each tile streamed out;
    taken when the outputs add up to ``_STREAM_MIN_BYTES`` and every output of the block
    starts 64-byte aligned (else the plain loop runs)."""
    tile = _TILE_BYTES // max(dtype.itemsize for _, dtype in program.outputs)
    total = sum(dtype.itemsize for _, dtype in program.outputs)
    starts = [f"(args[{2 + o}] + start * {d.itemsize})" for o, (_, d) in enumerate(program.outputs)]
    lines = [f"    if n * {total} >= {_STREAM_MIN_BYTES} and ({' | '.join(starts)}) & 63 == 0:"]
    for o, (_, dtype) in enumerate(program.outputs):
        lines += [
            # the block's stretch of the output, checked as a view (stream_store writes it)
            f"        kernel_array(args[{2 + o}] + start * {dtype.itemsize}, m, {_np_name(dtype)})",
            f"        tile_at{o} = stack_tile()",
            f"        tile{o} = tile_array(tile_at{o}, {tile}, {_np_name(dtype)})",
        ]
    lines += [
        f"        for ta in range(0, m, {tile}):",
        f"            tn = min({tile}, m - ta)",
        *_input_views(program, kinds, 1, "            ", "start + ta", "tn"),
        *_element_loop(program, kinds, "            ", "tn", "tile"),
    ]
    for o, (_, dtype) in enumerate(program.outputs):
        size = dtype.itemsize
        to = f"args[{2 + o}] + (start + ta) * {size}"
        lines.append(f"            stream_store({to}, tile_at{o}, tn * {size})")
    return [*lines, "        store_fence()", "        return"]


def _source(program: Program, kinds: list[str], rank: int) -> str:
    lines = _prologue(program, kinds, rank)
    if all(k in ("full", "scalar") for k in kinds):  # one flat stretch per block
        lines += [
            "    chunk = ((n + block_dim - 1) // block_dim + 15) // 16 * 16",
            "    start = block_idx * chunk",
            "    m = min(n, start + chunk) - start",
            "    if m <= 0:",
            "        return",
        ]
        if _streams(program, kinds):
            lines += _streaming_stretch(program, kinds)
        ind, offset, count = "    ", "start", "m"
    else:  # one stretch per row of the last axis
        lines += [
            "    rows = n // last",
            "    chunk = (rows + block_dim - 1) // block_dim",
            "    r0 = block_idx * chunk",
            "    for row in range(r0, min(rows, r0 + chunk)):",
            "        q = row",
        ]
        for r in reversed(range(rank - 1)):
            lines += [f"        i{r} = q % d{r}", f"        q = q // d{r}"]
        ind, offset, count = "        ", "row * last", "last"
    lines += _views(program, kinds, rank, ind, offset, count)
    lines += _element_loop(program, kinds, ind, count, "o")
    return "\n".join(lines) + "\n"


def _param_block(program: Program) -> np.ndarray:
    """The parameter block: float params as float64, integer ones as int64 bits."""
    block = np.zeros(len(program.params), np.float64)
    for k, (kind, value) in enumerate(program.params):
        if kind == "f":
            block[k] = value
        else:
            block.view(np.int64)[k] = int(np.int64(value))
    return block


def lower_program(
    ctx: LowerContext,
    program: Program,
    in_specs: Sequence[BufferSpec],
    in_bufs: Sequence[int],
    out_bufs: Sequence[int],
    views: Sequence[tuple[Sequence[int], int] | None] | None = None,
) -> list[KernelTask | HostTask] | None:
    """The kernel task computing ``program`` over inputs ``in_specs`` (broadcast to the first
    output's shape) into ``out_bufs``; ``None`` when a shape is out of reach. ``views``: per
    input, ``None`` or ``(element strides over the output's dims, element offset)`` for an
    input read in place as a slice of its buffer (it walks its own strides from that offset:
    the ``row`` kind, ``full`` when one contiguous stretch)."""
    out_shape = ctx.spec(out_bufs[0]).shape
    if len(out_shape) > MAX_RANK or any(ctx.spec(b).shape != out_shape for b in out_bufs):
        return None
    n = int(np.prod(out_shape, dtype=np.int64))
    views = [None] * len(in_specs) if views is None else views
    strides = [
        list(view[0]) if view is not None else _strides(spec.shape, out_shape)
        for spec, view in zip(in_specs, views, strict=True)
    ]
    dims, walks = _collapse(out_shape, strides)
    kinds = []
    for spec, view, walk in zip(in_specs, views, walks, strict=True):
        if view is None:
            kinds.append(_kind(int(np.prod(spec.shape, dtype=np.int64)), n, walk))
        elif walk[-1] != 1 and dims != [1]:  # one element: its offset is the whole view
            return None
        else:
            kinds.append("full" if len(dims) == 1 else "row")
    template: list[int] = [n, dims[-1], *([0] * len(out_bufs)), *dims[:-1]]
    patches = [(2 + o, buf) for o, buf in enumerate(out_bufs)]
    offsets = [0] * len(out_bufs)
    for buf, spec, view, kind, walk in zip(in_bufs, in_specs, views, kinds, walks, strict=True):
        patches.append((len(template), buf))
        offsets.append(0 if view is None else view[1] * spec.dtype.itemsize)
        template.append(0)
        if kind in ("row", "col"):
            template += walk[:-1]
    if program.params:  # a constant buffer, so the plan stays data (no raw address in it)
        patches.append((len(template), ctx.constant(_param_block(program))))
        offsets.append(0)
        template.append(0)
    function = kernel_from_source(_source(program, kinds, len(dims)), options=ctx.ge_options)
    task = kernel_task(ctx.node.name, function, block_dim_for(n), template, patches, offsets)
    itemsize = ctx.spec(out_bufs[0]).dtype.itemsize
    viewed = {buf for buf, view in zip(in_bufs, views, strict=True) if view is not None}
    task.same_index_inputs = frozenset(  # each element is loaded before any store of it; never
        buf  # a viewed buffer: the output must not overwrite it
        for buf, kind, spec in zip(in_bufs, kinds, in_specs, strict=True)
        if kind == "full" and buf not in viewed and spec.dtype.itemsize == itemsize
    )
    return [task]


# --- single ops ---------------------------------------------------------------------------------
def _bias_view(ctx: LowerContext, bias: BufferSpec, out_shape: tuple[int, ...]) -> BufferSpec:
    fmt = ctx.attrs["data_format"]
    axis = 1 if fmt.startswith("NC") and len(out_shape) > 1 else len(out_shape) - 1
    shape = [1] * len(out_shape)
    shape[axis] = bias.shape[0]
    return BufferSpec(bias.kind, bias.index, tuple(shape), bias.dtype)


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
    if any(b is None for b in ctx.inputs) or not supports_dtype(out.dtype):
        return None
    bufs = [b for b in ctx.inputs if b is not None]
    specs = [ctx.spec(b) for b in bufs]
    if not all(supports_dtype(s.dtype) for s in specs):
        return None
    if ctx.op.type == "BiasAdd":
        specs[1] = _bias_view(ctx, specs[1], out.shape)
    if ctx.op.type == "Select" and _picks_rows(specs[0], out):
        cond = specs[0]
        padded = cond.shape + (1,) * (len(out.shape) - 1)
        specs[0] = BufferSpec(cond.kind, cond.index, padded, cond.dtype)
    program = Program(approx=ctx.ge_options.approx_math)
    args = [program.input(s.dtype) for s in specs]
    value = program.step(ctx.op, ctx.attrs, args, out.dtype)
    if value is None:
        return None
    program.outputs.append(value)
    return lower_program(ctx, program, specs, bufs, ctx.outputs[:1])
