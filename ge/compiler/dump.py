"""``GE_DUMP_GRAPH=<dir>`` (``Options.dump_graph``): write the graph after each pipeline step,
for people to read.

Files are ``<dir>/ge_<graph>_<nn>_<step>.txt`` holding ``graph.as_text()``; the step number keeps
them in pipeline order. Nothing is written when the variable is unset or empty; a directory
that cannot be written is reported once as a warning, never as a compile failure.
"""

from __future__ import annotations

import os
import re
import warnings

from ge.graph.graph import Graph
from ge.options import current_options

__all__ = ["DUMP_ENV", "dump_step"]

DUMP_ENV = "GE_DUMP_GRAPH"
_WARNED: set[str] = set()


def dump_step(graph: Graph, index: int, step: str, directory: str | None = None) -> str | None:
    """Write ``graph`` after step ``index`` named ``step`` into ``directory`` (default
    ``current_options().dump_graph``; empty: no dump); returns the path, if written."""
    if directory is None:
        directory = current_options().dump_graph
    if not directory:
        return None
    safe = re.sub(r"[^\w.-]", "_", graph.name) or "graph"
    path = os.path.join(directory, f"ge_{safe}_{index:02d}_{step}.txt")
    try:
        os.makedirs(directory, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(graph.as_text() + "\n")
    except OSError as e:
        if directory not in _WARNED:
            _WARNED.add(directory)
            warnings.warn(
                f"{DUMP_ENV}={directory!r}: cannot write graph dumps ({e.strerror})",
                RuntimeWarning,
                stacklevel=3,
            )
        return None
    return path
