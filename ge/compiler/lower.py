"""Lowering: an optimized graph with known shapes becomes a ``Plan`` of tasks.

Graph inputs, constants and node outputs become numbered buffers; each node becomes the tasks
its op's kernel record gives (``ge.compiler.kernels.kernels_of``: the op's own lowering, its
registered kernel, or the elementwise kernel of its scalar body) or, for an op without a
kernel yet, one ``HostTask`` running its numpy reference on views of the device buffers.
Graph outputs get their own buffers (a node writing exactly one graph output writes it in
place; anything else is copied). An op in ``VIEW_OPS`` whose input is an intermediate costs
nothing: its output is a view of the input buffer (same bytes, its own shape), with no task;
so does one whose input is a graph input (the view is the caller's input memory each run:
``x.reshape(...) @ w`` launches no copy), unless an op that may write in place reads either.
A graph output that is a view of an intermediate makes the intermediate a view of the output
(its producer writes the result); one that is a view of an input is copied (``_bind_outputs``).
Finally the memory plan gives every intermediate an offset in one arena, reusing space by
liveness (a view's reads keep its source live).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ge.compiler.memory_plan import plan_offsets
from ge.error import GeError, GeValueError, GraphError
from ge.graph._dtypes import numpy_dtype
from ge.graph._verify import describe_cycle, topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.ops._rules import too_big
from ge.ops.host_reference import grouped
from ge.ops.infer import _subgraph_slot, _subgraphs_of, graph_outputs, node_attrs
from ge.ops.layout import input_groups
from ge.ops.registry import get_op
from ge.ops.schema import ExecContext, OpDef
from ge.options import Options, current_options
from ge.runtime.plan import (
    BufferKind,
    BufferSpec,
    HostTask,
    KernelTask,
    Plan,
    host_task,
)

__all__ = ["VIEW_OPS", "LowerContext", "SubgraphRunner", "ValueDependentShapeError", "lower_graph"]

# ops whose output is their input's bytes in the same order under another shape
VIEW_OPS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "ExpandDims"})

SubgraphRunner = Callable[[Graph, Sequence[np.ndarray], int], list[np.ndarray]]


class ValueDependentShapeError(GeError):
    """A shape stays unknown with concrete input shapes: it depends on input *values*
    (e.g. a Reshape whose target shape is a graph input), so no static plan exists."""


def spec_of(desc: TensorDesc, kind: BufferKind, index: int) -> BufferSpec:
    shape = tuple(desc._shape)
    if any(d < 0 for d in shape):
        raise ValueDependentShapeError(
            f"a tensor of shape {list(shape)} stays unknown with concrete input shapes"
        )
    problem = too_big(shape, desc._data_type)
    if problem is not None:
        raise GeValueError(problem)
    return BufferSpec(kind, index, shape, numpy_dtype(desc._data_type))


@dataclass
class LowerContext:
    """What a kernel lowering sees for one node."""

    node: Node
    op: OpDef
    attrs: dict[str, Any]
    inputs: list[int | None]  # buffer id per input port (None: unconnected optional)
    outputs: list[int]  # buffer id per output port
    plan: Plan
    run_subgraph: SubgraphRunner | None = None
    # the options the graph is compiled with (global, session and graph options merged, the
    # later winning), for lowerings that read them (Python custom ops' compile callbacks);
    # None: the global options
    options: dict[str, str] | None = None
    # the ge.options record kernels are generated and compiled with (approximate math,
    # bounds checks): pass it to kernel_from_source
    ge_options: Options = field(default_factory=Options)

    def spec(self, buffer: int) -> BufferSpec:
        return self.plan.buffers[buffer]

    def constant(self, value: np.ndarray) -> int:
        """A plan-owned constant buffer holding ``value`` (device memory)."""
        array = np.ascontiguousarray(value)
        buf = self.plan.add_buffer(
            BufferSpec(BufferKind.CONST, len(self.plan.const_addrs), array.shape, array.dtype)
        )
        self.plan.const_addrs[buf] = self.plan.device_constant(array)
        return buf

    def reference_task(self) -> HostTask:
        """The node computed by its op's numpy reference on views of the device buffers (and,
        for control flow, subgraphs run by ``run_subgraph``: compiled plans of their own)."""
        assert self.run_subgraph is not None
        return _reference_task(self, self.run_subgraph)


def _view_groups(ctx: LowerContext, groups: list[list[int]]) -> list[list[int]]:
    """Per IR input, the position among the connected inputs of each of its ports (-1: an
    unconnected optional input)."""
    position: dict[int, int] = {}
    for port, buf in enumerate(ctx.inputs):
        if buf is not None:
            position[port] = len(position)
    return [[position.get(p, -1) for p in ports] for ports in groups]


def _reference_task(ctx: LowerContext, run_subgraph: SubgraphRunner) -> HostTask:
    """The ``reference`` host task of ``ctx``'s node: data (op type, attributes, buffers),
    with the node's output descs as a hint and, for control flow, its subgraphs and their
    runner (live: such a task runs only in this process)."""
    op, node = ctx.op, ctx.node
    present = [b for b in ctx.inputs if b is not None]
    subgraphs = _subgraphs_of(node)
    return host_task(
        node.name,
        "reference",
        present + ctx.outputs,
        op_type=op.type,
        node=node.name,
        attrs=ctx.attrs,
        inputs=_view_groups(ctx, input_groups(op, node)),
        outputs=len(ctx.outputs),
        descs=list(node.output_descs),
        subgraphs=(subgraphs, run_subgraph) if subgraphs else None,
    )


# what a reference raises for bad input values (an index out of range, say)
_VALUE_ERRORS = (GeError, ValueError, TypeError, ArithmeticError, IndexError)


def _explain_by_reference(ctx: LowerContext, tasks: Sequence[KernelTask | HostTask]) -> None:
    """Let the node's kernels say why they failed: after a failed launch (never on a
    successful run) the op's numpy reference runs on the node's input buffers, and what it
    raises is the message (``GatherV2 input 'indices' holds 7 at [1], out of range [0, 5)
    ...``, where the kernel can only return an error status).

    Only where those inputs are still intact then: each buffer is read by the kernel itself
    (so the memory plan keeps it live) or is a graph input or constant, and no output may
    share memory with an input. Nodes with subgraphs keep the plain message."""
    op, node = ctx.op, ctx.node
    if op.reference is None or node.subgraph_names:
        return
    present = [b for b in ctx.inputs if b is not None]
    fixed = (BufferKind.INPUT, BufferKind.CONST)
    views = ctx.plan.views  # a view of an input is as intact as the input
    # the closure holds no LowerContext: its run_subgraph would tie the plan to its compiler
    positions, attrs = _view_groups(ctx, input_groups(op, node)), ctx.attrs
    descs = list(node.output_descs)
    where = f" ({node.name} built at {node.source})" if node.source else ""

    def explain(views: list[np.ndarray]) -> str | None:
        inputs = grouped(op, positions, views)
        assert op.reference is not None
        try:
            op.reference(ExecContext(op, inputs, attrs, outputs=descs))
        except _VALUE_ERRORS as e:
            message = str(e)
            return (message if message.startswith(op.type) else f"{op.type}: {message}") + where
        return None

    for task in tasks:
        if not isinstance(task, KernelTask) or task.same_index_inputs or task.explain is not None:
            continue
        read = {int(b) for b in task.patch_buf}
        if all(b in read or ctx.plan.buffers[views.get(b, b)].kind in fixed for b in present):
            task.explain, task.explain_buffers = explain, tuple(present)


def _const_buffer(plan: Plan, node: Node) -> int:
    value = node.attr_value("value")
    stored = None if value is None else value.value
    assert isinstance(stored, Tensor)
    array = stored.numpy()
    spec = BufferSpec(BufferKind.CONST, len(plan.const_addrs), array.shape, array.dtype)
    buf = plan.add_buffer(spec)
    plan.const_addrs[buf] = plan.device_constant(array)
    plan.const_names[buf] = node.name
    return buf


def _copy_task(name: str, src: int, dst: int) -> HostTask:
    return host_task(name, "copy", [src, dst])


def _view_source(
    node: Node,
    plan: Plan,
    port_buf: dict[tuple[int, int], int],
    exported: set[int],
    result: bool,
) -> int | None:
    """The buffer whose bytes ``node``'s output can be, with no task: the input of a
    ``VIEW_OPS`` node, an intermediate or a graph input (at run time the view is then the
    caller's input memory, which nothing in the plan writes), unless an intermediate source
    holds a graph output (those get buffers of their own), the bytes differ in type or size,
    or an op that may write its input in place reads the source or the view (a custom op with
    ``mutates_args``: the other side would see it; the caller's input must stay as given).
    A graph output (``result``) is a view of an intermediate only (``_bind_outputs`` makes
    the intermediate its bytes), never of an input."""
    if node.type not in VIEW_OPS or len(node.output_descs) != 1 or not node.inputs:
        return None
    edge = node.inputs[0]
    if edge is None or _written_in_place([*edge[0].users(edge[1]), *node.users(0)]):
        return None
    src = port_buf[(id(edge[0]), edge[1])]
    root = plan.views.get(src, src)
    have = plan.buffers[root]
    if have.kind is BufferKind.INTERMEDIATE:
        if root in exported or src in exported:
            return None
    elif have.kind is not BufferKind.INPUT or result:
        return None
    want = spec_of(node.output_desc(0), BufferKind.INTERMEDIATE, 0)
    if want.dtype != have.dtype or want.nbytes != have.nbytes:
        return None
    return root


def _written_in_place(consumers: Sequence[tuple[Node, int]]) -> bool:
    """Whether one of ``consumers`` is an impure op other than the graph output (the ops that
    may write an input in place are impure: custom ops with ``mutates_args``)."""
    for dst, _ in consumers:
        op = dst.op
        if op is None or (not op.pure and op.io != "output"):
            return True
    return False


def _add_view(plan: Plan, node: Node, root: int) -> int:
    view = plan.add_buffer(spec_of(node.output_desc(0), BufferKind.INTERMEDIATE, 0))
    plan.views[view] = root
    return view


def _lower_node(
    node: Node,
    op: OpDef,
    plan: Plan,
    port_buf: dict[tuple[int, int], int],
    run_subgraph: SubgraphRunner,
    options: dict[str, str] | None,
    ge_options: Options,
) -> None:
    from ge.compiler.kernels import kernels_of  # noqa: PLC0415  (kernels import this module)

    inputs: list[int | None] = [
        None if e is None else port_buf[(id(e[0]), e[1])] for e in node.inputs
    ]
    outputs = [plan.add_buffer(spec_of(d, BufferKind.INTERMEDIATE, 0)) for d in node.output_descs]
    for port, buf in enumerate(outputs):
        port_buf[(id(node), port)] = buf
    attrs = node_attrs(op, node)
    ctx = LowerContext(node, op, attrs, inputs, outputs, plan, run_subgraph, options, ge_options)
    lowering = kernels_of(op).lower
    tasks = lowering(ctx) if lowering is not None else None
    if tasks is not None:
        _explain_by_reference(ctx, tasks)
    plan.tasks += tasks if tasks is not None else [_reference_task(ctx, run_subgraph)]


def _touched(task: KernelTask | HostTask) -> list[int]:
    if isinstance(task, KernelTask):
        return [int(b) for b in task.patch_buf]
    return list(task.buffers)


def _plan_memory(plan: Plan) -> None:
    """Offsets of the intermediates; a view takes its source's, and its uses count as the
    source's (so the source stays live while the view is read)."""
    views = plan.views
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for t, task in enumerate(plan.tasks):
        for used in _touched(task):
            buf = views.get(used, used)
            first.setdefault(buf, t)
            last[buf] = t
    inter = [
        b
        for b, s in enumerate(plan.buffers)
        if s.kind is BufferKind.INTERMEDIATE and b not in views
    ]
    lifetimes = [(first.get(b, 0), last.get(b, 0), plan.buffers[b].nbytes) for b in inter]
    offsets, plan.arena_size = plan_offsets(lifetimes)
    for buf, offset in zip(inter, offsets, strict=True):
        plan.buffers[buf].index = offset
    for view, root in views.items():
        plan.buffers[view].index = plan.buffers[root].index


def lower_graph(
    graph: Graph,
    run_subgraph: SubgraphRunner,
    input_offset: int = 0,
    options: dict[str, str] | None = None,
    ge_options: Options | None = None,
) -> Plan:
    """The plan of ``graph`` (shapes must be concrete). ``input_offset`` maps subgraph Data
    nodes carrying ``_parent_node_index`` onto their inputs; ``options`` are the compile
    options lowerings may read (``LowerContext.options``); ``ge_options`` the record kernels
    are generated with (default ``current_options()``)."""
    if ge_options is None:
        ge_options = current_options()
    order, cyclic = topological_order(graph)
    if cyclic:
        raise GraphError(describe_cycle(graph, cyclic))
    plan = Plan()
    port_buf: dict[tuple[int, int], int] = {}
    inputs: dict[int, int] = {}
    results = {(id(n), p) for n, p in graph_outputs(graph)}
    exported: set[int] = set()  # buffers holding graph outputs, so far
    lone = _lone_results(graph)
    for node in order:
        op = get_op(node.type)
        if op.io == "input":
            slot = _subgraph_slot(node, input_offset)
            if slot in inputs:  # two inputs bound to one slot would leave a buffer unbound
                raise GraphError(f"graph '{graph.name}' has two input nodes with index {slot}")
            buf = plan.add_buffer(spec_of(node.output_desc(0), BufferKind.INPUT, slot))
            inputs[slot] = port_buf[(id(node), 0)] = buf
        elif op.io == "output":
            continue
        elif node.type == "Const":
            port_buf[(id(node), 0)] = _const_buffer(plan, node)
        elif (id(node), 0) in results and (id(node), 0) not in lone:
            _lower_node(node, op, plan, port_buf, run_subgraph, options, ge_options)
        elif (
            root := _view_source(node, plan, port_buf, exported, (id(node), 0) in results)
        ) is not None:
            port_buf[(id(node), 0)] = _add_view(plan, node, root)
        else:
            _lower_node(node, op, plan, port_buf, run_subgraph, options, ge_options)
        exported.update(port_buf[key] for key in _ports(node) if key in results)
    if sorted(inputs) != list(range(len(inputs))):
        raise GraphError(
            f"graph '{graph.name}' input indexes {sorted(inputs)} must be 0..{len(inputs) - 1}"
        )
    plan.inputs = [inputs[i] for i in range(len(inputs))]
    _bind_outputs(graph, plan, port_buf)
    _plan_memory(plan)
    return plan


def _lone_results(graph: Graph) -> set[tuple[int, int]]:
    """The graph outputs whose value, followed up through ``VIEW_OPS`` nodes, no other graph
    output shares: only those may be views (``_bind_outputs`` writes each in place). Where two
    outputs share one value under two shapes, each keeps its own copy kernel (a view would
    leave one of them a host copy, which keeps both outputs out of direct result memory)."""
    results = [((id(n), p), _value_root(n, p)) for n, p in graph_outputs(graph)]
    roots = Counter(root for _, root in results)
    return {key for key, root in results if roots[root] == 1}


def _value_root(node: Node, port: int) -> tuple[int, int]:
    """The port whose value ``node``'s output ``port`` is, under ``VIEW_OPS`` reshapes."""
    while node.type in VIEW_OPS and node.inputs and node.inputs[0] is not None:
        node, port = node.inputs[0]
    return id(node), port


def _ports(node: Node) -> list[tuple[int, int]]:
    return [(id(node), port) for port in range(len(node.output_descs))]


def _bind_outputs(graph: Graph, plan: Plan, port_buf: dict[tuple[int, int], int]) -> None:
    """Output buffers. An output whose value is an intermediate, or a view of one, that no
    other output shares is written in place: its buffer becomes output ``j`` and the
    intermediate's other views (and the intermediate, for a view) become views of it, so they
    move with the caller's output memory each run (``x @ w`` reshaped is one matmul into the
    result). Anything else is copied into an output buffer of its own: a value two outputs
    share, a constant, and an input or a view of one (a result is fresh memory the caller
    owns, pooled and reused between runs, and may be donated back as an input: it must never
    be the bytes of a caller's input array)."""
    views = plan.views
    sources = [port_buf[(id(n), p)] for n, p in graph_outputs(graph)]
    uses = Counter(views.get(src, src) for src in sources)
    for j, src in enumerate(sources):
        root = views.get(src, src)
        spec = plan.buffers[src]
        if plan.buffers[root].kind is BufferKind.INTERMEDIATE and uses[root] == 1:
            _reroot(views, root, src)
            spec.kind, spec.index = BufferKind.OUTPUT, j
            plan.outputs.append(src)
            continue
        dst = plan.add_buffer(BufferSpec(BufferKind.OUTPUT, j, spec.shape, spec.dtype))
        plan.tasks.append(_copy_task(f"output_{j}", src, dst))
        plan.outputs.append(dst)


def _reroot(views: dict[int, int], root: int, new: int) -> None:
    """Make ``new`` (``root`` or one of its views) the buffer that ``root`` and its other
    views are views of (no chains)."""
    if new == root:
        return
    del views[new]
    for view, source in views.items():
        if source == root:
            views[view] = new
    views[root] = new
