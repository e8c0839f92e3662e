"""What every numpy rule family of ``ge.es`` shares: the keyword-checking registrar and the
helpers the rules build with (an operand as a holder, axes checked as numpy checks them,
reshape/transpose/slice/gather of a holder).

``rule_registrar(table)`` gives a ``register(*names)`` decorator: the rule goes into
``table`` under those names, wrapped so that a keyword numpy takes but the rule does not
(``out=``, ``where=``, ``casting=``, ...) raises ``GeTypeError`` naming it, and fills the
wrapper's ``support`` attribute with a ``RuleInfo`` (what ``ge.es.numpy_rules`` reports, so
``ge.jit.numpy_support()`` reads no private names).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es.tensor_holder import TensorHolder, innermost

__all__ = ["FUNCTIONS", "Rule", "RuleInfo", "keywords_of", "rule_registrar"]

# _numpy_api's table: the rules of _numpy_api, _numpy_shape, _numpy_linalg and _numpy_stats
# (tensor_holder merges it as the _numpy_api family)
FUNCTIONS: dict[str, Callable[..., Any]] = {}

Rule = Callable[..., Any]
F = TypeVar("F", bound=Rule)


@dataclass(frozen=True)
class RuleInfo:
    """What one numpy rule covers (``ge.es.numpy_rules.RuleInfo``).

    ``status``: ``"supported"``, or ``"refused"`` for a rule that always raises, saying
    ``why``; ``keywords``: the keyword arguments the rule takes (those numpy takes and the
    rule does not raise ``GeTypeError``), ``None`` where the rule checks its own."""

    status: str = "supported"
    keywords: frozenset[str] | None = None
    why: str = ""


_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def keywords_of(rule: Rule) -> frozenset[str] | None:
    """The keywords ``rule(anchor, ...)`` takes (its first parameter is the anchor); ``None``
    if it takes ``**kwargs`` or has no signature."""
    try:
        parameters = list(inspect.signature(rule).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters if p.kind in _KEYWORD_KINDS)


def refused(rule: F, why: str) -> F:
    """Mark ``rule`` (one that always raises) as refused, saying ``why``."""
    rule.support = RuleInfo("refused", None, why)  # type: ignore[attr-defined]
    return rule


def rule_registrar(table: dict[str, Rule]) -> Callable[..., Callable[[F], F]]:
    """A decorator factory registering rules into ``table`` (each rule family has its own):
    ``@register("name", ...)`` puts the rule under those names, and a keyword it lacks raises
    ``GeTypeError`` naming it."""

    def register(*names: str) -> Callable[[F], F]:
        return functools.partial(_checked_into, table, names)

    return register


def _checked_into(table: dict[str, Rule], names: tuple[str, ...], rule: F) -> F:
    signature = inspect.signature(rule)
    label = names[0]

    @functools.wraps(rule)
    def checked(anchor: TensorHolder, *args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(anchor, *args, **kwargs)
        except TypeError as error:
            unknown = sorted(k for k in kwargs if k not in signature.parameters)
            if unknown:
                raise GeTypeError(
                    f"np.{label} of a traced value does not take "
                    f"{', '.join(repr(k) for k in unknown)}"
                ) from None
            raise GeTypeError(f"np.{label} of a traced value: {error}") from None
        return rule(anchor, *args, **kwargs)

    checked.support = RuleInfo("supported", keywords_of(rule))  # type: ignore[attr-defined]
    for name in names:
        table[name] = checked
    return rule


# --- helpers -------------------------------------------------------------------------------------
def _index(x: TensorHolder, key: tuple[Any, ...]) -> TensorHolder:
    """``x[key]`` (tensor_holder's indexing, looked up at call time: the families are imported
    while tensor_holder is, before or after its indexing helpers)."""
    from ge.es import tensor_holder  # noqa: PLC0415

    return tensor_holder._index(x, key)


def _h(anchor: TensorHolder, value: Any) -> TensorHolder:
    """``value`` as a holder of ``anchor``'s graph (numpy's dtype for a Python scalar/list)."""
    if isinstance(value, TensorHolder):
        return innermost(anchor, value)._operand(value)
    array = np.asarray(value)
    if array.dtype == np.float64 and not isinstance(value, np.ndarray) and array.ndim == 0:
        array = np.asarray(value)
    return anchor._operand(array)


def _known(x: TensorHolder, what: str) -> tuple[int, ...]:
    shape = x.shape
    if any(d < 0 for d in shape):
        raise GeValueError(f"np.{what} of a traced value needs a known shape, got {shape}")
    return shape


def _axis(axis: Any, ndim: int, what: str) -> int:
    """``axis`` normalised to ``[0, ndim)``; out of range raises numpy's message as GeValueError."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise GeTypeError(f"np.{what}: axis must be an int, got {axis!r}")
    if not -ndim <= int(axis) < ndim:
        raise GeValueError(
            f"np.{what}: axis {int(axis)} is out of bounds for an array of dimension {ndim}"
        )
    return int(axis) % ndim


