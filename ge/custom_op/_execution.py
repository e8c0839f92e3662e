"""What running a Python custom op does today: it says clearly what is missing.

Prototypes and implementations register, nodes build and infer, graphs add and compile; the
three execution paths (``execute`` run eagerly per run, ``compile`` and ``declare_launch_args``
recorded into the task plan) are the next increment of issue #13. Until then the op's
reference rule, which the compiler and the reference interpreter call to run a node without a
kernel, raises ``CustomOpNotImplementedError`` (a ``GeError`` and a ``NotImplementedError``)
naming the op, the implementation class and the path that is not there yet, or says that no
implementation is registered at all. Constant folding treats the error as "cannot fold" and
leaves the node alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ge.error import GeError
from ge.ops.schema import ExecContext

__all__ = ["CustomOpNotImplementedError", "missing_execution", "not_implemented_reference"]

_PATHS = (
    ("annotated_args", "declare_launch_args"),
    ("eager_execute", "execute"),
)


class CustomOpNotImplementedError(GeError, NotImplementedError):
    """A Python custom op was asked to run, and the path it needs does not exist yet."""


def missing_execution(op_type: str) -> GeError:
    """The error for running ``op_type`` now (not raised: the caller raises it)."""
    from ge.custom_op.registry import get_registered_op_impl_for_type  # noqa: PLC0415

    impl = get_registered_op_impl_for_type(op_type)
    if impl is None:
        return GeError(
            f"Python custom op '{op_type}' has no implementation: register a class with "
            f"@ge.custom_op.register_op_impl(op_type='{op_type}') defining execute or "
            f"declare_launch_args"
        )
    method = next(m for interface, m in _PATHS if interface in impl.interfaces)
    return CustomOpNotImplementedError(
        f"Python custom op '{op_type}' ({impl.module_name}.{impl.class_name}, "
        f"interfaces {impl.interfaces}) cannot run: not implemented yet: {method} path "
        f"(ge.custom_op registers prototypes and implementations; running them is the next "
        f"increment)"
    )


def not_implemented_reference(op_type: str) -> Callable[[ExecContext], Any]:
    """The ``OpDef.reference`` of a Python custom op: raises ``missing_execution``."""

    def reference(ctx: ExecContext) -> Any:
        raise missing_execution(op_type)

    reference.__qualname__ = f"custom_op_reference[{op_type}]"
    return reference
