"""The execute path's per-run fast paths lend exactly what the checked paths lend:
``Tensor._lend`` views equal ``Tensor._view`` ones and expire together; a view a callback
mutates never leaks into the next run; ``launch_kernel``'s plain-int fast path queues in
order and still reports failures at synchronize."""

# ruff: noqa: UP006, UP035  (typing.List is the annotation kind GE-PY reads)
from __future__ import annotations

from collections.abc import Callable
from typing import Any, List

import numpy as np
import pytest

import ge.es.custom
from ge import runtime
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Format
from ge.graph import Tensor as GraphTensor
from ge.runtime import ExpandDimsType, StorageFormat, StorageShape, Tensor, TensorDesc
from ge.runtime.types import TensorPlacement
from ge.session import Session
from tests.custom_op._kernels import kernel


def _fields(t: Tensor) -> tuple[Any, ...]:
    return (
        t.addr,
        t.size,
        t.shape_size,
        t.origin_shape.dims,
        t.storage_shape.dims,
        t.data_type,
        t.origin_format,
        t.storage_format,
        t.expand_dims_type.full_size,
        t.placement,
    )


def test_lend_matches_view_and_expires_together() -> None:
    fmt = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND, ExpandDimsType("1010"))
    where = TensorPlacement.ON_DEVICE_HBM
    slow = Tensor._view(64, StorageShape([2, 3], [6]), DataType.DT_FLOAT, fmt, where, size=24)
    fast = Tensor._lend(64, [2, 3], [6], DataType.DT_FLOAT, fmt, where, 24)
    assert _fields(fast) == _fields(slow)
    shape, form, dims = fast.shape, fast.format, fast.storage_shape
    shape.origin_shape.set_dim(0, 5)  # a copy: the template is untouched
    assert Tensor._lend(64, [2, 3], [6], DataType.DT_FLOAT, fmt, where, 24).origin_shape.dims == [
        2,
        3,
    ]
    fast._invalidate()
    for read in (
        lambda: fast.addr,
        lambda: shape.origin_shape,
        lambda: form.origin_format,
        lambda: dims.dims,
    ):
        with pytest.raises(RuntimeError, match="borrowed for a custom-op callback"):
            read()


def test_a_mutated_view_does_not_leak_into_the_next_run(op_type: str) -> None:
    seen: list[list[int]] = []

    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            seen.append(x.storage_shape.dims)
            x.storage_shape.set_dim(0, 99)
            ctx = get_execute_ctx()
            out = ctx.malloc_output_tensor(0, StorageShape([4], [4]), x.format, x.data_type)
            runtime.launch_kernel(kernel("add"), 1, ctx.get_stream(), [x.addr, x.addr, out.addr, 4])

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        b = GraphBuilder("g")
        session.add_graph(
            0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[4]))])
        )
        for _ in range(3):
            (out,) = session.run_graph(0, [GraphTensor.from_numpy(np.arange(4, dtype=np.float32))])
            np.testing.assert_array_equal(out.numpy(), [0, 2, 4, 6])
        assert seen == [[4]] * 3
    finally:
        GeApi.ge_finalize()


def test_launch_kernel_int_fast_path_orders_and_reports() -> None:
    block = runtime.malloc(16)
    try:
        runtime.memcpy_h2d(block.addr, np.ones(4, np.float32))
        stream = runtime.Stream()
        for _ in range(3):  # x += 1 three times, in order
            runtime.launch_kernel(kernel("add_one_in_place"), 2, stream, [block.addr, 4])
        stream.synchronize()
        out = np.empty(4, np.float32)
        runtime.memcpy_d2h(out, block.addr)
        assert out.tolist() == [4.0] * 4
        runtime.launch_kernel(kernel("add_one_in_place"), 1, stream.handle, [0x40, 4])
        with pytest.raises(GeError, match="not inside live device memory"):
            stream.synchronize()
        with pytest.raises(GeError, match="block_dim must be in"):
            runtime.launch_kernel(kernel("add_one_in_place"), 0, stream, [block.addr, 4])
        runtime.launch_kernel(kernel("add_one_in_place"), 1, stream, (block, 4))  # checked path
        stream.synchronize()
        runtime.memcpy_d2h(out, block.addr)
        assert out.tolist() == [5.0] * 4
    finally:
        runtime.free(block)


