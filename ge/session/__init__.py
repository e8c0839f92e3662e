"""``ge.session``: run graphs (GE-PY's session module: ``Session`` and ``GeError``)."""

from ge.error import GeError
from ge.session.session import Session

__all__ = ["GeError", "Session"]
