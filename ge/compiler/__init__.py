"""``ge.compiler``: turns a graph into something that runs.

The pipeline (``PIPELINE``: infer, user passes at each ``PassStage``, constant folding, CSE,
algebraic simplification, dead-node elimination, verify) rewrites a copy of the graph;
``compile_graph`` then builds the executable.

The names here load on first use (PEP 562), so importing a submodule (``ge.compiler.background``,
``ge.compiler.kernels._codegen``) does not import the pipeline.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ge.compiler.pipeline import (
        PIPELINE,
        Step,
        copy_graph,
        optimize_graph,
        register_stage_hook,
    )

__all__ = ["PIPELINE", "Step", "copy_graph", "optimize_graph", "register_stage_hook"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module("ge.compiler.pipeline"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ge.compiler' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
