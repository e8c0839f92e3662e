"""Option dicts of ``ge_initialize``, ``Session`` and ``add_graph``: all keys and values are
strings (GE passes them to C as strings). Unknown keys are accepted, as GE accepts them;
known keys with a documented value set are checked here so a typo fails early.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ge.error import GeTypeError, GeValueError

__all__ = ["KNOWN_OPTIONS", "check_options"]


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


def check_options(options: Any, what: str, *, allow_empty: bool = True) -> dict[str, str]:
    """A validated copy of ``options`` (``None`` is empty)."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise GeTypeError(f"{what} must be a dict of str to str, got {type(options).__name__}")
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise GeTypeError(f"{what}: keys and values must be str, got {key!r}: {value!r}")
        known = KNOWN_OPTIONS.get(key)
        if known is not None and not known[0](value):
            raise GeValueError(f"{what}: option {key!r} must be {known[1]}, got {value!r}")
    if not options and not allow_empty:
        raise GeTypeError(f"{what} must not be empty")
    return dict(options)
