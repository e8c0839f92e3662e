"""Every script in examples/ runs to completion in a fresh interpreter (so they never rot)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(_ROOT.glob("*.py")) + sorted(_ROOT.glob("passes/*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: str(p.relative_to(_ROOT)))
def test_example_runs(script: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{script.name} printed nothing"


def test_examples_exist() -> None:
    assert any(p.name == "quickstart.py" for p in EXAMPLES)


def test_notebook_runs_headless() -> None:
    """examples/notebook.ipynb, cell by cell in one namespace (what a kernel would do; no
    Jupyter needed), with the last expression of each cell displayed as Jupyter would."""
    import ast
    import json

    path = _ROOT / "notebook.ipynb"
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells
    namespace: dict[str, object] = {"__name__": "__main__"}
    for cell in cells:
        tree = ast.parse("".join(cell["source"]))
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = tree.body[:-1] if last is not None else tree.body
        exec(compile(ast.Module(body, []), str(path), "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), str(path), "eval"), namespace)
            _check_display(value)


def _check_display(value: object) -> None:
    """What Jupyter would show of ``value``: a graph gives exactly one rich repr, the drawing
    or the listing (JupyterLab shows HTML over SVG when it gets both)."""
    bundle = getattr(value, "_repr_mimebundle_", None)
    if bundle is not None:
        shown = bundle()
        assert len(shown) == 1, sorted(shown)
        assert "<svg" in shown.get("image/svg+xml", "") or "<pre>" in shown["text/html"]
        return
    html = getattr(value, "_repr_html_", None)
    page = html() if html is not None else None
    assert page is None or "<pre>" in page


def test_notebook_states_its_setup() -> None:
    """The notebook's first cell names the ``notebook`` extra and Graphviz's ``dot``, and
    pyproject's extra brings the graphviz package."""
    import json

    tomllib = pytest.importorskip("tomllib")
    notebook = json.loads((_ROOT / "notebook.ipynb").read_text())
    intro = "".join(notebook["cells"][0]["source"])
    assert "pip install -e '.[notebook]'" in intro and "`dot`" in intro
    pyproject = tomllib.loads((_ROOT.parent / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["notebook"]
    assert any(dep.startswith("graphviz") for dep in extra), extra
