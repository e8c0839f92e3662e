"""How ``ge.passes`` recognises and calls the hooks users write on pass classes.

``pattern`` marks a method of a ``PatternFusionPass`` subclass as an expression-style pattern
(GE_REFERENCE.md §6): the class-definition checks and the pass runner look for the marker
attribute ``__ge_pattern__`` on the function, never at its name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["PATTERN_MARK", "is_pattern_method", "pattern"]

PATTERN_MARK = "__ge_pattern__"

F = TypeVar("F", bound=Callable[..., Any])


def pattern(fn: F) -> F:
    """Mark ``def name(self, inputs)`` as one pattern of its ``PatternFusionPass``."""
    setattr(fn, PATTERN_MARK, True)
    return fn


def is_pattern_method(value: object) -> bool:
    return callable(value) and getattr(value, PATTERN_MARK, False) is True
