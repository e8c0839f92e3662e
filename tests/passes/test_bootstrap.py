"""ASCEND_GE_PY_PASS_PATH discovery: files, directories, packages, GE's loader errors
(GE_ERRORS.md §9.6), all-or-nothing batches and idempotent reloads."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ge._internal.plugin_loader import module_name_for
from ge.passes import bootstrap
from ge.passes.bootstrap import ENV_NAME, MODULE_PREFIX, ensure_plugins_loaded, load_pass_plugins
from ge.passes.registry import clear_registered_passes, generation, get_registered_passes

PACKAGES = ("gepass_pkg_dir", "gepass_pkg_entry")  # package names the tests create


def exact(text: str) -> str:
    """A ``match=`` pattern for exactly ``text``."""
    return f"^{re.escape(text)}$"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    clear_registered_passes()
    monkeypatch.setattr(bootstrap, "_LOADED", [])
    monkeypatch.setattr(bootstrap, "_STATE", bootstrap._State())
    monkeypatch.delenv(ENV_NAME, raising=False)
    yield
    clear_registered_passes()
    for name in [
        n for n in sys.modules if n.startswith(MODULE_PREFIX) or n.split(".")[0] in PACKAGES
    ]:
        del sys.modules[name]


def _plugin(path: Path, pass_name: str, *, extra: str = "") -> Path:
    """A plugin file registering one FusionBasePass named ``pass_name``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        textwrap.dedent(
            f"""
            from ge.passes import FusionBasePass, PassStage, register_fusion_pass

            @register_fusion_pass(name="{pass_name}", stage=PassStage.BEFORE_INFER_SHAPE)
            class Pass_{pass_name}(FusionBasePass):
                def run(self, graph, context):
                    return None
            """
        )
        + textwrap.dedent(extra)
    )
    return path


def _names() -> list[str]:
    return [d.pass_name for d in get_registered_passes()]


def test_load_one_file_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = _plugin(tmp_path / "my_pass.py", "FromEnv")
    monkeypatch.setenv(ENV_NAME, str(plugin))
    g = generation()
    modules = load_pass_plugins()
    assert modules == [module_name_for(plugin.resolve(), MODULE_PREFIX)]
    assert modules[0].startswith("_ge_py_pass_my_pass_")
    assert _names() == ["FromEnv"] and generation() > g
    (desc,) = get_registered_passes()
    assert desc.module_name == modules[0] and desc.class_name == "Pass_FromEnv"
    assert bootstrap.loaded_paths() == [str(plugin.resolve())]


def test_loading_a_path_twice_registers_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = _plugin(tmp_path / "once.py", "Once")
    assert load_pass_plugins(str(plugin))
    g = generation()
    monkeypatch.chdir(tmp_path)
    assert load_pass_plugins("once.py") == []  # the same resolved path
    assert load_pass_plugins([tmp_path / "sub" / ".." / "once.py"]) == []
    assert load_pass_plugins(str(tmp_path)) == []  # the directory holds only that very file
    assert _names() == ["Once"] and generation() == g


def test_directory_sorted_underscores_skipped_packages_loaded(tmp_path: Path) -> None:
    d = tmp_path / "passes"
    _plugin(d / "b_second.py", "Second")
    _plugin(d / "a_first.py", "First")
    _plugin(d / "_private.py", "Private")
    _plugin(d / "notes.txt", "Text")
    _plugin(d / "gepass_pkg_dir" / "__init__.py", "Package")
    _plugin(d / "_hidden_pkg" / "__init__.py", "HiddenPackage")
    (d / "plain_dir").mkdir()
    _plugin(d / "plain_dir" / "inner.py", "NotScanned")  # directories are not walked
    modules = load_pass_plugins(str(d))
    assert _names() == ["First", "Second", "Package"]
    assert modules[-1] == "gepass_pkg_dir" and "gepass_pkg_dir" in sys.modules
    assert str(d) not in sys.path  # only on it while importing


def test_a_package_entry_is_imported_as_that_package(tmp_path: Path) -> None:
    pkg = tmp_path / "gepass_pkg_entry"
    _plugin(pkg / "__init__.py", "PkgEntry", extra="from . import more\n")
    _plugin(pkg / "more.py", "PkgMore")
    assert load_pass_plugins(str(pkg)) == ["gepass_pkg_entry"]
    assert _names() == ["PkgEntry", "PkgMore"]


def test_several_entries_in_order(tmp_path: Path) -> None:
    first = _plugin(tmp_path / "x" / "z_last_name.py", "One")
    second = _plugin(tmp_path / "y" / "a_first_name.py", "Two")
    import os

    load_pass_plugins(os.pathsep.join([str(first), "", str(second)]))
    assert _names() == ["One", "Two"]


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    with pytest.raises(
        FileNotFoundError, match=exact(f"python pass path does not exist: {missing}")
    ):
        load_pass_plugins(str(missing))


def test_file_without_py_suffix(tmp_path: Path) -> None:
    path = tmp_path / "plugin.txt"
    path.write_text("")
    with pytest.raises(ValueError, match=exact(f"python pass file must end with .py: {path}")):
        load_pass_plugins(str(path))


