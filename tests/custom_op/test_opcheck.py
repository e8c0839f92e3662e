"""``ge.custom_op.opcheck``: passes on correct ops (every input kind, attributes, several
samples, ``mutates_args``), and fails with a message naming the sample, the check, the path
and what differs on ops whose ``infer_meta`` lies, whose ``execute`` and
``declare_launch_args`` disagree, whose declared launches give different results run to run,
or which write an input not in ``mutates_args``."""

# ruff: noqa: UP006, UP035, UP045  (typing.List/Optional are annotation kinds GE-PY reads)
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np
import pytest

import ge.custom_op
from ge.custom_op import (
    AnnotatedKernelLaunchInfo,
    OpCheckError,
    eager_call,
    get_declare_launch_args_ctx,
    get_execute_ctx,
    opcheck,
    register_op,
    register_op_impl,
)
from ge.error import GeError, GeTypeError, GeValueError
from ge.runtime import Tensor, TensorDesc, launch_kernel
from tests.custom_op._kernels import binary, kernel
from tests.custom_op._ops import CALLS, output_like, register_unary, same

ALL_SUCCESS = dict.fromkeys(ge.custom_op._opcheck.CHECKS, "SUCCESS")


def _launch(ctx: Any, name: str, *addrs: int) -> None:
    launch_kernel(kernel(name), 2, ctx.get_stream(), list(addrs))


def _declare(
    name: str, inputs: list[tuple[int, Tensor]], outputs: list[tuple[int, Tensor]], n: int
) -> None:
    ctx = get_declare_launch_args_ctx()
    args = ctx.create_kernel_args()
    for i, t in inputs:
        args.append_input(i, t)
    for i, t in outputs:
        args.append_output(i, t)
    args.append_scalar(n)
    info = AnnotatedKernelLaunchInfo(
        kernel_name=name, kernel_bin=binary(name), block_dim=2, stream_id=ctx.get_stream_id()
    )
    ctx.add_launch(info, args)


def _register_add(op_type: str, *, declared: str = "add", infer_dims: Any = None) -> None:
    """execute: z = x + y; declare_launch_args: the kernel ``declared`` (add or scale2)."""

    @register_op(op_type=op_type)
    def infer(x: TensorDesc, y: TensorDesc) -> TensorDesc:
        if infer_dims is None:
            return same(x)
        return TensorDesc(infer_dims(x.shape.storage_shape.dims), x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def compile(self, x: Tensor, y: Tensor, z: Tensor) -> None:
            CALLS.append("compile")

        def execute(self, x: Tensor, y: Tensor) -> None:
            ctx = get_execute_ctx()
            z = output_like(ctx, 0, x)
            _launch(ctx, "add", x.addr, y.addr, z.addr, x.shape_size)

        def declare_launch_args(self, x: Tensor, y: Tensor, z: Tensor) -> None:
            CALLS.append("declare")
            if declared == "add":
                _declare("add", [(0, x), (1, y)], [(0, z)], x.shape_size)
            else:
                _declare("scale2", [(0, x)], [(0, z)], x.shape_size)


def _sample(*shape: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]


# --- passing --------------------------------------------------------------------------------------
def test_correct_op_passes_every_check(op_type: str) -> None:
    _register_add(op_type)
    CALLS.clear()
    assert opcheck(op_type, _sample(4, 3)) == ALL_SUCCESS
    assert CALLS.count("declare") == 1 and CALLS.count("compile") == 2  # one per path's plan
    assert eager_call.cache_info().currsize == 0  # opcheck compiles afresh, caches nothing


def test_several_samples(op_type: str) -> None:
    _register_add(op_type)
    samples = [_sample(3), _sample(2, 5, seed=1), _sample(seed=2)]
    assert opcheck(op_type, samples) == ALL_SUCCESS


def test_execute_only_op_skips_the_two_path_checks(op_type: str) -> None:
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            _launch(ctx, "scale2", x.addr, output_like(ctx, 0, x).addr, x.shape_size)

    assert opcheck(op_type, [np.ones(5, np.float32)]) == {
        "test_infer_meta": "SUCCESS",
        "test_paths_agree": "SKIPPED",
        "test_declare_launch_args_once": "SKIPPED",
        "test_mutates_args": "SUCCESS",
    }
    assert opcheck(op_type, [np.ones(5, np.float32)], checks=["test_mutates_args"]) == {
        "test_mutates_args": "SUCCESS"
    }


def _register_mix(op_type: str) -> None:
    """output0 = x (+ bias) ; output1[k] = xs[k] + x; c an int attribute (unused)."""

    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc], *, c: int = 0
    ) -> Tuple[TensorDesc, List[TensorDesc]]:
        return same(x), [same(d) for d in xs]

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor, bias: Optional[Tensor], xs: List[Tensor], *, c: int) -> None:
            ctx = get_execute_ctx()
            out0 = output_like(ctx, 0, x)
            if bias is None:
                _launch(ctx, "plus", x.addr, out0.addr, x.shape_size, 0)
            else:
                _launch(ctx, "add", x.addr, bias.addr, out0.addr, x.shape_size)
            for k, t in enumerate(xs):
                _launch(ctx, "add", t.addr, x.addr, output_like(ctx, 1 + k, t).addr, x.shape_size)

        def declare_launch_args(
            self,
            x: Tensor,
            bias: Optional[Tensor],
            xs: List[Tensor],
            out0: Tensor,
            outs: List[Tensor],
            *,
            c: int,
        ) -> None:
            n = x.shape_size
            if bias is None:
                ctx = get_declare_launch_args_ctx()
                args = ctx.create_kernel_args()
                args.append_input(0, x)
                args.append_output(0, out0)
                args.append_scalar(n)
                args.append_scalar(0)
                info = AnnotatedKernelLaunchInfo(
                    kernel_name="plus", kernel_bin=binary("plus"), block_dim=1, stream_id=0
                )
                ctx.add_launch(info, args)
            else:
                _declare("add", [(0, x), (1, bias)], [(0, out0)], n)
            first = 1 + (bias is not None)
            for k, (t, o) in enumerate(zip(xs, outs, strict=True)):
                _declare("add", [(first + k, t), (0, x)], [(1 + k, o)], n)


