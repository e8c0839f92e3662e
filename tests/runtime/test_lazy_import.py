"""``ge.runtime`` imports its names and submodules on first use: a process that only loads and
runs offline models pulls in neither the IR (``ge.graph``) nor the compiler."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import ge.runtime

_CHILD = textwrap.dedent(
    """
    import sys
    import ge.runtime
    assert not [m for m in sys.modules if m.startswith(("numpy", "ge.runtime.", "ge.graph"))]
    from ge.runtime import live_bytes, memory
    assert memory.contains(0, 1) is False and live_bytes() >= 0
    assert "ge.graph" not in sys.modules, "memory pulled in the IR"
    assert ge.runtime.TensorDesc.__module__ == "ge.runtime.types"  # the views need ge.graph
    assert "ge.graph" in sys.modules
    print("ok")
    """
)


def test_import_ge_runtime_defers_every_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_every_public_name_resolves_and_unknown_names_raise() -> None:
    for name in ge.runtime.__all__:
        assert getattr(ge.runtime, name) is not None
    assert set(ge.runtime.__all__) <= set(dir(ge.runtime))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ge.runtime.nope  # noqa: B018
