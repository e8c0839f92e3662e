"""The execute path: a custom-op node runs its Python ``execute`` on every run of the task plan,
between the compiled kernels of the built-ins around it, launching Numba kernels on
``get_stream()``; checked against numpy references for every input, output and attribute kind,
workspaces, ref outputs, ``-1`` dims, borrowed-object expiry and failures named by node."""

# ruff: noqa: UP006, UP035, UP045  (typing.List/Optional are annotation kinds GE-PY reads)
from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

import numpy as np
import pytest

import ge.es.custom
from ge import runtime
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.graph import Tensor as GraphTensor
from ge.graph.types import Placement
from ge.jit import jit
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc, launch_kernel
from tests.custom_op._kernels import kernel
from tests.custom_op._ops import launch_add, output_like, register_unary, same

SEEN: list[Any] = []


def _t(array: Any) -> GraphTensor:
    return GraphTensor.from_numpy(np.asarray(array, np.float32))


def _affine(ctx: Any, x: Tensor, z: Tensor, scale: float, shift: float) -> None:
    params = ctx.malloc_workspace(8)
    runtime.memcpy_h2d(params, np.array([scale, shift], np.float32))
    launch_kernel(kernel("affine"), 3, ctx.get_stream(), [x.addr, z.addr, x.shape_size, params])


def _register_add(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, y: TensorDesc) -> TensorDesc:
        return same(x)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor, y: Tensor) -> None:
            ctx = get_execute_ctx()
            SEEN.append(("execute", x.storage_shape.dims))
            launch_add(ctx, x, y, output_like(ctx, 0, x))


def test_execute_runs_every_run_between_compiled_builtins(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register_add(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[5]), b.create_input(1, shape=[5])
    z = getattr(ge.es.custom, op_type)(np.exp(x), y)
    session.add_graph(0, b.build_and_reset([z * 2.0]))
    SEEN.clear()
    rng = np.random.default_rng(0)
    for _ in range(3):
        a, c = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
        (out,) = session.run_graph(0, [_t(a), _t(c)])
        np.testing.assert_allclose(out.numpy(), (np.exp(a) + c) * 2.0, rtol=1e-6)
    assert SEEN == [("execute", [5])] * 3
    plan = session._graphs[0].compiled.plan_for([[5], [5]])
    text = plan.as_text()
    assert f"host custom_op {op_type}" in text and text.count("launch ") >= 2, text


def test_minus_one_dims_run_with_the_real_shapes(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register_add(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[-1, 3]), b.create_input(1, shape=[-1, 3])
    session.add_graph(0, b.build_and_reset([getattr(ge.es.custom, op_type)(x, y) + 1.0]))
    SEEN.clear()
    for rows in (2, 7, 2):
        a = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        (out,) = session.run_graph(0, [_t(a), _t(a * 3)])
        np.testing.assert_array_equal(out.numpy(), a * 4 + 1)
    assert SEEN == [("execute", [2, 3]), ("execute", [7, 3]), ("execute", [2, 3])]


def _register_mix(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc]
    ) -> Tuple[TensorDesc, List[TensorDesc]]:
        return same(x), [same(d) for d in xs]

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor, bias: Optional[Tensor], xs: List[Tensor]) -> None:
            ctx = get_execute_ctx()
            n = ctx.get_input_num()
            assert n == 1 + (bias is not None) + len(xs)
            assert ctx.get_required_input_tensor(0).addr == x.addr
            assert ctx.get_input_tensor(0).addr == x.addr
            opt = ctx.get_optional_input_tensor(1)
            assert (opt is None) == (bias is None)
            assert ctx.get_dynamic_input_num(2) == len(xs)
            for k, t in enumerate(xs):
                assert ctx.get_dynamic_input_tensor(2, k).addr == t.addr
                assert ctx.get_input_tensor(n - len(xs) + k).addr == t.addr
            for call, args in (
                (ctx.get_input_tensor, (n,)),
                (ctx.get_dynamic_input_num, (0,)),
                (ctx.get_dynamic_input_tensor, (2, len(xs))),
                (ctx.get_required_input_tensor, (2,)),
            ):
                with pytest.raises(RuntimeError, match="Failed to get"):
                    call(*args)
            SEEN.append((bias is not None, len(xs)))
            out0 = output_like(ctx, 0, x)
            if bias is None:
                _affine(ctx, x, out0, 1.0, 0.0)
            else:
                launch_add(ctx, x, bias, out0)
            for k, t in enumerate(xs):  # outputs are flattened instances: output1[k] is 1 + k
                launch_add(ctx, t, x, output_like(ctx, 1 + k, t))


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_optional_and_dynamic_inputs_and_outputs(
    session, op_type: str, with_bias: bool, count: int
) -> None:  # type: ignore[no-untyped-def]
    _register_mix(op_type)
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4])
    bias = b.create_input(1, shape=[4]) if with_bias else None
    first = 1 + with_bias
    xs = [b.create_input(first + k, shape=[4]) for k in range(count)]
    out = getattr(ge.es.custom, op_type)(x, bias, xs, output1_num=count)
    session.add_graph(0, b.build_and_reset([out.output0 * 1.0, *[t - 1.0 for t in out.output1]]))
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(4).astype(np.float32) for _ in range(first + count)]
    SEEN.clear()
    results = [r.numpy() for r in session.run_graph(0, [_t(a) for a in arrays])]
    expected = [arrays[0] + (arrays[1] if with_bias else 0)]
    expected += [arrays[first + k] + arrays[0] - 1 for k in range(count)]
    assert [(with_bias, count)] == SEEN
    assert len(results) == len(expected)
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


