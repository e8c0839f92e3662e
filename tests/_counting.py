"""Counting Python calls, for tests that catch a cost growing faster than the graph without
timing anything: the number of calls made at size n and at 4n are compared (a linear pass
makes about 4x as many; a quadratic one 16x), and the whole-graph walks of a pass are counted
(``topological_order`` calls on a graph of at least a given size)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ge.graph import _verify


@dataclass
class Calls:
    total: int = 0
    walks: list[int] = field(default_factory=list)  # size of each graph topologically sorted

    def big_walks(self, at_least: int) -> int:
        return sum(1 for size in self.walks if size >= at_least)


def count_calls(fn: Callable[[], Any]) -> tuple[Any, Calls]:
    """``fn()``'s result and the Python calls (and generator resumptions) it made."""
    calls = Calls()
    walk = _verify.topological_order.__code__

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        calls.total += 1
        if frame.f_code is walk:
            calls.walks.append(len(frame.f_locals["graph"]._nodes))

    sys.setprofile(hook)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
    return result, calls


def growth(make: Callable[[int], Callable[[], Any]], n: int) -> tuple[float, Calls, Calls]:
    """Calls made by ``make(4 * n)()`` over those made by ``make(n)()`` (``make`` prepares
    outside the count), with both counts."""
    small = make(n)
    _, at_n = count_calls(small)
    large = make(4 * n)
    _, at_4n = count_calls(large)
    return at_4n.total / at_n.total, at_n, at_4n
