"""Control flow: If, Case and While run as host tasks that drive their subgraphs, each of
which is compiled into a plan of its own (kernels and all) by a nested ``CompiledGraph``.
Only the branch decision and the loop test are Python, as on GE's host side."""

from __future__ import annotations

from ge.compiler.kernels import register_kernels
from ge.compiler.lower import LowerContext
from ge.runtime.plan import HostTask, KernelTask

__all__: list[str] = []


def lower_control(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    return [ctx.reference_task()]


for _op in ("If", "Case", "While"):
    register_kernels(_op, lowering=lower_control)
