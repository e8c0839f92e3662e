"""The declare_launch_args (AnnotatedArgs) path: the callback runs once per task plan, when the
plan is built; the launches it declares run as kernel tasks of the plan with their input,
output and workspace addresses refreshed per run (no Python per execution). Checked against
numpy for required/optional/dynamic inputs, several launches, workspaces and scalars, with new
input addresses each run, ``-1`` dims, ``ge.jit``, borrowed-object expiry and GE's error texts."""

# ruff: noqa: UP006, UP035, UP045  (typing.List/Optional are annotation kinds GE-PY reads)
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import pytest

import ge.es.custom
from ge.custom_op import (
    AnnotatedKernelLaunchInfo,
    get_declare_launch_args_ctx,
    register_op,
    register_op_impl,
)
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import Tensor as GraphTensor
from ge.graph.types import Placement
from ge.jit import jit
from ge.runtime import Tensor, TensorDesc
from ge.session import Session
from tests.custom_op._kernels import binary
from tests.custom_op._ops import CALLS, register_unary, same


def _dev(array: Any) -> GraphTensor:
    """A freshly allocated device tensor (a new address every call)."""
    return GraphTensor.from_numpy(
        np.asarray(array, np.float32), placement=Placement.PLACEMENT_DEVICE
    )


def _info(ctx: Any, name: str, block_dim: int = 2) -> AnnotatedKernelLaunchInfo:
    return AnnotatedKernelLaunchInfo(
        kernel_name=name,
        kernel_bin=binary(name),
        block_dim=block_dim,
        stream_id=ctx.get_stream_id(),
    )


def _register_add(op_type: str, *, with_execute: bool = False) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, y: TensorDesc) -> TensorDesc:
        return same(x)

    class Impl:
        def declare_launch_args(self, x: Tensor, y: Tensor, z: Tensor) -> None:
            CALLS.append(("declare", x.storage_shape.dims, x.addr))
            ctx = get_declare_launch_args_ctx()
            args = ctx.create_kernel_args()
            args.append_input(0, x)
            args.append_input(1, y)
            args.append_output(0, z)
            args.append_scalar(x.shape_size)
            ctx.add_launch(_info(ctx, "add"), args)

    if with_execute:

        def execute(self: Any, x: Tensor, y: Tensor) -> None:
            CALLS.append("execute")

        Impl.execute = execute  # type: ignore[attr-defined]
    register_op_impl(op_type=op_type)(Impl)


def _node(session: Session, op_type: str) -> Any:
    graph = session._graphs[0].compiled.graph  # type: ignore[union-attr]
    return next(n for n in graph.get_all_nodes() if n.type == op_type)


def test_declared_once_addresses_refreshed_every_run(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register_add(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[1000]), b.create_input(1, shape=[1000])
    z = getattr(ge.es.custom, op_type)(np.exp(x), y)
    session.add_graph(0, b.build_and_reset([z * 2.0]))
    CALLS.clear()
    rng = np.random.default_rng(0)
    for _ in range(4):  # fresh device inputs: new addresses each run
        a = rng.standard_normal(1000).astype(np.float32)
        c = rng.standard_normal(1000).astype(np.float32)
        (out,) = session.run_graph(0, [_dev(a), _dev(c)])
        np.testing.assert_allclose(out.numpy(), (np.exp(a) + c) * 2.0, rtol=1e-6, atol=1e-6)
    assert CALLS == [("declare", [1000], 0)]  # once, at compile time, addr 0
    assert _node(session, op_type).get_attr("_custom_task_args_mode") == "annotated_args"
    plan = session._graphs[0].compiled.plan_for([[1000], [1000]])
    text = plan.as_text()
    assert f"launch add x2 for {op_type}" in text and "host" not in text, text


def test_declare_launch_args_wins_over_execute(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register_add(op_type, with_execute=True)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[3]), b.create_input(1, shape=[3])
    session.add_graph(0, b.build_and_reset([getattr(ge.es.custom, op_type)(x, y)]))
    CALLS.clear()
    for _ in range(2):
        (out,) = session.run_graph(0, [_dev([1, 2, 3]), _dev([10, 20, 30])])
        np.testing.assert_array_equal(out.numpy(), [11, 22, 33])
    assert CALLS == [("declare", [3], 0)]


def test_execute_only_records_eager_execute_mode(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = ge.custom_op.get_execute_ctx()
            ctx.make_output_ref_input(0, 0)

    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[2]))])
    )
    (out,) = session.run_graph(0, [_dev([4, 5])])
    np.testing.assert_array_equal(out.numpy(), [4, 5])
    assert _node(session, op_type).get_attr("_custom_task_args_mode") == "eager_execute"


