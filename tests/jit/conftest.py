"""Fixtures shared by the ``ge.jit`` tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ge.compiler import background


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[background.BackgroundCompiler]:
    """One background compile worker for the test module, compiling into a fresh (empty)
    kernel cache in the place ``ge.jit`` looks."""
    directory = tmp_path_factory.mktemp("kernels")
    compiler = background.BackgroundCompiler()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GE_KERNEL_CACHE_DIR", str(directory))
        patch.setattr(background, "compiler", lambda: compiler)
        yield compiler
    if compiler._process is not None:
        compiler._process.kill()
        compiler._process.wait()
