"""Control flow with subgraphs: If, Case and While.

Each branch/body is a ``Graph`` whose Data nodes take the parent's dynamic ``input`` tensors (by
``_parent_node_index`` when set, else by ``index``) and whose NetOutput gives the results.
Decisions: a non-scalar ``cond`` is true when it has elements (TensorFlow's rule); a
``branch_index`` out of range runs the last branch (TensorFlow's Case); outputs of branches that
differ in shape get ``-1`` dims (or an unknown rank), and differing types are an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ge.error import InferError
from ge.graph.graph import Graph
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import attr, dyn, inp, sub
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__ = ["truthy"]

VT = AttrValueType


def truthy(value: np.ndarray) -> bool:
    """A condition tensor's truth: the value of a one-element tensor of rank 0 or 1, else
    whether it has elements (so a [1, 1] tensor holding 0 is true)."""
    array = np.asarray(value)
    return bool(array.reshape(())) if array.size == 1 and array.ndim <= 1 else array.size > 0


def _merge(a: TensorDesc, b: TensorDesc, what: str) -> TensorDesc:
    if a._data_type != b._data_type:
        raise InferError(
            f"{what} has type {a._data_type.name} in one branch and {b._data_type.name} in another"
        )
    sa, sb = list(a._shape), list(b._shape)
    if sa == sb:
        return a._clone()
    if len(sa) != len(sb) or rules.is_unknown_rank(sa) or rules.is_unknown_rank(sb):
        return rules.desc(rules.UNKNOWN_RANK, a._data_type)
    return rules.desc([x if x == y else -1 for x, y in zip(sa, sb, strict=True)], a._data_type)


def _branch_outputs(ctx: InferContext, graphs: Sequence[Graph], offset: int) -> list[Any]:
    assert ctx.infer_subgraph is not None
    if not graphs:
        raise InferError(f"{ctx.op.type} node has no subgraphs attached")
    inputs = ctx.inputs[-1]
    merged: list[TensorDesc] | None = None
    for graph in graphs:
        outs = ctx.infer_subgraph(graph, inputs, offset)
        if len(outs) != ctx.output_counts[0]:
            raise InferError(
                f"subgraph '{graph.name}' returns {len(outs)} outputs, the node "
                f"has {ctx.output_counts[0]}"
            )
        merged = (
            outs
            if merged is None
            else [
                _merge(m, o, f"output {i}")
                for i, (m, o) in enumerate(zip(merged, outs, strict=True))
            ]
        )
    assert merged is not None
    return [merged]


def _if_infer(ctx: InferContext) -> list[Any]:
    if len(ctx.subgraphs) != 2:
        raise InferError(
            f"If needs then_branch and else_branch, has {len(ctx.subgraphs)} subgraphs"
        )
    return _branch_outputs(ctx, ctx.subgraphs, offset=1)


def _if_reference(ctx: ExecContext) -> list[Any]:
    assert ctx.run_subgraph is not None
    branch = ctx.subgraphs[0] if truthy(ctx.inputs[0]) else ctx.subgraphs[1]
    return [ctx.run_subgraph(branch, ctx.inputs[1], 1)]


register_op_def(
    OpDef(
        "If",
        inputs=(inp("cond"), dyn("input")),
        outputs=(dyn("output"),),
        subgraphs=(sub("then_branch"), sub("else_branch")),
        infer=_if_infer,
        reference=_if_reference,
        group="control",
        pure=False,
        doc="output = then_branch(input) if cond else else_branch(input).",
    )
)


def _case_infer(ctx: InferContext) -> list[Any]:
    rules.check_dtype(ctx.inputs[0], frozenset({DataType.DT_INT32}), "branch_index")
    return _branch_outputs(ctx, ctx.subgraphs, offset=1)


def _case_reference(ctx: ExecContext) -> list[Any]:
    assert ctx.run_subgraph is not None
    index = int(np.asarray(ctx.inputs[0]).reshape(-1)[0])
    if not 0 <= index < len(ctx.subgraphs):
        index = len(ctx.subgraphs) - 1
    return [ctx.run_subgraph(ctx.subgraphs[index], ctx.inputs[1], 1)]


register_op_def(
    OpDef(
        "Case",
        inputs=(inp("branch_index", {DataType.DT_INT32}), dyn("input")),
        outputs=(dyn("output"),),
        subgraphs=(sub("branches", dynamic=True),),
        infer=_case_infer,
        reference=_case_reference,
        group="control",
        pure=False,
        doc="output = branches[branch_index](input); out of range runs the last branch.",
    )
)


def _while_infer(ctx: InferContext) -> list[Any]:
    assert ctx.infer_subgraph is not None
    if len(ctx.subgraphs) != 2:
        raise InferError(f"While needs cond and body, has {len(ctx.subgraphs)} subgraphs")
    cond, body = ctx.subgraphs
    carried = [d._clone() for d in ctx.inputs[0]]
    if ctx.output_counts[0] != len(carried):
        raise InferError(f"While has {len(carried)} inputs but {ctx.output_counts[0]} outputs")
    for _ in range(3):  # shapes widen to -1 at most twice: exact -> -1 dims -> unknown rank
        outs = ctx.infer_subgraph(body, carried, 0)
        if len(outs) != len(carried):
            raise InferError(f"body returns {len(outs)} values for {len(carried)} loop vars")
        widened = [
            _merge(c, o, f"loop var {i}")
            for i, (c, o) in enumerate(zip(carried, outs, strict=True))
        ]
        if all(list(w._shape) == list(c._shape) for w, c in zip(widened, carried, strict=True)):
            break
        carried = widened
    cond_out = ctx.infer_subgraph(cond, carried, 0)
    if len(cond_out) != 1:
        raise InferError(f"cond must return one value, returns {len(cond_out)}")
    return [carried]


def _while_reference(ctx: ExecContext) -> list[Any]:
    assert ctx.run_subgraph is not None
    cond, body = ctx.subgraphs
    values = list(ctx.inputs[0])
    while truthy(ctx.run_subgraph(cond, values, 0)[0]):
        values = ctx.run_subgraph(body, values, 0)
    return [[np.array(v, copy=True) for v in values]]


register_op_def(
    OpDef(
        "While",
        inputs=(dyn("input"),),
        outputs=(dyn("output"),),
        attrs=(attr("parallel_iterations", VT.VT_INT, 10),),
        subgraphs=(sub("cond"), sub("body")),
        infer=_while_infer,
        reference=_while_reference,
        group="control",
        pure=False,
        doc="while cond(vars): vars = body(vars); output = vars.",
    )
)
