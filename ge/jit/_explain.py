"""How loudly ``ge.jit`` explains its retraces: ``GE_JIT_EXPLAIN``.

Retrace notices go to the ``ge.jit`` logger at ``INFO`` by default: they are for whoever
asks (``logging.basicConfig(level=logging.INFO)``, or a handler on ``ge.jit``), and Jupyter
does not paint them red as it does warnings. ``GE_JIT_EXPLAIN=warn`` logs them at
``WARNING``, which Python's last-resort handler prints with no logging set up.

Decisions (ours): the variable takes ``info`` or ``warn`` (case and surrounding blanks
ignored; unset or empty is ``info``). Any other value logs the notice at ``WARNING``
together with a line naming the variable, what it takes and what it got: a typo neither hides
the notices nor fails the user's call (a logging knob must never break a computation). It
is read at each retrace (retraces are rare and costly anyway), not on
the call path. ``ge.options.Options`` has no field for it yet, so it is read from the
environment here.
"""

from __future__ import annotations

import logging
import os

__all__ = ["ENV", "explain_level"]

ENV = "GE_JIT_EXPLAIN"

_LEVELS = {"": logging.INFO, "info": logging.INFO, "warn": logging.WARNING}


def explain_level() -> int:
    """The ``logging`` level of retrace notices, from ``GE_JIT_EXPLAIN``."""
    text = os.environ.get(ENV, "")
    level = _LEVELS.get(text.strip().lower())
    if level is None:
        logging.getLogger("ge.jit").warning(
            "ge.jit: %s must be info or warn (or unset), got %r; logging at WARNING", ENV, text
        )
        return logging.WARNING
    return level