ATTRS: dict[str, Any] = {
    "i": 3,
    "f": 0.5,
    "b": True,
    "s": "mode",
    "d": DataType.DT_INT8,
    "li": [1, 2],
    "lf": [0.25, 4.0],
    "lb": [False, True],
    "ls": ["a", "b"],
    "ld": [DataType.DT_INT32, DataType.DT_FLOAT],
    "lli": [[1], [2, 3]],
}


def test_attributes_of_every_kind_arrive_typed(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc,
        *,
        i: int,
        f: float,
        b: bool,
        s: str,
        d: DataType,
        t: Tensor,
        li: List[int],
        lf: List[float],
        lb: List[bool] = [True],  # noqa: B006
        ls: List[str] = ["x"],  # noqa: B006
        ld: List[DataType] = [DataType.DT_FLOAT],  # noqa: B006
        lli: List[List[int]] = [[0]],  # noqa: B006
    ) -> TensorDesc:
        return same(x)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(
            self,
            x: Tensor,
            *,
            i: int,
            f: float,
            b: bool,
            s: str,
            d: DataType,
            t: Tensor,
            li: List[int],
            lf: List[float],
            lb: List[bool],
            ls: List[str],
            ld: List[DataType],
            lli: List[List[int]],
        ) -> None:
            ctx = get_execute_ctx()
            a = ctx.get_attrs()
            typed = [
                a.get_int(0),
                a.get_float(1),
                a.get_bool(2),
                a.get_str(3),
                a.get_data_type(4),
                a.get_list_int(6),
                a.get_list_float(7),
                a.get_list_bool(8),
                a.get_list_str(9),
                a.get_list_data_type(10),
                a.get_list_list_int(11),
            ]
            SEEN.append(((i, f, b, s, d, li, lf, lb, ls, ld, lli), typed, a.get_attr_num()))
            assert a.get_tensor(5).addr == t.addr and t.shape_size == 4
            with pytest.raises(RuntimeError, match=r"type\[VT_INT\] at index\[1\]"):
                a.get_int(1)
            with pytest.raises(RuntimeError, match="Runtime attr list is null"):
                a.get_list_int(0)
            # output = x * f + t (the Tensor attribute is device memory: a kernel reads it)
            out = output_like(ctx, 0, x)
            scaled = ctx.malloc_workspace(x.size)
            _affine(ctx, x, _view_like(scaled, x), f, 0.0)
            launch_add(ctx, _view_like(scaled, x), t, out)

    tensor = GraphTensor.from_numpy(np.array([10, 20, 30, 40], np.float32))
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4])
    fn = getattr(ge.es.custom, op_type)
    session.add_graph(0, b.build_and_reset([fn(x, t=tensor, **ATTRS)]))
    SEEN.clear()
    a = np.arange(4, dtype=np.float32)
    (out,) = session.run_graph(0, [_t(a)])
    np.testing.assert_allclose(out.numpy(), a * 0.5 + [10, 20, 30, 40])
    ((kwargs, typed, count),) = SEEN
    expected = tuple(ATTRS.values())
    assert kwargs == expected and tuple(typed) == expected and count == 12
    assert type(kwargs[4]) is DataType and all(type(v) is DataType for v in kwargs[9])