def test_a_failing_batch_registers_nothing(tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    _plugin(d / "a_good.py", "Good")
    bad = _plugin(d / "b_bad.py", "Bad", extra="raise RuntimeError('plugin boom')\n")
    _plugin(d / "c_never.py", "Never")
    g = generation()
    with pytest.raises(RuntimeError, match=exact("plugin boom")):
        load_pass_plugins(str(d))
    assert _names() == []
    assert generation() > g  # Good and Bad were registered, then rolled back
    assert not [n for n in sys.modules if n.startswith(MODULE_PREFIX)]
    assert bootstrap.loaded_paths() == []
    bad.write_text(bad.read_text().replace("raise RuntimeError('plugin boom')", ""))
    load_pass_plugins(str(d))  # tried again at the next load
    assert _names() == ["Good", "Bad", "Never"]


def test_a_missing_entry_rolls_back_the_entries_before_it(tmp_path: Path) -> None:
    import os

    good = _plugin(tmp_path / "good.py", "Good")
    with pytest.raises(FileNotFoundError):
        load_pass_plugins(os.pathsep.join([str(good), str(tmp_path / "missing")]))
    assert _names() == [] and bootstrap.loaded_paths() == []


def test_a_failing_registration_in_a_plugin_rolls_back(tmp_path: Path) -> None:
    from ge.passes.base import FusionBasePass
    from ge.passes.registry import register_fusion_pass
    from ge.passes.stage import PassStage

    @register_fusion_pass(name="Taken", stage=PassStage.BEFORE_INFER_SHAPE)
    class Existing(FusionBasePass):
        pass

    d = tmp_path / "dup"
    _plugin(d / "a.py", "Fresh")
    _plugin(d / "b.py", "Taken")
    g = generation()
    with pytest.raises(ValueError, match=exact("python pass name already exists: Taken")):
        load_pass_plugins(str(d))
    assert _names() == ["Taken"] and get_registered_passes()[0].cls is Existing
    assert Existing.__ge_pass_descriptor__.pass_name == "Taken"  # type: ignore[attr-defined]
    assert generation() > g


def test_a_plugin_with_bad_class_raises_the_class_check(tmp_path: Path) -> None:
    path = tmp_path / "bad_class.py"
    path.write_text(
        "from ge.passes import DecomposePass\n"
        "class D(DecomposePass):\n"
        "    def run(self, graph, context): pass\n"
    )
    with pytest.raises(TypeError, match=re.escape("D overrides run()")):
        load_pass_plugins(str(path))


def test_ensure_plugins_loaded_follows_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    assert ensure_plugins_loaded() == []
    first = _plugin(tmp_path / "first.py", "First")
    monkeypatch.setenv(ENV_NAME, str(first))
    assert len(ensure_plugins_loaded()) == 1
    assert ensure_plugins_loaded() == []  # unchanged variable: nothing to do
    second = _plugin(tmp_path / "second.py", "Second")
    monkeypatch.setenv(ENV_NAME, os.pathsep.join([str(first), str(second)]))
    assert len(ensure_plugins_loaded()) == 1
    assert _names() == ["First", "Second"]


def test_ensure_plugins_loaded_retries_after_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = _plugin(tmp_path / "flaky.py", "Flaky", extra="raise ImportError('not yet')\n")
    monkeypatch.setenv(ENV_NAME, str(bad))
    for _ in range(2):
        with pytest.raises(ImportError, match="not yet"):
            ensure_plugins_loaded()
    bad.write_text(bad.read_text().replace("raise ImportError('not yet')", ""))
    assert ensure_plugins_loaded() and _names() == ["Flaky"]


def test_a_compile_inside_a_plugin_does_not_start_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = _plugin(
        tmp_path / "compiles.py",
        "Compiles",
        extra=(
            "from ge.passes.bootstrap import ensure_plugins_loaded\n"
            "NESTED = ensure_plugins_loaded()\n"
        ),
    )
    monkeypatch.setenv(ENV_NAME, str(plugin))
    (name,) = ensure_plugins_loaded()
    assert sys.modules[name].NESTED == []
    assert _names() == ["Compiles"] and bootstrap.loaded_paths() == [str(plugin.resolve())]


def test_a_nested_load_is_rolled_back_with_its_failing_outer_batch(tmp_path: Path) -> None:
    inner = _plugin(tmp_path / "inner" / "inner.py", "Inner")
    _plugin(
        tmp_path / "outer" / "outer.py",
        "Outer",
        extra=(
            "from ge.passes.bootstrap import load_pass_plugins\n"
            f"load_pass_plugins([{str(inner)!r}])\n"
            "raise RuntimeError('outer fails')\n"
        ),
    )
    with pytest.raises(RuntimeError, match="outer fails"):
        load_pass_plugins(str(tmp_path / "outer"))
    assert _names() == [] and bootstrap.loaded_paths() == []
    assert load_pass_plugins(str(inner))  # not taken for loaded
    assert _names() == ["Inner"]


def test_nothing_to_load() -> None:
    assert load_pass_plugins("") == [] and load_pass_plugins([]) == []
    assert load_pass_plugins() == []
