"""numpy functions on traced values that build from existing ops (``np.swapaxes``, ``np.flip``, ...).

``FUNCTIONS`` maps a numpy function's ``__name__`` to a rule ``rule(anchor, *args, **kwargs)``
(``anchor`` is a TensorHolder among the arguments); ``TensorHolder.__array_function__`` looks
rules up here after its own table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FUNCTIONS: dict[str, Callable[..., Any]] = {}
