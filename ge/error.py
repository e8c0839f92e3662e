"""The exception family of `ge`.

Every error `ge` raises on purpose is a :class:`GeError`. GE-PY's ``ge.error.GeError`` is a
``RuntimeError`` and carries ``error_message``, ``api_name`` and ``context``; we keep that. The
subclasses also derive from the builtin that GE-PY documents for each case, so code written
against GE-PY (``except TypeError``) and code written against `ge` (``except ge.GeError``) both
work::

    >>> from ge.error import GeTypeError
    >>> issubclass(GeTypeError, TypeError) and issubclass(GeTypeError, GeError)
    True

Decision: because ``GeError`` itself is a ``RuntimeError`` (as in GE-PY), a ``GeTypeError`` is a
``RuntimeError`` too. Catch the narrow builtin when you mean it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AirFormatError",
    "GeAttributeError",
    "GeError",
    "GeIndexError",
    "GeTypeError",
    "GeValueError",
    "GraphError",
    "InferError",
    "NotSupportedError",
    "PassError",
    "RegistryError",
]


class GeError(RuntimeError):
    """Base of all `ge` errors.

    ``GeError("RunGraph", "shape mismatch", graph_id=2)`` reads
    ``"RunGraph failed; graph_id=2; shape mismatch"`` as in GE-PY; ``GeError("plain text")``
    is just the text.
    """

    def __init__(
        self, api_name_or_message: str, error_message: str | None = None, **context: Any
    ) -> None:
        if error_message is None:
            self.api_name = ""
            self.error_message = api_name_or_message
            self.context: dict[str, Any] = dict(context)
            text = api_name_or_message
        else:
            self.api_name = api_name_or_message
            self.error_message = error_message
            self.context = dict(context)
            parts = [f"{self.api_name} failed"]
            if context:
                parts.append(", ".join(f"{k}={v}" for k, v in context.items()))
            parts.append(error_message)
            text = "; ".join(parts)
        super().__init__(text)


class GeTypeError(GeError, TypeError):
    """A value of the wrong type was given (GE-PY documents ``TypeError``)."""


class GeIndexError(GeError, IndexError):
    """An index past the end of a sequence, where GE-PY lets Python's ``IndexError`` escape."""


class GeValueError(GeError, ValueError):
    """A value of the right type but out of range or inconsistent (``ValueError``)."""


class GeAttributeError(GeError, AttributeError):
    """A value lacks what GE-PY reads from it (GE-PY lets Python's own ``AttributeError`` escape,
    e.g. ``"'NoneType' object has no attribute '_builder'"``); the message starts with that text."""


class GraphError(GeError):
    """A graph edit or query failed: absent node, bad port, duplicate name (``RuntimeError``)."""


class AirFormatError(GeError):
    """An AIR file could not be written or read (``RuntimeError``, as GE-PY raises)."""


class InferError(GeValueError):
    """An op's inputs or attributes do not fit its shape/dtype rule (``ValueError``)."""


class PassError(GeError):
    """A fusion pass raised or reported failure while a graph was compiled (``RuntimeError``);
    the graph is left as it was before that pass ran."""


class RegistryError(GeValueError):
    """An op definition conflicts with one already registered, or is malformed (``ValueError``)."""


class NotSupportedError(GeTypeError):
    """``ge.jit`` has no rule for a numpy function, ufunc, method or operator on traced values
    (``ge.jit.NotSupportedError`` is this class): ``ge.jit does not support numpy.<name>
    (...); supported: see `ge.jit.numpy_support()```. A ``TypeError``, as numpy's own "no
    implementation found" is."""
