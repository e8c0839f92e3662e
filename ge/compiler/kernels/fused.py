"""``FusedElementwise``: the body subgraph becomes one elementwise program, one kernel.

Every body node must have the node's output shape (the fusion pass only groups such nodes;
with ``-1`` dims the concrete shapes can still differ at run time, and then the body runs
through the reference path: compiled op by op as a subgraph).
"""

from __future__ import annotations

from typing import Any

from ge.compiler.kernels import register_kernels
from ge.compiler.kernels.elementwise import Program, lower_program
from ge.compiler.lower import LowerContext
from ge.graph._dtypes import numpy_dtype
from ge.graph._verify import topological_order
from ge.ops.infer import _subgraph_slot, _subgraphs_of, const_array, node_attrs
from ge.ops.registry import get_op
from ge.runtime.plan import HostTask, KernelTask

__all__: list[str] = []


def lower_fused(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    bodies = _subgraphs_of(ctx.node)
    if len(bodies) != 1 or any(b is None for b in ctx.inputs):
        return None
    in_bufs = [b for b in ctx.inputs if b is not None]
    in_specs = [ctx.spec(b) for b in in_bufs]
    shape = ctx.spec(ctx.outputs[0]).shape
    order, _ = topological_order(bodies[0])
    program = Program(approx=ctx.ge_options.approx_math)
    values: dict[tuple[int, int], Any] = {}
    data = sorted(
        (n for n in order if get_op(n.type).io == "input"), key=lambda n: _subgraph_slot(n, 0)
    )
    for node, spec in zip(data, in_specs, strict=True):
        values[(id(node), 0)] = program.input(spec.dtype)
    for node in order:
        op = get_op(node.type)
        if op.io == "input":
            continue
        args = [values[(id(e[0]), e[1])] for e in node.inputs if e is not None]
        if op.io == "output":
            program.outputs = args
            continue
        out = node.output_desc(0)
        dtype = numpy_dtype(out._data_type)
        if node.type == "Const":
            array = const_array(node)
            if array is None or array.size != 1:
                return None
            values[(id(node), 0)] = program.constant(array.reshape(-1)[0], dtype)
            continue
        if tuple(out._shape) != shape:
            return None
        value = program.step(op, node_attrs(op, node), args, dtype)
        if value is None:
            return None
        values[(id(node), 0)] = value
    return lower_program(ctx, program, in_specs, in_bufs, ctx.outputs)


register_kernels("FusedElementwise", lowering=lower_fused)
