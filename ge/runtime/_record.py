"""Plain record classes for the runtime's data (plans, model records, launch ranges): what
``@dataclass`` gave them (``__eq__`` and ``__repr__`` by field, frozen-ness) without its cost
at import, which every fresh process loading a plan paid (~0.5-1 ms a class: ``dataclass``
generates and compiles each method's source).

A subclass lists its fields in ``__match_args__`` (in ``__init__``'s order, as a dataclass
sets it), holds them in ``__slots__`` and writes its own ``__init__``. Decisions (ours,
matching the dataclasses they replace): equality compares the fields as a tuple and only
between instances of the same class (else ``NotImplemented``); a mutable record is
unhashable; a frozen one hashes its fields and refuses assignment with an ``AttributeError``
(the base of ``dataclasses.FrozenInstanceError``); ``__repr__`` is ``Name(field=value, ...)``;
``replace`` is ``dataclasses.replace``; pickling and ``copy`` copy a mutable record's slots
without calling ``__init__`` (as for a dataclass: a plan's copy registers no second release
of its memory) and rebuild a frozen one through ``__init__``.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar

__all__ = ["FrozenRecord", "Record"]

_R = TypeVar("_R", bound="Record")


def _one(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The reader of a record's fields as a tuple when it has fewer than two."""
    if not names:
        return lambda _record: ()
    read = attrgetter(names[0])
    return lambda record: (read(record),)


class Record:  # noqa: PLW1641  (unhashable on purpose, as a dataclass with eq)
    """A mutable record: fields are its ``__match_args__`` (unhashable: defining ``__eq__``
    sets ``__hash__`` to ``None``)."""

    __slots__ = ()
    __match_args__: tuple[str, ...] = ()

    _values: Callable[[Any], tuple[Any, ...]] = staticmethod(lambda _record: ())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = cls.__match_args__
        # one C call reads every field (a generator over getattr cost ~4x as much per compare)
        cls._values = staticmethod(attrgetter(*names) if len(names) > 1 else _one(names))

    def _fields(self) -> tuple[Any, ...]:
        return self._values(self)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values(self) == self._values(other)

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__match_args__)
        return f"{type(self).__qualname__}({body})"

    def replace(self: _R, **changes: Any) -> _R:
        """A copy with ``changes`` (field name -> value), as ``dataclasses.replace`` made one;
        ``TypeError`` naming a field the record does not have."""
        unknown = sorted(set(changes) - set(self.__match_args__))
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.replace: no field {', '.join(unknown)} "
                f"(fields: {', '.join(self.__match_args__)})"
            )
        values = {n: changes.get(n, getattr(self, n)) for n in self.__match_args__}
        return type(self)(**values)


class FrozenRecord(Record):
    """An immutable record: ``__init__`` sets its fields with ``_set``; hashable by value."""

    __slots__ = ()

    # ``self._set(name, value)``: object's own assignment, bound (no Python frame per field)
    _set = object.__setattr__

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values(self))  # through __init__: assignment is refused

    def __hash__(self) -> int:
        return hash(self._values(self))
