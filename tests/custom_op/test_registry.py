"""``register_op_impl``: capability reflection, the registry and its queries, GE_ERRORS.md §10.2
errors, and the schema-bound signature rules of §10.3 (condition -> TypeError text)."""

# ruff: noqa: UP006, UP035, UP045  (typing.List/Optional/Tuple are annotation kinds under test)

# No ``from __future__ import annotations``: callbacks are checked by their real annotations.

import abc
from typing import Any, List, Optional

import pytest

from ge.custom_op import (
    EagerExecuteOp,
    OpImplDescriptor,
    clear_registered_op_impls,
    get_registered_op_impl_by_descriptor_key,
    get_registered_op_impl_dicts,
    get_registered_op_impls,
    register_op,
    register_op_impl,
)
from ge.custom_op.registry import get_registered_op_impl_for_type
from ge.graph import AttrValueType, DataType
from ge.ops import AttrSpec, OpDef, TensorSpec, find_op, register_op_def, registry
from ge.ops.schema import PortKind
from ge.runtime import Tensor, TensorDesc


def _keys() -> list[str]:
    return [d.descriptor_key for d in get_registered_op_impls()]


def _proto(op_type: str) -> None:
    """x: required, b: optional, xs: dynamic; outputs y, ys (dynamic); attrs alpha, axes."""

    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc,
        b: Optional[TensorDesc],
        xs: List[TensorDesc],
        *,
        alpha: float = 1.0,
        axes: List[int] = [0],  # noqa: B006
    ) -> tuple[TensorDesc, List[TensorDesc]]:
        return TensorDesc(x.shape, x.data_type), [TensorDesc(x.shape, x.data_type)]


