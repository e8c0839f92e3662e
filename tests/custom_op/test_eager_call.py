"""Eager calls: ``ge.es.custom.<Op>(arrays...)`` outside any graph runs the op at once through
a cached one-node compiled graph — numpy in / numpy out, ``ge.graph.Tensor`` in / out, every
input kind, attributes, several outputs, ``mutates_args`` written back, the cache (a hit does
not compile again; re-registration invalidates) and the errors for bad inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge.es
import ge.es.custom
from ge.custom_op import (
    eager_call,
    get_execute_ctx,
    proto,
    register_op,
    register_op_impl,
    registry,
)
from ge.error import GeError, GeTypeError, GeValueError, InferError
from ge.es import GraphBuilder
from ge.graph import Tensor as GraphTensor
from ge.graph.types import Placement
from ge.runtime import Tensor, TensorDesc, launch_kernel
from tests.custom_op._kernels import kernel
from tests.custom_op._ops import (
    CALLS,
    launch_add,
    output_like,
    rand,
    register_add,
    register_inc,
    register_mix,
    register_unary,
    same,
)


# --- results --------------------------------------------------------------------------------------
def test_numpy_in_numpy_out_runs_execute_at_once(op_type: str) -> None:
    add = register_add(op_type, compile=True)
    a, c = rand(2, 3), rand(2, 3, seed=1)
    out = add(a, c)
    assert type(out) is np.ndarray and out.dtype == np.float32 and out.shape == (2, 3)
    np.testing.assert_array_equal(out, a + c)
    assert CALLS == [("compile", [2, 3]), ("execute", [2, 3])]


def test_second_call_hits_the_cache_and_does_not_compile_again(op_type: str) -> None:
    add = register_add(op_type, compile=True)
    for seed in range(3):
        a, c = rand(4, seed=seed), rand(4, seed=seed + 10)
        np.testing.assert_array_equal(add(a, c), a + c)
    assert CALLS == [("compile", [4])] + [("execute", [4])] * 3
    info = eager_call.cache_info()
    assert (info.hits, info.misses, info.currsize) == (2, 1, 1)
    add(rand(5), rand(5))  # another shape: another entry
    assert CALLS[-2:] == [("compile", [5]), ("execute", [5])]
    assert eager_call.cache_info().currsize == 2


def test_declare_launch_args_declares_once_across_calls(op_type: str) -> None:
    add = register_add(op_type, declared=True)
    for seed in range(3):
        a, c = rand(100, seed=seed), rand(100, seed=seed + 1)
        np.testing.assert_array_equal(add(a, c), a + c)
    assert CALLS == [("declare", [100])]


def test_tensor_in_tensorout(op_type: str) -> None:
    add = register_add(op_type, compile=True)
    a, c = rand(3), rand(3, seed=1)
    out = add(GraphTensor.from_numpy(a), GraphTensor.from_numpy(c))
    assert isinstance(out, GraphTensor)
    np.testing.assert_array_equal(out.numpy(), a + c)
    device = GraphTensor.from_numpy(a, placement=Placement.PLACEMENT_DEVICE)
    mixed = add(device, c)  # any Tensor among the inputs: Tensors out
    assert isinstance(mixed, GraphTensor)
    np.testing.assert_array_equal(mixed.numpy(), a + c)


def test_numpy_scalars_are_0d_arrays(op_type: str) -> None:
    add = register_add(op_type, compile=True)
    out = add(np.float32(1.5), np.float32(2.0))
    assert out.shape == () and out == np.float32(3.5)


def test_graph_building_is_unchanged(op_type: str) -> None:
    add = register_add(op_type, compile=True)
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    z = add(x, np.ones(3, np.float32))  # a holder among the inputs: a node of b, no run
    assert z.get_owner_builder() is b
    assert CALLS == []


def test_builtin_ops_keep_ge_py_behaviour() -> None:
    a = np.ones(3, np.float32)
    with pytest.raises(GeValueError) as info:
        ge.es.Add(a, a)
    assert str(info.value) == (
        "Please ensure at least one input tensor or an explicit owner_builder is "
        "provided when supported (Add: the op needs to know which graph to join)"
    )


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_optional_dynamic_inputs_attrs_and_several_outputs(
    op_type: str, with_bias: bool, count: int
) -> None:
    mix = register_mix(op_type)
    x = rand(4)
    bias = rand(4, seed=1) if with_bias else None
    xs = [rand(4, seed=2 + k) for k in range(count)]
    out = mix(x, bias, xs, output1_num=count, scale=3.0)
    assert type(out).__name__ == f"{op_type}Output"
    expected = x * np.float32(3.0) + (bias if with_bias else 0)
    np.testing.assert_allclose(out.output0, expected, rtol=1e-6)
    assert isinstance(out.output1, list) and len(out.output1) == count
    for got, t in zip(out.output1, xs, strict=True):
        np.testing.assert_array_equal(got, t + x)
    expected_calls = [("execute", with_bias, count, 3.0)]
    assert expected_calls == CALLS


def test_attributes_are_part_of_the_cache_key(op_type: str) -> None:
    mix = register_mix(op_type)
    x = rand(4)
    for scale in (2.0, 5.0, 2.0):
        out = mix(x, None, [], output1_num=0, scale=scale)
        np.testing.assert_allclose(out.output0, x * np.float32(scale), rtol=1e-6)
    info = eager_call.cache_info()
    assert (info.hits, info.misses) == (1, 2)


def test_legacy_execute_ctx_form(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, y: TensorDesc) -> TensorDesc:
        return same(x)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, ctx: Any) -> None:
            x, y = ctx.get_input_tensor(0), ctx.get_input_tensor(1)
            launch_add(ctx, x, y, output_like(ctx, 0, x))

    a = rand(6)
    np.testing.assert_array_equal(getattr(ge.es.custom, op_type)(a, a), a + a)


# --- mutates_args ---------------------------------------------------------------------------------
@pytest.mark.parametrize("declared", [False, True])
def test_mutated_numpy_input_is_written_back(op_type: str, declared: bool) -> None:
    inc = register_inc(op_type, declared=declared)
    x = np.arange(5, dtype=np.float32)
    y = np.arange(5, dtype=np.float32) * 10
    before_y = y.copy()
    out = inc(x, y)
    assert out.ref_x is x  # the mutated input itself, holding the new value
    np.testing.assert_array_equal(x, np.arange(5) + 1)
    np.testing.assert_array_equal(out.output1, before_y * 2)
    np.testing.assert_array_equal(y, before_y)  # not mutated
    inc(x, y)  # the cached graph again
    np.testing.assert_array_equal(x, np.arange(5) + 2)


def test_mutated_strided_numpy_input_is_written_back(op_type: str) -> None:
    inc = register_inc(op_type)
    base = np.zeros((4, 4), np.float32)
    column = base[:, 1]  # not contiguous
    inc(column, np.ones(4, np.float32))
    np.testing.assert_array_equal(base[:, 1], np.ones(4))
    assert base.sum() == 4


@pytest.mark.parametrize("placement", [Placement.PLACEMENT_HOST, Placement.PLACEMENT_DEVICE])
def test_mutated_tensor_is_written_back(op_type: str, placement: Placement) -> None:
    inc = register_inc(op_type)
    x = GraphTensor.from_numpy(np.arange(3, dtype=np.float32), placement=placement)
    clone = x._clone()  # shares the host bytes: must not see the write
    out = inc(x, np.ones(3, np.float32))
    assert out.ref_x is x
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])
    assert x.get_placement() == placement
    np.testing.assert_array_equal(clone.numpy(), [0, 1, 2])
    assert isinstance(out.output1, GraphTensor)


def test_read_only_or_scalar_mutated_input_is_refused(op_type: str) -> None:
    inc = register_inc(op_type)
    x = np.zeros(3, np.float32)
    x.flags.writeable = False
    with pytest.raises(GeValueError, match=r"input 'x' is written in place .* read-only"):
        inc(x, np.ones(3, np.float32))
    with pytest.raises(GeValueError, match=r"input 'x' is written in place .* numpy scalar"):
        inc(np.float32(1.0), np.float32(1.0))


# --- re-registration ------------------------------------------------------------------------------
def test_reregistration_invalidates_the_cache(op_type: str) -> None:
    add = register_add(op_type, compile=True)
    a = rand(3)
    np.testing.assert_array_equal(add(a, a), a + a)
    registry._unregister(op_type)

    @register_op_impl(op_type=op_type)
    class Doubled:  # the same prototype, a new implementation: z = 2 * x
        def execute(self, x: Tensor, y: Tensor) -> None:
            ctx = get_execute_ctx()
            z = output_like(ctx, 0, x)
            launch_kernel(kernel("scale2"), 1, ctx.get_stream(), [x.addr, z.addr, x.shape_size])

    np.testing.assert_array_equal(add(a, a + 1), 2 * a)
    assert eager_call.cache_info().misses == 2
    assert eager_call.cache_info().currsize == 1  # the stale entry was dropped

    registry._unregister(op_type)
    proto._unregister(op_type)
    register_add(op_type, declared=True)  # a new prototype and implementation
    np.testing.assert_array_equal(getattr(ge.es.custom, op_type)(a, a + 1), a + (a + 1))
    np.testing.assert_array_equal(add(a, a + 1), a + (a + 1))  # an old function: the current op
    assert CALLS[-1] == ("declare", [3])


# --- errors ---------------------------------------------------------------------------------------
def test_bad_inputs_raise_errors_naming_the_argument(op_type: str) -> None:
    add = register_add(op_type, compile=True)
    mix = register_mix(f"{op_type}Mix")
    a = np.ones(3, np.float32)
    cases: list[tuple[Any, type, str]] = [
        (lambda: add(a, [1.0, 2.0, 3.0]), GeTypeError, "input 'y' must be a numpy array or a "),
        (
            lambda: add(a.astype(object), a),
            GeTypeError,
            "input 'x' is a numpy array of dtype object",
        ),
        (lambda: add(None, a), GeValueError, "input 'x' is required"),
        (lambda: mix(a, None, a, output1_num=1), GeTypeError, "input 'xs' is dynamic; pass a list"),
        (lambda: mix(a, None, [a, "b"], output1_num=2), GeTypeError, r"input 'xs\[1\]' must be"),
        (lambda: add(a, np.ones(4, np.float32)), InferError, "x and y must have the same shape"),
        (lambda: add(1.0, 2.0), GeValueError, "pass numpy arrays / ge.graph.Tensors"),
    ]
    for fn, error, message in cases:
        with pytest.raises(error, match=message):
            fn()
    with pytest.raises(InferError, match=r"\(x: f32\[3\], y: f32\[4\]\) at test_eager_call.py:"):
        add(a, np.ones(4, np.float32))  # the user's line, as when building a graph
    assert CALLS == []  # nothing ran


def test_op_without_implementation_says_so(op_type: str) -> None:
    register_unary(op_type)

    with pytest.raises(GeError, match=f"'{op_type}' has no implementation: register a class"):
        getattr(ge.es.custom, op_type)(np.ones(2, np.float32))


def test_failing_execute_names_the_node_and_method(op_type: str) -> None:
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            raise KeyError("boom")

    with pytest.raises(GeError, match=rf"{op_type} \(.*Impl\.execute\) raised KeyError: 'boom'"):
        getattr(ge.es.custom, op_type)(np.ones(2, np.float32))


def test_declared_ref_output_holds_the_mutated_input_in_a_graph(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    """declare_launch_args writes x in place; the ops after read the ref output: x's bytes."""
    inc = register_inc(op_type, declared=True)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[4]), b.create_input(1, shape=[4])
    out = inc(x * 1.0, y)
    session.add_graph(0, b.build_and_reset([out.ref_x + 0.5, out.output1]))
    a = np.arange(4, dtype=np.float32)
    first, second = session.run_graph(0, [GraphTensor.from_numpy(a), GraphTensor.from_numpy(a)])
    np.testing.assert_array_equal(first.numpy(), a + 1.5)
    np.testing.assert_array_equal(second.numpy(), a * 2)


def test_an_op_without_outputs_says_it_is_not_implemented_eagerly(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> None:
        return None

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            CALLS.append("execute")

    fn = getattr(ge.es.custom, op_type)
    with pytest.raises(NotImplementedError, match="an eager call of an op without outputs"):
        fn(np.ones(3, np.float32))
    with pytest.raises(GeError):  # the same error is a GeError
        fn(np.ones(3, np.float32))
    assert CALLS == []  # refused before anything ran