# --- loans: the objects of a run are built once per plan and re-pointed (ge.custom_op._loan) --
def _unary_execute(op_type: str, body: Any) -> Session:
    """A session (GE initialized) with graph 0: y = <op>(x) + 1 for x of shape [4], the op's
    execute being ``body(ctx, x, out)`` after it launched out = x + x."""

    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            out = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
            runtime.launch_kernel(kernel("add"), 1, ctx.get_stream(), [x.addr, x.addr, out.addr, 4])
            body(ctx, x, out)

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    session = Session({})
    b = GraphBuilder("g")
    y = getattr(ge.es.custom, op_type)(b.create_input(0, shape=[4]))
    session.add_graph(0, b.build_and_reset([y + 1.0]))
    return session


def _run_checked(session: Session, seed: int) -> None:
    a = np.arange(4, dtype=np.float32) + seed
    (out,) = session.run_graph(0, [GraphTensor.from_numpy(a)])
    np.testing.assert_array_equal(out.numpy(), a * 2 + 1)


def test_a_run_that_keeps_nothing_lends_the_same_objects_again(op_type: str) -> None:
    seen: list[tuple[int, ...]] = []
    session = _unary_execute(
        op_type, lambda ctx, x, out: seen.append((id(ctx), id(x), id(out), id(x.shape)))
    )
    try:
        for seed in range(4):
            _run_checked(session, seed)
        assert len(set(seen)) == 1, "every run rebuilt what it lends"
    finally:
        GeApi.ge_finalize()


def _dims_reader(shape: Any) -> Callable[[], object]:
    return lambda: shape.dims


KEPT: dict[str, Callable[[Any, Tensor, Tensor], Callable[[], object]]] = {
    # what a callback keeps -> a use of it that must raise once its run is over
    "context": lambda ctx, x, out: ctx.get_stream,
    "attrs": lambda ctx, x, out: ctx.get_attrs().get_attr_num,
    "input": lambda ctx, x, out: lambda: x.addr,
    "output": lambda ctx, x, out: lambda: out.shape_size,
    "storage shape": lambda ctx, x, out: lambda: x.shape.origin_shape,
    "origin shape": lambda ctx, x, out: lambda: x.shape.origin_shape.dims,
    "storage dims": lambda ctx, x, out: lambda: out.storage_shape.size,
    "a Shape's dims": lambda ctx, x, out: _dims_reader(x.storage_shape),
    "an output's addr": lambda ctx, x, out: lambda: out.addr,
    "format": lambda ctx, x, out: lambda: x.format.origin_format,
    "expand rule": lambda ctx, x, out: lambda: x.expand_dims_type.full_size,
}


@pytest.mark.parametrize("what", sorted(KEPT))
def test_an_object_kept_from_a_run_stays_expired_in_later_runs(op_type: str, what: str) -> None:
    """The loan is reused only while nothing outside it refers to its objects: a kept object
    raises after its run, and also while later runs are in progress (when the objects lent
    to them are live)."""
    kept: list[Callable[[], object]] = []
    errors: list[str] = []

    def body(ctx: Any, x: Tensor, out: Tensor) -> None:
        for use in kept:  # kept by earlier runs: expired even now
            try:
                use()
                errors.append(f"{what} kept from an earlier run is usable during a later one")
            except RuntimeError:
                pass
        x.addr, out.addr, ctx.get_stream()
        kept.append(KEPT[what](ctx, x, out))

    session = _unary_execute(op_type, body)
    try:
        for seed in range(3):
            _run_checked(session, seed)
        assert errors == []
        for use in kept:
            with pytest.raises(RuntimeError):
                use()
    finally:
        GeApi.ge_finalize()


