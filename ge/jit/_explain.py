"""How loudly ``ge.jit`` explains its retraces: ``Options.jit_explain`` (``GE_JIT_EXPLAIN``).

Retrace notices go to the ``ge.jit`` logger at ``INFO`` by default: they are for whoever
asks (``logging.basicConfig(level=logging.INFO)``, or a handler on ``ge.jit``), and Jupyter
does not paint them red as it does warnings. ``GE_JIT_EXPLAIN=warn`` logs them at
``WARNING``, which Python's last-resort handler prints with no logging set up.

Decisions (ours): the setting takes ``info`` or ``warn`` (case and surrounding blanks
ignored; unset or empty is ``info``). It is a field of the ``ge.options.Options`` record,
read like every ``GE_*`` variable, but the record keeps its text as given: any other value
logs the notice at ``WARNING`` together with a line naming the variable, what it takes and
what it got, so a typo neither hides the notices nor fails the user's call (a logging knob
must never break a computation). It is read at each retrace (retraces are rare and costly
anyway), not on the call path, from the record in force then (``current_options()``: the
innermost ``using_options`` block, else the environment).
"""

from __future__ import annotations

import logging

from ge.options import Options, current_options

__all__ = ["ENV", "explain_level"]

ENV = Options.variables()["jit_explain"]

_LEVELS = {"": logging.INFO, "info": logging.INFO, "warn": logging.WARNING}


def explain_level(options: Options | None = None) -> int:
    """The ``logging`` level of retrace notices, from ``options.jit_explain`` (default: the
    record in force, ``current_options()``)."""
    text = (current_options() if options is None else options).jit_explain
    level = _LEVELS.get(text.strip().lower())
    if level is None:
        logging.getLogger("ge.jit").warning(
            "ge.jit: %s must be info or warn (or unset), got %r; logging at WARNING", ENV, text
        )
        return logging.WARNING
    return level
