"""Shared timing helpers for the benchmark scripts (medians over repeats, after warm-up)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeat: int = 20, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def jax_or_none() -> object | None:
    try:
        import jax  # noqa: PLC0415

        return jax
    except ImportError:
        return None
