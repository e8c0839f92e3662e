"""The Python snippets of the offline-model guides run as written (in order, in one directory,
each as its own script), so the docs never rot. Snippets marked ``# not run`` (Dask, Ray) are
skipped."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
GUIDES = ["offline_models.md", "om_format.md", "passes.md"]


def _snippets(name: str) -> list[str]:
    text = (DOCS / name).read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "# not run" not in b]


@pytest.mark.parametrize("name", GUIDES)
def test_guide_snippets_run(name: str, tmp_path: Path) -> None:
    snippets = _snippets(name)
    assert snippets, f"{name} has no Python snippet"
    for i, code in enumerate(snippets):
        script = tmp_path / f"snippet_{i}.py"
        script.write_text(code)
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"{name} snippet {i} failed:\n{code}\n{done.stderr[-3000:]}"
