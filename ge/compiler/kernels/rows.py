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
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from ge.compiler.kernels import (
    Lowering,
    elementwise,
    first_lowering,
    kernels_of,
    reduction,
    register_kernels,
)
from ge.compiler.kernels._codegen import kernel_from_source
from ge.compiler.kernels.elementwise import _HALF, Program, _np_name, _param_block, _store
from ge.compiler.lower import LowerContext
from ge.graph._dtypes import numpy_dtype
from ge.graph._verify import topological_order
from ge.graph.node import Node
from ge.ops import _rules as rules
from ge.ops.infer import _subgraph_slot, _subgraphs_of, const_array, const_value, node_attrs
from ge.ops.registry import get_op, registry
from ge.ops.shape import _ints
from ge.runtime.plan import BufferKind, BufferSpec, HostTask, KernelTask, kernel_task

__all__ = ["LANES", "REDUCTIONS"]

LANES = 8  # independent accumulators per reduction
_BLOCK = 2048  # elements per block of a sum
_TYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
_INT_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})

Value = tuple[str, np.dtype[Any]]


def _load(dtype: np.dtype[Any], expr: str) -> str:
    """A row element in its compute type (float64 sums, float32 for halves elsewhere)."""
    if dtype.name in _HALF:
        return f"{_HALF[dtype.name][0]}({expr})"
    return expr


def _acc(dtype: np.dtype[Any]) -> str:
    if dtype.kind == "f" or dtype.name in _HALF:
        return "np.float64"
    return "np.uint64" if dtype.kind == "u" else "np.int64"


_VECTOR_FOLDS = {
    "sum": "row_sum_f32",
    "mean": "row_sum_f32",
    "max": "row_max_f32",
    "min": "row_min_f32",
}


def _fold(
    kind: str, dtype: np.dtype[Any], src: str, start: str, count: str, ind: str, addr: str = ""
) -> list[str]:
    """Lines reducing ``src[start:start+count]`` into ``acc`` with ``LANES`` accumulators; a
    float32 row at address ``addr`` uses the vectorised helpers of ``_scalar`` instead."""
    if addr and dtype == np.float32 and kind in _VECTOR_FOLDS:
        return [f"{ind}acc = {_VECTOR_FOLDS[kind]}({addr}, {count})"]
    return _fold_values(
        kind, _acc(dtype), lambda i: _load(dtype, f"{src}[{start} + {i}]"), count, ind
    )


def _fold_values(
    kind: str, acc: str, element: Callable[[str], str], count: str, ind: str
) -> list[str]:
    """Lines reducing ``element(j)`` for ``j < count`` into ``acc`` (of type ``acc`` for sums
    and products) with ``LANES`` accumulators. Sums go by blocks of ``_BLOCK`` elements, each
    block's lanes added into a running total, so rounding error grows as ``_BLOCK / LANES +
    count / _BLOCK`` additions rather than ``count / LANES``."""
    if kind in ("sum", "mean"):
        lanes = _lanes(
            "{v}", "a{k} += {v}", f"{acc}(0)", lambda i: element(f"blk + {i}"), "bn", ind + "    "
        )
        return [
            f"{ind}total = {acc}(0)",
            f"{ind}for blk in range(0, {count}, {_BLOCK}):",
            f"{ind}    bn = min({_BLOCK}, {count} - blk)",
            *lanes,
            f"{ind}    total += ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))",
            f"{ind}acc = total",
        ]
    if kind == "prod":
        lines = _lanes("{v}", "a{k} *= {v}", f"{acc}(1)", element, count, ind)
        return [*lines, f"{ind}acc = ((a0 * a1) * (a2 * a3)) * ((a4 * a5) * (a6 * a7))"]
    op = ">" if kind == "max" else "<"
    pick = "a{k} = {v} if ({v} " + op + " a{k} or {v} != {v}) else a{k}"
    lines = _lanes("{v}", pick, element("0"), element, count, ind)
    lines.append(f"{ind}acc = a0")
    for k in range(1, LANES):
        lines.append(f"{ind}acc = a{k} if (a{k} {op} acc or a{k} != a{k}) else acc")
    return lines


