"""State shared by the custom-op registries: one lock, and the per-thread discovery flag.

One re-entrant lock guards the prototype registry (``proto``), the implementation registry
(``registry``) and plugin discovery (``bootstrap``) together, so a discovery batch, a rollback
or a user's ``register_op`` never interleave with another thread's.
"""

from __future__ import annotations

import threading

__all__ = ["LOCK", "discovering"]

LOCK = threading.RLock()


class _Flags(threading.local):
    discovering = False


_FLAGS = _Flags()


def discovering() -> bool:
    """Whether this thread is inside a discovery batch (plugins are being loaded)."""
    return _FLAGS.discovering


def set_discovering(value: bool) -> bool:
    """Set the flag; returns the previous value (restore it when done)."""
    previous = _FLAGS.discovering
    _FLAGS.discovering = value
    return previous