@pytest.mark.parametrize("with_bias", [True, False])
def test_optional_dynamic_inputs_attrs_and_counts(op_type: str, with_bias: bool) -> None:
    _register_mix(op_type)
    x, bias = _sample(6)
    xs = _sample(6, seed=3)
    sample = [x, bias if with_bias else None, xs]
    assert opcheck(op_type, sample, {"output1_num": 2, "c": 3}) == ALL_SUCCESS


def _register_inc(op_type: str, *, also_writes_y: bool = False, mutates: Any = ("x",)) -> None:
    """x += 1 in place; output1 = 2 * y. ``also_writes_y``: y += 1 as well (a bug unless y is
    in ``mutates_args``)."""

    @register_op(op_type=op_type, mutates_args=mutates)
    def infer(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return same(x), same(y)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor, y: Tensor) -> None:
            ctx = get_execute_ctx()
            ctx.make_output_ref_input(0, 0)
            z = output_like(ctx, 1, y)
            _launch(ctx, "scale2", y.addr, z.addr, y.shape_size)
            _launch(ctx, "add_one_in_place", x.addr, x.shape_size)
            if also_writes_y:
                _launch(ctx, "add_one_in_place", y.addr, y.shape_size)

        def declare_launch_args(self, x: Tensor, y: Tensor, x_out: Tensor, z: Tensor) -> None:
            _declare("scale2", [(1, y)], [(1, z)], y.shape_size)
            ctx = get_declare_launch_args_ctx()
            targets = [(0, x)] + ([(1, y)] if also_writes_y else [])
            for index, t in targets:
                args = ctx.create_kernel_args()
                args.append_input(index, t)
                args.append_scalar(t.shape_size)
                info = AnnotatedKernelLaunchInfo(
                    kernel_name="add_one_in_place",
                    kernel_bin=binary("add_one_in_place"),
                    block_dim=1,
                    stream_id=0,
                )
                ctx.add_launch(info, args)


def test_mutating_op_passes_and_leaves_the_samples_alone(op_type: str) -> None:
    _register_inc(op_type)
    sample = _sample(5)
    copies = [a.copy() for a in sample]
    assert opcheck(op_type, sample) == ALL_SUCCESS
    for a, b in zip(sample, copies, strict=True):
        np.testing.assert_array_equal(a, b)