def _lanes(
    value: str, step: str, init: str, element: Callable[[str], str], count: str, ind: str
) -> list[str]:
    """``a0..a7 = init``, then ``step`` each element of ``0..count`` into lane ``j % 8``."""
    lines = [f"{ind}a{k} = {init}" for k in range(LANES)]
    lines += [
        f"{ind}whole = {count} // {LANES} * {LANES}",
        f"{ind}for j in range(0, whole, {LANES}):",
    ]
    for k in range(LANES):
        lines.append(f"{ind}    w{k} = {element(f'j + {k}')}")
        lines.append(f"{ind}    " + step.format(k=k, v=value.format(v=f"w{k}")))
    lines += [f"{ind}for j in range(whole, {count}):", f"{ind}    w0 = {element('j')}"]
    lines.append(f"{ind}    " + step.format(k=0, v=value.format(v="w0")))
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


def _reduce_source(
    kind: str, dtype: np.dtype[Any], out: np.dtype[Any], epilogue: Program | None = None
) -> str:
    """One output per row; with an ``epilogue`` program, its steps run on each row's result
    (input 0 of the program) and its outputs are stored instead. Epilogue inputs ``1..`` are
    per-row (``args[4 + 2k]``, one value per row) or, if ``args[5 + 2k]`` is 0, one value."""
    lines = [
        *_header(),
        f"    x = kernel_array(args[2], rows * cols, {_np_name(dtype)})",
    ]
    if epilogue is None:
        lines.append(f"    y = kernel_array(args[3], rows, {_np_name(out)})")
    else:
        lines += _epilogue_prologue(epilogue)
    lines += ["    for r in range(begin, stop):", "        base = r * cols"]
    lines += _fold(
        kind, dtype, "x", "base", "cols", "        ", f"args[2] + base * {dtype.itemsize}"
    )
    if kind == "mean":
        lines.append("        acc = acc / cols if cols > 0 else np.float64(np.nan)")
    if epilogue is None:
        lines.append(f"        y[r] = {_store('acc', out)}")
        return "\n".join(lines) + "\n"
    lines.append(f"        v0 = {elementwise._round('acc', out)}")
    lines += [f"        v{j} = {_load(d, f'x{j}[r * m{j}]')}" for j, d in _extra(epilogue)]
    lines += [f"        {step}" for step in epilogue.steps]
    for o, (var, dtype_o) in enumerate(epilogue.outputs):
        value = f"{_HALF[dtype_o.name][1]}({var})" if dtype_o.name in _HALF else var
        lines.append(f"        o{o}[r] = {value}")
    return "\n".join(lines) + "\n"


def _extra(program: Program) -> list[tuple[int, np.dtype[Any]]]:
    return list(enumerate(program.inputs))[1:]


def _epilogue_prologue(program: Program) -> list[str]:
    """Views of the epilogue's outputs (``args[3 + k]``), extra inputs and parameters."""
    nout = len(program.outputs)
    lines = [
        f"    o{o} = kernel_array(args[{3 + o}], rows, {_np_name(d)})"
        for o, (_, d) in enumerate(program.outputs)
    ]
    at = 3 + nout
    for j, dtype in _extra(program):
        lines += [
            f"    m{j} = args[{at + 1}]",
            f"    x{j} = kernel_array(args[{at}], rows if m{j} else 1, {_np_name(dtype)})",
        ]
        at += 2
    if program.params:
        count = len(program.params)
        lines += [
            f"    pf = kernel_array(args[{at}], {count}, np.float64)",
            f"    pi = kernel_array(args[{at}], {count}, np.int64)",
        ]
    return lines + [f"    {h}" for h in program.hoisted]


