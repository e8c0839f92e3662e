"""Lowering a Python custom-op node into the task plan: the ``execute`` (eager) path and the
``declare_launch_args`` (AnnotatedArgs) path.

A custom op's ``OpDef.lowering`` is ``lower_custom_op``: when the compiler builds a plan (once
per compile for static shapes, once per distinct input-shape set for ``-1`` dims) it makes one
instance of the op's implementation class for the node and lowers the node to

* a ``custom_op`` host task (``ge.runtime.host_ops.HOST_OPS``) when the class has ``execute``:
  data like every task of a plan (the op type, its attributes, which buffers are its inputs,
  outputs and ``Tensor`` attributes, each one's data type and format), between the compiled
  kernels of the built-ins around it. ``Plan.bind()`` makes its function through
  ``make_execute`` (the runtime names it by string: it never imports ``ge.custom_op``), which
  on every run lends the callback
  ``ge.runtime.Tensor`` views of the node's input buffers and an ``EagerOpExecutionContext``
  whose outputs are the plan's own output buffers (no copy; see
  ``ge.custom_op.execution_context``), calls ``execute``, waits for the launches it queued on
  ``get_stream()``, then invalidates everything it lent. What it lends is built once per
  plan and re-pointed for each run (``ge.custom_op._loan``): a run costs a few dozen Python
  calls, most of them the callback's own;
* ``KernelTask``s when the class has ``declare_launch_args`` (preferred over ``execute``):
  the callback runs here, once per plan, with an ``AnnotatedArgsContext``
  (``ge.custom_op.annotated_args``); each launch it declares becomes a kernel task like a
  built-in's, whose input/output/workspace slots the plan patches with its buffers' addresses
  on every run. No Python runs per execution. An output that writes an input in place
  (``mutates_args``) gets the input's bytes copied in after the launches, as
  ``make_output_ref_input`` gives the execute path.

The node records which in ``_custom_task_args_mode`` (``"annotated_args"`` or
``"eager_execute"``), as GE records the refresh mode at compile time.

Failures name the node: an exception from the callback becomes ``GeError`` "node <name>
failed: <Op> (<module.Class>.execute) raised <Type>: <message>", a kernel it launched that
failed (a refused view of memory that is not live, an error inside the kernel) "... a kernel
it launched failed: ...". ``Session`` prefixes "RunGraph failed; graph_id=N; ".

The stream: each thread that runs plans has one ``_InlineStream``, a ``ge.runtime.Stream``
whose work runs at once on the thread that queues it (failures are kept and reported by
``synchronize``, later work is skipped behind one, as on any stream). A launch on it is
therefore ordered exactly where the callback makes it, inside the plan, in ``run_graph`` on
the caller's thread and in ``run_graph_with_stream_async`` on the user's stream's worker, and
"waiting for it" costs nothing.

Decision (ours): one implementation instance per node per plan, made when the plan is built
(``compile`` and ``declare_launch_args`` of the same plan see the same instance, and so does
every ``execute`` of it); concurrent runs of one plan share it, as GE's holder is shared. The
task carries that instance as a ``hint`` parameter (an object of this process, dropped when a
plan is written); a task without one (a copy of the data) gets an instance of the class the
registry holds for its op type when it is bound, and bind refuses a type with no registered
``execute``. Offline models never hold the task (``ge.runtime._om_write`` refuses it, naming
the node and suggesting ``declare_launch_args``): a model runs no Python callback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.custom_op._loan import LentTensor, Loan, LoanSpec
from ge.custom_op.context import _EXECUTE, _bound
from ge.custom_op.execution_context import EagerOpExecutionContext, output_slot
from ge.custom_op.registry import OpImplDescriptor, get_registered_op_impl_for_type
from ge.error import GeError, GeTypeError
from ge.graph.types import AttrValueType, DataType, Format
from ge.ops.infer import producer_desc
from ge.ops.layout import input_groups, output_groups
from ge.ops.schema import PortKind
from ge.runtime import _launch, memory
from ge.runtime.format import ExpandDimsType, StorageFormat
from ge.runtime.plan import BufferSpec, HostTask, host_task
from ge.runtime.shape import StorageShape
from ge.runtime.stream import Stream
from ge.runtime.types import Tensor, TensorPlacement

if TYPE_CHECKING:
    from ge.compiler.lower import LowerContext

__all__ = [
    "PATH",
    "TASK_ARGS_MODE",
    "WATCH",
    "Watch",
    "execute_task",
    "lower_custom_op",
    "make_execute",
]

# the node attribute naming the path its task plan runs it by, as GE records it at compile
# time: "annotated_args" (declared launches, addresses refreshed per run) or "eager_execute"
TASK_ARGS_MODE = "_custom_task_args_mode"

VT = AttrValueType
_ON_DEVICE = TensorPlacement.ON_DEVICE_HBM
_KIND = {PortKind.REQUIRED: "required", PortKind.OPTIONAL: "optional", PortKind.DYNAMIC: "dynamic"}


@dataclass
class Watch:
    """What ``ge.custom_op.opcheck`` observes of the custom-op nodes lowered and run while it
    is set in ``WATCH`` (on this thread/context): how often ``compile`` and
    ``declare_launch_args`` ran, and per ``execute`` run, each output it made as (origin
    dims, storage dims, data type)."""

    compiles: int = 0
    declares: int = 0
    executes: list[list[tuple[list[int], list[int], DataType]]] = field(default_factory=list)


WATCH: ContextVar[Watch | None] = ContextVar("ge_custom_op_watch", default=None)
# the path lowering must take, when set ("eager_execute" or "annotated_args"): opcheck runs a
# class that has both through each; None: declare_launch_args when the class has it
PATH: ContextVar[str | None] = ContextVar("ge_custom_op_path", default=None)


class _InlineStream(Stream):
    """A stream whose work runs at once on the thread that queues it (see the module doc)."""

    def submit(
        self,
        fn: Callable[[], Any],
        name: str = "",
        *,
        always: bool = False,
        settle: Callable[[], Any] | None = None,
    ) -> None:
        if not callable(fn):
            raise GeTypeError(f"fn must be callable, got {type(fn).__name__}")
        try:
            if self._error is None or always:
                fn()
        except Exception as e:  # reported at synchronize(), as a worker thread would
            if self._error is None:
                self._error, self._failed_task = e, name or getattr(fn, "__name__", "task")
        finally:
            if settle is not None:
                settle()

    def synchronize(self) -> None:
        error, name = self._error, self._failed_task
        self._error, self._failed_task = None, ""
        if error is not None:
            detail = error if isinstance(error, GeError) else f"{type(error).__name__}: {error}"
            raise GeError(f"{name} failed: {detail}") from error

    def query(self) -> bool:
        return True

    def _reset(self) -> None:
        self._error, self._failed_task = None, ""


_launch.INLINE_STREAMS.add(_InlineStream)  # its plain-int launches run without a task


class _PerThread(threading.local):
    stream: _InlineStream | None = None


_THREAD = _PerThread()


def _thread_stream() -> _InlineStream:
    stream = _THREAD.stream
    if stream is None:
        stream = _THREAD.stream = _InlineStream()
    return stream


# --- what lowering prepares -------------------------------------------------------------------
@dataclass
class _Port:
    buffer: int
    data_type: DataType
    format: Format


@dataclass
class _Prepared:
    """What lowering reads of the node (``compile``, ``declare_launch_args`` and the data of
    the ``custom_op`` task are made from it)."""

    inputs: list[_Port]  # present input instances, in port order
    ir_inputs: list[tuple[str, list[int]]]  # per IR input: kind, its instance indexes
    outputs: list[_Port]
    ir_outputs: list[list[int]]  # per IR output: its instance indexes
    attr_names: list[str]
    attr_kinds: list[AttrValueType]
    attr_values: list[Any]  # plain values; a Tensor attr holds its constant's _Port


def _view(addr: int, spec: BufferSpec, port: _Port) -> Tensor:
    dims = [int(d) for d in spec.shape]
    fmt = StorageFormat(port.format, port.format, ExpandDimsType())
    return Tensor._view(
        addr,
        StorageShape(dims, dims),
        port.data_type,
        fmt,
        TensorPlacement.ON_DEVICE_HBM,
        size=spec.nbytes,
    )


def _attr_value(kind: AttrValueType, value: Any) -> Any:
    """An attribute's node value as the callback receives it (a copy of the plain value)."""
    if kind is VT.VT_DATA_TYPE:
        return DataType(value)
    if kind is VT.VT_LIST_DATA_TYPE:
        return [DataType(v) for v in value]
    if kind is VT.VT_FLOAT:
        return float(value)
    if kind is VT.VT_LIST_FLOAT:
        return [float(v) for v in value]
    if kind is VT.VT_LIST_LIST_INT:
        return [[int(v) for v in row] for row in value]
    if isinstance(value, (list, tuple)):
        return list(value)
    return value


