"""Objects lent to a custom-op callback (contexts, argument builders, attribute views): usable
while the callback runs, refused with GE's ``RuntimeError`` once it has returned — never a
crash, never a stale read."""

from __future__ import annotations

from ge.error import GeError

__all__ = ["EXPIRED", "Borrowed"]

EXPIRED = "Borrowed native object has expired"


class Borrowed:
    """Base of the lent objects: ``_check()`` at every use, ``_invalidate()`` when the
    callback returns (subclasses that lend more objects invalidate those too)."""

    __slots__ = ("_alive",)
    _expired_message = EXPIRED

    def __init__(self) -> None:
        self._alive = True

    def _check(self) -> None:
        if not self._alive:
            raise GeError(self._expired_message)

    def _invalidate(self) -> None:
        self._alive = False