def test_minus_one_dims_declare_once_per_shape_set(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register_add(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[-1]), b.create_input(1, shape=[-1])
    session.add_graph(0, b.build_and_reset([getattr(ge.es.custom, op_type)(x, y) + 1.0]))
    CALLS.clear()
    for n in (4, 9, 4, 9, 4):
        a = np.arange(n, dtype=np.float32)
        (out,) = session.run_graph(0, [_dev(a), _dev(a * 3)])
        np.testing.assert_array_equal(out.numpy(), a * 4 + 1)
    assert CALLS == [("declare", [4], 0), ("declare", [9], 0)]


def _register_mixed(op_type: str) -> None:
    """out = (sum of xs) * 2 + bias_or_0 + c, through two launches and a workspace."""

    @register_op(op_type=op_type)
    def infer(xs: List[TensorDesc], bias: Optional[TensorDesc], *, c: int = 0) -> TensorDesc:
        return same(xs[0])

    @register_op_impl(op_type=op_type)
    class Impl:
        def declare_launch_args(
            self, xs: List[Tensor], bias: Optional[Tensor], out: Tensor, *, c: int
        ) -> None:
            CALLS.append(("declare", len(xs), bias is not None))
            ctx = get_declare_launch_args_ctx()
            n = out.shape_size
            ws = ctx.malloc_workspace(n * 4)
            assert (ws.index, ws.addr) == (0, 0)
            # ws = xs[0] + xs[1]  (flattened instances 0 and 1)
            first = ctx.create_kernel_args()
            first.append_input(0, xs[0])
            first.append_input(1, xs[1])
            first.append_workspace(ws)
            first.append_scalar(n)
            ctx.add_launch(_info(ctx, "add"), first)
            # out = 2 * ws
            second = ctx.create_kernel_args()
            second.append_workspace(ws)
            second.append_output(0, out)
            second.append_scalar(n)
            ctx.add_launch(_info(ctx, "scale2", 3), second)
            if bias is not None:  # instance 2: after the dynamic input's two
                third = ctx.create_kernel_args()
                third.append_output(0, out)
                third.append_input(2, bias)
                third.append_output(0, out)
                third.append_scalar(n)
                ctx.add_launch(_info(ctx, "add"), third)
            fourth = ctx.create_kernel_args()
            fourth.append_output(0, out)
            fourth.append_output(0, out)
            fourth.append_scalar(n)
            fourth.append_scalar(c)
            ctx.add_launch(_info(ctx, "plus", 1), fourth)


@pytest.mark.parametrize("with_bias", [True, False])
def test_dynamic_optional_inputs_workspaces_scalars(session, op_type: str, with_bias: bool) -> None:  # type: ignore[no-untyped-def]
    _register_mixed(op_type)
    b = GraphBuilder("g")
    x0, x1 = b.create_input(0, shape=[6]), b.create_input(1, shape=[6])
    bias = b.create_input(2, shape=[6]) if with_bias else None
    y = getattr(ge.es.custom, op_type)([x0, x1], bias, c=5)
    session.add_graph(0, b.build_and_reset([y - 1.0]))
    CALLS.clear()
    a = np.arange(6, dtype=np.float32)
    for k in range(3):
        feeds = [_dev(a + k), _dev(a * 10)] + ([_dev(a * 100)] if with_bias else [])
        (out,) = session.run_graph(0, feeds)
        expect = (a + k + a * 10) * 2 + (a * 100 if with_bias else 0) + 5 - 1
        np.testing.assert_array_equal(out.numpy(), expect)
    assert [("declare", 2, with_bias)] == CALLS
    plan = session._graphs[0].compiled.plan_for([[6]] * (3 if with_bias else 2))
    workspace = [s for s in plan.buffers if s.dtype == np.uint8]
    assert len(workspace) == 1 and workspace[0].nbytes == 24


def test_run_graph_with_stream_async_and_jit(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register_add(op_type)
    fn = getattr(ge.es.custom, op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[8]), b.create_input(1, shape=[8])
    session.add_graph(0, b.build_and_reset([fn(x + 1.0, y) * 3.0]))
    stream = ge.runtime.Stream()
    a = np.arange(8, dtype=np.float32)
    results = [
        session.run_graph_with_stream_async(0, stream, [_dev(a), _dev(a * k)]) for k in range(3)
    ]
    stream.synchronize()
    for k, (out,) in enumerate(results):
        np.testing.assert_array_equal(out.numpy(), (a + 1 + a * k) * 3)

    @jit
    def f(p, q):  # type: ignore[no-untyped-def]
        return fn(p, q) * 2.0

    CALLS.clear()
    for scale in (1.0, 3.0, 5.0):
        np.testing.assert_array_equal(np.asarray(f(a, a * scale)), (a + a * scale) * 2)
    assert CALLS == [("declare", [8], 0)]


def test_borrowed_objects_expire_when_the_callback_returns(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    kept: dict[str, Any] = {}

    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def declare_launch_args(self, x: Tensor, z: Tensor) -> None:
            ctx = get_declare_launch_args_ctx()
            args = ctx.create_kernel_args()
            args.append_input(0, x)
            args.append_output(0, z)
            args.append_scalar(x.shape_size)
            ctx.add_launch(_info(ctx, "scale2"), args)
            kept.update(
                ctx=ctx,
                args=ctx.create_kernel_args(),
                consumed=args,
                x=x,
                shape=x.shape,
                ws=ctx.malloc_workspace(4),
            )

    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[3]))])
    )
    (out,) = session.run_graph(0, [_dev([1, 2, 3])])
    np.testing.assert_array_equal(out.numpy(), [2, 4, 6])
    expired = "Borrowed native object has expired"
    for call in (
        kept["ctx"].get_stream_id,
        kept["ctx"].create_kernel_args,
        lambda: kept["ctx"].malloc_workspace(4),
        lambda: kept["args"].append_scalar(1),
        lambda: kept["consumed"].append_scalar(1),
        lambda: kept["ws"].addr,
        lambda: kept["ws"].index,
    ):
        with pytest.raises(RuntimeError, match=expired):
            call()
    with pytest.raises(RuntimeError, match="borrowed for a custom-op callback"):
        kept["x"].addr  # noqa: B018
    with pytest.raises(RuntimeError, match="borrowed for a custom-op callback"):
        kept["shape"].storage_shape  # noqa: B018
    with pytest.raises(ValueError, match="workspace size must be greater than zero"):
        kept["ctx"].malloc_workspace(0)  # checked before expiry, as in GE
    with pytest.raises(RuntimeError, match="only available inside declare_launch_args"):
        get_declare_launch_args_ctx()


