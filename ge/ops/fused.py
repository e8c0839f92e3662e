"""Ops the compiler's fusion pass creates: ``FusedElementwise`` and ``FusedReduce``.

A ``FusedElementwise`` node computes its ``body`` subgraph on its ``x`` inputs and returns the
body's outputs as ``y``. The body's Data nodes take the inputs by ``index``; its nodes are
elementwise ops (and scalar Consts), so the whole body becomes one loop over the output
elements when compiled. It is a ge op (GE fuses into backend-specific ops the same way), shown
in ``GE_DUMP_GRAPH`` dumps with its body, and it round-trips through AIR like any node with a
subgraph. Its reference runs the body on the reference interpreter, so a fused graph and the
unfused one it came from give the same results.

A ``FusedReduce`` node is the same with one reduction in the body (over the input's last
axes) whose result the body's elementwise ops take up: the reduction's *epilogue*, computed
per output element right after the reduction, in the same kernel.
"""

from __future__ import annotations

from typing import Any

from ge.error import InferError
from ge.ops._define import dyn, sub
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__: list[str] = []


def _body_infer(ctx: InferContext) -> list[Any]:
    assert ctx.infer_subgraph is not None
    if len(ctx.subgraphs) != 1:
        raise InferError(f"{ctx.op.type} needs one body subgraph, has {len(ctx.subgraphs)}")
    outs = ctx.infer_subgraph(ctx.subgraphs[0], ctx.inputs[0], 0)
    if len(outs) != ctx.output_counts[0]:
        raise InferError(
            f"body '{ctx.subgraphs[0].name}' returns {len(outs)} outputs, the node has "
            f"{ctx.output_counts[0]}"
        )
    return [outs]


def _body_reference(ctx: ExecContext) -> list[Any]:
    assert ctx.run_subgraph is not None
    return [ctx.run_subgraph(ctx.subgraphs[0], ctx.inputs[0], 0)]


for _type, _doc in (
    ("FusedElementwise", "y = body(x): elementwise ops fused into one kernel by the compiler."),
    ("FusedReduce", "y = body(x): a reduction and its elementwise epilogue, one kernel."),
):
    register_op_def(
        OpDef(
            _type,
            inputs=(dyn("x"),),
            outputs=(dyn("y"),),
            subgraphs=(sub("body"),),
            infer=_body_infer,
            reference=_body_reference,
            group="fused",
            doc=_doc,
        )
    )
