"""How ``ge.jit`` reads its arguments' specification and keys them: ``static_argnums`` and
friends, the wrapped function's signature, and static values and scalars as the trace cache
sees them."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.error import GeTypeError

__all__ = [
    "Identity",
    "binding",
    "check_hashable",
    "has_varargs",
    "index_set",
    "name_set",
    "parameters",
    "scalar_key",
    "static_key",
]


def scalar_key(value: Any) -> Any:
    """A scalar as the cache sees it: floats by their bits, so ``-0.0`` is not ``0.0`` and
    every NaN is the same NaN."""
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    if isinstance(value, complex):
        return ("complex", scalar_key(value.real), scalar_key(value.imag))
    return (type(value).__name__, value)


def index_set(value: int | Sequence[int] | None, what: str) -> tuple[int, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, int) else _items(value)
    if items is None or not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise GeTypeError(f"{what} must be an int or a sequence of ints, got {value!r}")
    return items


def _items(value: object) -> tuple[Any, ...] | None:
    """``value``'s items if it is a sequence (not a string), else ``None``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, range)):
        return None
    return tuple(value)


def name_set(value: str | Sequence[str] | None, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else _items(value)
    if items is None or not all(isinstance(n, str) for n in items):
        raise GeTypeError(f"{what} must be a str or a sequence of str, got {value!r}")
    return items


def parameters(fun: Callable[..., Any]) -> list[inspect.Parameter]:
    try:
        return list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return []


def binding(fun: Callable[..., Any]) -> inspect.Signature | None:
    """The signature calls are checked against (``None`` if it cannot be read, or for a
    bound method's function, whose first argument the caller supplies)."""
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def has_varargs(fun: Callable[..., Any]) -> bool:
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters(fun))


_SMALL_ARRAY = 1024  # elements: attribute arrays up to this size are keyed by content


def static_key(value: Any) -> Any:
    """A static value as the cache sees it. A plain object hashed by identity (a method's
    ``self``, say) is also keyed by its simple attributes, so changing ``self.scale`` retraces
    instead of running a graph with the old value baked in. Attributes that are scalars,
    strings or tuples count by value, small arrays by content; large arrays by identity
    (mutate one in place and the trace is stale: pass it as an argument instead)."""
    hashing: Any = type(value).__hash__
    if hashing is not object.__hash__ or not hasattr(value, "__dict__"):
        return value
    fingerprint = tuple(sorted((k, _attribute_key(v)) for k, v in vars(value).items()))
    return Identity(value, fingerprint)


def _attribute_key(value: Any) -> Any:
    if isinstance(value, float):
        return scalar_key(value)
    if value is None or isinstance(value, (bool, int, complex, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, tuple):
        return tuple(_attribute_key(v) for v in value)
    if isinstance(value, np.ndarray) and value.size <= _SMALL_ARRAY:
        return ("array", value.dtype.str, value.shape, value.tobytes())
    return ("id", id(value))


class Identity:
    """An object keyed by identity plus a fingerprint of its attributes (holds the object,
    as the cache key must, so its id is not reused while the entry lives)."""

    __slots__ = ("fingerprint", "value")

    def __init__(self, value: Any, fingerprint: Any) -> None:
        self.value = value
        self.fingerprint = fingerprint

    def __hash__(self) -> int:
        return hash((id(self.value), self.fingerprint))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Identity)
            and other.value is self.value
            and other.fingerprint == self.fingerprint
        )

    def __repr__(self) -> str:
        return repr(self.value)


def check_hashable(function: str, name: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise GeTypeError(
            f"static argument {name} of {function} must be hashable (its value is part of the "
            f"cache key), got a {type(value).__name__}; pass arrays as dynamic arguments, "
            f"lists as tuples"
        ) from None
