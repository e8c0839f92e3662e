"""Prototypes and implementations of seed 004's online sample, on ge's CPU device.

``AnnotatedAddCustom`` and ``NoRefreshAddCustom`` are the same element-wise add. The add kernel
is Python compiled by Numba through ``ge.runtime.compile_kernel`` (the sample's Ascend C
kernel, ported): block ``b`` adds elements ``[b * 1024, (b + 1) * 1024)``, so a launch has
``elements // 1024`` blocks and three arguments, the addresses of x, y and z.

``NoRefreshAddCustom.execute`` runs on every run of its graph and launches the kernel itself.
``AnnotatedAddCustom`` has ``compile`` (builds the kernel binary once per plan, as the seed's
callback compiles its Ascend C source) and ``declare_launch_args``, which declares the launch
once, when the plan is built: each run then only refreshes the x, y and z addresses in that
recorded launch, with no Python.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np

from ge import runtime
from ge.custom_op import (
    AnnotatedKernelLaunchInfo,
    get_compile_platform_info,
    get_declare_launch_args_ctx,
    get_execute_ctx,
    register_op,
    register_op_impl,
)
from ge.runtime import Tensor, TensorDesc, kernel_array

KERNEL_NAME = "add_custom"
BLOCK_SIZE = 1024


def _infer_add(x1: TensorDesc, x2: TensorDesc, op_type: str) -> TensorDesc:
    if x1.shape.origin_shape.dims != x2.shape.origin_shape.dims:
        raise ValueError(f"{op_type} inputs must have the same shape")
    if x1.data_type != x2.data_type:
        raise ValueError(f"{op_type} inputs must have the same data type")
    return TensorDesc(x1.shape, x1.data_type)


@register_op(op_type="AnnotatedAddCustom")
def annotated_add_custom_infer_meta(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
    """Infer output metadata for the declarative address-refresh operator."""
    return _infer_add(x1, x2, "AnnotatedAddCustom")


@register_op(op_type="NoRefreshAddCustom")
def no_refresh_add_custom_infer_meta(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
    """Infer output metadata for the no-refresh comparison operator."""
    return _infer_add(x1, x2, "NoRefreshAddCustom")


def add_custom(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """z = x + y over this block's 1024 elements (args: x, y, z addresses)."""
    start = block_idx * 1024
    x = kernel_array(args[0] + start * 4, 1024, np.float32)
    y = kernel_array(args[1] + start * 4, 1024, np.float32)
    z = kernel_array(args[2] + start * 4, 1024, np.float32)
    for i in range(1024):
        z[i] = x[i] + y[i]


@functools.cache
def kernel_binary() -> bytes:
    """The kernel binary (compiled once per process)."""
    return runtime.compile_kernel(add_custom, KERNEL_NAME)


@functools.cache
def _function() -> runtime.KernelFunction:
    return runtime.load_kernel_binary(kernel_binary()).get_function(KERNEL_NAME)


@dataclass(frozen=True)
class _Artifact:
    binary: bytes
    block_dim: int


def _dims(tensor: Tensor) -> tuple[int, ...]:
    return tuple(int(dim) for dim in tensor.storage_shape.dims)


def _validate(x: Tensor, y: Tensor, z: Tensor) -> None:
    if _dims(x) != _dims(y) or _dims(x) != _dims(z):
        raise ValueError("AnnotatedAddCustom requires matching tensor shapes")
    if x.data_type != y.data_type or x.data_type != z.data_type:
        raise ValueError("AnnotatedAddCustom requires matching data types")
    if not _dims(x) or x.shape_size % BLOCK_SIZE != 0:
        raise ValueError("the sample kernel requires a positive size divisible by 1024")


@register_op_impl(op_type="AnnotatedAddCustom")
class AnnotatedAddCustom:
    """Compile the kernel and publish declarative launch arguments."""

    def __init__(self) -> None:
        self._artifacts: dict[tuple[tuple[int, ...], str], _Artifact] = {}
        self._lock = threading.RLock()

    def compile(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        _validate(x, y, z)
        key = (_dims(x), str(x.data_type))
        with self._lock:
            if key not in self._artifacts:
                platform = get_compile_platform_info()
                arch = platform.get_platform_resource("version", "NpuArch")
                print(f"PY_COMPILE_CALLBACK_ENTER=1 (NpuArch {arch})", flush=True)
                self._artifacts[key] = _Artifact(kernel_binary(), x.shape_size // BLOCK_SIZE)

    def declare_launch_args(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        _validate(x, y, z)
        artifact = self._artifacts.get((_dims(x), str(x.data_type)))
        if artifact is None:
            raise RuntimeError("AnnotatedAddCustom compile cache miss")
        ctx = get_declare_launch_args_ctx()
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        args.append_input(1, y)
        args.append_output(0, z)
        ctx.add_launch(
            AnnotatedKernelLaunchInfo(
                kernel_name=KERNEL_NAME,
                kernel_bin=artifact.binary,
                block_dim=artifact.block_dim,
                stream_id=ctx.get_stream_id(),
            ),
            args,
        )


@register_op_impl(op_type="NoRefreshAddCustom")
class NoRefreshAddCustom:
    """Launch the same kernel through the ordinary Python execute path."""

    def execute(self, x: Tensor, y: Tensor) -> None:
        if _dims(x) != _dims(y) or x.shape_size % BLOCK_SIZE != 0:
            raise ValueError("NoRefreshAddCustom requires matching shapes divisible by 1024")
        ctx = get_execute_ctx()
        output = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        blocks = x.shape_size // BLOCK_SIZE
        runtime.launch_kernel(_function(), blocks, ctx.get_stream(), [x.addr, y.addr, output.addr])