def _instantiate(impl: OpImplDescriptor, node_name: str) -> Any:
    try:
        return impl.cls()
    except Exception as e:
        raise GeError(
            f"node {node_name}: creating {impl.module_name}.{impl.class_name}() for op "
            f"{impl.op_type} raised {type(e).__name__}: {e}"
        ) from e


def _prepare(ctx: LowerContext, impl: OpImplDescriptor, instance: Any) -> _Prepared:
    node, op = ctx.node, ctx.op
    groups = input_groups(op, node)
    present: dict[int, int] = {}  # port -> instance index
    inputs: list[_Port] = []
    for port, buf in enumerate(ctx.inputs):
        if buf is None:
            continue
        desc = producer_desc(node, port)
        present[port] = len(inputs)
        inputs.append(_Port(buf, desc._data_type, desc._format))
    ir_inputs = [
        (_KIND[spec.kind], [present[p] for p in ports if p in present])
        for spec, ports in zip(op.inputs, groups, strict=True)
    ]
    outputs = [
        _Port(buf, desc._data_type, desc._format)
        for buf, desc in zip(ctx.outputs, node.output_descs, strict=True)
    ]
    attr_values: list[Any] = []
    for spec in op.attrs:
        value = ctx.attrs[spec.name]
        if spec.type is VT.VT_TENSOR:
            array = value.numpy()
            attr_values.append(_Port(ctx.constant(array), value.data_type, Format.FORMAT_ND))
        else:
            attr_values.append(_attr_value(spec.type, value))
    return _Prepared(
        inputs=inputs,
        ir_inputs=ir_inputs,
        outputs=outputs,
        ir_outputs=output_groups(op, node),
        attr_names=[a.name for a in op.attrs],
        attr_kinds=[a.type for a in op.attrs],
        attr_values=attr_values,
    )


