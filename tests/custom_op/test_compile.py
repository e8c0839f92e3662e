"""The compile callback: once per task plan (once per compile for static shapes, once per
input-shape set for -1 dims), before any run, on the instance execute then uses; options from
the global, session and graph levels; the CPU as the platform; borrowed objects expire."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import ge.es.custom
from ge.custom_op import (
    get_compile_ctx,
    get_compile_platform_info,
    get_execute_ctx,
    register_op,
    register_op_impl,
)
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType
from ge.graph import Tensor as GraphTensor
from ge.runtime import Tensor, TensorDesc, launch_kernel
from ge.runtime.kernel import _llvm
from ge.session import Session
from tests.custom_op._kernels import kernel

EVENTS: list[Any] = []


@pytest.fixture
def session():  # type: ignore[no-untyped-def]
    GeApi.ge_initialize({"ge.exec.deviceId": "0", "my.global": "g", "my.both": "global"})
    try:
        yield Session({"my.session": "s", "my.both": "session"})
    finally:
        GeApi.ge_finalize()


def _register(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, y: TensorDesc, *, k: int = 2) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def compile(self, x: Tensor, y: Tensor, z: Tensor, *, k: int) -> None:
            ctx, info = get_compile_ctx(), get_compile_platform_info()
            self.compiled = (x.storage_shape.dims, z.data_type, k)
            EVENTS.append(("compile", x.storage_shape.dims, x.addr, z.storage_shape.dims, k))
            EVENTS.append(
                [ctx.get_option(key) for key in ("my.global", "my.session", "my.graph", "my.both")]
            )
            EVENTS.append(
                (
                    info.get_soc_version(),
                    info.get_ai_core_num(),
                    info.get_core_num(),
                    info.get_core_num("VectorCore"),
                    info.get_platform_resource("version", "NpuArch"),
                    info.get_platform_resource_group("SoCInfo")["ai_core_cnt"],
                )
            )
            with pytest.raises(RuntimeError, match="Failed to get option 'nope'"):
                ctx.get_option("nope")
            with pytest.raises(RuntimeError, match="Failed to get platform resource"):
                info.get_platform_resource("version", "nope")
            EVENTS.append(("borrowed", ctx, info, x))

        def execute(self, x: Tensor, y: Tensor, *, k: int) -> None:
            EVENTS.append(("execute", self.compiled))
            ctx = get_execute_ctx()
            z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
            launch_kernel(
                kernel("add"), 1, ctx.get_stream(), [x.addr, y.addr, z.addr, x.shape_size]
            )


def test_compile_runs_once_per_plan_with_options_and_platform(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    _register(op_type)
    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[-1]), b.create_input(1, shape=[-1])
    session.add_graph(
        0,
        b.build_and_reset([getattr(ge.es.custom, op_type)(x, y, k=5)]),
        {"my.graph": "gr", "my.both": "graph"},
    )
    EVENTS.clear()
    for n in (4, 4, 6, 4):
        a = np.arange(n, dtype=np.float32)
        (out,) = session.run_graph(0, [GraphTensor.from_numpy(a), GraphTensor.from_numpy(a)])
        np.testing.assert_array_equal(out.numpy(), a * 2)
    kinds = [e[0] if isinstance(e, tuple) else "options" for e in EVENTS]
    cores = os.cpu_count()
    # compile once per plan (shapes [4] and [6]), execute on every run, on the same instance
    assert [k for k in kinds if k in ("compile", "execute")] == [
        "compile",
        "execute",
        "execute",
        "compile",
        "execute",
        "execute",
    ]
    assert EVENTS[0] == ("compile", [4], 0, [4], 5)
    assert EVENTS[1] == ["g", "s", "gr", "graph"]
    assert EVENTS[2] == ("GeCpu", cores, cores, cores, _llvm().get_host_cpu_name(), str(cores))
    executes = [e for e in EVENTS if isinstance(e, tuple) and e[0] == "execute"]
    assert executes[0] == ("execute", ([4], DataType.DT_FLOAT, 5))
    assert executes[2] == ("execute", ([6], DataType.DT_FLOAT, 5))
    _, ctx, info, tensor = next(e for e in EVENTS if isinstance(e, tuple) and e[0] == "borrowed")
    for use in (lambda: ctx.get_option("my.global"), info.get_soc_version, info.get_ai_core_num):
        with pytest.raises(RuntimeError, match="Borrowed native object has expired"):
            use()
    with pytest.raises(RuntimeError, match="borrowed"):
        _ = tensor.storage_shape
    for accessor in (get_compile_ctx, get_compile_platform_info):
        with pytest.raises(RuntimeError, match="only available inside schema-bound compile"):
            accessor()


def test_a_failing_compile_fails_the_compile_naming_the_node(session, op_type: str) -> None:  # type: ignore[no-untyped-def]
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def compile(self, x: Tensor, z: Tensor) -> None:
            raise ValueError("unsupported shape")

        def execute(self, x: Tensor) -> None: ...

    b = GraphBuilder("g")
    session.add_graph(
        0, b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[3]))])
    )
    with pytest.raises(
        GeError,
        match=rf"node {op_type}_\d+: {op_type} \(.*Impl.compile\) raised ValueError: unsupported",
    ):
        session.run_graph(0, [GraphTensor.from_numpy(np.ones(3, np.float32))])
