"""The device's on-disk code cache (``ge._device._code_cache``) as the memory guard uses it:
the view check's object code is built once, loaded by later guards (each bound to its own
table), and a damaged or disabled cache only costs a build."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import pytest

from ge._device import _code_cache
from ge._device._guard import RangeGuard
from ge.options import current_options, using_options


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Path]:
    with using_options(
        current_options().replace(kernel_cache=True, kernel_cache_dir=str(tmp_path))
    ):
        yield tmp_path


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.geobj"))


def test_the_check_code_is_built_once_then_loaded_and_each_guard_keeps_its_own_table(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = RangeGuard()
    assert len(_entries(cache)) == 1
    stored: list[str] = []
    monkeypatch.setattr(_code_cache, "store_code", lambda key, code: stored.append(key))
    second = RangeGuard()
    assert stored == []  # loaded, not built again
    first.insert(4096, 4160)
    second.insert(8192, 8256)
    assert first.check(4096, 16, 4) and not first.check(8192, 16, 4)
    assert second.check(8192, 16, 4) and not second.check(4096, 16, 4)
    assert [f[1:] for f in second.failures_since(0)] == [(4096, 16, 4)]
    assert [f[1:] for f in first.failures_since(0)] == [(8192, 16, 4)]


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_a_damaged_entry_is_replaced_never_loaded(cache: Path, damage: str) -> None:
    RangeGuard()
    (entry,) = _entries(cache)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    damaged = {"flip": bytes(data), "truncate": bytes(data[:40]), "empty": b""}[damage]
    entry.write_bytes(damaged)
    guard = RangeGuard()
    guard.insert(4096, 4160)
    assert guard.check(4096, 16, 4) and not guard.check(4096, 17, 4)
    (rebuilt,) = _entries(cache)
    assert rebuilt.read_bytes() != damaged and _code_cache.load_code(rebuilt.stem) is not None


def test_with_the_cache_off_nothing_is_read_or_written(tmp_path: Path) -> None:
    off = current_options().replace(kernel_cache=False, kernel_cache_dir=str(tmp_path))
    with using_options(off):
        guard = RangeGuard()
        assert _code_cache.load_code(_code_cache.code_key("x")) is None
        assert not _code_cache.store_code(_code_cache.code_key("x"), b"code")
    guard.insert(64, 128)
    assert guard.check(64, 64, 1)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_directory_only_costs_the_build(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")  # a file where the directory should be
    with using_options(current_options().replace(kernel_cache_dir=str(blocker / "sub"))):
        assert not _code_cache.store_code(_code_cache.code_key("x"), b"code")
        guard = RangeGuard()
    guard.insert(64, 128)
    assert guard.check(64, 64, 1)


def _parsed_irs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every IR text llvmlite parses from now on (the real parse still runs)."""
    import llvmlite.binding as llvm

    parsed: list[str] = []
    real = llvm.parse_assembly

    def spy(text: str, *args: object, **kwargs: object) -> object:
        parsed.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(llvm, "parse_assembly", spy)
    return parsed


def test_a_loaded_entry_parses_no_ir_and_a_build_parses_it_once(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ge._device import _guard
    from ge.runtime import _launcher

    parsed = _parsed_irs(monkeypatch)
    RangeGuard()  # builds: parses the check's IR
    code = _launcher._Code(_launcher.platform.machine())
    built = list(parsed)
    assert [t == _guard._IR for t in built] == [True, False] and "ge_launch" in built[1]
    parsed.clear()
    guard = RangeGuard()
    again = _launcher._Code(_launcher.platform.machine())
    assert len(parsed) == 2 and all(len(t) < 100 and "define" not in t for t in parsed)
    guard.insert(4096, 4160)  # the loaded code runs, linked to its own table
    assert guard.check(4096, 64, 1) and not guard.check(4096, 65, 1)
    for loaded in (code, again):  # every pool function resolved in the loaded object
        functions = (loaded.launch, loaded.launch_here, loaded.run_tasks, loaded.worker_main)
        assert all(ctypes.cast(f, ctypes.c_void_p).value for f in functions)
