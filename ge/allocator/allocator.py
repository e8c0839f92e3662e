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

import numpy as np

from ge.error import GeTypeError, GeValueError

__all__ = ["Allocator", "MemBlock"]


def _check_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise GeTypeError(f"{what} must be an integer, got {type(value).__name__}")
    if value < 0:
        raise GeValueError(f"{what} must be >= 0, got {value}")
    return int(value)


class MemBlock:
    """A block of device memory: its address and size in bytes (read-only).

    A block from ``ge.runtime.malloc`` also knows its allocation's ``generation`` (a number
    never reused), so once it is freed it is refused by launches and by ``free`` even when a
    later allocation got the same address. A block made by hand has generation 0: only its
    range is checked.
    """

    __slots__ = ("_addr", "_generation", "_size")

    def __init__(self, addr: int, size: int) -> None:
        self._addr = _check_int(addr, "addr")
        self._size = _check_int(size, "size")
        self._generation = 0

    @classmethod
    def _of_allocation(cls, addr: int, size: int, generation: int) -> MemBlock:
        block = cls(addr, size)
        block._generation = generation
        return block

    @property
    def addr(self) -> int:
        return self._addr

    @property
    def size(self) -> int:
        return self._size

    @property
    def generation(self) -> int:
        """The generation of the allocation this block was made for (0: unknown)."""
        return self._generation

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemBlock):
            return NotImplemented
        return self._addr == other._addr and self._size == other._size

    def __hash__(self) -> int:
        return hash((self._addr, self._size))

    def __repr__(self) -> str:
        return f"MemBlock(addr={self._addr:#x}, size={self._size})"


class Allocator(ABC):
    """Serves device memory to GE: ``malloc(size) -> MemBlock`` and ``free(block)``."""

    @abstractmethod
    def malloc(self, size: int) -> MemBlock:
        """Return a block of at least ``size`` bytes of device memory."""

    @abstractmethod
    def free(self, block: MemBlock) -> None:
        """Give back a block this allocator returned."""
