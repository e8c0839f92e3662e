"""Pass base classes: default hooks, PassContext, the class-definition checks of GE_ERRORS.md
§9.2 with their exact texts, and hook binding (the wrappers and the runner's call_* helpers)."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest

from ge.passes import _hooks
from ge.passes._hooks import (
    call_expression_replacement,
    call_meet_requirements,
    call_replacement,
    is_expression_replacement,
    pattern,
    pattern_method_names,
)
from ge.passes.base import DecomposePass, FuseRecord, FusionBasePass, PassContext, PatternFusionPass

CTX = PassContext._create("p", {"ge.exec.deviceId": "0"})


def exact(text: str) -> str:
    """A ``match=`` pattern for exactly ``text``."""
    return f"^{re.escape(text)}$"


def _define(base: type, body: str) -> type:
    """Run a class statement ``class Cls(base): <body>`` (the checks run at that time)."""
    namespace: dict[str, Any] = {"Base": base, "pattern": pattern}
    body = textwrap.dedent(body) or "pass"
    source = "class Cls(Base):\n" + textwrap.indent(body, "    ")
    exec(source, namespace)
    return namespace["Cls"]  # type: ignore[no-any-return]


# --- PassContext -------------------------------------------------------------------------------


def test_pass_context_has_no_public_constructor() -> None:
    with pytest.raises(TypeError, match=exact("No constructor defined!")):
        PassContext()


def test_pass_context_accessors() -> None:
    options = {"k": "v"}
    ctx = PassContext._create("MyPass", options)
    options["k"] = "changed"  # the context keeps its own copy
    assert ctx.get_pass_name() == "MyPass" and ctx.pass_name == "MyPass"
    assert ctx.get_error_message() == ""
    ctx.set_pass_name("Renamed")
    ctx.set_error_message("went wrong")
    assert (ctx.get_pass_name(), ctx.error_message) == ("Renamed", "went wrong")
    ctx.pass_name = "Again"
    ctx.error_message = "twice"
    assert (ctx.get_pass_name(), ctx.get_error_message()) == ("Again", "twice")
    assert ctx.get_option_value("k") == "v"
    assert repr(ctx) == "PassContext(pass_name='Again')"


def test_pass_context_errors() -> None:
    ctx = PassContext._create("P", {})
    with pytest.raises(RuntimeError, match=exact("Failed to get option value for key: missing")):
        ctx.get_option_value("missing")
    with pytest.raises(TypeError, match="set_pass_name expects pass_name to be a str, got int"):
        ctx.set_pass_name(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="error_message to be a str, got NoneType"):
        ctx.set_error_message(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="option_key to be a str, got int"):
        ctx.get_option_value(3)  # type: ignore[arg-type]
    assert (ctx.get_pass_name(), ctx.get_error_message()) == ("P", "")
    with pytest.raises(AttributeError):
        ctx.anything = 1  # type: ignore[attr-defined]  # slotted


def test_pass_context_records_fusions() -> None:
    ctx = PassContext._create("P", {})
    ctx._record_fuse(["a", "b"], ["ab"])
    ctx._record_fuse(("c",), [])
    assert ctx._fuse_records == [(["a", "b"], ["ab"]), (["c"], [])]
    before, after = ctx._fuse_records[0]
    assert isinstance(ctx._fuse_records[0], FuseRecord) and after == ["ab"] and before[0] == "a"
    assert ctx._fuse_records[1].nodes_after == []


# --- default hook bodies -----------------------------------------------------------------------


def test_default_hook_bodies() -> None:
    with pytest.raises(NotImplementedError, match=exact("FusionBasePass.run must be implemented")):
        FusionBasePass().run(None, CTX)  # type: ignore[arg-type]
    p = PatternFusionPass()
    with pytest.raises(
        NotImplementedError, match=exact("PatternFusionPass.patterns must be implemented")
    ):
        p.patterns()
    with pytest.raises(
        NotImplementedError, match=exact("PatternFusionPass.replacement must be implemented")
    ):
        p.replacement(None)
    assert p.meet_requirements(None) is True and p.meet_requirements(None, CTX) is True
    d = DecomposePass()
    with pytest.raises(
        NotImplementedError, match=exact("DecomposePass.replacement must be implemented")
    ):
        d.replacement(None)  # type: ignore[arg-type]
    assert d.meet_requirements(None) is True  # type: ignore[arg-type]
    assert DecomposePass.op_types == ()
    assert call_meet_requirements(d, None, CTX) is True


def test_matcher_config() -> None:
    config = object()
    assert PatternFusionPass().matcher_config is None
    assert PatternFusionPass(config).matcher_config is config
    assert PatternFusionPass(matcher_config=config).matcher_config is config

    class NoSuper(PatternFusionPass):
        def __init__(self) -> None:
            pass

    assert NoSuper().matcher_config is None
    with pytest.raises(AttributeError):
        PatternFusionPass().matcher_config = config  # type: ignore[misc]


def test_fusion_base_pass_subclasses_may_define_run_and_anything() -> None:
    cls = _define(
        FusionBasePass,
        """
        def run(self, graph, context):
            return 7
        def replacement(self, a, b, c, d, e):
            pass
        """,
    )
    assert cls().run(None, CTX) == 7


# --- §9.2: the class-definition checks ---------------------------------------------------------

PATTERN_ARITY = "@pattern methods only support method(self, inputs)"
PF_MEET = (
    "meet_requirements only supports meet_requirements(self, match_result) or "
    "meet_requirements(self, match_result, context)"
)
PF_REPL = (
    "replacement only supports replacement(self, match_result) or "
    "replacement(self, match_result, context)"
)
EXPR_ARITY = (
    "Expression-style replacement only supports replacement(self, inputs), "
    "replacement(self, inputs, match_result), replacement(self, inputs, context), or "
    "replacement(self, inputs, match_result, context)"
)
EXPR_FOURTH = (
    "Expression-style replacement with four arguments must use "
    "replacement(self, inputs, match_result, context)"
)
DEC_MEET = (
    "meet_requirements only supports meet_requirements(self, node) or "
    "meet_requirements(self, node, context)"
)
DEC_REPL = "replacement only supports replacement(self, node) or replacement(self, node, context)"

REJECTED = [
    (
        PatternFusionPass,
        "def run(self, graph, context): pass",
        "Cls overrides run(), which is never invoked by the PatternFusionPass execution path. "
        "Implement patterns()/replacement() instead.",
    ),
    (PatternFusionPass, "run = None", "Cls overrides run()"),
    (
        PatternFusionPass,
        "@pattern\ndef p(self, inputs): pass\ndef patterns(self): return []",
        "Cls cannot combine @pattern methods with patterns(). "
        "Use one style for declaring patterns.",
    ),
    (PatternFusionPass, "@pattern\ndef p(self): pass", PATTERN_ARITY),
    (PatternFusionPass, "@pattern\ndef p(self, inputs, extra): pass", PATTERN_ARITY),
    (PatternFusionPass, "@pattern\ndef p(self, inputs, *, k): pass", PATTERN_ARITY),
    (PatternFusionPass, "@pattern\ndef p(self, *args): pass", PATTERN_ARITY),
    (PatternFusionPass, "def meet_requirements(self): pass", PF_MEET),
    (PatternFusionPass, "def meet_requirements(self, m, c, extra): pass", PF_MEET),
    (PatternFusionPass, "def meet_requirements(self, m, *, required): pass", PF_MEET),
    (PatternFusionPass, "def meet_requirements(self, *args, **kwargs): pass", PF_MEET),
    (PatternFusionPass, "meet_requirements = 3", PF_MEET),
    (PatternFusionPass, "replacement = None", PF_REPL),
    (DecomposePass, "meet_requirements = None", DEC_MEET),
    (PatternFusionPass, "def replacement(self): pass", PF_REPL),
    (PatternFusionPass, "def replacement(self, m, c, extra): pass", PF_REPL),
    (PatternFusionPass, "def replacement(self, m, *, required): pass", PF_REPL),
    (PatternFusionPass, "def replacement(self, inputs, a, b, context, e): pass", EXPR_ARITY),
    (PatternFusionPass, "def replacement(self, inputs, *, required): pass", EXPR_ARITY),
    (PatternFusionPass, "def replacement(self, inputs, match_result, ctx): pass", EXPR_FOURTH),
    (
        PatternFusionPass,
        "def replacement(self, inputs, match_result, context, x=1): pass",
        EXPR_ARITY,
    ),
    (PatternFusionPass, "def replacement(self, inputs, context, match_result): pass", EXPR_FOURTH),
    (
        DecomposePass,
        "def run(self, graph, context): pass",
        "Cls overrides run(), which is never invoked by the DecomposePass execution path. "
        "Implement meet_requirements()/replacement() instead.",
    ),
    (DecomposePass, "def meet_requirements(self): pass", DEC_MEET),
    (DecomposePass, "def meet_requirements(self, n, c, d): pass", DEC_MEET),
    (DecomposePass, "def meet_requirements(self, n, *, k): pass", DEC_MEET),
    (DecomposePass, "def replacement(self): pass", DEC_REPL),
    (DecomposePass, "def replacement(self, n, c, d): pass", DEC_REPL),
    (DecomposePass, "def replacement(self, inputs, a, b): pass", DEC_REPL),  # no expression style
]


@pytest.mark.parametrize(("base", "body", "text"), REJECTED)
def test_class_definition_rejects(base: type, body: str, text: str) -> None:
    with pytest.raises(TypeError, match=f"^{re.escape(text)}"):
        _define(base, body)


@pytest.mark.parametrize(
    ("base", "body"),
    [
        (PatternFusionPass, "def meet_requirements(self, m): return True"),
        (PatternFusionPass, "def meet_requirements(self, m, context, *args, k=1, **kw): pass"),
        (PatternFusionPass, "def meet_requirements(self, m, c=None): pass"),
        (PatternFusionPass, "def replacement(self, inputs): pass"),
        (PatternFusionPass, "def replacement(self, inputs, context): pass"),
        (PatternFusionPass, "def replacement(self, inputs, match_result): pass"),
        (PatternFusionPass, "def replacement(self, inputs, m, context): pass"),
        (PatternFusionPass, "def replacement(self, m, c): pass"),
        (PatternFusionPass, "@pattern\ndef p(self, inputs, *args, k=1): pass"),
        (PatternFusionPass, "def patterns(self): return []"),
        (DecomposePass, "def replacement(self, node, context): pass"),
        (DecomposePass, "op_types = ('Add',)\ndef meet_requirements(self, node): pass"),
    ],
)
def test_class_definition_accepts(base: type, body: str) -> None:
    _define(base, body)


def test_checks_look_only_at_the_class_own_dict() -> None:
    parent = _define(PatternFusionPass, "@pattern\ndef p(self, inputs): pass")
    # a subclass defining patterns() while inheriting @pattern methods passes the check
    child = _define(parent, "def patterns(self): return ['from patterns']")
    assert pattern_method_names(child) == []
    # inherited hooks are not checked again; a subclass's own hooks are
    ok = _define(DecomposePass, "def replacement(self, node): return node")
    _define(ok, "x = 1")
    with pytest.raises(TypeError, match=re.escape(DEC_REPL)):
        _define(ok, "def replacement(self): pass")


def test_a_rejected_class_changes_nothing_of_its_base() -> None:
    base = _define(DecomposePass, "def meet_requirements(self, node): return 'base'")
    wrapped = vars(base)["meet_requirements"]
    with pytest.raises(TypeError):
        _define(base, "def meet_requirements(self, n): pass\ndef replacement(self): pass")
    assert vars(base)["meet_requirements"] is wrapped
    assert call_meet_requirements(base(), "n", CTX) is True


# --- hook binding ------------------------------------------------------------------------------


def test_graph_hooks_are_wrapped_and_get_the_context_only_with_three_params() -> None:
    seen: list[tuple[Any, ...]] = []

    class Two(DecomposePass):
        def meet_requirements(self, node: Any) -> bool:
            seen.append(("meet", node))
            return True

        def replacement(self, node: Any) -> Any:
            seen.append(("repl", node))
            return "graph"

    class Three(DecomposePass):
        def meet_requirements(self, node: Any, context: Any) -> bool:
            seen.append(("meet", node, context))
            return False

        def replacement(self, node: Any, ctx: Any) -> Any:
            seen.append(("repl", node, ctx))
            return "graph3"

    two, three = Two(), Three()
    assert two.meet_requirements("n", CTX) is True and two.replacement("n") == "graph"
    assert call_meet_requirements(two, "n", CTX) is True
    assert call_replacement(two, "n", CTX) == "graph"
    assert call_meet_requirements(three, "n", CTX) is False
    assert call_replacement(three, "n", CTX) == "graph3"
    assert three.replacement("n") == "graph3"  # context defaults to None
    assert seen == [
        ("meet", "n"),
        ("repl", "n"),
        ("meet", "n"),
        ("repl", "n"),
        ("meet", "n", CTX),
        ("repl", "n", CTX),
        ("repl", "n", None),
    ]
    assert Two.replacement.__name__ == "replacement"  # functools.wraps
    assert not is_expression_replacement(Two)


def test_call_meet_requirements_returns_a_bool() -> None:
    cls = _define(PatternFusionPass, "def meet_requirements(self, m): return m")
    assert call_meet_requirements(cls(), [1], CTX) is True
    assert call_meet_requirements(cls(), None, CTX) is False


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("(self, inputs)", ("I",)),
        ("(self, inputs, match_result)", ("I", "M")),
        ("(self, inputs, mr)", ("I", "M")),
        ("(self, inputs, context)", ("I", "C")),
        ("(self, inputs, match_result, context)", ("I", "M", "C")),
        ("(self, inputs, m, context, *rest)", ("I", "M", "C")),
    ],
)
def test_expression_replacement_dispatch(signature: str, expected: tuple[str, ...]) -> None:
    params = signature[1:-1].replace("*rest", "").split(", ")[1:]
    names = [p for p in params if p]
    body = f"def replacement{signature}: return ({', '.join(names)},)"
    cls = _define(PatternFusionPass, body)
    assert is_expression_replacement(cls)
    assert call_expression_replacement(cls(), "I", "M", "C") == expected


def test_hooks_set_after_class_creation_are_inspected_on_call() -> None:
    cls = _define(DecomposePass, "")
    cls.meet_requirements = lambda self, node: node == "ok"  # type: ignore[method-assign]
    cls.replacement = lambda self, node, ctx: (node, ctx)  # type: ignore[method-assign]
    obj = cls()
    assert call_meet_requirements(obj, "ok", CTX) is True
    assert call_replacement(obj, "n", CTX) == ("n", CTX)
    obj.replacement = lambda node: node  # type: ignore[method-assign]  # on the instance
    assert call_replacement(obj, "n", CTX) == "n"
    obj.replacement = lambda node, ctx: ctx  # type: ignore[method-assign]
    assert call_replacement(obj, "n", CTX) is CTX

    pat = _define(PatternFusionPass, "")
    pat.replacement = lambda self, inputs, context: context  # type: ignore[method-assign]
    assert is_expression_replacement(pat)
    assert call_expression_replacement(pat(), "I", "M", "C") == "C"


def test_default_replacement_is_graph_style() -> None:
    assert not is_expression_replacement(PatternFusionPass)
    assert not is_expression_replacement(DecomposePass)


# --- pattern methods ---------------------------------------------------------------------------


def test_pattern_method_names_in_definition_order_along_the_mro() -> None:
    parent = _define(
        PatternFusionPass,
        """
        @pattern
        def zeta(self, inputs): pass
        def helper(self): pass
        @pattern
        def alpha(self, inputs): pass
        """,
    )
    assert pattern_method_names(parent) == ["zeta", "alpha"]
    child = _define(
        parent, "@pattern\ndef mid(self, inputs): pass\n@pattern\ndef zeta(self, inputs): pass"
    )
    assert pattern_method_names(child) == ["zeta", "alpha", "mid"]
    dropped = _define(parent, "def zeta(self, inputs): pass")  # no longer a pattern
    assert pattern_method_names(dropped) == ["alpha"]
    assert pattern_method_names(_define(PatternFusionPass, "def patterns(self): return []")) == []
    assert pattern_method_names(PatternFusionPass) == []
    # a patterns() further up the MRO than the @pattern methods does not hide them
    legacy = _define(PatternFusionPass, "def patterns(self): return []")
    modern = _define(legacy, "@pattern\ndef p(self, inputs): pass")
    assert pattern_method_names(modern) == ["p"]


def test_pattern_marker() -> None:
    def fn(self: Any, inputs: Any) -> None:
        pass

    assert pattern(fn) is fn and _hooks.is_pattern_method(fn)
    assert getattr(fn, _hooks.PATTERN_MARK) is True
    assert not _hooks.is_pattern_method(lambda: None)
    assert _hooks.own_pattern_methods(PatternFusionPass) == []