def _exp(work: np.dtype[Any], arg: str, approx: bool) -> str:
    if work == np.float64:
        return f"math.exp({arg})"
    if approx:
        return elementwise.approximate(f"math.exp({arg})")
    return f"np.float32(math.exp({arg}))"


def _softmax_source(
    dtype: np.dtype[Any], out: np.dtype[Any], log: bool, approx: bool = True
) -> str:
    work = np.dtype(np.float64 if dtype == np.float64 else np.float32)
    w = f"np.{work.name}"
    lines = [
        *_header(),
        f"    x = kernel_array(args[2], rows * cols, {_np_name(dtype)})",
        f"    scratch = args[4] + block_idx * cols * {work.itemsize}",
        f"    tmp = kernel_array(scratch, cols, {w})",
        "    for r in range(begin, stop):",
        "        base = r * cols",
        f"        xr = kernel_array(args[2] + base * {dtype.itemsize}, cols, {_np_name(dtype)})",
        f"        yr = kernel_array(args[3] + base * {out.itemsize}, cols, {_np_name(out)})",
    ]
    if dtype == np.float32:  # a NaN or inf in the row makes its sum NaN: no NaN pass needed
        lines.append("        acc = row_max_keys_f32(args[2] + base * 4, cols)")
    else:
        lines += _fold("max", dtype, "x", "base", "cols", "        ")
    value = f"{w}({_load(dtype, 'xr[j]')})"
    lines += [
        f"        top = {w}(acc)",
        "        for j in range(cols):",
        f"            tmp[j] = {_exp(work, f'{value} - top', approx)}",
    ]
    lines += _fold("sum", work, "tmp", "0", "cols", "        ", "scratch")
    if log:  # (x - max) - log(sum): the shift must not round at the magnitude of max
        result = f"({value} - top) - lse"
        lines += [f"        lse = {w}(math.log(acc))"]
    else:
        result = "tmp[j] * inv"
        lines += [f"        inv = {w}(1.0 / acc)"]
    lines += ["        for j in range(cols):", f"            yr[j] = {_store(result, out)}"]
    return "\n".join(lines) + "\n"


def _layer_norm_source(dtype: np.dtype[Any]) -> str:
    """Mean and variance per row in float64 (two passes, eight lanes each), then
    ``(x - mean) / sqrt(var + eps) * gamma + beta`` with gamma and beta one value per column."""
    t = _np_name(dtype)

    def x_at(i: str) -> str:
        return f"np.float64({_load(dtype, f'x[base + {i}]')})"

    lines = [
        *_header(),
        "    eps = kernel_array(args[2], 1, np.float64)[0]",
        f"    x = kernel_array(args[3], rows * cols, {t})",
        f"    y = kernel_array(args[4], rows * cols, {t})",
        f"    mean_out = kernel_array(args[5], rows, {t})",
        f"    var_out = kernel_array(args[6], rows, {t})",
        f"    gamma = kernel_array(args[7], cols, {t})",
        f"    beta = kernel_array(args[8], cols, {t})",
        "    for r in range(begin, stop):",
        "        base = r * cols",
    ]
    lines += _fold_values("sum", "np.float64", x_at, "cols", "        ")
    lines.append("        mean = acc / cols")
    lines += _fold_values(
        "sum",
        "np.float64",
        lambda i: f"({x_at(i)} - mean) * ({x_at(i)} - mean)",
        "cols",
        "        ",
    )
    lines += [
        "        var = acc / cols",
        "        inv = 1.0 / math.sqrt(var + eps)",
        f"        mean_out[r] = {_store('mean', dtype)}",
        f"        var_out[r] = {_store('var', dtype)}",
        "        for c in range(cols):",
        f"            v = ({x_at('c')} - mean) * inv",
        f"            v = v * {_load(dtype, 'gamma[c]')} + {_load(dtype, 'beta[c]')}",
        f"            y[base + c] = {_store('v', dtype)}",
    ]
    return "\n".join(lines) + "\n"