class _View:
    """A stand-in with the Tensor fields the helpers read (addr, shape_size)."""

    def __init__(self, addr: int, shape_size: int) -> None:
        self.addr, self.shape_size = addr, shape_size


def _view_like(addr: int, like: Tensor) -> Any:
    return _View(addr, like.shape_size)


def test_ref_output_writes_the_input_in_place(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    @register_op(op_type=op_type, mutates_args=("x",))
    def infer(x: TensorDesc) -> TensorDesc:
        return same(x)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            ref = ctx.make_output_ref_input(0, 0)
            assert ref.addr == x.addr and ctx.get_output_tensor(0).addr == x.addr
            launch_kernel(kernel("add_one_in_place"), 1, ctx.get_stream(), [x.addr, x.shape_size])

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[6])
    y = getattr(ge.es.custom, op_type)(x * 2.0)
    session.add_graph(0, b.build_and_reset([y + 0.5]))
    a = np.arange(6, dtype=np.float32)
    (out,) = session.run_graph(0, [_t(a)])
    np.testing.assert_array_equal(out.numpy(), a * 2 + 1.5)


BORROWED: list[Any] = []


def test_borrowed_objects_expire_when_execute_returns(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            out = output_like(ctx, 0, x)
            _affine(ctx, x, out, 1.0, 1.0)
            BORROWED[:] = [ctx, x, out, ctx.get_attrs(), x.shape, out.storage_shape]

    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[3]))])
    )
    (out,) = session.run_graph(0, [_t([1, 2, 3])])
    np.testing.assert_array_equal(out.numpy(), [2, 3, 4])
    ctx, x, y, attrs, shape, storage = BORROWED
    BORROWED.clear()
    for use in (
        ctx.get_stream,
        ctx.get_input_num,
        lambda: ctx.malloc_workspace(8),
        lambda: ctx.get_output_tensor(0),
        lambda: ctx.malloc_output_tensor(
            0, StorageShape([3], [3]), StorageFormat(), DataType.DT_FLOAT
        ),
    ):
        with pytest.raises(RuntimeError, match="Borrowed native object has expired"):
            use()
    with pytest.raises(RuntimeError, match="Borrowed runtime attrs have expired"):
        attrs.get_attr_num()
    for use in (
        lambda: x.addr,
        lambda: y.shape_size,
        lambda: shape.origin_shape,
        lambda: storage.dims,
    ):
        with pytest.raises(RuntimeError, match="borrowed"):
            use()
    with pytest.raises(RuntimeError, match="only available inside schema-bound execute"):
        get_execute_ctx()


def _failing(op_type: str, body: Any) -> GraphBuilder:
    register_unary(op_type)

    register_op_impl(op_type=op_type)(type("Bad", (), {"execute": body}))
    b = GraphBuilder("g")
    y = getattr(ge.es.custom, op_type)(b.create_input(0, shape=[4]))
    b.set_graph_output(y + 1.0, 0)
    return b


def _wild(self: Any, x: Tensor) -> None:
    ctx = get_execute_ctx()
    out = output_like(ctx, 0, x)
    launch_kernel(kernel("add"), 1, ctx.get_stream(), [x.addr, 64, out.addr, x.shape_size])