def _lent(port: _Port, spec: BufferSpec) -> LentTensor:
    """How a run lends the buffer of ``port`` (of ``spec``): (buffer, dims, data type,
    format, bytes)."""
    fmt = StorageFormat(port.format, port.format, ExpandDimsType())
    return (port.buffer, [int(d) for d in spec.shape], port.data_type, fmt, spec.nbytes)


def lower_custom_op(ctx: LowerContext) -> list[Any] | None:
    """The ``OpDef.lowering`` of every Python custom op (see the module docstring)."""
    impl = get_registered_op_impl_for_type(ctx.op.type)
    if impl is None:
        return None  # the reference says what is missing when the plan runs
    instance = _instantiate(impl, ctx.node.name)
    prepared = _prepare(ctx, impl, instance)
    if "compilable" in impl.interfaces:
        _compile(ctx, impl, instance, prepared)
    path = PATH.get()
    declare = "annotated_args" in impl.interfaces and path != "eager_execute"
    if declare:  # preferred over execute: no Python per run
        tasks = _declare(ctx, impl, instance, prepared)
        ctx.node.set_attr(TASK_ARGS_MODE, "annotated_args")
        return tasks
    if "eager_execute" not in impl.interfaces:
        return None
    ctx.node.set_attr(TASK_ARGS_MODE, "eager_execute")
    return [execute_task(ctx, prepared, instance)]


