"""The numpy ``reference`` of a Python custom op: its own implementation, run eagerly.

``ge.ops`` knows nothing of ``ge.custom_op`` (``ge.ops`` sits below it); instead the ``OpDef``
that ``register_op`` builds carries ``make_reference(op_type)`` as its ``reference``. Wherever
ge runs references — the reference interpreter (``ge.ops.eval_graph``), the shape-deciding
values a compiled graph evaluates (``eval_tensors``), a graph compiled without a plan, a
``@ge.jit`` call while its compile runs in the background — the node then runs by the same
path ``Session.run_graph`` gives it: a one-node graph compiled and run through
``ge.custom_op.eager_call`` (``declare_launch_args``' declared launches when the class has it,
else ``execute``, with ``compile`` before either), on the numpy inputs the interpreter holds.
So ``eval_graph`` and ``run_graph`` agree by construction, and the reference shares the eager
calls' cache: a second evaluation with the same input shapes, dtypes, attributes and output
counts runs the cached plan, and registering the prototype or the implementation again drops
the entry (the cache remembers the ``OpDef`` and ``OpImplDescriptor`` it was built from).

    >>> import numpy as np
    >>> from ge.runtime import Tensor, TensorDesc
    >>> from ge.custom_op import get_execute_ctx, register_op, register_op_impl
    >>> @register_op(op_type="DocRefIdentity")
    ... def identity(x: TensorDesc) -> TensorDesc:
    ...     return TensorDesc(x.shape, x.data_type)
    >>> @register_op_impl(op_type="DocRefIdentity")
    ... class Identity:
    ...     def execute(self, x: Tensor) -> None:
    ...         get_execute_ctx().make_output_ref_input(0, 0)
    >>> from ge.es import GraphBuilder
    >>> from ge.es.custom import DocRefIdentity
    >>> from ge.ops import eval_graph
    >>> b = GraphBuilder("g")
    >>> g = b.build_and_reset([DocRefIdentity(b.create_input(0, shape=[-1]))])
    >>> eval_graph(g, [np.arange(3, dtype=np.float32)])
    [array([0., 1., 2.], dtype=float32)]
    >>> from ge.custom_op import proto, registry
    >>> registry._unregister("DocRefIdentity"); proto._unregister("DocRefIdentity")

Decisions (ours):

* **``mutates_args``**: the interpreter's values are immutable (one array may feed several
  nodes, or be the caller's own input), so the op runs on a private copy of each mutated input
  and the output that writes it in place carries the new value; the input's value is unchanged
  for every other consumer. A graph whose result depends on another node reading the input
  after it was written in place has no defined order in ``run_graph`` either.
* **Never folded**: the ``OpDef`` is ``foldable=False``, so constant folding does not run the
  op at compile time even when only ``Const`` nodes feed it (its callbacks may launch kernels,
  be costly or have side effects; GE does not fold custom ops either). It runs in the plan.
* **No outputs**: an op without outputs returns nothing and runs nothing here, as in
  ``run_graph``, which drops it as dead code (such an op is pure: ``mutates_args`` needs an
  output).
* **Failures** are ``GeError``s naming the graph's node, the op and the method, e.g.
  ``node y failed: MyOp (mod.Impl.execute) raised ValueError: ...``; a prototype without an
  implementation raises "has no implementation: register a class ...".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from ge.error import GeError
from ge.ops.schema import ExecContext, OpDef

__all__ = ["make_reference", "run_reference"]

# the op types whose reference is running on this thread/context: a plan that could lower the
# node only to its reference again would recurse
_RUNNING: ContextVar[frozenset[str]] = ContextVar("ge_custom_op_reference", default=frozenset())


def make_reference(op_type: str) -> Callable[[ExecContext], Any]:
    """The ``OpDef.reference`` of the Python custom op ``op_type`` (``run_reference``)."""

    def reference(ctx: ExecContext) -> list[Any]:
        return run_reference(ctx)

    reference.__qualname__ = f"custom_op_reference[{op_type}]"
    return reference


def _output_counts(op: OpDef, ctx: ExecContext) -> list[int]:
    """Instances per IR output: the caller's counts, else what the flat output descs allow
    (one dynamic output takes what the others leave)."""
    if ctx.output_counts:
        return list(ctx.output_counts)
    dynamic = [i for i, spec in enumerate(op.outputs) if spec.dynamic]
    counts = [1] * len(op.outputs)
    if len(dynamic) == 1:
        counts[dynamic[0]] = len(ctx.outputs) - (len(op.outputs) - 1)
    elif dynamic:
        raise GeError(
            f"{op.type}: its reference needs the instance count of each dynamic output "
            f"(ExecContext.output_counts): {len(dynamic)} dynamic outputs share "
            f"{len(ctx.outputs)} output descs"
        )
    return counts


def _mutated_inputs(op: OpDef) -> set[str]:
    from ge.custom_op.proto import get_registered_op_proto  # noqa: PLC0415

    proto = get_registered_op_proto(op.type)
    return set() if proto is None else {name for name, _ in proto.mutates_args}


def _private(value: Any) -> Any:
    """A writable copy of an input the op writes in place (a list for a dynamic one)."""
    if isinstance(value, list):
        return [_private(v) for v in value]
    return None if value is None else np.array(value, copy=True)


def _call_values(op: OpDef, ctx: ExecContext, counts: Sequence[int]) -> tuple[Any, ...]:
    """The op's ``ge.es`` function, its bound arguments for this node, the parameters of its
    IR inputs and the parameter that takes the graph builder (ops with no or only optional
    inputs), as an eager call of it would bind them."""
    from ge.es._generator import _plan  # noqa: PLC0415  (ge.es sits above ge.custom_op's core)
    from ge.es._plugins import op_function  # noqa: PLC0415

    mutated = _mutated_inputs(op)
    values: dict[str, Any] = {}
    input_names: list[str] = []
    builder_param: str | None = None
    plan, _ = _plan(op)
    for entry in plan:
        if entry.role == "input":
            spec = op.inputs[entry.index]
            value = ctx.inputs[entry.index]
            if spec.dynamic:
                value = list(value)
            values[entry.name] = _private(value) if spec.name in mutated else value
            input_names.append(entry.name)
        elif entry.role == "count":
            values[entry.name] = counts[entry.index]
        elif entry.role == "attr":
            values[entry.name] = ctx.attrs[op.attrs[entry.index].name]
        elif entry.role == "builder":
            builder_param = entry.name
    return op_function(op), values, input_names, builder_param


def _renamed(error: GeError, eager_node: str, node: str) -> GeError:
    """``error`` naming the graph's node instead of the one-node graph's."""
    message = str(error)
    if not node or f"node {eager_node}" not in message:
        return error
    try:
        renamed = type(error)(message.replace(f"node {eager_node}", f"node {node}", 1))
    except Exception:  # an error class with another constructor: keep it as it is
        return error
    return renamed


def run_reference(ctx: ExecContext) -> list[Any]:
    """Run the custom op of ``ctx.op`` on ``ctx.inputs`` (numpy, per IR input) through its
    implementation; returns one array per IR output (a list for a dynamic one)."""
    from ge.custom_op import eager_call  # noqa: PLC0415

    op = ctx.op
    if not op.outputs:
        return []
    running = _RUNNING.get()
    if op.type in running:
        from ge.custom_op._execution import CustomOpNotImplementedError  # noqa: PLC0415

        raise CustomOpNotImplementedError(
            f"{op.type}: its implementation gives its task plan no task of its own (the "
            f"plan would run this reference again)"
        )
    counts = _output_counts(op, ctx)
    fn, values, input_names, builder_param = _call_values(op, ctx, counts)
    prepared = eager_call.prepare(op, fn, values, input_names)
    prepared.builder_param = builder_param
    token = _RUNNING.set(running | {op.type})
    try:
        entry = eager_call.lookup(prepared)
        try:
            outputs, _ = eager_call.run_entry(entry, prepared)
        except GeError as e:
            raise _renamed(e, entry.node_name, ctx.node) from e
    finally:
        _RUNNING.reset(token)
    results: list[Any] = []
    port = 0
    for spec, count in zip(op.outputs, counts, strict=True):
        group = outputs[port : port + count]
        results.append(group if spec.dynamic else group[0])
        port += count
    return results