# --- reflection and the registry ----------------------------------------------------------------
def test_interfaces_are_reflected_in_a_fixed_order(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def declare_launch_args(self, x: Tensor, y: Tensor) -> None: ...

        def compile(self, x: Tensor, y: Tensor) -> None: ...

        def execute(self, x: Tensor) -> None: ...

        helper = 3  # a non-callable attribute is no capability

    desc: OpImplDescriptor = Impl.__ge_op_impl_descriptor__
    assert desc.interfaces == ["eager_execute", "compilable", "annotated_args"]
    assert desc.descriptor_key == f"{__name__}:{Impl.__qualname__}:{op_type}"
    assert (desc.op_type, desc.module_name, desc.class_name, desc.cls) == (
        op_type,
        __name__,
        Impl.__qualname__,
        Impl,
    )
    assert get_registered_op_impls()[-1] is desc
    assert get_registered_op_impl_by_descriptor_key(desc.descriptor_key) is desc
    assert get_registered_op_impl_for_type(op_type) is desc
    assert get_registered_op_impl_dicts()[-1] == {
        "descriptor_key": desc.descriptor_key,
        "op_type": op_type,
        "module_name": __name__,
        "class_name": Impl.__qualname__,
        "interfaces": ["eager_execute", "compilable", "annotated_args"],
    }


@pytest.mark.parametrize(
    ("methods", "interfaces"),
    [
        (("execute",), ["eager_execute"]),
        (("declare_launch_args",), ["annotated_args"]),
        (("compile", "declare_launch_args"), ["compilable", "annotated_args"]),
        (("execute", "declare_launch_args"), ["eager_execute", "annotated_args"]),
    ],
)
def test_capability_subsets(op_type: str, methods: tuple[str, ...], interfaces: list[str]) -> None:
    def execute(self: Any, ctx: Any) -> None: ...  # legacy form: never bound

    def with_outputs(self: Any, x: Any, y: Any) -> None: ...

    namespace = {m: execute if m == "execute" else with_outputs for m in methods}
    cls = register_op_impl(op_type=op_type)(type("Impl", (), namespace))
    assert cls.__ge_op_impl_descriptor__.interfaces == interfaces


def test_queries_and_clear(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class A:
        def execute(self, ctx: Any) -> None: ...

    @register_op_impl(op_type=op_type + "B")
    class B:
        def execute(self, ctx: Any) -> None: ...

    assert _keys()[-2:] == [
        A.__ge_op_impl_descriptor__.descriptor_key,
        B.__ge_op_impl_descriptor__.descriptor_key,
    ]
    with pytest.raises(KeyError, match="python op impl descriptor_key not found: nope"):
        get_registered_op_impl_by_descriptor_key("nope")
    clear_registered_op_impls()
    assert get_registered_op_impls() == [] and get_registered_op_impl_dicts() == []
    assert get_registered_op_impl_for_type(op_type) is None


def test_descriptor_is_frozen(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class A:
        def execute(self, ctx: Any) -> None: ...

    with pytest.raises(AttributeError):
        A.__ge_op_impl_descriptor__.op_type = "x"


def test_eager_execute_op_subclass(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class Mine(EagerExecuteOp):
        def execute(self, ctx: Any) -> None: ...

    assert Mine.__ge_op_impl_descriptor__.interfaces == ["eager_execute"]


def test_eager_execute_op_base_raises_not_implemented() -> None:
    class Calls(EagerExecuteOp):
        def execute(self, ctx: Any) -> None:
            super().execute(ctx)

    with pytest.raises(NotImplementedError) as info:
        Calls().execute(None)
    assert str(info.value) == ""


# --- GE_ERRORS.md §10.2 ------------------------------------------------------------------------
class _Abstract(abc.ABC):
    @abc.abstractmethod
    def execute(self, ctx: Any) -> None: ...


class _Partial(EagerExecuteOp):
    pass


class _Nothing:
    execute = 5  # not callable: ignored
    declare_launch_args = None


class _OnlyCompile:
    def compile(self, x: Any) -> None: ...


class _CompileNotCallable:
    compile = "fast"

    def execute(self, ctx: Any) -> None: ...


def _a_function(ctx: Any) -> None: ...


IMPL_ERRORS: list[tuple[str, Any, type, str]] = [
    ("function", _a_function, TypeError, "register_op_impl expects a class"),
    ("instance", _Nothing(), TypeError, "register_op_impl expects a class"),
    ("base-itself", EagerExecuteOp, TypeError, "register_op_impl expects a concrete class"),
    ("abstract", _Abstract, TypeError, "register_op_impl expects a concrete class"),
    ("subclass-without-execute", _Partial, TypeError, "register_op_impl expects a concrete class"),
    (
        "no-method",
        _Nothing,
        TypeError,
        f"register_op_impl class '{__name__}._Nothing' must implement at least one supported "
        "method: execute, declare_launch_args",
    ),
    (
        "compile-only",
        _OnlyCompile,
        TypeError,
        f"register_op_impl class '{__name__}._OnlyCompile' must implement at least one "
        "supported method: execute, declare_launch_args",
    ),
    ("compile-not-callable", _CompileNotCallable, TypeError, "compile must be callable"),
]


@pytest.mark.parametrize(
    ("target", "kind", "message"), [r[1:] for r in IMPL_ERRORS], ids=[r[0] for r in IMPL_ERRORS]
)
def test_impl_errors(op_type: str, target: Any, kind: type, message: str) -> None:
    before = _keys()
    with pytest.raises(kind) as info:
        register_op_impl(op_type=op_type)(target)
    assert str(info.value) == message
    assert _keys() == before


@pytest.mark.parametrize("bad", ["", 1, None])
def test_impl_op_type_checked_at_the_factory_call(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"^register_op_impl op_type must be a non-empty string$"):
        register_op_impl(op_type=bad)


def test_same_class_twice_raises(op_type: str) -> None:
    class A:
        def execute(self, ctx: Any) -> None: ...

    register_op_impl(op_type=op_type)(A)
    before = _keys()
    with pytest.raises(ValueError) as info:
        register_op_impl(op_type=op_type)(A)
    assert str(info.value) == (
        f"python op impl descriptor_key already exists: {__name__}:{A.__qualname__}:{op_type}"
    )
    assert _keys() == before


def test_same_op_type_from_another_class_raises(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class A:
        def execute(self, ctx: Any) -> None: ...

    class B:
        def execute(self, ctx: Any) -> None: ...

    with pytest.raises(ValueError, match=f"^python op impl type already exists: {op_type}$"):
        register_op_impl(op_type=op_type)(B)
    assert get_registered_op_impl_for_type(op_type) is A.__ge_op_impl_descriptor__
    assert not hasattr(B, "__ge_op_impl_descriptor__")


def test_built_in_op_types_take_no_python_impl() -> None:
    class A:
        def execute(self, ctx: Any) -> None: ...

    with pytest.raises(ValueError, match="'Add' is a built-in ge op"):
        register_op_impl(op_type="Add")(A)
    assert get_registered_op_impl_for_type("Add") is None


# --- schema-bound signatures (GE_ERRORS.md §10.3) ------------------------------------------------
def _prefix(op_type: str, cls: type, method: str) -> str:
    key = f"{__name__}:{cls.__qualname__}:{op_type}"
    return (
        f"invalid {method} signature for op type {op_type}, descriptor key {key}, method "
        f"{method}: expected "
    )


# (id, method, source of the method body with IR inputs x, b, xs; outputs y, ys; attrs
#  alpha, axes), expected, actual
SIGNATURES: list[tuple[str, str, str, str, str]] = [
    (
        "variadic",
        "declare_launch_args",
        "def declare_launch_args(self, x, b, xs, y, ys, *rest, alpha, axes) -> None: ...",
        "no variadic parameters",
        "variadic parameter rest",
    ),
    (
        "variadic-kw",
        "execute",
        "def execute(self, x, b, xs, **attrs): ...",
        "no variadic parameters",
        "variadic parameter attrs",
    ),
    (
        "count-execute",
        "execute",
        "def execute(self, x, b, *, alpha, axes): ...",
        "3 positional input parameters followed by 2 keyword-only attrs",
        "4 parameters",
    ),
    (
        "count-execute-with-outputs",
        "execute",
        "def execute(self, x, b, xs, y, ys, *, alpha, axes): ...",
        "3 positional input parameters followed by 2 keyword-only attrs",
        "7 parameters",
    ),
    (
        "count-declare",
        "declare_launch_args",
        "def declare_launch_args(self, x, b, xs, *, alpha, axes) -> None: ...",
        "5 positional input/output parameters followed by 2 keyword-only attrs",
        "5 parameters",
    ),
    (
        "count-compile",
        "compile",
        "def compile(self, x, b, xs, y, ys, *, alpha) -> None: ...",
        "5 positional input/output parameters followed by 2 keyword-only attrs",
        "6 parameters",
    ),
    (
        "unresolvable",
        "execute",
        "def execute(self, x: 'Nope', b, xs, *, alpha, axes): ...",
        "resolvable type annotations",
        "type hint resolution failed: name 'Nope' is not defined",
    ),
    (
        "input-keyword-only",
        "execute",
        "def execute(self, x, b, *, xs, alpha, axes): ...",
        "positional input parameter at index 2",
        "parameter xs kind KEYWORD_ONLY",
    ),
    (
        "required-input-annotation",
        "execute",
        "def execute(self, x: TensorDesc, b, xs, *, alpha, axes): ...",
        "input parameter at index 0 annotation <class 'ge.runtime.types.Tensor'>",
        "<class 'ge.runtime.types.TensorDesc'>",
    ),
    (
        "optional-input-annotation",
        "execute",
        "def execute(self, x, b: Tensor, xs, *, alpha, axes): ...",
        "input parameter at index 1 annotation ('union', frozenset({",
        "<class 'ge.runtime.types.Tensor'>",
    ),
    (
        "dynamic-input-annotation",
        "execute",
        "def execute(self, x, b, xs: Tensor, *, alpha, axes): ...",
        "input parameter at index 2 annotation ('list', (<class 'ge.runtime.types.Tensor'>,))",
        "<class 'ge.runtime.types.Tensor'>",
    ),
    (
        "output-keyword-only",
        "declare_launch_args",
        "def declare_launch_args(self, x, b, xs, y, *, ys, alpha, axes) -> None: ...",
        "positional output parameter at index 1",
        "parameter ys kind KEYWORD_ONLY",
    ),
    (
        "dynamic-output-annotation",
        "compile",
        "def compile(self, x, b, xs, y, ys: Tensor, *, alpha, axes) -> None: ...",
        "output parameter at index 1 annotation ('list', (<class 'ge.runtime.types.Tensor'>,))",
        "<class 'ge.runtime.types.Tensor'>",
    ),
    (
        "attr-positional",
        "execute",
        "def execute(self, x, b, xs, alpha, *, axes): ...",
        "keyword-only attr parameter alpha",
        "parameter alpha kind POSITIONAL_OR_KEYWORD",
    ),
    (
        "attr-name",
        "execute",
        "def execute(self, x, b, xs, *, alpha, axis): ...",
        "attr name axes at index 1",
        "attr name axis",
    ),
    (
        "attr-order",
        "execute",
        "def execute(self, x, b, xs, *, axes, alpha): ...",
        "attr name alpha at index 0",
        "attr name axes",
    ),
    (
        "attr-annotation",
        "execute",
        "def execute(self, x, b, xs, *, alpha: int, axes): ...",
        "attr parameter alpha annotation <class 'float'>",
        "<class 'int'>",
    ),
    (
        "list-attr-annotation",
        "execute",
        "def execute(self, x, b, xs, *, alpha, axes: List[float]): ...",
        "attr parameter axes annotation ('list', (<class 'int'>,))",
        "('list', (<class 'float'>,))",
    ),
    (
        "missing-return",
        "declare_launch_args",
        "def declare_launch_args(self, x, b, xs, y, ys, *, alpha, axes): ...",
        "None return annotation",
        "missing return annotation",
    ),
    (
        "compile-missing-return",
        "compile",
        "def compile(self, x, b, xs, y, ys, *, alpha, axes): ...",
        "None return annotation",
        "missing return annotation",
    ),
    (
        "non-none-return",
        "declare_launch_args",
        "def declare_launch_args(self, x, b, xs, y, ys, *, alpha, axes) -> int: ...",
        "None return annotation",
        "<class 'int'>",
    ),
    (
        "execute-non-none-return",
        "execute",
        "def execute(self, x, b, xs, *, alpha, axes) -> bool: ...",
        "None return annotation",
        "<class 'bool'>",
    ),
]


def _class_with(source: str, method: str) -> type:
    namespace: dict[str, Any] = {}
    exec(source, {**globals()}, namespace)  # test-made methods
    body = dict(namespace)
    if method != "execute":
        body.setdefault("execute", lambda self, ctx: None)  # keep a legacy execute around
    return type("Impl", (), body)


@pytest.mark.parametrize(
    ("method", "source", "expected", "actual"),
    [r[1:] for r in SIGNATURES],
    ids=[r[0] for r in SIGNATURES],
)
def test_signature_errors(
    op_type: str, method: str, source: str, expected: str, actual: str
) -> None:
    _proto(op_type)
    cls = _class_with(source, method)
    before = _keys()
    with pytest.raises(TypeError) as info:
        register_op_impl(op_type=op_type)(cls)
    text = str(info.value)
    assert text.startswith(_prefix(op_type, cls, method) + expected), text
    assert text.endswith(f", actual {actual}"), text
    assert _keys() == before and not hasattr(cls, "__ge_op_impl_descriptor__")


def test_fully_annotated_signatures_bind(op_type: str) -> None:
    _proto(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(
            self,
            x: Tensor,
            bias: Optional[Tensor],
            xs: list[Tensor],
            *,
            alpha: float,
            axes: list[int],
        ) -> None: ...

        def compile(
            self,
            x: Tensor,
            bias: Tensor | None,
            xs: List[Tensor],
            out: Tensor,
            outs: List[Tensor],
            *,
            alpha: float,
            axes: List[int],
        ) -> None: ...

        def declare_launch_args(self, a, b, c, d, e, *, alpha, axes) -> None: ...  # type: ignore[no-untyped-def]

    assert Impl.__ge_op_impl_descriptor__.interfaces == [
        "eager_execute",
        "compilable",
        "annotated_args",
    ]


def test_static_class_and_inherited_methods_bind(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, *, k: int = 1) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    class Base:
        def declare_launch_args(self, x: Tensor, y: Tensor, *, k: int) -> None: ...

    @register_op_impl(op_type=op_type)
    class Impl(Base):
        @staticmethod
        def execute(x: Tensor, *, k: int) -> None: ...

        @classmethod
        def compile(cls, x: Tensor, y: Tensor, *, k: int) -> None: ...

    assert Impl.__ge_op_impl_descriptor__.interfaces == [
        "eager_execute",
        "compilable",
        "annotated_args",
    ]


def test_legacy_execute_is_not_bound(op_type: str) -> None:
    _proto(op_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, ctx): ...  # type: ignore[no-untyped-def]

    assert Impl.__ge_op_impl_descriptor__.interfaces == ["eager_execute"]


def test_every_attribute_kind_binds(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc,
        *,
        i: int,
        f: float,
        b: bool,
        s: str,
        d: DataType,
        t: Tensor,
        li: List[int],
        lf: List[float],
        lb: List[bool],
        ls: List[str],
        ld: List[DataType],
        lli: List[List[int]],
    ) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(
            self,
            x: Tensor,
            *,
            i: int,
            f: float,
            b: bool,
            s: str,
            d: DataType,
            t: Tensor,
            li: list[int],
            lf: list[float],
            lb: list[bool],
            ls: list[str],
            ld: list[DataType],
            lli: list[list[int]],
        ) -> None: ...

    assert get_registered_op_impl_for_type(op_type) is Impl.__ge_op_impl_descriptor__


# --- an implementation registered before its prototype ------------------------------------------
def test_impl_before_proto_is_checked_when_the_proto_registers(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor, *, alpha: float) -> None: ...

    @register_op(op_type=op_type)
    def infer(x: TensorDesc, *, alpha: float = 0.0) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    assert find_op(op_type) is not None


def test_a_proto_that_its_waiting_impl_does_not_fit_is_refused(op_type: str) -> None:
    @register_op_impl(op_type=op_type)
    class Impl:
        def execute(self, x: Tensor, *, beta: float) -> None: ...

    def infer(x: TensorDesc, *, alpha: float = 0.0) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    ops_before = sorted(op.type for op in registry())
    with pytest.raises(TypeError) as info:
        register_op(op_type=op_type)(infer)
    assert str(info.value).startswith(
        f"register_op op_type '{op_type}' failed: invalid execute signature for op type {op_type}"
    )
    assert "expected attr name alpha at index 0, actual attr name beta" in str(info.value)
    assert find_op(op_type) is None and sorted(op.type for op in registry()) == ops_before
    assert not hasattr(infer, "__ge_op_proto_descriptor__")


def test_impl_for_an_op_registered_through_ge_ops(op_type: str) -> None:
    """GE's "C++ prototype with a Python implementation": the IR is any non-built-in OpDef."""
    register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"), TensorSpec("w", PortKind.OPTIONAL)),
            outputs=(TensorSpec("y"),),
            attrs=(AttrSpec("n", AttrValueType.VT_INT, 2),),
            infer=lambda ctx: [ctx.inputs[0]],
            group="custom",
            source="tests",
        )
    )
    try:

        class Bad:
            def execute(self, x: Tensor, w: Tensor, *, n: int) -> None: ...

        with pytest.raises(TypeError, match="input parameter at index 1 annotation"):
            register_op_impl(op_type=op_type)(Bad)

        @register_op_impl(op_type=op_type)
        class Good:
            def execute(self, x: Tensor, w: Optional[Tensor], *, n: int) -> None: ...

        assert Good.__ge_op_impl_descriptor__.interfaces == ["eager_execute"]
    finally:
        registry().unregister(op_type)


def test_unsupported_ir_attribute_kind(op_type: str) -> None:
    register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            attrs=(AttrSpec("g", AttrValueType.VT_NAMED_ATTRS),),
            infer=lambda ctx: [ctx.inputs[0]],
            group="custom",
            source="tests",
        )
    )
    try:

        class Impl:
            def execute(self, x: Tensor, *, g: Any) -> None: ...

        with pytest.raises(
            ValueError,
            match="unsupported custom op runtime attr type: VT_NAMED_ATTRS, attr index: 0",
        ):
            register_op_impl(op_type=op_type)(Impl)
    finally:
        registry().unregister(op_type)
