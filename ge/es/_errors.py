"""The errors of ``ge.es`` where GE-PY lets Python's own ``AttributeError`` escape.

GE-PY reads an attribute of a value it never checked (``type_str.value``,
``x.get_owner_builder()``, ``x._handle``, ``g._transfer_ownership_when_pass_as_subgraph``), so
a wrong value fails with Python's ``"'<type>' object has no attribute '<name>'"``
(GE_ERRORS.md §3.1, §3.5). We check first and raise a ``GeAttributeError`` whose message starts
with that text and then says what was expected. Decision: each is *also* the ``TypeError`` (a
value of the wrong type) or ``ValueError`` (a required input that is ``None``) these checks
raised before, so code written against GE-PY (``except AttributeError``) and code written
against ours (``except TypeError``) both catch it.
"""

from __future__ import annotations

from ge.error import GeAttributeError

__all__ = ["AttributeTypeError", "AttributeValueError", "no_attribute"]


class AttributeTypeError(GeAttributeError, TypeError):
    """A value of the wrong type, read as GE-PY reads it (``AttributeError``, ``TypeError``)."""


class AttributeValueError(GeAttributeError, ValueError):
    """A missing required value, read as GE-PY reads it (``AttributeError``, ``ValueError``)."""


def no_attribute(value: object, attribute: str) -> str:
    """Python's text for reading ``attribute`` of ``value``, which lacks it."""
    return f"'{type(value).__name__}' object has no attribute '{attribute}'"
