"""Helpers and ops several custom-op test files share. ``CALLS`` and ``SHAPES`` record what
the ops' callbacks saw; conftest empties both before every test."""

# ruff: noqa: UP006, UP035, UP045  (typing.List/Optional are annotation kinds GE-PY reads)
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

import ge.es.custom
from ge import runtime
from ge.custom_op import (
    AnnotatedKernelLaunchInfo,
    get_declare_launch_args_ctx,
    get_execute_ctx,
    register_op,
    register_op_impl,
)
from ge.runtime import Tensor, TensorDesc, launch_kernel
from tests.custom_op._kernels import binary, kernel

CALLS: list[Any] = []
SHAPES: list[list[int]] = []


def same(x: TensorDesc) -> TensorDesc:
    """A desc like ``x``: its shape and data type."""
    return TensorDesc(x.shape, x.data_type)


def output_like(ctx: Any, index: int, like: Tensor) -> Any:
    """Output ``index`` of the running op, allocated like ``like``."""
    return ctx.malloc_output_tensor(index, like.shape, like.format, like.data_type)


def launch_add(ctx: Any, x: Tensor, y: Tensor, z: Tensor) -> None:
    """z = x + y on the op's stream."""
    launch_kernel(kernel("add"), 2, ctx.get_stream(), [x.addr, y.addr, z.addr, x.shape_size])


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def register_unary(op_type: str) -> Any:
    """The prototype ``infer(x) -> a desc like x`` (no implementation); returns the op."""

    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return same(x)

    return getattr(ge.es.custom, op_type)


def register_add(op_type: str, *, declared: bool = False, compile: bool = False) -> Any:
    """z = x + y by execute (or declare_launch_args), recorded in CALLS; infer_meta records the
    shapes it sees in SHAPES and refuses x and y of different shapes. ``compile``: the execute
    implementation has a ``compile`` too, recorded in CALLS."""

    @register_op(op_type=op_type)
    def infer(x: TensorDesc, y: TensorDesc) -> TensorDesc:
        SHAPES.append(x.shape.origin_shape.dims)
        if x.shape.storage_shape.dims != y.shape.storage_shape.dims:
            raise ValueError("x and y must have the same shape")
        return same(x)

    class Executed:
        def execute(self, x: Tensor, y: Tensor) -> None:
            CALLS.append(("execute", x.storage_shape.dims))
            ctx = get_execute_ctx()
            launch_add(ctx, x, y, output_like(ctx, 0, x))

    class Compiled(Executed):
        def compile(self, x: Tensor, y: Tensor, z: Tensor) -> None:
            CALLS.append(("compile", x.storage_shape.dims))

    class Declared:
        def declare_launch_args(self, x: Tensor, y: Tensor, z: Tensor) -> None:
            CALLS.append(("declare", x.storage_shape.dims))
            ctx = get_declare_launch_args_ctx()
            args = ctx.create_kernel_args()
            args.append_input(0, x)
            args.append_input(1, y)
            args.append_output(0, z)
            args.append_scalar(x.shape_size)
            info = AnnotatedKernelLaunchInfo(
                kernel_name="add", kernel_bin=binary("add"), block_dim=2, stream_id=0
            )
            ctx.add_launch(info, args)

    register_op_impl(op_type=op_type)(Declared if declared else Compiled if compile else Executed)
    return getattr(ge.es.custom, op_type)


def register_mix(op_type: str) -> Any:
    """output0 = x * scale + (bias or 0); output1[k] = xs[k] + x."""

    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc], *, scale: float = 1.0
    ) -> Tuple[TensorDesc, List[TensorDesc]]:
        return same(x), [same(d) for d in xs]

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(
            self, x: Tensor, bias: Optional[Tensor], xs: List[Tensor], *, scale: float
        ) -> None:
            CALLS.append(("execute", bias is not None, len(xs), scale))
            ctx = get_execute_ctx()
            out0 = output_like(ctx, 0, x)
            params = ctx.malloc_workspace(8)
            runtime.memcpy_h2d(params, np.array([scale, 0.0], np.float32))
            launch_kernel(
                kernel("affine"), 2, ctx.get_stream(), [x.addr, out0.addr, x.shape_size, params]
            )
            if bias is not None:
                launch_add(ctx, out0, bias, out0)
            for k, t in enumerate(xs):
                launch_add(ctx, t, x, output_like(ctx, 1 + k, t))

    return getattr(ge.es.custom, op_type)


def register_inc(op_type: str, *, declared: bool = False) -> Any:
    """x += 1 in place (mutates_args: output 0 is x); output1 = y * 2 alongside, by execute (or
    declare_launch_args)."""

    @register_op(op_type=op_type, mutates_args=(("x", 0),))
    def infer(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return same(x), same(y)

    if declared:

        class Impl:
            def declare_launch_args(self, x: Tensor, y: Tensor, x_out: Tensor, z: Tensor) -> None:
                ctx = get_declare_launch_args_ctx()
                for name, slots in (("add_one_in_place", (x,)), ("scale2", (y, z))):
                    args = ctx.create_kernel_args()
                    if name == "add_one_in_place":
                        args.append_input(0, x)
                    else:
                        args.append_input(1, y)
                        args.append_output(1, z)
                    args.append_scalar(slots[0].shape_size)
                    info = AnnotatedKernelLaunchInfo(
                        kernel_name=name, kernel_bin=binary(name), block_dim=1, stream_id=0
                    )
                    ctx.add_launch(info, args)

    else:

        class Impl:  # type: ignore[no-redef]
            def execute(self, x: Tensor, y: Tensor) -> None:
                ctx = get_execute_ctx()
                ctx.make_output_ref_input(0, 0)
                launch_kernel(
                    kernel("add_one_in_place"), 1, ctx.get_stream(), [x.addr, x.shape_size]
                )
                z = output_like(ctx, 1, y)
                launch_kernel(kernel("scale2"), 1, ctx.get_stream(), [y.addr, z.addr, y.shape_size])

    register_op_impl(op_type=op_type)(Impl)
    return getattr(ge.es.custom, op_type)
