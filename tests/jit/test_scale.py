"""Tracing a ``@ge.jit`` function grows linearly with the ops its Python loop unrolls into
(the tracer appends nodes; it never copies the graph per op), checked by counting calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ge.jit import jit
from tests._counting import growth


def _traced_loop(n: int) -> Callable[[], Any]:
    steps = n // 4

    def f(x: Any) -> Any:
        for _ in range(steps):
            x = np.exp(x * 0.999) + 0.5
        return x.sum(axis=-1)

    jitted: Any = jit(f)
    x = np.ones((3, 4), np.float32)
    return lambda: jitted.trace(x)


def test_tracing_a_python_loop_is_linear() -> None:
    ratio, at_n, at_4n = growth(_traced_loop, 300)
    assert ratio < 4.6, (ratio, at_n.total, at_4n.total)
