"""``FusedElementwise``: the body subgraph becomes one elementwise program, one kernel.

Every body node must have the node's output shape (the fusion pass only groups such nodes;
with ``-1`` dims the concrete shapes can still differ at run time, and then the body runs
through the reference path: compiled op by op as a subgraph).

A body ``StridedSlice`` of a body input (``ge.compiler.fuse`` moves a slice that only the group
reads into its body, as in ``u[:-2, 1:-1] + u[2:, 1:-1]``) is no op of the program: it is a
*view* of that input, read in place through its element strides and a byte offset, so the
stencil's four slices of ``u`` cost no copy. ``slice_view`` decides which slices qualify: a
constant slice whose innermost output dim steps through the source by one element (the
kernel reads each row of an input contiguously).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from ge.compiler.kernels import register_kernels
from ge.compiler.kernels.elementwise import (
    MAX_RANK,
    Program,
    lower_program,
)
from ge.compiler.lower import LowerContext
from ge.graph._dtypes import numpy_dtype
from ge.graph._verify import topological_order
from ge.graph.node import Node
from ge.ops.infer import _subgraph_slot, _subgraphs_of, const_array, node_attrs
from ge.ops.registry import get_op
from ge.ops.shape import _ints, _strided_index
from ge.runtime.plan import BufferSpec, HostTask, KernelTask

__all__ = ["slice_view"]

View = tuple[list[int], int]  # element strides over the output shape, element offset


def slice_view(node: Node) -> View | None:
    """How a constant ``StridedSlice`` reads its known-shape input, as element strides over its
    output and an element offset; ``None`` unless its innermost non-unit output dim walks
    the source contiguously (or it is not a plain constant slice)."""
    edges = node.inputs
    if len(edges) != 4 or any(e is None for e in edges):
        return None
    x = edges[0]
    values = [const_array(e[0]) for e in edges[1:] if e is not None]
    if x is None or any(v is None for v in values):
        return None
    in_shape = list(x[0].output_desc(x[1])._shape)
    out_shape = list(node.output_desc(0)._shape)
    size = int(np.prod(in_shape, dtype=np.int64))
    if any(d < 0 for d in in_shape + out_shape) or size == 0 or len(out_shape) > MAX_RANK:
        return None
    attrs = SimpleNamespace(attrs=node_attrs(get_op("StridedSlice"), node))
    index = _strided_index(attrs, *(_ints(v) for v in values))
    picked = np.arange(size, dtype=np.int64).reshape(in_shape)[index].reshape(out_shape)
    if picked.size == 0:
        return None
    base = int(picked.reshape(-1)[0])
    steps = []
    for k, d in enumerate(out_shape):
        at = [0] * len(out_shape)
        at[k] = 1 if d > 1 else 0
        steps.append(int(picked[tuple(at)]) - base)
    grids = np.indices(out_shape, dtype=np.int64)
    rebuilt = base + sum((grids[k] * steps[k] for k in range(len(out_shape))), np.int64(0))
    inner = [s for s, d in zip(steps, out_shape, strict=True) if d > 1]
    if not np.array_equal(rebuilt, picked) or (inner and inner[-1] != 1):
        return None
    return steps, base


class _Inputs:
    """The program's inputs as the body reads them: a body input whole, or a view of it."""

    def __init__(self, ctx: LowerContext, program: Program, data: list[Node]) -> None:
        self.program = program
        self.buf = {id(n): b for n, b in zip(data, ctx.inputs, strict=True)}
        self.bufs: list[int] = []
        self.specs: list[BufferSpec] = []
        self.views: list[View | None] = []
        self._made: dict[tuple[int, str], Any] = {}
        self._ctx = ctx

    def value(self, data: Node, view: View | None) -> Any:
        key = (id(data), repr(view))
        if key not in self._made:
            buf = self.buf[id(data)]
            assert buf is not None
            spec = self._ctx.spec(buf)
            self.bufs.append(buf)
            self.specs.append(spec)
            self.views.append(view)
            self._made[key] = self.program.input(spec.dtype)
        return self._made[key]


def _viewed(node: Node, inputs: _Inputs) -> Any:
    """The program input a body StridedSlice of a body input reads, or ``None``."""
    if node.type != "StridedSlice":
        return None
    x = node.input(0)
    if x is None or id(x[0]) not in inputs.buf:
        return None
    view = slice_view(node)
    return None if view is None else inputs.value(x[0], view)


def lower_fused(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    bodies = _subgraphs_of(ctx.node)
    if len(bodies) != 1 or any(b is None for b in ctx.inputs):
        return None
    shape = ctx.spec(ctx.outputs[0]).shape
    order, _ = topological_order(bodies[0])
    program = Program(approx=ctx.ge_options.approx_math)
    values: dict[tuple[int, int], Any] = {}
    data = sorted(
        (n for n in order if get_op(n.type).io == "input"), key=lambda n: _subgraph_slot(n, 0)
    )
    inputs = _Inputs(ctx, program, data)
    for node in order:
        op = get_op(node.type)
        if op.io == "input":
            continue
        viewed = _viewed(node, inputs)
        if viewed is not None:
            values[(id(node), 0)] = viewed
            continue
        edges = [e for e in node.inputs if e is not None]
        read = [
            inputs.value(e[0], None) if id(e[0]) in inputs.buf else values.get((id(e[0]), e[1]))
            for e in edges
        ]
        args = [a for a in read if a is not None]
        if len(args) != len(read):
            return None  # reads a Const of more than one element
        if op.io == "output":
            program.outputs = args
            continue
        out = node.output_desc(0)
        dtype = numpy_dtype(out._data_type)
        if node.type == "Const":
            array = const_array(node)
            if array is not None and array.size == 1:  # others: a view's bounds, or no kernel
                values[(id(node), 0)] = program.constant(array.reshape(-1)[0], dtype)
            continue
        if tuple(out._shape) != shape:
            return None
        value = program.step(op, node_attrs(op, node), args, dtype)
        if value is None:
            return None
        values[(id(node), 0)] = value
    return lower_program(ctx, program, inputs.specs, inputs.bufs, ctx.outputs, inputs.views)


register_kernels("FusedElementwise", lowering=lower_fused)
