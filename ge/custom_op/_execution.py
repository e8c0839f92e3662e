"""Where a Python custom op runs, and the error for an op that cannot run.

A custom op runs inside compiled task plans (``Session.run_graph``,
``run_graph_with_stream_async``, ``@ge.jit``): its ``OpDef.lowering`` is ``lower`` (the work is
in ``ge.custom_op._eager``). Everywhere ge runs an op's numpy *reference* instead (the
reference interpreter ``eval_graph``, values that decide shapes at run time) its reference runs
the same implementation through a one-node compiled graph (``ge.custom_op._reference``).
Constant folding never runs it (the ``OpDef`` is not ``foldable``). A prototype without an
implementation raises ``missing_execution``'s error wherever it would run.
"""

from __future__ import annotations

from typing import Any

from ge.error import GeError

__all__ = ["CustomOpNotImplementedError", "lower", "missing_execution"]


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
    return CustomOpNotImplementedError(
        f"Python custom op {source} cannot run: its implementation has neither execute nor "
        f"declare_launch_args"
    )
