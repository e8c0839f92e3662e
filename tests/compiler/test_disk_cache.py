"""The on-disk kernel cache: entries are reused across processes, damaged ones are rebuilt and
never loaded, concurrent writers both succeed, and the cache can be turned off."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

from ge.compiler.kernels import _codegen, _disk_cache
from ge.runtime import Stream, free, launch_kernel, malloc, memcpy_d2h

_SOURCE = """
def kernel(block_idx, block_dim, args):
    out = kernel_array(args[0], args[1], np.float64)
    for i in range(block_idx, args[1], block_dim):
        out[i] = i * {factor}
"""


def _unique_source() -> tuple[str, float]:
    factor = float(uuid.uuid4().int % 10**9 + 1)  # 1 in 1000 collided now and then (a kernel
    # already built in this process is not rebuilt), failing the rebuild counts
    return _SOURCE.format(factor=factor), factor


def _run(function: object, n: int = 4) -> np.ndarray:
    block = malloc(8 * n)
    stream = Stream()
    launch_kernel(function, 1, stream, [block, n])  # type: ignore[arg-type]
    stream.synchronize()
    out = np.empty(n, np.float64)
    memcpy_d2h(out, block.addr)
    free(block)
    return out


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GE_KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GE_KERNEL_CACHE", raising=False)
    return tmp_path


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.gekb"))


def test_a_built_kernel_is_stored_whole(cache_dir: Path) -> None:
    source, factor = _unique_source()
    built = _codegen.built_kernel_count()
    np.testing.assert_array_equal(_run(_codegen.kernel_from_source(source)),
                                  np.arange(4) * factor)
    assert _codegen.built_kernel_count() == built + 1
    (entry,) = _entries(cache_dir)
    assert _disk_cache.load_entry(entry.stem) is not None
    assert not list(cache_dir.glob("*.tmp"))


def _child(code: str, env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_another_process_loads_the_entry_without_numba(cache_dir: Path) -> None:
    source, factor = _unique_source()
    _codegen.kernel_from_source(source)
    out = _child(f"""
        import sys
        from ge.compiler.kernels import _codegen
        from tests.compiler.test_disk_cache import _run
        fn = _codegen.kernel_from_source({source!r})
        print(list(_run(fn)), _codegen.built_kernel_count(), "numba" in sys.modules)
    """, {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.split("]")[1].split() == ["0", "False"]
    assert f"{3 * factor}" in out


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage_payload", "empty"])
def test_a_damaged_entry_is_rebuilt_not_loaded(cache_dir: Path, damage: str) -> None:
    source, factor = _unique_source()
    key = _disk_cache.cache_key(source)
    payload = b"not a kernel binary"
    _disk_cache.store_entry(key, payload)
    path = cache_dir / f"{key}.gekb"
    data = path.read_bytes()
    if damage == "flip":
        data = data[:-1] + bytes([data[-1] ^ 0xFF])
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    path.write_bytes(data)  # "garbage_payload": whole entry, but not a binary
    built = _codegen.built_kernel_count()
    np.testing.assert_array_equal(_run(_codegen.kernel_from_source(source)),
                                  np.arange(4) * factor)
    assert _codegen.built_kernel_count() == built + 1  # rebuilt, the damaged entry unused
    rebuilt = _disk_cache.load_entry(key)
    assert rebuilt is not None and rebuilt != payload


def test_two_processes_compiling_the_same_kernel_both_succeed(cache_dir: Path) -> None:
    source, factor = _unique_source()
    code = f"""
        from ge.compiler.kernels import _codegen
        from tests.compiler.test_disk_cache import _run
        print(list(_run(_codegen.kernel_from_source({source!r}))))
    """
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert f"{3 * factor}" in out
    (entry,) = _entries(cache_dir)
    assert _disk_cache.load_entry(entry.stem) is not None
    assert not list(cache_dir.glob("*.tmp"))


def test_the_cache_can_be_turned_off(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GE_KERNEL_CACHE", "0")
    source, _ = _unique_source()
    _codegen.kernel_from_source(source)
    assert _entries(cache_dir) == []


def test_an_unwritable_cache_only_costs_compile_time(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    monkeypatch.setenv("GE_KERNEL_CACHE_DIR", str(blocked / "sub"))
    source, factor = _unique_source()
    np.testing.assert_array_equal(_run(_codegen.kernel_from_source(source)),
                                  np.arange(4) * factor)


def test_the_key_covers_the_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    source, _ = _unique_source()
    key = _disk_cache.cache_key(source)
    monkeypatch.setattr(_disk_cache, "_toolchain", lambda: "another numba")
    assert _disk_cache.cache_key(source) != key
