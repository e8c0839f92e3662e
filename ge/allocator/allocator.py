"""``MemBlock`` and the abstract ``Allocator`` (GE_REFERENCE.md §5.6).

>>> from ge.allocator import Allocator, MemBlock
>>> from ge import runtime
>>> class DeviceAllocator(Allocator):
...     def malloc(self, size: int) -> MemBlock:
...         return runtime.malloc(size)
...     def free(self, block: MemBlock) -> None:
...         runtime.free(block)
>>> block = DeviceAllocator().malloc(64); block.size
64
>>> DeviceAllocator().free(block)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ge.error import GeTypeError, GeValueError

__all__ = ["Allocator", "MemBlock"]


def _plain(value: Any) -> Any:
    """A numpy integer as a Python int (same value); anything else as it is."""
    return int(value) if isinstance(value, np.integer) else value


def _check_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GeTypeError(f"{what} must be an integer, got {type(value).__name__}")
    if value < 0:
        raise GeValueError(f"{what} must be >= 0, got {value}")
    return value


class MemBlock:
    """A block of device memory: its address and size in bytes (read-only).

    As in GE-PY, ``MemBlock(addr, size)`` validates nothing (GE_ERRORS.md §7): whatever is
    given is kept (a numpy integer as the Python int of the same value). What uses a block
    checks it then: :meth:`checked` gives its address and size as non-negative ints, or raises
    ``GeTypeError``/``GeValueError`` naming the field (``Session`` does so for the blocks an
    external allocator serves).

    A block from ``ge.runtime.malloc`` also knows its allocation's ``generation`` (a number
    never reused), so once it is freed it is refused by launches and by ``free`` even when a
    later allocation got the same address. A block made by hand has generation 0: only its
    range is checked.
    """

    __slots__ = ("_addr", "_generation", "_size")

    def __init__(self, addr: int, size: int) -> None:
        self._addr = _plain(addr)
        self._size = _plain(size)
        self._generation = 0

    @classmethod
    def _of_allocation(cls, addr: int, size: int, generation: int) -> MemBlock:
        block = cls(addr, size)
        block._generation = generation
        return block

    @property
    def addr(self) -> int:
        return self._addr  # type: ignore[no-any-return]

    @property
    def size(self) -> int:
        return self._size  # type: ignore[no-any-return]

    @property
    def generation(self) -> int:
        """The generation of the allocation this block was made for (0: unknown)."""
        return self._generation

    def checked(self) -> tuple[int, int]:
        """``(addr, size)``, both non-negative ints (``bool`` refused); else ``GeTypeError``
        ``"addr must be an integer, got str"`` / ``GeValueError`` ``"size must be >= 0, got
        -1"``."""
        return _check_int(self._addr, "addr"), _check_int(self._size, "size")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemBlock):
            return NotImplemented
        return bool(self._addr == other._addr and self._size == other._size)

    def __hash__(self) -> int:
        return hash((self._addr, self._size))

    def __repr__(self) -> str:
        addr = self._addr
        shown = f"{addr:#x}" if isinstance(addr, int) and not isinstance(addr, bool) else repr(addr)
        return f"MemBlock(addr={shown}, size={self._size!r})"


class Allocator(ABC):
    """Serves device memory to GE: ``malloc(size) -> MemBlock`` and ``free(block)``.

    Abstract, as GE-PY's: ``Allocator()`` or a subclass lacking either method raises Python's
    ``TypeError`` ("Can't instantiate abstract class ..."); the base methods, reached through
    ``super()``, raise ``NotImplementedError`` with no text."""

    @abstractmethod
    def malloc(self, size: int) -> MemBlock:
        """Return a block of at least ``size`` bytes of device memory."""
        raise NotImplementedError

    @abstractmethod
    def free(self, block: MemBlock) -> None:
        """Give back a block this allocator returned."""
        raise NotImplementedError
