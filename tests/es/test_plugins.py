"""ES plugin loading (GE_ERRORS.md §3.6, §13.4): entry points of ``ge.es.plugins`` load at
``import ge.es``, register as ``ge.es.<name>``, and failures are printed, never raised."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

import ge.es
from ge.es import _plugins

PREFIX = "[{}] [ge.es._plugin_loader] "


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path with plugin modules; every name they register is removed."""
    (tmp_path / "h6_plug_ok.py").write_text(
        textwrap.dedent(
            """
            import sys
            from ge.es import GraphBuilder  # a plugin may use ge.es while it loads

            VALUE = 41

            def get_module():
                return sys.modules[__name__]

            def by_name():
                return "h6_plug_ok"

            def wrong():
                return 3
            """
        )
    )
    (tmp_path / "h6_plug_broken.py").write_text("import h6_no_such_dependency\n")
    (tmp_path / "h6_plug_raises.py").write_text("def get_module():\n    raise KeyError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names_before = list(ge.es.__all__)
    yield tmp_path
    for name in list(_plugins._EXTERNAL):
        _plugins._EXTERNAL.pop(name)
        sys.modules.pop(f"ge.es.{name}", None)
        ge.es.__dict__.pop(name, None)
    ge.es.__all__[:] = names_before
    for mod in ("h6_plug_ok", "h6_plug_broken", "h6_plug_raises"):
        sys.modules.pop(mod, None)


def _load(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> list[str]:
    monkeypatch.setattr(_plugins, "_entry_points", lambda: list(eps))
    return _plugins.load_all_plugins()


def _ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name, value, "ge.es.plugins")


@pytest.mark.parametrize("value", ["h6_plug_ok:get_module", "h6_plug_ok:by_name", "h6_plug_ok"])
def test_plugin_registers_as_ge_es_name(
    plugin_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
) -> None:
    assert _load(monkeypatch, _ep("h6fake", value)) == ["h6fake"]
    assert capsys.readouterr().out == PREFIX.format("INFO") + (
        "ES plugin 'h6fake' loaded: h6_plug_ok\n"
    )
    module = sys.modules["h6_plug_ok"]
    assert ge.es.h6fake is module  # type: ignore[attr-defined]
    assert sys.modules["ge.es.h6fake"] is module
    assert "h6fake" in ge.es.__all__
    assert "h6fake" in ge.es.list_plugins()
    assert ge.es.get_plugin("h6fake") is module
    from ge.es.h6fake import VALUE  # type: ignore[import-not-found]

    assert VALUE == 41


@pytest.mark.parametrize(
    ("ep", "text"),
    [
        (
            _ep("h6miss", "h6_plug_ok:no_such_attr"),
            "[ERROR] [ge.es._plugin_loader] Failed to load ES plugin 'h6miss': entry point "
            "'h6_plug_ok:no_such_attr' missing required attribute. Ensure the plugin's "
            "__init__.py defines get_module(). Error: ",
        ),
        (
            _ep("h6broken", "h6_plug_broken:get_module"),
            "[ERROR] [ge.es._plugin_loader] Failed to import ES plugin 'h6broken': No module "
            "named 'h6_no_such_dependency'. Check if all dependencies are installed.",
        ),
        (
            _ep("h6wrong", "h6_plug_ok:wrong"),
            "[ERROR] [ge.es._plugin_loader] Unexpected error loading ES plugin 'h6wrong' "
            "(entry point: h6_plug_ok:wrong): Plugin 'h6wrong' returned unexpected type: "
            "<class 'int'>. Expected ModuleType, str, or callable returning module.",
        ),
        (
            _ep("h6raises", "h6_plug_raises:get_module"),
            "[ERROR] [ge.es._plugin_loader] Unexpected error loading ES plugin 'h6raises' "
            "(entry point: h6_plug_raises:get_module): 'boom'",
        ),
        (
            _ep("", "h6_plug_ok:get_module"),
            "[WARNING] [ge.es._plugin_loader] Ignoring ES plugin entry point without name: ",
        ),
    ],
    ids=["missing-attribute", "import-error", "wrong-type", "raises", "no-name"],
)
def test_plugin_failures_are_printed_not_raised(
    plugin_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ep: EntryPoint,
    text: str,
) -> None:
    before = list(ge.es.__all__)
    assert _load(monkeypatch, ep, _ep("h6good", "h6_plug_ok:get_module")) == ["h6good"]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(text)
    assert lines[1] == PREFIX.format("INFO") + "ES plugin 'h6good' loaded: h6_plug_ok"
    if ep.name:
        assert ge.es.get_plugin(ep.name) is None
        assert ep.name not in ge.es.list_plugins()
        assert f"ge.es.{ep.name}" not in sys.modules
    assert ge.es.__all__ == [*before, "h6good"]


def test_a_plugin_does_not_replace_a_builtin_or_loaded_module(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    builtin = ge.es.math
    _load(monkeypatch, _ep("math", "h6_plug_ok:get_module"))
    capsys.readouterr()
    assert ge.es.math is builtin
    assert sys.modules["ge.es.math"] is builtin
    _plugins._EXTERNAL.pop("math")
    assert ge.es.get_plugin("math") is builtin


def test_unreadable_entry_points_are_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken() -> list[Any]:
        raise OSError("bad metadata")

    monkeypatch.setattr(_plugins, "_entry_points", broken)
    assert _plugins.load_all_plugins() == []
    assert "[ERROR] [ge.es._plugin_loader] Failed to read the entry points" in (
        capsys.readouterr().out
    )


def test_installed_plugin_loads_at_import_ge_es(plugin_dir: Path) -> None:
    """A real distribution (dist-info with entry_points.txt) on sys.path: ``import
    ge.es.<name>`` works in a fresh interpreter, and ``import ge.es`` printed its line."""
    dist = plugin_dir / "h6_plug_ok-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: h6-plug-ok\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ge.es.plugins]\nh6real = h6_plug_ok:get_module\n")
    code = "import ge.es.h6real as m; import ge.es; print(m.VALUE, ge.es.list_plugins())"
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(plugin_dir), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == PREFIX.format("INFO") + "ES plugin 'h6real' loaded: h6_plug_ok"
    assert lines[1].startswith("41 [") and "'h6real'" in lines[1]
