"""``JitDebugPrint`` (``ge.ops.debug``) as the ``debug_print`` host task: the node's sink on
views of its input buffers, run in plan order (the node's control edges order it against the
other prints of its graph). The task is data, the print's ``print_id``: bind finds its sink
(``ge.ops.debug.make_print``), a Python function of this process, so an offline model refuses
a plan holding one."""

from __future__ import annotations

from ge.compiler.kernels import register_kernels
from ge.compiler.lower import LowerContext
from ge.ops.debug import PRINT_OP, sink_of
from ge.runtime.plan import HostTask, KernelTask, host_task

__all__: list[str] = []


def lower_debug_print(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
    name = ctx.node.name
    print_id = int(ctx.attrs["print_id"])
    sink_of(print_id, name)  # an unknown id fails when compiling, not when binding
    buffers = [b for b in ctx.inputs if b is not None]
    return [host_task(name, "debug_print", buffers, node=name, print_id=print_id)]


register_kernels(PRINT_OP, lowering=lower_debug_print)
