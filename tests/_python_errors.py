"""What a check GE-PY leaves to Python itself must look like in ge."""

from __future__ import annotations

import re

from ge.error import GeAttributeError


def assert_like_python_attribute_error(error: BaseException) -> None:
    """GE-PY lets Python's own ``AttributeError`` escape (``"'int' object has no attribute
    'encode'"``); ours is a ``GeAttributeError`` whose message starts with the same text and
    which carries the same ``name`` and ``obj`` as Python's would."""
    assert isinstance(error, GeAttributeError), type(error).__mro__
    found = re.match(r"'(\w+)' object has no attribute '(\w+)'", str(error))
    assert found is not None, str(error)
    assert (type(error.obj).__name__, error.name) == found.groups()