def test_launch_info_checks() -> None:
    def make(**kw: Any) -> AnnotatedKernelLaunchInfo:
        full = {"kernel_name": "k", "kernel_bin": b"x", "block_dim": 1, "stream_id": 0, **kw}
        return AnnotatedKernelLaunchInfo(**full)

    info = make(block_dim=7, stream_id=3)
    assert (info.kernel_name, info.kernel_bin, info.block_dim, info.stream_id) == ("k", b"x", 7, 3)
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        AnnotatedKernelLaunchInfo("k", b"x", 1, 0)  # type: ignore[call-arg]
    for bad in ({"kernel_bin": "x"}, {"block_dim": -1}, {"block_dim": 2**32}, {"stream_id": True}):
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            make(**bad)
    with pytest.raises(ValueError, match=r"^kernel_name must not be empty$"):
        make(kernel_name="", kernel_bin=b"", block_dim=0)  # the name is checked first
    with pytest.raises(ValueError, match=r"^kernel_bin must not be empty$"):
        make(kernel_bin=b"", block_dim=0)
    with pytest.raises(ValueError, match=r"^block_dim must be greater than zero$"):
        make(block_dim=0)


def _one_launch(op_type: str, body: Any) -> None:
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def declare_launch_args(self, x: Tensor, z: Tensor) -> None:
            body(get_declare_launch_args_ctx(), x, z)


def _scale2(ctx: Any, x: Tensor, z: Tensor, info: Any = None) -> None:
    args = ctx.create_kernel_args()
    args.append_input(0, x)
    args.append_output(0, z)
    args.append_scalar(x.shape_size)
    ctx.add_launch(info or _info(ctx, "scale2"), args)


def _consumed_twice(ctx: Any, x: Tensor, z: Tensor) -> None:
    args = ctx.create_kernel_args()
    args.append_input(0, x)
    ctx.add_launch(_info(ctx, "scale2"), args)
    args.append_output(0, z)


def _add_twice(ctx: Any, x: Tensor, z: Tensor) -> None:
    args = ctx.create_kernel_args()
    ctx.add_launch(_info(ctx, "scale2"), args)
    ctx.add_launch(_info(ctx, "scale2"), args)


def _corrupt(ctx: Any, x: Tensor, z: Tensor) -> None:
    data = bytearray(binary("scale2"))
    data[100] ^= 0xFF
    _scale2(
        ctx,
        x,
        z,
        AnnotatedKernelLaunchInfo(
            kernel_name="scale2", kernel_bin=bytes(data), block_dim=1, stream_id=0
        ),
    )


def _wrong_name(ctx: Any, x: Tensor, z: Tensor) -> None:
    _scale2(
        ctx,
        x,
        z,
        AnnotatedKernelLaunchInfo(
            kernel_name="nope", kernel_bin=binary("scale2"), block_dim=1, stream_id=0
        ),
    )


