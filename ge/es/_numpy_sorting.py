"""numpy's scans, sorts and selections on traced values (``np.cumsum``, ``np.sort``, ...).

``FUNCTIONS`` maps a numpy function's ``__name__`` to a rule ``rule(anchor, *args, **kwargs)``
in the form of ``ge.es._numpy_api`` (whose ``_register`` checks keywords the same way);
``TensorHolder.__array_function__`` looks rules up in both tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["FUNCTIONS"]

FUNCTIONS: dict[str, Callable[..., Any]] = {}