def _no_execute(*args: Any, **kwargs: Any) -> None:
    raise GeError("the implementation has no execute")


def _compile(ctx: LowerContext, impl: OpImplDescriptor, instance: Any, p: _Prepared) -> None:
    """Run ``compile`` once for this plan, on Tensors with shapes and no memory (addr 0)."""
    from ge.custom_op.compile_context import CompilePlatformInfo, OpCompileContext  # noqa: PLC0415
    from ge.ge_global.geapi import global_options  # noqa: PLC0415

    args, kwargs, lent, _ = _callback_args(ctx, p)
    options = global_options() if ctx.options is None else ctx.options
    compile_ctx, platform_info = OpCompileContext(options), CompilePlatformInfo()
    where = f"{ctx.op.type} ({impl.module_name}.{impl.class_name}.compile)"
    try:
        with _bound("compile", compile_ctx, platform_info):
            result = instance.compile(*args, **kwargs)
    except Exception as e:
        raise GeError(f"node {ctx.node.name}: {where} raised {type(e).__name__}: {e}") from e
    finally:
        compile_ctx._invalidate()
        platform_info._invalidate()
        for tensor in lent:
            tensor._invalidate()
    if result is not None:
        raise GeError(
            f"node {ctx.node.name}: {where} must return None, got {type(result).__name__}"
        )
    watch = WATCH.get()
    if watch is not None:
        watch.compiles += 1


def _callback_args(
    ctx: LowerContext, p: _Prepared
) -> tuple[list[Any], dict[str, Any], list[Tensor], list[Tensor]]:
    """The positional and keyword arguments of ``compile`` / ``declare_launch_args``: Tensors
    with shapes and no memory (addr 0; a ``Tensor`` attribute is a view of its constant), then
    everything lent (to invalidate afterwards) and the output instances' Tensors."""
    specs = ctx.plan.buffers
    inputs = [_view(0, specs[q.buffer], q) for q in p.inputs]
    outputs = [_view(0, specs[q.buffer], q) for q in p.outputs]
    lent = inputs + outputs
    values: list[Any] = []
    for kind, value in zip(p.attr_kinds, p.attr_values, strict=True):
        if kind is VT.VT_TENSOR:
            tensor = _view(ctx.plan.const_addrs[value.buffer], specs[value.buffer], value)
            lent.append(tensor)
            values.append(tensor)
        else:
            values.append(_attr_value(kind, value))
    args = _ir_args(p.ir_inputs, inputs)
    args += [
        [outputs[k] for k in instances] if spec.dynamic else outputs[instances[0]]
        for spec, instances in zip(ctx.op.outputs, p.ir_outputs, strict=True)
    ]
    return args, dict(zip(p.attr_names, values, strict=True)), lent, outputs