def _past_the_end(self: Any, x: Tensor) -> None:
    ctx = get_execute_ctx()
    out = output_like(ctx, 0, x)
    launch_kernel(kernel("add"), 1, ctx.get_stream(), [x.addr, x.addr, out.addr, 1 << 20])


def _kernel_raises(self: Any, x: Tensor) -> None:
    ctx = get_execute_ctx()
    output_like(ctx, 0, x)
    launch_kernel(kernel("fail_if"), 1, ctx.get_stream(), [1])


def _raises(self: Any, x: Tensor) -> None:
    raise KeyError("no such mode")


def _no_output(self: Any, x: Tensor) -> None:
    pass


def _wrong_dtype(self: Any, x: Tensor) -> None:
    get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, DataType.DT_INT32)


def _returns(self: Any, x: Tensor):  # type: ignore[no-untyped-def]
    output_like(get_execute_ctx(), 0, x)
    return 1


FAILURES = [
    (_wild, r"kernel add: its kernel_array view .* at 0x40 .*not inside live device memory"),
    (_past_the_end, r"kernel add: its kernel_array view of 1048576 elements"),
    (_kernel_raises, r"a kernel it launched failed: kernel fail_if failed"),
    (_raises, r"\.execute\) raised KeyError: 'no such mode'"),
    (_no_output, r"returned without making output 0 \('output0'\)"),
    (
        _wrong_dtype,
        r"Failed to malloc output tensor: output 0 \('output0'\) is 4 elements of DT_FLOAT",
    ),
    (_returns, r"must return None, got int"),
]


@pytest.mark.parametrize(("body", "message"), FAILURES, ids=[f.__name__ for f, _ in FAILURES])
def test_failures_are_ge_errors_naming_the_node(
    session, op_type: str, body: Any, message: str
) -> None:  # type: ignore[no-untyped-def]
    session.add_graph(0, _failing(op_type, body).build_and_reset())
    for _ in range(2):  # the process and the session survive; a second run fails the same way
        with pytest.raises(
            GeError, match=rf"RunGraph failed; graph_id=0; node {op_type}_\d+ failed: "
        ) as info:
            session.run_graph(0, [_t([1, 2, 3, 4])])
        assert re.search(message, str(info.value)), str(info.value)


def test_run_graph_with_stream_async(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register_add(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[8]), b.create_input(1, shape=[8])
    session.add_graph(0, b.build_and_reset([getattr(ge.es.custom, op_type)(x + 1.0, y) * 3.0]))
    stream = runtime.Stream()
    a = np.arange(8, dtype=np.float32)
    dev = GraphTensor.from_numpy(a, placement=Placement.PLACEMENT_DEVICE)
    results = [session.run_graph_with_stream_async(0, stream, [dev, _t(a * 2)]) for _ in range(3)]
    stream.synchronize()
    for (out,) in results:
        np.testing.assert_array_equal(out.numpy(), (a + 1 + a * 2) * 3)


def test_legacy_execute_takes_the_context(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, ctx):  # type: ignore[no-untyped-def]
            with pytest.raises(RuntimeError, match="only available inside schema-bound"):
                get_execute_ctx()
            x = ctx.get_input_tensor(0)
            _affine(ctx, x, output_like(ctx, 0, x), -1.0, 0.0)

    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[2]))])
    )
    (out,) = session.run_graph(0, [_t([1, 2])])
    np.testing.assert_array_equal(out.numpy(), [-1, -2])


def test_inside_a_jit_function(op_type: str) -> None:
    _register_add(op_type)
    fn = getattr(ge.es.custom, op_type)

    @jit
    def f(x, y):  # type: ignore[no-untyped-def]
        return fn(x, y) * 2.0

    a = np.arange(5, dtype=np.float32)
    for scale in (1.0, 3.0):
        np.testing.assert_array_equal(np.asarray(f(a, a * scale)), (a + a * scale) * 2)