def _layer_norm(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    x, gamma, beta = ctx.inputs
    if x is None or gamma is None or beta is None:
        return None
    spec = ctx.spec(x)
    shape = tuple(spec.shape)
    if not shape or 0 in shape or spec.dtype.name not in _TYPES:
        return None
    norm = rules.normalize_axis(ctx.attrs["begin_norm_axis"], len(shape))
    params = rules.normalize_axis(ctx.attrs["begin_params_axis"], len(shape))
    cols = int(np.prod(shape[norm:], dtype=np.int64))
    per_column = all(
        ctx.spec(b).dtype == spec.dtype and tuple(ctx.spec(b).shape) == shape[norm:]
        for b in (gamma, beta)
    )
    if params != norm or not per_column:
        return None  # the general kernel broadcasts gamma and beta
    rows = int(np.prod(shape[:norm], dtype=np.int64)) if norm else 1
    eps = ctx.constant(np.asarray([ctx.attrs["epsilon"]], np.float64))
    y, mean, var = ctx.outputs
    return [
        kernel_task(
            ctx.node.name,
            kernel_from_source(_layer_norm_source(spec.dtype), options=ctx.ge_options),
            _blocks(rows, cols),
            [rows, cols, 0, 0, 0, 0, 0, 0, 0],
            list(zip(range(2, 9), [eps, x, y, mean, var, gamma, beta], strict=True)),
        )
    ]


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
                kernel_from_source(source, options=ctx.ge_options),
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
        split = _trailing(tuple(spec.shape), axes) if axes else None  # no axes: the reference
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
                    _softmax_source(
                        spec.dtype, ctx.spec(ctx.outputs[0]).dtype, log, ctx.ge_options.approx_math
                    ),
                    options=ctx.ge_options,
                ),
                blocks,
                [rows, cols, 0, 0, 0],
                [(2, x), (3, ctx.outputs[0]), (4, scratch)],
            )
        ]

    return lower


def _epilogue(
    order: list[Node],
    head: Node,
    slots: dict[int, int],
    x_slot: int,
    in_specs: list[BufferSpec],
    approx: bool,
) -> tuple[Program, list[int]] | None:
    """The body after the reduction as a program on its result (input 0); also the input
    slots of its other inputs, in program order."""
    program = Program(approx=approx)
    head_dtype = numpy_dtype(head.output_desc(0)._data_type)
    values: dict[tuple[int, int], Value] = {(id(head), 0): program.input(head_dtype)}
    extra: list[int] = []
    axes = head.input(1)
    for node in order:
        op = get_op(node.type)
        if node is head or (axes is not None and node is axes[0]):
            continue
        if op.io == "input":
            if slots[id(node)] != x_slot:
                values[(id(node), 0)] = program.input(in_specs[slots[id(node)]].dtype)
                extra.append(slots[id(node)])
            continue
        found = [values.get((id(e[0]), e[1])) for e in node.inputs if e is not None]
        args = [a for a in found if a is not None]
        if len(args) != len(found):
            return None  # the reduction's input used by the epilogue: not per row
        if op.io == "output":
            program.outputs = args
            continue
        value = _value(program, node, args)
        if value is None:
            return None
        values[(id(node), 0)] = value
    return program, extra


def _value(program: Program, node: Node, args: list[Value]) -> Value | None:
    dtype = numpy_dtype(node.output_desc(0)._data_type)
    if node.type != "Const":
        op = get_op(node.type)
        return program.step(op, node_attrs(op, node), args, dtype)
    array = const_array(node)
    if array is None or array.size != 1:
        return None
    return program.constant(array.reshape(-1)[0], dtype)