def _wrong_stream(ctx: Any, x: Tensor, z: Tensor) -> None:
    _scale2(
        ctx,
        x,
        z,
        AnnotatedKernelLaunchInfo(
            kernel_name="scale2", kernel_bin=binary("scale2"), block_dim=1, stream_id=1
        ),
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            lambda c, x, z: c.create_kernel_args().append_input(1, x),
            r"IndexError: input instance index 1 is out of range for input count 1",
        ),
        (
            lambda c, x, z: c.create_kernel_args().append_output(2, z),
            r"IndexError: output instance index 2 is out of range for output count 1",
        ),
        (
            lambda c, x, z: c.create_kernel_args().append_input(-1, x),
            r"TypeError: append_input\(\): incompatible function arguments",
        ),
        (
            lambda c, x, z: c.create_kernel_args().append_scalar(2**64),
            r"TypeError: append_scalar\(\): incompatible function arguments",
        ),
        (
            lambda c, x, z: c.create_kernel_args().append_workspace(3),
            r"append_workspace\(\): incompatible function arguments",
        ),
        (
            lambda c, x, z: c.malloc_workspace(0),
            r"ValueError: workspace size must be greater than zero",
        ),
        (_consumed_twice, r"raised GeError: AnnotatedKernelArgs has been consumed"),
        (_add_twice, r"AnnotatedKernelArgs has been consumed"),
        (_wrong_stream, r"ValueError: launch stream_id does not match current context stream_id"),
        (_corrupt, r"Failed to add annotated kernel launch: kernel binary is corrupt"),
        (
            _wrong_name,
            r"Failed to add annotated kernel launch: kernel binary has no function 'nope'",
        ),
        (lambda c, x, z: None, r"declared no launch"),
    ],
)
def test_errors_fail_the_compile_naming_the_node(
    session, op_type: str, body: Any, message: str
) -> None:  # type: ignore[no-untyped-def]
    _one_launch(op_type, body)
    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[3]))])
    )
    with pytest.raises(GeError, match=message) as info:
        session.run_graph(0, [_dev([1, 2, 3])])
    text = str(info.value)
    assert text.startswith("RunGraph failed; graph_id=0; compiling the graph failed: node "), text
    assert ".declare_launch_args)" in text, text


def test_returning_a_value_is_a_type_error(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    register_unary(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def declare_launch_args(self, x: Tensor, z: Tensor) -> None:
            _scale2(get_declare_launch_args_ctx(), x, z)
            return 1  # type: ignore[return-value]

    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[3]))])
    )
    with pytest.raises(GeError, match="declare_launch_args must return None, got int"):
        session.run_graph(0, [_dev([1, 2, 3])])


@pytest.mark.parametrize(
    ("name", "first", "message"),
    [
        ("add", 0x40, r"its kernel_array view of 3 elements of 4 bytes at 0x40 .*not inside live"),
        ("fail_if", 1, r"failed \(status \d+\): it raised"),
    ],
)
def test_bad_addresses_and_kernel_errors_are_ge_errors(
    session, op_type: str, name: str, first: int, message: str
) -> None:  # type: ignore[no-untyped-def]
    def body(ctx: Any, x: Tensor, z: Tensor) -> None:
        args = ctx.create_kernel_args()
        args.append_scalar(first)  # add: a wild address where x's should be; fail_if: fail
        args.append_input(0, x)
        args.append_output(0, z)
        args.append_scalar(3)
        ctx.add_launch(_info(ctx, name, 1), args)

    _one_launch(op_type, body)
    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[3]))])
    )
    for _ in range(2):  # the session stays usable
        with pytest.raises(GeError, match=message) as info:
            session.run_graph(0, [_dev([1, 2, 3])])
        assert f"node {op_type}_" in str(info.value), str(info.value)


def test_the_launch_binary_is_loaded_once(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    from ge.custom_op import annotated_args

    _register_add(op_type)
    fn = getattr(ge.es.custom, op_type)
    for gid in (0, 1):
        b = GraphBuilder("g")
        x, y = b.create_input(0, shape=[2 + gid]), b.create_input(1, shape=[2 + gid])
        session.add_graph(gid, b.build_and_reset([fn(x, y)]))
        session.run_graph(gid, [_dev(np.ones(2 + gid)), _dev(np.ones(2 + gid))])
    plans = [session._graphs[g].compiled.plan_for([[2 + g]] * 2) for g in (0, 1)]
    functions = {id(t.function) for p in plans for t in p.tasks if hasattr(t, "function")}
    assert len(functions) == 1
    assert binary("add") in annotated_args._BINARIES
