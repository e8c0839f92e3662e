"""Option dicts of ``ge_initialize``, ``Session`` and ``add_graph`` (GE_ERRORS.md §4, §5).

Each caller checks that its argument is a dict itself (GE-PY's texts differ: ``"option must be
a dictionary"``, ``"options must be a dictionary"``, ``"Ge init config must be a
dictionary"``). Then :func:`encode_options` checks every key and value is a ``str``: GE-PY
calls ``.encode()`` on each, key then value, so the first that is not one raises Python's own
``AttributeError`` ``"'<type>' object has no attribute 'encode'"``. Ours is an
:class:`OptionEncodeError`, a :class:`~ge.error.GeAttributeError` with that text first (and
``name``/``obj`` set as Python's own), naming the entry after it; it is also a ``TypeError``,
what ``ge`` raised before.

Unknown keys are accepted, as GE accepts them. Known keys with a documented value set are
checked by :func:`invalid_option`; the callers report a bad value as GE's C call failing
(``"GEInitialize failed; ..."``, ``"AddGraph failed; graph_id=N; ..."``), as a
``GeValueError`` (so ``RuntimeError`` and ``ValueError``). Decision: GE accepts any value at
``Session(options)`` (its create fails only when allocation does), so a bad session option is
reported by the first ``add_graph``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ge.error import GeAttributeError

__all__ = ["KNOWN_OPTIONS", "OptionEncodeError", "encode_options", "invalid_option"]


class OptionEncodeError(GeAttributeError, TypeError):
    """An option key or value that is not a ``str`` (GE-PY: Python's ``AttributeError`` from
    ``.encode()``); a ``GeError`` and a ``TypeError`` too."""


def _int_at_least(low: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return int(value) >= low
        except ValueError:
            return False

    return check


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda value: value in choices


# key -> (check, what a valid value is)
KNOWN_OPTIONS: dict[str, tuple[Callable[[str], bool], str]] = {
    "ge.exec.deviceId": (_int_at_least(-1), "an integer >= -1"),
    "ge.session_device_id": (_int_at_least(0), "an integer >= 0"),
    "ge.graphRunMode": (_one_of("0", "1"), '"0" (inference) or "1" (training)'),
    "ge.deterministic": (_one_of("0", "1"), '"0" or "1"'),
    "ge.exec.enableDump": (_one_of("0", "1"), '"0" or "1"'),
    "ge.oo.level": (_one_of("O0", "O1", "O2", "O3"), "O0, O1, O2 or O3"),
    "stream_sync_timeout": (_int_at_least(-1), "an integer >= -1 (milliseconds)"),
    "event_sync_timeout": (_int_at_least(-1), "an integer >= -1 (milliseconds)"),
}


def encode_options(options: Mapping[Any, Any], what: str) -> dict[str, str]:
    """A copy of ``options`` (a dict, checked by the caller) whose keys and values are all
    ``str``; else :class:`OptionEncodeError` for the first that is not, key before value."""
    for key, value in options.items():
        for item in (key, value):
            if not isinstance(item, str):
                error = OptionEncodeError(
                    f"'{type(item).__name__}' object has no attribute 'encode': {what} keys "
                    f"and values must be str, got {key!r}: {value!r}"
                )
                error.name, error.obj = "encode", item
                raise error
    return dict(options)


def invalid_option(options: Mapping[str, str], what: str = "option") -> str | None:
    """Why the first known key in ``options`` has a value outside its documented set (e.g.
    ``"option 'ge.graphRunMode' must be ..., got '2'"``), or ``None`` if all are valid."""
    for key, value in options.items():
        known = KNOWN_OPTIONS.get(key)
        if known is not None and not known[0](value):
            return f"{what} {key!r} must be {known[1]}, got {value!r}"
    return None
