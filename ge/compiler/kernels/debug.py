"""``JitDebugPrint`` (``ge.ops.debug``) as the ``debug_print`` host task: the node's sink on
views of its input buffers, run in plan order (the node's control edges order it against the
other prints of its graph). The task holds the sink, a live object of this process, so a plan
holding one is refused by an offline model."""

from __future__ import annotations

from ge.compiler.kernels import register_kernels
from ge.compiler.lower import LowerContext
from ge.ops.debug import PRINT_OP, sink_of
from ge.runtime.plan import HostTask, KernelTask, host_task

__all__: list[str] = []


def lower_debug_print(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    name = ctx.node.name
    sink = sink_of(int(ctx.attrs["print_id"]), name)  # an unknown id fails when compiling
    buffers = [b for b in ctx.inputs if b is not None]
    return [host_task(name, "debug_print", buffers, node=name, sink=sink)]


register_kernels(PRINT_OP, lowering=lower_debug_print)
