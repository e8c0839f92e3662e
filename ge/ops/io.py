"""Graph boundary ops: ``Data`` (and its kin) feed inputs, ``Const`` holds a tensor,
``NetOutput`` collects results, ``Identity`` forwards its input.

Data-like ops declare their own output desc (set by the builder, or by
``GeUtils.infer_shape``); their infer rule keeps it. Decision: ``Variable`` is fed from the
inputs list by its ``index`` like ``Data`` (ge has no resource variables yet).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.error import InferError
from ge.graph.tensor import Tensor
from ge.graph.types import AttrValueType
from ge.ops import _rules as rules
from ge.ops._define import attr, dyn, inp, opt, out, same_infer
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__: list[str] = []

VT = AttrValueType


def _declared(ctx: InferContext) -> list[Any]:
    return [ctx.current_outputs[0]._clone()]


for _type in ("Data", "RefData", "AippData", "AnyData"):
    register_op_def(
        OpDef(
            _type,
            inputs=(inp("x"),),
            outputs=(out("y"),),
            attrs=(attr("index", VT.VT_INT, 0),),
            infer=_declared,
            group="array",
            io="input",
            pure=False,
            doc="Graph input number `index`; its output desc is what the graph declares.",
        )
    )

register_op_def(
    OpDef(
        "Variable",
        inputs=(opt("x"),),
        outputs=(out("y"),),
        attrs=(
            attr("index", VT.VT_INT, 0),
            attr("container", VT.VT_STRING, ""),
            attr("shared_name", VT.VT_STRING, ""),
        ),
        infer=_declared,
        group="array",
        io="input",
        pure=False,
        doc="A variable, fed from the graph inputs by `index`.",
    )
)


def _const_infer(ctx: InferContext) -> list[Any]:
    value = ctx.attrs["value"]
    if not isinstance(value, Tensor):
        raise InferError("attribute 'value' must be a Tensor")
    return [value.get_tensor_desc()]


def _const_reference(ctx: ExecContext) -> list[np.ndarray]:
    return [ctx.attrs["value"].numpy()]


register_op_def(
    OpDef(
        "Const",
        outputs=(out("y"),),
        attrs=(attr("value", VT.VT_TENSOR, Tensor()),),
        infer=_const_infer,
        reference=_const_reference,
        group="array",
        doc="The tensor in attribute `value`.",
    )
)

register_op_def(
    OpDef(
        "NetOutput",
        inputs=(dyn("x"),),
        infer=lambda ctx: [],
        group="array",
        io="output",
        pure=False,
        doc="Collects the graph's results, in input order.",
    )
)

register_op_def(
    OpDef(
        "Identity",
        inputs=(inp("x", rules.ALL),),
        outputs=(out("y", rules.ALL),),
        infer=same_infer,
        reference=lambda ctx: [np.array(ctx.inputs[0], copy=True)],
        group="array",
        elementwise=True,
        doc="y = x.",
    )
)
