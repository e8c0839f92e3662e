"""Fixtures shared by the compiler's tests."""

from __future__ import annotations

import pytest

from ge.runtime import _launcher


@pytest.fixture(params=["launcher", "task-by-task"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run plans through the native launcher (where this machine has it) or task by task."""
    if request.param == "launcher" and not _launcher.available():
        pytest.skip("no native launcher on this machine")
    if request.param == "task-by-task":
        monkeypatch.setattr(_launcher, "available", lambda: False)
    return str(request.param)