def _axes(axis: Any, ndim: int, what: str) -> list[int]:
    if axis is None:
        return list(range(ndim))
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    axes = [_axis(a, ndim, what) for a in items]
    if len(set(axes)) != len(axes):
        raise GeValueError(f"np.{what}: repeated axis in {axis!r}")
    return axes


def _reshape(x: TensorHolder, shape: Sequence[int]) -> TensorHolder:
    return x._op("Reshape", x, x._ints(list(shape)))


def _transpose(x: TensorHolder, perm: Sequence[int]) -> TensorHolder:
    if list(perm) == list(range(x.ndim)):
        return x
    return x._op("Transpose", x, x._ints(list(perm)))


def _slice(x: TensorHolder, axis: int, start: int, stop: int, step: int = 1) -> TensorHolder:
    key: list[Any] = [slice(None)] * x.ndim
    key[axis] = slice(start, stop, step)
    return _index(x, tuple(key))


def _gather(x: TensorHolder, indices: Any, axis: int) -> TensorHolder:
    idx = x._operand(np.asarray(indices, dtype=np.int64))
    return x._op("GatherV2", x, idx, x._ints([axis]), attrs={"negative_index_support": True})


def _isnan(x: TensorHolder) -> TensorHolder:
    return x._op("NotEqual", x, x)


def _as_bool(x: TensorHolder) -> TensorHolder:
    return x if x.dtype == np.bool_ else x != 0


def _base(name: str) -> Callable[..., Any]:
    """A rule of tensor_holder's own table (read at call time: it imports this module)."""
    from ge.es import tensor_holder  # noqa: PLC0415

    return tensor_holder._FUNCTIONS[name]


def _concatenate(anchor: TensorHolder, parts: Sequence[Any], axis: int) -> TensorHolder:
    return _base("concatenate")(anchor, list(parts), axis=axis)  # type: ignore[no-any-return]


# --- keywords numpy honours that rules share -----------------------------------------------------
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _dtype_arg(dtype: Any, what: str) -> np.dtype[Any] | None:
    """``dtype=`` as a numpy dtype (``None`` stays ``None``); a bad one raises ``GeTypeError``."""
    if dtype is None:
        return None
    try:
        result: np.dtype[Any] = np.dtype(dtype)
    except TypeError:
        raise GeTypeError(f"np.{what}: dtype must be a numpy dtype, got {dtype!r}") from None
    return result


def _check_order(order: Any, what: str, accepted: tuple[str, ...] = ("C", "K", "A")) -> None:
    """Traced values are C-ordered: ``order='C'`` (and, where it only names the result's
    memory layout, ``'K'``/``'A'``) are accepted; ``'F'`` is refused, naming the keyword."""
    if order in accepted:
        return
    if order in ("F", "A", "K"):
        raise GeValueError(
            f"np.{what} of a traced value supports order={' or '.join(map(repr, accepted))}, "
            f"got order={order!r}: traced values are C-ordered"
        )
    raise GeValueError(f"np.{what}: order must be one of 'C', 'F', 'A', 'K', got {order!r}")


def _check_device(device: Any, what: str) -> None:
    if device not in (None, "cpu"):
        raise GeValueError(f"np.{what}: device must be None or 'cpu', got {device!r}")


def _cast_to(x: TensorHolder, dtype: np.dtype[Any], casting: Any, what: str) -> TensorHolder:
    """``x`` as ``dtype``, if numpy's ``casting`` rule allows it (numpy's message if not)."""
    if casting not in _CASTINGS:
        raise GeValueError(
            f"np.{what}: casting must be one of {', '.join(map(repr, _CASTINGS))}, got {casting!r}"
        )
    if not np.can_cast(x.dtype, dtype, casting):
        raise GeTypeError(
            f"np.{what}: cannot cast array data from dtype('{x.dtype}') to dtype('{dtype}') "
            f"according to the rule {casting!r}"
        )
    return x.astype(dtype)