def _declare(ctx: LowerContext, impl: OpImplDescriptor, instance: Any, p: _Prepared) -> list[Any]:
    """Run ``declare_launch_args`` once for this plan; its launches become ``KernelTask``s
    whose address slots the plan patches on every run (see ``ge.custom_op.annotated_args``)."""
    from ge.custom_op.annotated_args import AnnotatedArgsContext  # noqa: PLC0415
    from ge.runtime.plan import BufferKind, kernel_task  # noqa: PLC0415

    node = ctx.node
    args, kwargs, lent, outputs = _callback_args(ctx, p)

    def new_workspace(size: int) -> int:
        spec = BufferSpec(BufferKind.INTERMEDIATE, 0, (size,), np.dtype(np.uint8))
        return ctx.plan.add_buffer(spec)

    ir_outputs = [
        ("dynamic" if spec.dynamic else "required", instances)
        for spec, instances in zip(ctx.op.outputs, p.ir_outputs, strict=True)
    ]
    declare_ctx = AnnotatedArgsContext(
        [q.buffer for q in p.inputs],
        [q.buffer for q in p.outputs],
        outputs,
        ir_outputs,
        new_workspace,
    )
    where = f"{ctx.op.type} ({impl.module_name}.{impl.class_name}.declare_launch_args)"
    try:
        with _bound("declare_launch_args", declare_ctx):
            result = instance.declare_launch_args(*args, **kwargs)
    except Exception as e:
        raise GeError(f"node {node.name}: {where} raised {type(e).__name__}: {e}") from e
    finally:
        declare_ctx._invalidate()
        for tensor in lent:
            tensor._invalidate()
    if result is not None:
        raise GeTypeError(
            f"node {node.name}: {where}: declare_launch_args must return None, got "
            f"{type(result).__name__}"
        )
    watch = WATCH.get()
    if watch is not None:
        watch.declares += 1
    if not declare_ctx.launches:
        raise GeError(
            f"node {node.name}: {where} declared no launch: call "
            f"get_declare_launch_args_ctx().add_launch(AnnotatedKernelLaunchInfo(...), args)"
        )
    tasks: list[Any] = []
    for launch in declare_ctx.launches:
        template = [value if kind == "scalar" else 0 for kind, value in launch.slots] or [0]
        patches = [(pos, buf) for pos, (kind, buf) in enumerate(launch.slots) if kind == "buffer"]
        task = kernel_task(node.name, launch.function, launch.block_dim, template, patches)
        task.explain = _no_explanation  # the op has no reference to explain a failure with
        tasks.append(task)
    # an output that writes an input in place (mutates_args) holds the input's bytes once the
    # launches ran, as make_output_ref_input gives the execute path: the ops after it read it
    for src, dst in _ref_buffers(ctx, p):
        if ctx.plan.buffers[src].nbytes != ctx.plan.buffers[dst].nbytes:
            raise GeError(
                f"node {node.name}: {where}: an output that writes an input in place "
                f"(mutates_args) must have the input's byte size: "
                f"{ctx.plan.buffers[dst].nbytes} vs {ctx.plan.buffers[src].nbytes}"
            )
        tasks.append(host_task(f"{node.name}:ref", "copy", [src, dst]))
    return tasks


def _ref_buffers(ctx: LowerContext, p: _Prepared) -> list[tuple[int, int]]:
    """(input buffer, output buffer) of each output instance that writes an input in place."""
    from ge.custom_op.proto import get_registered_op_proto  # noqa: PLC0415

    proto = get_registered_op_proto(ctx.op.type)
    if proto is None or not proto.mutates_args:
        return []
    names = [spec.name for spec in ctx.op.inputs]
    pairs = []
    for input_name, out_index in proto.mutates_args:
        instances = p.ir_inputs[names.index(input_name)][1]
        outs = p.ir_outputs[out_index]
        pairs += [
            (p.inputs[k].buffer, p.outputs[j].buffer)
            for k, j in zip(instances, outs, strict=False)  # an absent input: no pair
        ]
    return pairs


def _no_explanation(views: list[np.ndarray]) -> str | None:
    return None


def _ir_args(ir_inputs: list[tuple[str, list[int]]], inputs: list[Tensor]) -> list[Any]:
    """The positional input arguments of a schema-bound callback, per IR input."""
    args: list[Any] = []
    for kind, instances in ir_inputs:
        tensors = [inputs[k] for k in instances]
        args.append(tensors if kind == "dynamic" else (tensors[0] if tensors else None))
    return args


