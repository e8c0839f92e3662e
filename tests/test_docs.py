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


ROOT = DOCS.parent


def _github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(path: Path) -> str:
    return re.sub(r"```.*?```", "", path.read_text(), flags=re.S)


@pytest.mark.parametrize("path", [ROOT / "README.md", *sorted(DOCS.glob("*.md"))], ids=str)
def test_links_point_at_files_in_the_repo(path: Path) -> None:
    """Every relative link of README.md and docs/ names a file of this repository (never one
    beside it) and, with ``#anchor``, a heading of that file."""
    for link in re.findall(r"\]\(([^)\s]+)\)", _prose(path)):
        if re.match(r"[a-z]+://", link):
            continue
        target_name, _, anchor = link.partition("#")
        target = (path.parent / target_name).resolve() if target_name else path
        assert target.is_relative_to(ROOT) and target.exists(), f"{path.name}: {link}"
        if anchor and target.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", _prose(target), re.M)
            assert anchor in {_github_anchor(h) for h in headings}, f"{path.name}: {link}"


def test_readme_opens_with_two_setup_commands() -> None:
    """The first block: one command installs ge and runs the demo, one installs the test
    extras and runs the suite; the demo it names exists."""
    first = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert first is not None
    demo, suite = first.group(1).strip().splitlines()
    assert demo.startswith("pip install -e . && python examples/")
    assert (ROOT / demo.split("python ", 1)[1]).is_file()
    assert suite == "pip install -e '.[test]' && python -m pytest -q -n auto"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert suite in ci, "the README's test command is the one .ci/run runs"
