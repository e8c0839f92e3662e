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


def interleaved_medians(
    fns: dict[str, Callable[[], object]],
    repeat: int = 20,
    rounds: int = 5,
    warmup: int = 5,
    settle: float = 0.05,
) -> dict[str, float]:
    """Median seconds of each function over ``repeat`` timed calls, taken in ``rounds``
    rounds: a round runs each function ``warmup`` times untimed, then its share of timed
    calls back to back. The machine's drift (memory bandwidth on a shared VM swings by a
    fifth from minute to minute) then hits every column alike, so ratios stay fair. Before
    each function's turn the process idles ``settle`` seconds, so the previous function's
    thread pool goes quiet (Numba's OpenMP threads spin for milliseconds after each call,
    and a spinning thread takes a core from the next function's workers)."""
    names = list(fns)
    per_round = max(1, -(-repeat // rounds))
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn = fns[name]
            time.sleep(settle)
            for _ in range(warmup):
                fn()
            for _ in range(per_round):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def jax_or_none() -> object | None:
    try:
        import jax  # noqa: PLC0415

        return jax
    except ImportError:
        return None