# --- the task as data ---------------------------------------------------------------------------
def execute_task(ctx: LowerContext, p: _Prepared, instance: Any) -> HostTask:
    """The node's ``custom_op`` host task: data (``ge.runtime.host_ops.HOST_OPS``), with the
    implementation ``instance`` lowering made as its ``hint``. Its buffers are the present
    input instances, the output instances, then each ``Tensor`` attribute's constant."""
    ports = [*p.inputs, *p.outputs]
    attrs: dict[str, Any] = {}
    for name, kind, value in zip(p.attr_names, p.attr_kinds, p.attr_values, strict=True):
        if kind is VT.VT_TENSOR:
            attrs[name] = len(ports)
            ports.append(value)
        else:
            attrs[name] = _attr_data(kind, value)
    n_in = len(p.inputs)
    return host_task(
        ctx.node.name,
        "custom_op",
        [q.buffer for q in ports],
        op_type=ctx.op.type,
        node=ctx.node.name,
        attrs=attrs,
        inputs=[list(instances) for _, instances in p.ir_inputs],
        outputs=[[n_in + j for j in instances] for instances in p.ir_outputs],
        dtypes=[int(q.data_type) for q in ports],
        formats=[int(q.format) for q in ports],
        output_names=[str(name) for name in ctx.node.output_names],
        instance=instance,
    )


def _attr_data(kind: AttrValueType, value: Any) -> Any:
    """An attribute's value as task data: a data type as its ``DataType`` value, lists as
    lists (what the callback gets back is ``_attr_value`` of it)."""
    if kind is VT.VT_DATA_TYPE:
        return int(value)
    if kind is VT.VT_LIST_DATA_TYPE:
        return [int(v) for v in value]
    if kind is VT.VT_LIST_LIST_INT:
        return [[int(v) for v in row] for row in value]
    if isinstance(value, (list, tuple)):
        return list(value)
    return value


# --- binding the task: the function a run calls ------------------------------------------------
def make_execute(
    params: dict[str, Any], buffers: list[tuple[int, BufferSpec]]
) -> Callable[[np.ndarray], None]:
    """The function of a ``custom_op`` host task (``ge.runtime.host_ops.HOST_OPS``: the runtime
    imports this by name when it binds one): one run of the node's ``execute`` on the run's
    buffer addresses. The implementation is the task's ``instance`` hint, else a new instance
    of the class registered for ``op_type``; ``GeError`` if none with ``execute`` is, or if
    the task's wiring does not fit the op's IR."""
    from ge.ops.registry import find_op  # noqa: PLC0415

    op_type, node = str(params["op_type"]), str(params["node"])
    instance = params["instance"]
    impl = get_registered_op_impl_for_type(op_type)
    if instance is not None:
        impl = getattr(type(instance), "__ge_op_impl_descriptor__", impl)
    op = find_op(op_type)
    if impl is None or op is None or "eager_execute" not in impl.interfaces:
        raise GeError(
            f"host op custom_op: node {node} runs custom op {op_type!r} by its execute, and "
            f"no implementation with execute is registered for it in this process: register "
            f"its prototype and a class with @register_op_impl(op_type={op_type!r})"
        )
    if instance is None:
        instance = _instantiate(impl, node)
    return _Execute(params, buffers, op, impl, instance).run


