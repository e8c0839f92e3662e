"""Seed 004's offline sample operator: ``AnnotatedAddCustom`` with ``compile`` and
``declare_launch_args``, loaded from ``ASCEND_CUSTOM_OPP_PATH`` at build time only.

The kernel is Python compiled by Numba (``ge.runtime.compile_kernel``; the sample's Ascend C
kernel, ported): block ``b`` adds elements ``[b * 1024, (b + 1) * 1024)``. ``compile`` builds
the binary; ``declare_launch_args`` records the launch (x, y, z addresses), which the offline
model stores. The process that runs the model never imports this module.
"""

from __future__ import annotations

import numpy as np

from ge import runtime
from ge.custom_op import (
    AnnotatedKernelLaunchInfo,
    get_declare_launch_args_ctx,
    register_op,
    register_op_impl,
)
from ge.runtime import Tensor, TensorDesc, kernel_array

print("PY_ANNOTATED_ARGS_MODULE_LOADED=1", flush=True)

KERNEL_NAME = "add_custom"
BLOCK_SIZE = 1024


@register_op(op_type="AnnotatedAddCustom")
def annotated_add_custom_infer_meta(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
    """z has x1's shape and type (x1 and x2 must match)."""
    if x1.shape.origin_shape.dims != x2.shape.origin_shape.dims or x1.data_type != x2.data_type:
        raise ValueError("AnnotatedAddCustom inputs must match in shape and data type")
    return TensorDesc(x1.shape, x1.data_type)


def add_custom(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """z = x + y over this block's 1024 elements (args: x, y, z addresses)."""
    start = block_idx * 1024
    x = kernel_array(args[0] + start * 4, 1024, np.float32)
    y = kernel_array(args[1] + start * 4, 1024, np.float32)
    z = kernel_array(args[2] + start * 4, 1024, np.float32)
    for i in range(1024):
        z[i] = x[i] + y[i]


def _elements(tensor: Tensor) -> int:
    count = tensor.shape_size
    if count <= 0 or count % BLOCK_SIZE:
        raise ValueError("the sample kernel requires a positive size divisible by 1024")
    return count


@register_op_impl(op_type="AnnotatedAddCustom")
class AnnotatedAddCustom:
    """Compile the kernel once per shape and declare its launch."""

    def __init__(self) -> None:
        self._binaries: dict[int, bytes] = {}

    def compile(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        print("PY_COMPILE_CALLBACK_ENTER=1", flush=True)
        count = _elements(x)
        if count not in self._binaries:
            self._binaries[count] = runtime.compile_kernel(add_custom, KERNEL_NAME)

    def declare_launch_args(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        print("PY_ANNOTATED_ARGS_CALLBACK_ENTER=1", flush=True)
        count = _elements(x)
        ctx = get_declare_launch_args_ctx()
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        args.append_input(1, y)
        args.append_output(0, z)
        ctx.add_launch(
            AnnotatedKernelLaunchInfo(
                kernel_name=KERNEL_NAME,
                kernel_bin=self._binaries[count],
                block_dim=count // BLOCK_SIZE,
                stream_id=ctx.get_stream_id(),
            ),
            args,
        )
