"""Memory planning: place intermediate buffers in one arena, reusing space by liveness.

Each intermediate buffer lives from the task that writes it to the last task that reads it.
Buffers are placed largest first at the lowest offset that does not overlap a buffer whose
lifetime intersects, 64-byte aligned; the arena's size is the reported peak intermediate
memory. Each buffer is checked only against the placed ones live in the same blocks of tasks,
so planning costs O(buffers x buffers live at once), not O(buffers^2) (25k buffers: minutes).

    >>> plan_offsets([(0, 1, 100), (1, 2, 100), (2, 3, 100)])
    ([0, 128, 0], 256)
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ALIGN", "plan_offsets"]

ALIGN = 64
_SPAN = 32  # tasks per liveness block (cost: the buffers live within a block of each other)


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def plan_offsets(buffers: Sequence[tuple[int, int, int]]) -> tuple[list[int], int]:
    """``buffers[i] = (first_task, last_task, nbytes)`` -> (offset of each, arena size)."""
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i][2], buffers[i][0]))
    offsets = [0] * len(buffers)
    # placed buffers by block of _SPAN tasks they are live in: a buffer then only looks at
    # those that share a block with it (the ones live near its time), not at every placed one
    blocks: dict[int, list[int]] = {}
    size = 0
    for i in order:
        start, end, nbytes = buffers[i]
        span = range(min(start, end) // _SPAN, max(start, end) // _SPAN + 1)
        near = {j for b in span for j in blocks.get(b, ())}
        busy = sorted(
            (offsets[j], offsets[j] + _align(buffers[j][2]))
            for j in near
            if not (buffers[j][1] < start or end < buffers[j][0])
        )
        offset = 0
        for lo, hi in busy:
            if offset + _align(nbytes) <= lo:
                break
            offset = max(offset, hi)
        offsets[i] = offset
        for b in span:
            blocks.setdefault(b, []).append(i)
        size = max(size, offset + _align(nbytes))
    return offsets, size