def test_a_failed_run_retires_its_loan(op_type: str) -> None:
    calls: list[int] = []

    def body(ctx: Any, x: Tensor, out: Tensor) -> None:
        calls.append(id(x))
        if len(calls) == 1:
            raise ValueError("first run fails")

    session = _unary_execute(op_type, body)
    try:
        with pytest.raises(GeError, match="raised ValueError: first run fails"):
            _run_checked(session, 0)
        _run_checked(session, 1)
        _run_checked(session, 2)
        assert calls[1] == calls[2]  # a new loan, lent again
    finally:
        GeApi.ge_finalize()


def test_an_output_asked_for_in_another_layout_is_a_view_of_its_own(op_type: str) -> None:
    kept: list[Tensor] = []

    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            out = ctx.malloc_output_tensor(0, StorageShape([2, 2], [4]), x.format, x.data_type)
            assert out.origin_shape.dims == [2, 2] and out.storage_shape.dims == [4]
            again = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
            assert again is out  # asked again: the same Tensor, as before
            runtime.launch_kernel(kernel("add"), 1, ctx.get_stream(), [x.addr, x.addr, out.addr, 4])
            kept.append(out)

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        b = GraphBuilder("g")
        y = getattr(ge.es.custom, op_type)(b.create_input(0, shape=[4]))
        session.add_graph(0, b.build_and_reset([y + 1.0]))
        _run_checked(session, 0)
        _run_checked(session, 1)
        assert kept[0] is not kept[1]
        with pytest.raises(RuntimeError, match="borrowed"):
            kept[0].addr  # noqa: B018
    finally:
        GeApi.ge_finalize()


def test_edits_to_any_lent_view_are_undone_for_the_next_run(op_type: str) -> None:
    seen: list[tuple[Any, ...]] = []

    def body(ctx: Any, x: Tensor, out: Tensor) -> None:
        seen.append(
            (
                x.origin_shape.dims,
                x.origin_format,
                x.storage_format,
                x.expand_dims_type.full_size,
                out.storage_shape.dims,
                out.format.expand_dims_type.is_expand_index(1),
            )
        )
        x.shape.origin_shape.append_dim(7)
        x.format.set_origin_format(Format.FORMAT_NCHW)
        x.format.set_storage_format(Format.FORMAT_NHWC)
        x.format.set_expand_dims_type(ExpandDimsType("1010"))
        out.storage_shape.set_dim(0, 99)
        out.expand_dims_type.set_expand_index(1)

    session = _unary_execute(op_type, body)
    try:
        for seed in range(3):
            _run_checked(session, seed)
        assert seen == [([4], Format.FORMAT_ND, Format.FORMAT_ND, 0, [4], False)] * 3
    finally:
        GeApi.ge_finalize()


def test_lists_a_callback_mutates_are_fresh_in_the_next_run(op_type: str) -> None:
    """A dynamic input's list and a list attribute are the callback's: mutating them changes
    nothing the next run receives (and RuntimeAttrs reads what this run received)."""
    seen: list[tuple[int, list[int], list[int]]] = []

    @register_op(op_type=op_type)
    def infer(xs: List[TensorDesc], *, li: List[int]) -> TensorDesc:
        return TensorDesc(xs[0].shape, xs[0].data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, xs: List[Tensor], *, li: List[int]) -> None:
            ctx = get_execute_ctx()
            seen.append((len(xs), list(li), ctx.get_attrs().get_list_int(0)))
            x, y = xs
            out = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
            runtime.launch_kernel(kernel("add"), 1, ctx.get_stream(), [x.addr, y.addr, out.addr, 4])
            xs.clear()
            li.append(99)

    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        session = Session({})
        b = GraphBuilder("g")
        x, y = b.create_input(0, shape=[4]), b.create_input(1, shape=[4])
        session.add_graph(0, b.build_and_reset([getattr(ge.es.custom, op_type)([x, y], li=[1, 2])]))
        a = np.arange(4, dtype=np.float32)
        for _ in range(3):
            (out,) = session.run_graph(0, [GraphTensor.from_numpy(a), GraphTensor.from_numpy(a)])
            np.testing.assert_array_equal(out.numpy(), a * 2)
        assert seen == [(2, [1, 2], [1, 2])] * 3
    finally:
        GeApi.ge_finalize()


