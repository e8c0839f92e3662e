"""``ge.passes``: the Python pass framework (GE-PY's passes module).

Where it sits: user passes are registered here and run by the compile pipeline at their
``PassStage`` (``Session``, ``ge.jit`` and offline ``build_model`` alike), on the ``ge.graph``
IR. This package owns

* ``base``: ``FusionBasePass``, ``PatternFusionPass``, ``DecomposePass``, ``PassContext`` and
  the class-definition checks; ``_hooks``: the ``@pattern`` marker, hook checks and binding;
* ``registry``: ``register_fusion_pass``, ``register_decompose_pass`` and the queries;
  ``bootstrap``: ``ASCEND_GE_PY_PASS_PATH`` discovery, all or nothing per batch;
* ``pattern``: patterns, the matcher configuration and match results; ``replacement``:
  subgraph boundaries and rewriting, ``infer_shape``; ``fuse_inspector``: ``can_fuse``,
  ``report_fuse``; ``stage``: ``PassStage``;
* ``explain(graph)`` (ours): what each registered pass did to a graph's compile, and why a
  pattern did not match.

Every public name but ``pattern`` loads lazily on first use (GE_REFERENCE.md §6), so
``import ge.passes`` stays cheap; an unknown name raises ``AttributeError`` "module
'ge.passes' has no attribute '<name>'". ``pattern`` is the decorator: the submodule
``ge.passes.pattern`` is imported first and the name then bound to the function, so a later
``import ge.passes.pattern`` cannot rebind it to the submodule.

    >>> import ge.passes as passes
    >>> passes.PassStage.BEFORE_INFER_SHAPE.value
    'BeforeInferShape'
    >>> callable(passes.pattern)
    True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ge.passes.pattern import pattern  # imports the submodule first, then binds the function

if TYPE_CHECKING:
    from ge.passes._explain import explain as explain  # ours: reachable, not in __all__
    from ge.passes.base import DecomposePass, FusionBasePass, PassContext, PatternFusionPass
    from ge.passes.registry import (
        clear_registered_passes,
        get_registered_pass_by_descriptor_key,
        get_registered_pass_dicts,
        get_registered_passes,
        register_decompose_pass,
        register_fusion_pass,
    )
    from ge.passes.stage import PassStage

# GE's list, in GE's order
__all__ = [  # noqa: RUF022
    "DecomposePass",
    "FuseCheckResult",
    "FusionBasePass",
    "MatchResult",
    "NodeIo",
    "PassStage",
    "PassContext",
    "Pattern",
    "PatternMatcherConfig",
    "PatternMatcherConfigBuilder",
    "PatternFusionPass",
    "SubgraphInput",
    "SubgraphOutput",
    "SubgraphBoundary",
    "SubgraphRewriter",
    "can_fuse",
    "clear_registered_passes",
    "create_pattern",
    "create_replacement",
    "get_registered_pass_by_descriptor_key",
    "get_registered_pass_dicts",
    "get_registered_passes",
    "infer_shape",
    "pattern",
    "register_decompose_pass",
    "register_fusion_pass",
    "report_fuse",
]


def _homes(module: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, module)


# name -> the submodule defining it (``PassDescriptor`` and ``explain`` are ours: reachable,
# not in GE's __all__)
_HOME = {
    **_homes("base", "DecomposePass", "FusionBasePass", "PassContext", "PatternFusionPass"),
    **_homes(
        "pattern",
        "MatchResult",
        "NodeIo",
        "Pattern",
        "PatternMatcherConfig",
        "PatternMatcherConfigBuilder",
        "create_pattern",
    ),
    **_homes(
        "replacement",
        "SubgraphBoundary",
        "SubgraphInput",
        "SubgraphOutput",
        "SubgraphRewriter",
        "create_replacement",
        "infer_shape",
    ),
    **_homes("fuse_inspector", "FuseCheckResult", "can_fuse", "report_fuse"),
    **_homes(
        "registry",
        "PassDescriptor",
        "clear_registered_passes",
        "get_registered_pass_by_descriptor_key",
        "get_registered_pass_dicts",
        "get_registered_passes",
        "register_decompose_pass",
        "register_fusion_pass",
    ),
    **_homes("stage", "PassStage"),
    **_homes("_explain", "explain"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'ge.passes' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"ge.passes.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