def lower_fused_reduce(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    """A ``FusedReduce`` body: the reduction over the input's last axes, its epilogue run on
    each row's result in the same kernel (the reference path runs the body otherwise)."""
    bodies = _subgraphs_of(ctx.node)
    if len(bodies) != 1 or any(b is None for b in ctx.inputs):
        return None
    in_bufs = [b for b in ctx.inputs if b is not None]
    order, _ = topological_order(bodies[0])
    heads = [n for n in order if kernels_of(get_op(n.type)).row_reduction is not None]
    slots = {id(n): _subgraph_slot(n, 0) for n in order if get_op(n.type).io == "input"}
    x_edge = heads[0].input(0) if len(heads) == 1 else None
    if x_edge is None:
        return None
    head, source = heads[0], x_edge[0]
    axes = const_value(head, 1)
    if id(source) not in slots or axes is None:
        return None
    x = ctx.spec(in_bufs[slots[id(source)]])
    if not x.shape or x.dtype.name not in (_TYPES | _INT_TYPES):
        return None
    split = _trailing(tuple(x.shape), rules.normalize_axes(_ints(axes), len(x.shape)))
    in_specs = [ctx.spec(b) for b in in_bufs]
    built = _epilogue(order, head, slots, slots[id(source)], in_specs, ctx.ge_options.approx_math)
    if split is None or split[1] == 0 or built is None:
        return None
    (rows, cols), (program, extra) = split, built
    counts = [int(np.prod(ctx.spec(in_bufs[k]).shape, dtype=np.int64)) for k in extra]
    outs = [int(np.prod(ctx.spec(b).shape, dtype=np.int64)) for b in ctx.outputs]
    if any(c not in (rows, 1) for c in counts) or any(n != rows for n in outs):
        return None
    template = [rows, cols, 0, *([0] * len(ctx.outputs))]
    patches = [(2, in_bufs[slots[id(source)]])] + [(3 + o, b) for o, b in enumerate(ctx.outputs)]
    for slot, count in zip(extra, counts, strict=True):
        patches.append((len(template), in_bufs[slot]))
        template += [0, 1 if count == rows and rows != 1 else 0]
    if program.params:  # a constant buffer, so the plan stays data (no raw address in it)
        patches.append((len(template), ctx.constant(_param_block(program))))
        template.append(0)
    out_dtype = numpy_dtype(head.output_desc(0)._data_type)
    fold = kernels_of(get_op(head.type)).row_reduction
    assert fold is not None
    source_text = _reduce_source(fold, x.dtype, out_dtype, program)
    function = kernel_from_source(source_text, options=ctx.ge_options)
    return [kernel_task(ctx.node.name, function, _blocks(rows, cols), template, patches)]


# The trailing-axes reductions: this module's row kernel where it applies (and as the head of
# a FusedReduce), the general strided one of ``reduction`` otherwise.
for _op, _kind in (
    ("ReduceSum", "sum"),
    ("ReduceMean", "mean"),
    ("ReduceMax", "max"),
    ("ReduceMin", "min"),
    ("ReduceProd", "prod"),
):
    register_kernels(
        _op,
        lowering=first_lowering(_reduce(_kind), reduction.lower_reduce(_kind)),
        row_reduction=_kind,
    )
register_kernels(
    "SoftmaxV2", lowering=first_lowering(_softmax(log=False), reduction.lower_softmax(log=False))
)
register_kernels(
    "LogSoftmaxV2", lowering=first_lowering(_softmax(log=True), reduction.lower_softmax(log=True))
)
register_kernels("LayerNorm", lowering=first_lowering(_layer_norm, reduction.lower_layer_norm))
register_kernels("FusedReduce", lowering=lower_fused_reduce)


class _Reductions(Mapping[str, str]):
    """Op type -> fold of every reduction that can head a ``FusedReduce`` (derived from the
    ``register_kernels`` records)."""

    def __getitem__(self, op_type: str) -> str:
        ops = registry()
        fold = kernels_of(ops.get(op_type)).row_reduction if op_type in ops else None
        if fold is None:
            raise KeyError(op_type)
        return fold

    def __iter__(self) -> Iterator[str]:
        return iter([op.type for op in registry() if kernels_of(op).row_reduction is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


REDUCTIONS: Mapping[str, str] = _Reductions()