class _Execute:
    """A bound ``custom_op`` task: everything a run needs, fixed at bind, and the loans not
    lent right now (``ge.custom_op._loan``: built once, re-pointed per run)."""

    __slots__ = (
        "attr_kinds",
        "attr_names",
        "fixed_args",
        "fixed_kwargs",
        "inline",
        "input_bufs",
        "ir_inputs",
        "legacy",
        "loan_spec",
        "loans",
        "method",
        "output_bufs",
        "output_names",
        "output_nbytes",
        "where",
    )

    def __init__(
        self,
        params: dict[str, Any],
        buffers: list[tuple[int, BufferSpec]],
        op: Any,
        impl: OpImplDescriptor,
        instance: Any,
    ) -> None:
        from ge.custom_op._signature import is_legacy_execute  # noqa: PLC0415

        lent, ir_inputs, n_in, n_out = _wiring(params, buffers, op)
        self.where = f"{op.type} ({impl.module_name}.{impl.class_name}.execute)"
        self.method = getattr(instance, "execute", _no_execute)
        self.legacy = is_legacy_execute(type(instance))
        self.ir_inputs = ir_inputs
        self.input_bufs = [b for b, _ in buffers[:n_in]]
        self.output_bufs = [b for b, _ in buffers[n_in : n_in + n_out]]
        self.output_nbytes = [spec.nbytes for _, spec in buffers[n_in : n_in + n_out]]
        self.output_names = [str(name) for name in params["output_names"]]
        self.attr_names = [a.name for a in op.attrs]
        self.attr_kinds = [a.type for a in op.attrs]
        values: list[Any] = []
        tensor_attrs: dict[int, LentTensor] = {}
        for k, (name, kind) in enumerate(zip(self.attr_names, self.attr_kinds, strict=True)):
            value = params["attrs"][name]
            if kind is VT.VT_TENSOR:
                tensor_attrs[k] = lent[int(value)]
            values.append(None if kind is VT.VT_TENSOR else _attr_value(kind, value))
        slots = []
        for name, (_, dims, data_type, _, _) in zip(
            self.output_names, lent[n_in : n_in + n_out], strict=True
        ):
            slot = output_slot(name, 0, data_type, int(np.prod(dims, dtype=np.int64)))
            slots.append((name, slot.elements, slot.nbytes))
        self.loan_spec = LoanSpec(
            lent[:n_in],
            ir_inputs,
            lent[n_in : n_in + n_out],
            slots,
            self.attr_names,
            self.attr_kinds,
            values,
            tensor_attrs,
        )
        self.loans: list[Loan] = []
        # whether the callback's arguments are fixed (no dynamic input's list, no list
        # attribute: nothing the callback could mutate for the next run)
        self.fixed_args = all(kind != "dynamic" for kind, _ in ir_inputs)
        self.fixed_kwargs = not any(isinstance(v, list) for v in values)
        # the common case, called by run itself (one Python call fewer than _call): a
        # schema-bound execute whose arguments are fixed
        self.inline = self.fixed_args and self.fixed_kwargs and not self.legacy

    def run(self, addrs: np.ndarray) -> None:
        """One run of the node's ``execute``, the hot path of the execute path: take a loan
        (``ge.custom_op._loan``: the context and Tensors, built once per plan), point it at
        this run's buffers, call, check, expire it, and give it back unless the callback kept
        any of its objects. No local here refers to a lent object when the loan is closed
        (its reference counts decide whether it is lent again)."""
        stream = _THREAD.stream or _thread_stream()
        try:
            loan = self.loans.pop()
        except IndexError:
            loan = _new_loan(self)
        loan.open(addrs, stream._handle)
        try:
            if self.inline:  # _call written out
                token = _EXECUTE.set(loan.ctx)
                args, kwargs = loan.args or (), loan.kwargs
                try:
                    result = self.method(*args, **kwargs) if kwargs else self.method(*args)
                except Exception as e:
                    raise GeError(f"{self.where} raised {type(e).__name__}: {e}") from e
                finally:
                    _EXECUTE.reset(token)
                if result is not None:
                    raise GeError(f"{self.where} must return None, got {type(result).__name__}")
            else:
                _call(self, loan)
            if stream._error is not None:
                try:
                    stream.synchronize()
                except GeError as e:
                    raise GeError(f"{self.where}: a kernel it launched failed: {e}") from e
            if None in loan.ctx._produced or loan.ctx._refs or WATCH.get() is not None:
                _finish(self, loan.ctx, addrs)
        finally:
            if stream._error is not None:
                stream._reset()
            if loan.close():
                self.loans.append(loan)


