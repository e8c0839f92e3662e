"""Pytest plugin: how many kernels each test file compiles, and how long each file takes.

Run from the repository root, with an empty kernel cache to time a cold run (every kernel a
file needs is built, not loaded), or with the warm one to count quickly (``needed``)::

    GE_KERNEL_CACHE_DIR=$(mktemp -d) PYTHONPATH=benchmarks \\
        python -m pytest -q -p kernel_count_plugin tests/compiler/test_fuse.py

Per file it reports

* ``new``: entries the file added to the disk cache (``$GE_KERNEL_CACHE_DIR``): distinct kernels
  (and device code) built by the file's tests, including those built in subprocesses the tests
  start. This is the cold-cache cost the suite tiering is sized by (~0.5 s each on 2 cores).
* ``built``: kernels compiled in this process (``ge.compiler.kernels._codegen``'s count; an
  entry already on disk from an earlier file is loaded, not built).
* ``needed``: distinct kernels the file's tests asked for that no earlier test in this process
  had loaded (calls of ``ge.compiler.kernels._codegen._load_or_build``). With an empty cache
  this is ``built``; with a warm cache it is what the file would build cold in this run order,
  measured in seconds instead of minutes (subprocess builds are not seen).
* ``seconds``: wall time of the file's tests.

Files are listed slowest-first, with totals. ``GE_KERNEL_COUNT_JSON=path`` also writes the
table as JSON, and ``GE_KERNEL_COUNT_TESTS=path`` the ``needed`` count of every test that
needed a kernel (JSON, by node id).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class _FileCost:
    new: int = 0
    built: int = 0
    needed: int = 0
    seconds: float = 0.0
    tests: int = 0


class _Counter:
    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.files: dict[str, _FileCost] = {}
        self._entries = self._count_entries()
        self._built = 0
        self._start = 0.0
        self.needed = 0
        self.per_test: dict[str, int] = {}
        self._wrap_load_or_build()

    def _wrap_load_or_build(self) -> None:
        from ge.compiler.kernels import _codegen  # noqa: PLC0415

        original = _codegen._load_or_build

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.needed += 1
            return original(*args, **kwargs)

        _codegen._load_or_build = counting

    def _count_entries(self) -> int:
        try:
            return sum(1 for _ in self.cache.iterdir())
        except OSError:
            return 0

    @staticmethod
    def _built_count() -> int:
        from ge.compiler.kernels._codegen import built_kernel_count  # noqa: PLC0415

        return built_kernel_count()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        self._built = self._built_count()
        needed = self.needed
        self._start = time.perf_counter()
        yield
        seconds = time.perf_counter() - self._start
        entries = self._count_entries()
        built = self._built_count()
        cost = self.files.setdefault(item.nodeid.split("::")[0], _FileCost())
        cost.new += entries - self._entries
        cost.built += built - self._built
        cost.needed += self.needed - needed
        if self.needed > needed:
            self.per_test[item.nodeid] = self.needed - needed
        cost.seconds += seconds
        cost.tests += 1
        self._entries = entries

    def _total(self) -> _FileCost:
        costs = self.files.values()
        return _FileCost(
            new=sum(c.new for c in costs),
            built=sum(c.built for c in costs),
            needed=sum(c.needed for c in costs),
            seconds=sum(c.seconds for c in costs),
            tests=sum(c.tests for c in costs),
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        rows = sorted(self.files.items(), key=lambda kv: -kv[1].seconds)
        write = terminalreporter.write_line
        terminalreporter.section("kernel builds per test file (cold cache)")
        write(f"{'new':>6} {'built':>6} {'needed':>6} {'seconds':>8} {'tests':>6}  file")
        for name, c in [*rows, ("TOTAL", self._total())]:
            write(f"{c.new:>6} {c.built:>6} {c.needed:>6} {c.seconds:>8.1f} {c.tests:>6}  {name}")
        out = os.environ.get("GE_KERNEL_COUNT_JSON")
        if out:
            table = {name: asdict(c) for name, c in rows}
            Path(out).write_text(json.dumps(table, indent=1))
        per_test = os.environ.get("GE_KERNEL_COUNT_TESTS")
        if per_test:
            Path(per_test).write_text(json.dumps(self.per_test, indent=1))


def pytest_configure(config: pytest.Config) -> None:
    from ge.compiler.kernels._disk_cache import cache_dir  # noqa: PLC0415

    directory = cache_dir()
    if directory is None:
        raise pytest.UsageError("kernel_count_plugin needs the kernel cache on (GE_KERNEL_CACHE)")
    config.pluginmanager.register(_Counter(directory), "ge_kernel_counter")
