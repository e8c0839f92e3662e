"""The pass registry: GE's decorators, checks and texts (GE_ERRORS.md §9.1), the queries, and
our generation counter and unregister_pass."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from ge.passes import registry
from ge.passes.base import DecomposePass, FusionBasePass, PatternFusionPass
from ge.passes.registry import (
    PassDescriptor,
    clear_registered_passes,
    generation,
    get_registered_pass_by_descriptor_key,
    get_registered_pass_dicts,
    get_registered_passes,
    register_decompose_pass,
    register_fusion_pass,
    registered_passes_at,
    unregister_pass,
)
from ge.passes.stage import PassStage

BEFORE = PassStage.BEFORE_INFER_SHAPE
AFTER = PassStage.AFTER_INFER_SHAPE


def exact(text: str) -> str:
    """A ``match=`` pattern for exactly ``text``."""
    return f"^{re.escape(text)}$"


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    clear_registered_passes()
    yield
    clear_registered_passes()


def _fusion_class(name: str = "MyFusion") -> type[FusionBasePass]:
    return type(name, (FusionBasePass,), {"run": lambda self, graph, context: None})


def _decompose_class(name: str = "MyDecompose") -> type[DecomposePass]:
    return type(name, (DecomposePass,), {})


def _state() -> tuple[list[PassDescriptor], int]:
    return get_registered_passes(), generation()


# --- register_fusion_pass ----------------------------------------------------------------------


def test_fusion_pass_descriptor_fields_and_class_attribute() -> None:
    cls = _fusion_class()
    assert register_fusion_pass(name="P1", stage=BEFORE)(cls) is cls
    (desc,) = get_registered_passes()
    assert desc == PassDescriptor(
        descriptor_key=f"{__name__}:MyFusion:P1",
        pass_name="P1",
        module_name=__name__,
        class_name="MyFusion",
        stage=BEFORE,
        kind="fusion_base",
        cls=cls,
        op_types=(),
    )
    assert cls.__ge_pass_descriptor__ is desc  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        desc.pass_name = "other"  # type: ignore[misc]  # frozen


def test_fusion_pass_kind_defaults_and_explicit_kind() -> None:
    class Pat(PatternFusionPass):
        pass

    register_fusion_pass(name="pat", stage=BEFORE)(Pat)
    register_fusion_pass(name="dec", stage=BEFORE)(_decompose_class())  # GE accepts it
    register_fusion_pass(name="custom", stage=BEFORE, kind="anything")(_fusion_class())
    assert [d.kind for d in get_registered_passes()] == [
        "pattern_fusion",
        "fusion_base",
        "anything",
    ]


@pytest.mark.parametrize("bad", [object(), 3, "FusionBasePass", int, type("Plain", (), {})])
def test_fusion_pass_rejects_what_is_not_a_fusion_pass_class(bad: object) -> None:
    with pytest.raises(
        TypeError, match=exact("register_fusion_pass expects a FusionBasePass subclass")
    ):
        register_fusion_pass(name="x", stage=BEFORE)(bad)  # type: ignore[arg-type]
    assert get_registered_passes() == [] and generation() >= 0


def test_duplicate_descriptor_key_is_checked_first() -> None:
    cls = _fusion_class()
    register_fusion_pass(name="P1", stage=BEFORE)(cls)
    before = _state()
    key = f"{__name__}:MyFusion:P1"
    with pytest.raises(
        ValueError, match=exact(f"python pass descriptor_key already exists: {key}")
    ):
        register_fusion_pass(name="P1", stage=AFTER)(cls)  # same name too: the key wins
    assert _state() == before


def test_duplicate_name_from_another_class() -> None:
    register_fusion_pass(name="P1", stage=BEFORE)(_fusion_class("A"))
    before = _state()
    other = _fusion_class("B")
    with pytest.raises(ValueError, match=exact("python pass name already exists: P1")):
        register_fusion_pass(name="P1", stage=BEFORE)(other)
    assert _state() == before
    assert "__ge_pass_descriptor__" not in vars(other)


def test_one_class_may_register_under_two_names() -> None:
    cls = _fusion_class()
    register_fusion_pass(name="P1", stage=BEFORE)(cls)
    register_fusion_pass(name="P2", stage=AFTER)(cls)
    assert [d.descriptor_key.rsplit(":", 1)[1] for d in get_registered_passes()] == ["P1", "P2"]
    assert cls.__ge_pass_descriptor__.pass_name == "P2"  # type: ignore[attr-defined]


def test_name_and_stage_are_not_validated_and_stage_fails_in_dicts() -> None:
    register_fusion_pass(name=7, stage="BeforeInferShape")(_fusion_class())  # type: ignore[arg-type]
    assert get_registered_passes()[0].pass_name == 7
    with pytest.raises(AttributeError):
        get_registered_pass_dicts()


# --- register_decompose_pass -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_types", "error", "text"),
    [
        ("Add", TypeError, "register_decompose_pass op_types must be an iterable of strings"),
        (b"Add", TypeError, "register_decompose_pass op_types must be an iterable of strings"),
        (5, TypeError, "register_decompose_pass op_types must be an iterable of strings"),
        (None, TypeError, "register_decompose_pass op_types must be an iterable of strings"),
        ([], ValueError, "register_decompose_pass requires at least one op type"),
        ((), ValueError, "register_decompose_pass requires at least one op type"),
        ([""], TypeError, "register_decompose_pass op_types must contain non-empty strings"),
        (["Add", 1], TypeError, "register_decompose_pass op_types must contain non-empty strings"),
        ([b"Add"], TypeError, "register_decompose_pass op_types must contain non-empty strings"),
    ],
)
def test_op_types_are_checked_when_the_factory_is_called(
    op_types: object, error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=exact(text)):
        register_decompose_pass(name="d", stage=BEFORE, op_types=op_types)  # type: ignore[arg-type]
    assert get_registered_passes() == []


def test_decompose_pass_descriptor_and_op_types_from_a_generator() -> None:
    cls = _decompose_class()
    register_decompose_pass(name="D", stage=AFTER, op_types=(t for t in ["Add", "Mul"]))(cls)
    (desc,) = get_registered_passes()
    assert (desc.kind, desc.op_types, desc.stage) == ("decompose", ("Add", "Mul"), AFTER)
    assert cls.op_types == ("Add", "Mul")
    assert desc.to_bridge_dict() == {
        "descriptor_key": f"{__name__}:MyDecompose:D",
        "pass_name": "D",
        "module_name": __name__,
        "class_name": "MyDecompose",
        "stage": "AfterInferShape",
        "kind": "decompose",
        "op_types": ["Add", "Mul"],
    }


@pytest.mark.parametrize("bad", [object(), _fusion_class(), type("Pat", (PatternFusionPass,), {})])
def test_decompose_pass_rejects_other_classes(bad: object) -> None:
    decorate = register_decompose_pass(name="D", stage=BEFORE, op_types=["Add"])
    with pytest.raises(
        TypeError, match=exact("register_decompose_pass expects a DecomposePass subclass")
    ):
        decorate(bad)  # type: ignore[arg-type]


def test_decompose_duplicates_use_the_same_texts_and_keep_ges_op_types_quirk() -> None:
    first = _decompose_class("A")
    register_decompose_pass(name="D", stage=BEFORE, op_types=["Add"])(first)
    with pytest.raises(ValueError, match="descriptor_key already exists"):
        register_decompose_pass(name="D", stage=BEFORE, op_types=["Sub"])(first)
    assert first.op_types == ("Sub",)  # set before the failed registration, as GE does
    assert get_registered_passes()[0].op_types == ("Add",)
    second = _decompose_class("B")
    with pytest.raises(ValueError, match=exact("python pass name already exists: D")):
        register_decompose_pass(name="D", stage=BEFORE, op_types=["Mul"])(second)
    assert second.op_types == ("Mul",) and len(get_registered_passes()) == 1


# --- queries -----------------------------------------------------------------------------------


def test_queries_keep_registration_order() -> None:
    names = ["z", "a", "m"]
    for i, name in enumerate(names):
        stage = BEFORE if i != 1 else AFTER
        register_fusion_pass(name=name, stage=stage)(_fusion_class(f"C{i}"))
    assert [d.pass_name for d in get_registered_passes()] == names
    assert [d["pass_name"] for d in get_registered_pass_dicts()] == names
    assert [d.pass_name for d in registered_passes_at(BEFORE)] == ["z", "m"]
    assert [d.pass_name for d in registered_passes_at(PassStage.AFTER_BUILTIN_FUSION_PASS)] == []
    key = get_registered_passes()[1].descriptor_key
    assert get_registered_pass_by_descriptor_key(key).pass_name == "a"
    assert get_registered_pass_dicts()[0]["stage"] == "BeforeInferShape"
    assert "cls" not in get_registered_pass_dicts()[0]


def test_unknown_descriptor_key() -> None:
    with pytest.raises(KeyError, match="python pass descriptor_key not found: m:C:p"):
        get_registered_pass_by_descriptor_key("m:C:p")


def test_the_returned_list_is_a_copy() -> None:
    register_fusion_pass(name="P", stage=BEFORE)(_fusion_class())
    get_registered_passes().clear()
    assert len(get_registered_passes()) == 1


# --- generation, unregister, clear -------------------------------------------------------------


def test_generation_grows_on_every_change_and_only_then() -> None:
    g0 = generation()
    clear_registered_passes()  # already empty: no change
    assert generation() == g0
    cls = _fusion_class()
    register_fusion_pass(name="P", stage=BEFORE)(cls)
    g1 = generation()
    assert g1 > g0
    with pytest.raises(ValueError):
        register_fusion_pass(name="P", stage=BEFORE)(cls)
    with pytest.raises(TypeError):
        register_fusion_pass(name="Q", stage=BEFORE)(object)  # type: ignore[arg-type]
    assert generation() == g1
    assert unregister_pass("P") is True
    g2 = generation()
    assert g2 > g1
    assert unregister_pass("P") is False and generation() == g2
    register_fusion_pass(name="P", stage=BEFORE)(cls)
    clear_registered_passes()
    assert generation() > g2 + 1


def test_unregister_pass_removes_the_descriptor_and_frees_the_name() -> None:
    cls = _fusion_class()
    register_fusion_pass(name="P", stage=BEFORE)(cls)
    key = cls.__ge_pass_descriptor__.descriptor_key  # type: ignore[attr-defined]
    assert unregister_pass("P")
    assert get_registered_passes() == []
    assert "__ge_pass_descriptor__" not in vars(cls)
    with pytest.raises(KeyError):
        get_registered_pass_by_descriptor_key(key)
    register_fusion_pass(name="P", stage=AFTER)(cls)  # both key and name are free again
    assert get_registered_passes()[0].stage is AFTER


def test_clear_forgets_everything() -> None:
    classes = [_fusion_class(f"C{i}") for i in range(3)]
    for i, cls in enumerate(classes):
        register_fusion_pass(name=f"P{i}", stage=BEFORE)(cls)
    clear_registered_passes()
    assert get_registered_passes() == [] and get_registered_pass_dicts() == []
    assert all("__ge_pass_descriptor__" not in vars(cls) for cls in classes)
    register_fusion_pass(name="P0", stage=BEFORE)(classes[0])


def test_snapshot_and_restore_bring_the_registry_back() -> None:
    register_fusion_pass(name="keep", stage=BEFORE)(_fusion_class("Keep"))
    snap = registry._snapshot()
    g = generation()
    registry._restore(snap)  # nothing changed: no new generation
    assert generation() == g
    extra = _fusion_class("Extra")
    register_fusion_pass(name="extra", stage=BEFORE)(extra)
    clear_registered_passes()
    registry._restore(snap)
    assert [d.pass_name for d in get_registered_passes()] == ["keep"]
    assert get_registered_passes()[0].cls.__ge_pass_descriptor__.pass_name == "keep"
    assert "__ge_pass_descriptor__" not in vars(extra)
    assert generation() > g + 2