# --- failing --------------------------------------------------------------------------------------
def _failures(op_type: str, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(OpCheckError) as info:
        opcheck(op_type, *args, **kwargs)
    assert isinstance(info.value, GeError) and isinstance(info.value, AssertionError)
    message = str(info.value)
    assert message.startswith(f"opcheck('{op_type}') failed {len(info.value.failures)} check(s):")
    return message


def test_infer_meta_lying_about_the_element_count_fails(op_type: str) -> None:
    _register_add(op_type, infer_dims=lambda dims: [dims[0] + 1])
    message = _failures(op_type, _sample(4))
    assert (
        "sample 0 (x: float32[4], y: float32[4]): test_infer_meta: execute path: GeError: "
        in message
    )
    assert "output 0 ('output0') is 5 elements of DT_FLOAT (what infer_meta gave), asked for 4" in (
        message
    )


def test_infer_meta_lying_about_the_dims_fails(op_type: str) -> None:
    _register_add(op_type, infer_dims=lambda dims: dims[::-1])
    message = _failures(op_type, _sample(2, 3))
    assert (
        "test_infer_meta: execute path: output 0: execute made DT_FLOAT origin shape [2, 3], "
        "storage shape [2, 3]; infer_meta gave DT_FLOAT origin shape [3, 2], storage shape "
        "[3, 2]"
    ) in message
    assert "declare_launch_args path" not in message  # nothing to see there: the op agrees


def test_infer_meta_refusing_a_sample_fails(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        raise ValueError("x must be 2-d")

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None: ...

    message = _failures(op_type, [np.ones(3, np.float32)])
    assert "test_infer_meta: infer_meta refused the sample: InferError: " in message
    assert "x must be 2-d" in message


def test_execute_and_declare_launch_args_disagreeing_fails(op_type: str) -> None:
    _register_add(op_type, declared="scale2")
    x, y = _sample(4)
    message = _failures(op_type, [x, y])
    assert "test_paths_agree: output 0: execute and declare_launch_args differ: " in message
    assert "4 of 4 elements differ within rtol=1.3e-06, atol=1e-05 (first at index [0]: " in message


def test_written_input_not_in_mutates_args_fails_on_every_path(op_type: str) -> None:
    _register_inc(op_type, also_writes_y=True)
    message = _failures(op_type, _sample(4))
    for path in ("execute", "declare_launch_args"):
        assert (
            f"test_mutates_args: {path} path: input 'y' was written (4 of 4 elements changed) but "
            f"is not in mutates_args: add it there or leave it alone"
        ) in message
    _register_inc(f"{op_type}B", also_writes_y=True, mutates=("x", "y"))
    assert opcheck(f"{op_type}B", _sample(4)) == ALL_SUCCESS


def test_declared_launches_depending_on_the_last_run_fail(op_type: str) -> None:
    """z = x + z: reads its own output, so the second run of the plan sees the first's."""

    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def declare_launch_args(self, x: Tensor, z: Tensor) -> None:
            _declare("add", [(0, x)], [(0, z), (0, z)], x.shape_size)

    message = _failures(op_type, [np.ones(4, np.float32)])
    assert (
        "test_declare_launch_args_once: output 0 differs between two runs of the same plan on "
        "the same inputs"
    ) in message


def test_every_failure_of_every_sample_is_listed(op_type: str) -> None:
    _register_add(op_type, declared="scale2")
    with pytest.raises(OpCheckError) as info:
        opcheck(op_type, [_sample(3), _sample(2, seed=1)])
    assert [f.split(":")[0][:8] for f in info.value.failures] == ["sample 0", "sample 1"]


def test_a_failing_callback_is_reported(op_type: str) -> None:
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            raise KeyError("boom")

    message = _failures(op_type, [np.ones(2, np.float32)])
    assert "test_run: execute path: run raised GeError: " in message and "KeyError" in message


# --- bad arguments --------------------------------------------------------------------------------
def test_bad_arguments_raise_at_once(op_type: str) -> None:
    _register_add(op_type)
    a = np.ones(3, np.float32)
    with pytest.raises(GeTypeError, match=r"one entry per input of the op \(x: array, y: array\)"):
        opcheck(op_type, [a])
    with pytest.raises(GeValueError, match="did you mean 'test_mutates_args'"):
        opcheck(op_type, [a, a], checks=["test_mutate_args"])
    with pytest.raises(GeValueError, match="Add is a built-in ge op"):
        opcheck("Add", [a, a])
    with pytest.raises(GeError):
        opcheck(f"{op_type}Missing", [a, a])

    register_unary(f"{op_type}NoImpl")

    with pytest.raises(GeError, match="has no implementation"):
        opcheck(f"{op_type}NoImpl", [a])
