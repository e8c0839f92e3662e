"""``EagerExecuteOp``: the optional abstract base of GE-PY's legacy implementation classes.

Implementation classes need no base (``register_op_impl`` reflects their methods), but code
written for GE-PY's older API subclasses ``ge.custom_op.EagerExecuteOp`` and overrides
``execute``. The base is abstract, so ``register_op_impl`` refuses it and any subclass that
leaves ``execute`` out ("register_op_impl expects a concrete class").

    >>> import inspect
    >>> inspect.isabstract(EagerExecuteOp)
    True
"""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["EagerExecuteOp"]


class EagerExecuteOp(abc.ABC):
    """Base of an eager implementation: subclasses define ``execute``."""

    @abc.abstractmethod
    def execute(self, ctx: Any) -> None:
        """Run the op (GE-PY's base raises ``NotImplementedError`` with no message)."""
        raise NotImplementedError
