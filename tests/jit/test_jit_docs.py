"""``docs/jit.md``'s snippets run as written (with the printed lines they promise), and
``docs/jit_numpy_support.md`` is what ``python -m ge.jit._page`` renders now."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest

from ge.jit._support import render_page

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _snippets() -> list[str]:
    text = (DOCS / "jit.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize("index", range(len(_snippets())))
def test_guide_snippet_runs(
    index: int, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    code = _snippets()[index]
    caplog.set_level(logging.INFO, logger="ge.jit")
    exec(compile(code, f"jit.md snippet {index}", "exec"), {"__name__": "__snippet__"})
    printed = capsys.readouterr().out
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "ge.jit")
    # the "# promised output" comments that are whole printed lines must appear
    for promise in re.findall(r"^# (\S.*)$", code, re.M):
        if promise.startswith(("SupportRow(", "[")):
            assert promise in printed, promise
        if promise.startswith("INFO:ge.jit:"):
            head, tail = promise.removeprefix("INFO:ge.jit:").split(" (<file>:7)")
            assert re.search(re.escape(head) + r" \([^)]*:7\)" + re.escape(tail), logged)
    if "debug_print" in code:
        assert printed.splitlines() == ["grad=[2. 4.] norm=4.472", "grad=[1.6 3.2] norm=3.578"]
    if "spectrum" in code:
        assert printed.startswith("ge.jit does not support numpy.fft.fft (")


def test_the_support_page_is_up_to_date() -> None:
    page = (DOCS / "jit_numpy_support.md").read_text()
    version = re.search(r"Generated for numpy (\S+) ", page)
    assert version is not None
    if version.group(1) != np.__version__:
        pytest.skip(f"the page is for numpy {version.group(1)}, this is {np.__version__}")
    assert page == render_page(), (
        "docs/jit_numpy_support.md is stale: run python -m ge.jit._page > docs/jit_numpy_support.md"
    )