# --- the edited flag: a loan puts back shapes and formats only after a run that edited one ---
EDITS: dict[str, Callable[[Tensor, Tensor], object]] = {
    # one mutator of one lent view -> applied in the first run only
    "Shape.set_dim": lambda x, out: x.storage_shape.set_dim(0, 9),
    "Shape.append_dim": lambda x, out: x.origin_shape.append_dim(3),
    "Shape.set_scalar": lambda x, out: out.storage_shape.set_scalar(),
    "StorageShape.set_origin_shape": lambda x, out: x.shape.set_origin_shape([2, 2]),
    "StorageShape.set_storage_shape": lambda x, out: out.shape.set_storage_shape([1, 4]),
    "StorageFormat.set_origin_format": lambda x, out: x.format.set_origin_format(
        Format.FORMAT_NCHW
    ),
    "StorageFormat.set_storage_format": lambda x, out: out.format.set_storage_format(
        Format.FORMAT_NHWC
    ),
    "StorageFormat.set_expand_dims_type": lambda x, out: x.format.set_expand_dims_type(
        ExpandDimsType("1010")
    ),
    "ExpandDimsType.set_expand_index": lambda x, out: out.expand_dims_type.set_expand_index(2),
}


def _layout(t: Tensor) -> tuple[Any, ...]:
    rule = t.expand_dims_type
    return (
        t.origin_shape.dims,
        t.storage_shape.dims,
        (t.shape_size, t.origin_shape.size, t.storage_shape.size),
        t.origin_format,
        t.storage_format,
        rule.full_size,
        [rule.is_expand_index(i) for i in range(4)],
    )


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_in_one_run_is_undone_for_every_later_run(
    op_type: str, edit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each mutator marks the loan edited: the run after the edit gets the plan's shapes and
    formats back (one restore), and the runs after that, which edit nothing, restore nothing
    and still see them."""
    from ge.custom_op._loan import Loan

    restores: list[int] = []
    original = Loan._restore

    def counted(self: Loan) -> None:
        restores.append(1)
        original(self)

    monkeypatch.setattr(Loan, "_restore", counted)
    seen: list[tuple[Any, ...]] = []

    def body(ctx: Any, x: Tensor, out: Tensor) -> None:
        seen.append((_layout(x), _layout(out)))
        if len(seen) == 1:
            EDITS[edit](x, out)

    session = _unary_execute(op_type, body)
    try:
        for seed in range(4):
            _run_checked(session, seed)
            assert len(restores) == (0 if seed == 0 else 1), f"run {seed}"
        plan = ([4], [4], (4, 4, 4), Format.FORMAT_ND, Format.FORMAT_ND, 0, [False] * 4)
        assert seen == [(plan, plan)] * 4
    finally:
        GeApi.ge_finalize()


def test_a_refused_edit_of_an_expired_view_changes_nothing(op_type: str) -> None:
    """A mutator called on a view kept past its run raises the borrowed-object error and
    neither edits the view nor marks the loan (which is retired anyway: the view was kept);
    the Tensor it came from raises too."""
    kept: list[tuple[Tensor, Any]] = []
    seen: list[list[int]] = []

    def body(ctx: Any, x: Tensor, out: Tensor) -> None:
        seen.append(x.storage_shape.dims)
        if not kept:
            kept.append((x, x.storage_shape))

    session = _unary_execute(op_type, body)
    try:
        _run_checked(session, 0)
        tensor, shape = kept[0]
        with pytest.raises(RuntimeError, match="borrowed for a custom-op callback"):
            shape.set_dim(0, 7)
        assert shape._dims == [4] and not shape._lease.edited
        with pytest.raises(RuntimeError, match="borrowed for a custom-op callback"):
            tensor.storage_shape  # noqa: B018
        _run_checked(session, 1)
        assert seen == [[4], [4]]
    finally:
        GeApi.ge_finalize()


# --- launch_kernel on the execute path's inline stream (ge.runtime._launch) -------------------
def _inline_add_one(stream_arg: Callable[[Any], object], block_dim: int = 2) -> list[float]:
    """x = 1 + 1 by one launch on a fresh inline stream (passed as ``stream_arg(stream)``),
    synchronized; x's values."""
    from ge.custom_op._eager import _InlineStream

    block = runtime.malloc(16)
    try:
        runtime.memcpy_h2d(block.addr, np.ones(4, np.float32))
        stream = _InlineStream()
        fn = kernel("add_one_in_place")
        runtime.launch_kernel(fn, block_dim, stream_arg(stream), [block.addr, 4])  # type: ignore[arg-type]
        stream.synchronize()
        out = np.empty(4, np.float32)
        runtime.memcpy_d2h(out, block.addr)
        return list(out.tolist())
    finally:
        runtime.free(block)


@pytest.mark.parametrize("as_handle", [True, False])
def test_an_inline_launch_runs_at_once_and_keeps_a_failure(as_handle: bool) -> None:
    from ge.custom_op._eager import _InlineStream

    def pick(s: Any) -> object:
        return s.handle if as_handle else s

    assert _inline_add_one(pick) == [2.0] * 4
    stream = _InlineStream()
    block = runtime.malloc(16)
    try:
        runtime.memcpy_h2d(block.addr, np.ones(4, np.float32))
        fn = kernel("add_one_in_place")
        runtime.launch_kernel(fn, 2, pick(stream), [0x40, 4])  # type: ignore[arg-type]
        runtime.launch_kernel(fn, 2, pick(stream), [block.addr, 4])  # type: ignore[arg-type]
        with pytest.raises(GeError, match=r"kernel add_one_in_place failed: .*args\[0\]"):
            stream.synchronize()
        out = np.empty(4, np.float32)
        runtime.memcpy_d2h(out, block.addr)
        assert out.tolist() == [1.0] * 4  # the launch behind the failure was skipped
        runtime.launch_kernel(fn, 2, pick(stream), [block.addr, 4])  # type: ignore[arg-type]
        stream.synchronize()  # reported once: the stream runs again
        runtime.memcpy_d2h(out, block.addr)
        assert out.tolist() == [2.0] * 4
    finally:
        runtime.free(block)
    with pytest.raises(GeError, match="names no live stream"):
        runtime.launch_kernel(kernel("add_one_in_place"), 1, 2**60, [0, 4])


def test_an_inline_launch_the_native_pool_did_not_run_runs_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A first try that ran nothing (the caller moved to another CPU; no pool started yet)
    goes through ``_launcher.launch``; with no native pool here, through the Python pool."""
    from ge.runtime import _launcher
    from ge.runtime._launcher_ir import _MOVED_BASE

    real = _launcher._pool or _launcher._require()
    tries: list[int] = []

    class _Moved:
        address = real.address

        def launch(self, *args: int) -> int:
            tries.append(1)
            return _MOVED_BASE - 3

    launched: list[int] = []

    def launch(status_fn: int, block_dim: int, args: int) -> int:
        launched.append(block_dim)
        return int(real.launch(real.address, status_fn, block_dim, args))

    monkeypatch.setattr(_launcher, "launch", launch)
    monkeypatch.setattr(_launcher, "_pool", _Moved())
    assert _inline_add_one(lambda s: s.handle) == [2.0] * 4
    assert tries == [1] and launched == [2]
    monkeypatch.setattr(_launcher, "_pool", None)
    assert _inline_add_one(lambda s: s) == [2.0] * 4
    assert launched == [2, 2]

    def unavailable(status_fn: int, block_dim: int, args: int) -> int:
        raise GeError("no native pool")

    monkeypatch.setattr(_launcher, "launch", unavailable)
    monkeypatch.setattr(_launcher, "available", lambda: False)
    assert _inline_add_one(lambda s: s, block_dim=3) == [2.0] * 4
    monkeypatch.setattr(_launcher, "available", lambda: True)  # the refusal is the error
    from ge.custom_op._eager import _InlineStream

    stream = _InlineStream()
    runtime.launch_kernel(kernel("add_one_in_place"), 1, stream, [0, 4])
    with pytest.raises(GeError, match="no native pool"):
        stream.synchronize()
