"""Print ``docs/jit_numpy_support.md``: ``python -m ge.jit._page > docs/jit_numpy_support.md``
(a module of its own, so running it does not re-run ``ge.jit._support``)."""

from __future__ import annotations

from ge.jit._support import render_page

if __name__ == "__main__":
    print(render_page(), end="")
