"""``PassStage``: where in the compile pipeline a pass runs (GE_REFERENCE.md §1.4)."""

from __future__ import annotations

from enum import Enum

__all__ = ["PassStage"]


class PassStage(str, Enum):
    """GE-PY's stages, in pipeline order."""

    BEFORE_INFER_SHAPE = "BeforeInferShape"
    AFTER_INFER_SHAPE = "AfterInferShape"
    AFTER_BUILTIN_FUSION_PASS = "AfterBuiltinFusionPass"
    AFTER_ORIGIN_GRAPH_OPTIMIZE = "AfterOriginGraphOptimize"