def _wiring(
    params: dict[str, Any], buffers: list[tuple[int, BufferSpec]], op: Any
) -> tuple[list[LentTensor], list[tuple[str, list[int]]], int, int]:
    """How a run lends each of the task's buffers, the IR inputs' kinds and instance indexes,
    and how many buffers are inputs and outputs; ``GeError`` when the wiring does not fit
    ``op`` (a task whose op was registered again with other inputs, outputs or attributes)."""
    groups, out_groups = params["inputs"], params["outputs"]
    n_in = sum(len(g) for g in groups)
    n_out = sum(len(g) for g in out_groups)
    dtypes, formats = params["dtypes"], params["formats"]
    fits = (
        len(groups) == len(op.inputs)
        and len(out_groups) == len(op.outputs)
        and sorted(q for g in groups for q in g) == list(range(n_in))
        and sorted(q for g in out_groups for q in g) == list(range(n_in, n_in + n_out))
        and len(dtypes) == len(formats) == len(buffers)
        and len(params["output_names"]) == n_out
        and set(params["attrs"]) == {a.name for a in op.attrs}
    )
    if not fits:
        raise GeError(
            f"host op custom_op: node {params['node']}: its task does not fit op "
            f"{op.type}'s inputs, outputs and attributes (was the op registered again?)"
        )
    lent = [
        _lent(_Port(b, DataType(d), Format(f)), spec)
        for (b, spec), d, f in zip(buffers, dtypes, formats, strict=True)
    ]
    ir_inputs = [(_KIND[spec.kind], list(g)) for spec, g in zip(op.inputs, groups, strict=True)]
    return lent, ir_inputs, n_in, n_out


def _new_loan(p: _Execute) -> Loan:
    ir_inputs = p.ir_inputs
    args = (lambda inputs: tuple(_ir_args(ir_inputs, inputs))) if p.fixed_args else None
    return Loan.new(p.loan_spec, args)


def _call(p: _Execute, loan: Loan) -> None:
    ctx = loan.ctx
    try:
        if p.legacy:
            result = p.method(ctx)
        else:
            args = loan.args if loan.args is not None else _ir_args(p.ir_inputs, loan.inputs)
            kwargs = loan.kwargs if p.fixed_kwargs else _fresh_kwargs(p, loan)
            token = _EXECUTE.set(ctx)  # what _bound("execute", ctx) does, without its frame
            try:
                result = p.method(*args, **kwargs) if kwargs else p.method(*args)
            finally:
                _EXECUTE.reset(token)
    except Exception as e:
        raise GeError(f"{p.where} raised {type(e).__name__}: {e}") from e
    if result is not None:
        raise GeError(f"{p.where} must return None, got {type(result).__name__}")


def _fresh_kwargs(p: _Execute, loan: Loan) -> dict[str, Any]:
    """The attributes as this run receives them: list values copied, as the callback may
    mutate what it gets (``RuntimeAttrs`` reads the same copies)."""
    values = [
        value if kind is VT.VT_TENSOR else _attr_value(kind, value)
        for kind, value in zip(p.attr_kinds, loan.kwargs.values(), strict=True)
    ]
    loan.set_attr_values(values)
    return dict(zip(p.attr_names, values, strict=True))


def _finish(p: _Execute, ctx: EagerOpExecutionContext, addrs: np.ndarray) -> None:
    """Check that every output was made; copy the ones that refer to inputs."""
    if None in ctx._produced:
        missing = [
            f"{k} ('{name}')"
            for k, (made, name) in enumerate(zip(ctx._produced, p.output_names, strict=True))
            if made is None
        ]
        raise GeError(
            f"{p.where} returned without making output {', '.join(missing)}: call "
            f"get_execute_ctx().malloc_output_tensor(index, shape, format, dtype) or "
            f"make_output_ref_input(index, input_index) for every output"
        )
    watch = WATCH.get()
    if watch is not None:
        watch.executes.append(
            [
                (t.origin_shape.dims, t.storage_shape.dims, t.data_type)
                for t in ctx._produced
                if t is not None
            ]
        )
    for out, k in ctx._refs.items():
        src = int(addrs[p.input_bufs[k]])
        dst = int(addrs[p.output_bufs[out]])
        if src != dst:
            memory.memcpy_d2d(dst, src, p.output_nbytes[out])
