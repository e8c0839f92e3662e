"""The examples in ge's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ge

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(ge.__path__, "ge.") if "proto" not in info.name
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
