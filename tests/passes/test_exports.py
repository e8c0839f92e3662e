"""``ge.passes`` exports: GE's ``__all__``, lazy loading of the names from base, registry and
stage, the eagerly bound ``pattern`` decorator, and the AttributeError text (GE_ERRORS.md §9)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import types

import pytest

from ge import passes
from ge.passes import _hooks

GE_ALL = [
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

OURS = {
    "DecomposePass": "base",
    "FusionBasePass": "base",
    "PassContext": "base",
    "PatternFusionPass": "base",
    "PassDescriptor": "registry",
    "clear_registered_passes": "registry",
    "get_registered_pass_by_descriptor_key": "registry",
    "get_registered_pass_dicts": "registry",
    "get_registered_passes": "registry",
    "register_decompose_pass": "registry",
    "register_fusion_pass": "registry",
    "PassStage": "stage",
}


def test_all_is_exactly_ges_list() -> None:
    assert passes.__all__ == GE_ALL


def test_dir_lists_every_public_name() -> None:
    assert set(GE_ALL) <= set(dir(passes))


@pytest.mark.parametrize("name", sorted(OURS))
def test_lazy_names_resolve_to_their_module(name: str) -> None:
    module = importlib.import_module(f"ge.passes.{OURS[name]}")
    assert getattr(passes, name) is getattr(module, name)


@pytest.mark.parametrize("name", ["Nope", "bootstrap_", "_HOME_", "pattern_method_names"])
def test_unknown_names_raise_ges_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError) as info:
        getattr(passes, name)
    assert str(info.value) == f"module 'ge.passes' has no attribute '{name}'"


def test_pattern_is_the_decorator_not_the_submodule() -> None:
    import ge.passes.pattern  # noqa: F401  (a later import must not rebind the name)

    assert passes.pattern is _hooks.pattern
    assert isinstance(sys.modules["ge.passes.pattern"], types.ModuleType)
    from ge.passes import pattern

    assert pattern is _hooks.pattern


def test_names_load_lazily_in_a_fresh_interpreter() -> None:
    script = textwrap.dedent(
        """
        import sys
        import ge.passes as passes
        assert "pattern" in vars(passes) and callable(passes.pattern)
        lazy = ["ge.passes.registry", "ge.passes.bootstrap"]
        assert not [m for m in lazy if m in sys.modules], [m for m in lazy if m in sys.modules]
        assert "register_fusion_pass" not in vars(passes)
        from ge.passes import register_fusion_pass
        assert "ge.passes.registry" in sys.modules
        assert vars(passes)["register_fusion_pass"] is register_fusion_pass
        import ge.passes.pattern
        assert passes.pattern is sys.modules["ge.passes._hooks"].pattern
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
