"""Where a Python custom op runs, and the error for where it cannot run (yet).

A custom op runs inside compiled task plans (``Session.run_graph``,
``run_graph_with_stream_async``, ``@ge.jit``): its ``OpDef.lowering`` is ``lower`` (the work is
in ``ge.custom_op._eager``). Everywhere else ge would run the op's numpy *reference* instead:
the reference interpreter (``eval_graph``, graphs whose shapes depend on input values),
constant folding, and plans of an implementation that has neither ``execute`` nor
``declare_launch_args``. There the reference raises ``CustomOpNotImplementedError`` (a
``GeError`` and a ``NotImplementedError``) naming the op, the implementation class and what is
missing, or says that no implementation is registered at all. Constant folding treats the error
as "cannot fold" and leaves the node alone (so ``execute`` never runs at compile time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ge.error import GeError
from ge.ops.schema import ExecContext

__all__ = ["CustomOpNotImplementedError", "lower", "missing_execution", "not_implemented_reference"]


class CustomOpNotImplementedError(GeError, NotImplementedError):
    """A Python custom op was asked to run where the path it needs does not exist (yet)."""


def lower(ctx: Any) -> Any:
    """The ``OpDef.lowering`` of a Python custom op (``ge.custom_op._eager``, imported on the
    first plan that holds one)."""
    from ge.custom_op._eager import lower_custom_op  # noqa: PLC0415

    return lower_custom_op(ctx)


def missing_execution(op_type: str) -> GeError:
    """The error for running ``op_type`` outside a plan that can (not raised: the caller
    raises it)."""
    from ge.custom_op.registry import get_registered_op_impl_for_type  # noqa: PLC0415

    impl = get_registered_op_impl_for_type(op_type)
    if impl is None:
        return GeError(
            f"Python custom op '{op_type}' has no implementation: register a class with "
            f"@ge.custom_op.register_op_impl(op_type='{op_type}') defining execute or "
            f"declare_launch_args"
        )
    source = f"'{op_type}' ({impl.module_name}.{impl.class_name}, interfaces {impl.interfaces})"
    if "eager_execute" in impl.interfaces or "annotated_args" in impl.interfaces:
        return CustomOpNotImplementedError(
            f"Python custom op {source} runs only inside compiled task plans "
            f"(Session.run_graph, run_graph_with_stream_async, ge.jit); not implemented yet: "
            f"running it on the reference interpreter (eval_graph, constant folding, graphs "
            f"whose shapes depend on input values)"
        )
    return CustomOpNotImplementedError(
        f"Python custom op {source} cannot run: its implementation has neither execute nor "
        f"declare_launch_args"
    )


def not_implemented_reference(op_type: str) -> Callable[[ExecContext], Any]:
    """The ``OpDef.reference`` of a Python custom op: raises ``missing_execution``."""

    def reference(ctx: ExecContext) -> Any:
        raise missing_execution(op_type)

    reference.__qualname__ = f"custom_op_reference[{op_type}]"
    return reference
