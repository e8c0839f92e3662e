"""``register_op``: prototype parsing for every annotation kind, every check of GE_ERRORS.md
§10.1 (condition -> exception type and message, in check order), output naming,
``mutates_args``, idempotent re-registration and all-or-nothing conflicts."""

# ruff: noqa: UP006, UP035, UP045  (typing.List/Optional/Tuple are annotation kinds under test)

# No ``from __future__ import annotations``: the infer-meta functions below are parsed from
# their real annotation objects, some of which name test-local values.

import functools
import math
from typing import Any, List, Optional, Tuple

import pytest

from ge.custom_op import proto as proto_module
from ge.custom_op import register_op
from ge.custom_op.proto import (
    AttrProto,
    OpProtoDescriptor,
    get_registered_op_proto,
    get_registered_op_proto_by_descriptor_key,
    get_registered_op_protos,
)
from ge.graph import AttrValueType, DataType
from ge.graph import TensorDesc as GraphTensorDesc
from ge.ops import PortKind, find_op, get_op, registry
from ge.runtime import Tensor, TensorDesc

VT = AttrValueType


def _state() -> tuple[Any, ...]:
    """Everything registration may touch, for all-or-nothing checks."""
    return (
        [d.descriptor_key for d in get_registered_op_protos()],
        sorted(op.type for op in registry()),
    )


def _same(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


# --- inputs, attributes, outputs ----------------------------------------------------------------
def test_inputs_of_every_kind(op_type: str) -> None:
    @register_op(op_type=op_type)
    def f(
        x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc], ys: list[TensorDesc]
    ) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    desc = f.__ge_op_proto_descriptor__
    assert [(i.name, i.kind) for i in desc.inputs] == [
        ("x", PortKind.REQUIRED),
        ("bias", PortKind.OPTIONAL),
        ("xs", PortKind.DYNAMIC),
        ("ys", PortKind.DYNAMIC),
    ]
    op = get_op(op_type)
    assert [(s.name, s.kind) for s in op.inputs] == [(i.name, i.kind) for i in desc.inputs]
    assert op.group == "custom" and op.source == f"ge.custom_op:{desc.descriptor_key}"


def test_optional_input_also_as_pipe_union(op_type: str) -> None:
    @register_op(op_type=op_type)
    def f(x: TensorDesc | None) -> None:
        return None

    assert f.__ge_op_proto_descriptor__.inputs[0].kind is PortKind.OPTIONAL


ATTR_KINDS: list[tuple[Any, AttrValueType, Any, Any]] = [
    # annotation, kind, a valid default, the default as stored (lists frozen to tuples)
    (int, VT.VT_INT, 3, 3),
    (float, VT.VT_FLOAT, 0.5, 0.5),
    (bool, VT.VT_BOOL, True, True),
    (str, VT.VT_STRING, "mode", "mode"),
    (DataType, VT.VT_DATA_TYPE, DataType.DT_INT8, DataType.DT_INT8),
    (List[int], VT.VT_LIST_INT, [1, 2], (1, 2)),
    (list[float], VT.VT_LIST_FLOAT, [1.5], (1.5,)),
    (List[bool], VT.VT_LIST_BOOL, [True, False], (True, False)),
    (List[str], VT.VT_LIST_STRING, ["a"], ("a",)),
    (List[DataType], VT.VT_LIST_DATA_TYPE, [DataType.DT_FLOAT], (DataType.DT_FLOAT,)),
    (List[List[int]], VT.VT_LIST_LIST_INT, [[1], [2, 3]], ((1,), (2, 3))),
    (list[list[int]], VT.VT_LIST_LIST_INT, [], ()),
]


def _with_attr(annotation: Any, default: Any = None, *, has_default: bool = True) -> Any:
    """``def f(x: TensorDesc, *, a: <annotation> [= default]) -> TensorDesc``."""
    if has_default:

        def f(x: TensorDesc, *, a: annotation = default) -> TensorDesc:  # type: ignore[valid-type]
            return _same(x)
    else:

        def f(x: TensorDesc, *, a: annotation) -> TensorDesc:  # type: ignore[valid-type,no-redef]
            return _same(x)

    return f


@pytest.mark.parametrize(("annotation", "kind", "default", "stored"), ATTR_KINDS)
def test_attribute_kinds_with_defaults(
    op_type: str, annotation: Any, kind: AttrValueType, default: Any, stored: Any
) -> None:
    desc = register_op(op_type=op_type)(_with_attr(annotation, default)).__ge_op_proto_descriptor__
    (attr,) = desc.attrs
    assert (attr.name, attr.value_type, attr.default) == ("a", kind, stored)
    assert type(attr.default) is type(stored)
    spec = get_op(op_type).attrs[0]
    assert (spec.name, spec.type, spec.default) == ("a", kind, stored)


@pytest.mark.parametrize("annotation", [a for a, *_ in ATTR_KINDS] + [Tensor])
def test_attribute_kinds_without_default_are_required(op_type: str, annotation: Any) -> None:
    f = register_op(op_type=op_type)(_with_attr(annotation, has_default=False))
    (attr,) = f.__ge_op_proto_descriptor__.attrs
    assert attr.required and get_op(op_type).attrs[0].required


def test_tensor_attribute_kind(op_type: str) -> None:
    f = register_op(op_type=op_type)(_with_attr(Tensor, has_default=False))
    assert f.__ge_op_proto_descriptor__.attrs[0].value_type is VT.VT_TENSOR


def test_optional_annotation_with_none_default_is_a_required_attribute(op_type: str) -> None:
    f = register_op(op_type=op_type)(_with_attr(Optional[int], None))
    (attr,) = f.__ge_op_proto_descriptor__.attrs
    assert attr.annotation is int and attr.value_type is VT.VT_INT and attr.required


def test_attributes_keep_declaration_order(op_type: str) -> None:
    @register_op(op_type=op_type)
    def f(x: TensorDesc, *, b: int, a: float = 1.0, c: List[int] = [0]) -> TensorDesc:  # noqa: B006
        return _same(x)

    assert [a.name for a in get_op(op_type).attrs] == ["b", "a", "c"]


def test_descriptor_is_frozen_including_nested_defaults(op_type: str) -> None:
    f = register_op(op_type=op_type)(_with_attr(List[List[int]], [[1, 2]]))
    desc: OpProtoDescriptor = f.__ge_op_proto_descriptor__
    assert desc.attrs[0].default == ((1, 2),)
    assert all(isinstance(row, tuple) for row in desc.attrs[0].default)
    with pytest.raises(AttributeError):
        desc.op_type = "Other"  # type: ignore[misc]
    assert isinstance(desc.inputs, tuple) and isinstance(desc.outputs, tuple)


OUTPUTS: list[tuple[Any, list[PortKind]]] = [
    (None, []),
    (TensorDesc, [PortKind.REQUIRED]),
    (List[TensorDesc], [PortKind.DYNAMIC]),
    (list[TensorDesc], [PortKind.DYNAMIC]),
    (Tuple[TensorDesc, List[TensorDesc]], [PortKind.REQUIRED, PortKind.DYNAMIC]),
    (tuple[TensorDesc, TensorDesc, TensorDesc], [PortKind.REQUIRED] * 3),
]


@pytest.mark.parametrize(("annotation", "kinds"), OUTPUTS)
def test_return_annotations(op_type: str, annotation: Any, kinds: list[PortKind]) -> None:
    def f(x: TensorDesc) -> annotation:  # type: ignore[valid-type]
        return None

    desc = register_op(op_type=op_type)(f).__ge_op_proto_descriptor__
    assert [o.kind for o in desc.outputs] == kinds
    assert [o.name for o in desc.outputs] == [f"output{i}" for i in range(len(kinds))]
    assert [s.name for s in get_op(op_type).outputs] == [o.name for o in desc.outputs]


def test_output_names_step_around_input_names(op_type: str) -> None:
    @register_op(op_type=op_type)
    def f(
        output0: TensorDesc, output0_1: TensorDesc, output1: TensorDesc
    ) -> Tuple[TensorDesc, TensorDesc]:
        return _same(output0), _same(output0)

    assert [o.name for o in f.__ge_op_proto_descriptor__.outputs] == ["output0_2", "output1_1"]


# --- mutates_args ------------------------------------------------------------------------------
def _two_in_two_out(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
    return _same(x), _same(y)


@pytest.mark.parametrize(
    ("mutates", "names", "pairs"),
    [
        ((), ["output0", "output1"], ()),
        (("x",), ["x", "output1"], (("x", 0),)),
        (["x", "y"], ["x", "y"], (("x", 0), ("y", 1))),
        ((("y", 1),), ["output0", "y"], (("y", 1),)),
        ([["x", 1], ("y", 0)], ["y", "x"], (("x", 1), ("y", 0))),
    ],
)
def test_mutates_args_both_forms(
    op_type: str, mutates: Any, names: list[str], pairs: tuple[Any, ...]
) -> None:
    desc = register_op(op_type=op_type, mutates_args=mutates)(
        _two_in_two_out
    ).__ge_op_proto_descriptor__
    assert [o.name for o in desc.outputs] == names
    assert desc.mutates_args == pairs
    assert {o.name: o.ref_input for o in desc.outputs if o.ref_input} == {n: n for n, _ in pairs}
    assert get_op(op_type).pure is (not pairs)
    proto_module._unregister(op_type)  # the same function is registered again by the next case


# --- every error of GE_ERRORS.md §10.1, in check order ---------------------------------------
def _variadic(*xs: TensorDesc) -> TensorDesc:
    return xs[0]


def _variadic_kw(x: TensorDesc, **kw: int) -> TensorDesc:
    return x


def _unannotated_input(x) -> TensorDesc:  # type: ignore[no-untyped-def]
    return x  # type: ignore[no-any-return]


def _input_default(x: TensorDesc = None) -> TensorDesc:  # type: ignore[assignment]
    return x


def _int_input(x: int) -> TensorDesc:
    raise AssertionError


def _graph_desc_input(x: GraphTensorDesc) -> TensorDesc:
    raise AssertionError


def _unannotated_attr(x: TensorDesc, *, a) -> TensorDesc:  # type: ignore[no-untyped-def]
    return x


def _unresolvable(x: "Undefined") -> TensorDesc:  # type: ignore[name-defined]  # noqa: F821
    return x  # type: ignore[no-any-return]


def _no_return(x: TensorDesc):  # type: ignore[no-untyped-def]
    return x


def _int_return(x: TensorDesc) -> int:
    return 0


def _empty_tuple_return(x: TensorDesc) -> Tuple[()]:
    return ()


def _ellipsis_return(x: TensorDesc) -> Tuple[TensorDesc, ...]:
    return (x,)


def _bad_tuple_element(x: TensorDesc) -> Tuple[TensorDesc, int]:
    return x, 0


# several errors at once: the first in check order wins
def _input_before_variadic(x: int, *rest: TensorDesc) -> TensorDesc:
    raise AssertionError


def _attr_before_return(x: TensorDesc, *, a: dict):  # type: ignore[no-untyped-def,type-arg]
    return x


def _return_before_mutates(x: TensorDesc) -> int:
    return 0


def _one_out(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return x


class _NotAFunction:
    def __call__(self, x: TensorDesc) -> TensorDesc:
        return x


ERRORS: list[tuple[str, Any, Any, type, str]] = [
    # id, decorated object, mutates_args, exception type, inner message
    ("1-class", _NotAFunction, (), TypeError, "register_op expects a Python function"),
    ("1-instance", _NotAFunction(), (), TypeError, "register_op expects a Python function"),
    ("1-builtin", len, (), TypeError, "register_op expects a Python function"),
    (
        "1-partial",
        functools.partial(_one_out),
        (),
        TypeError,
        "register_op expects a Python function",
    ),
    (
        "2-unresolvable",
        _unresolvable,
        (),
        TypeError,
        "failed to resolve annotations for '_unresolvable': name 'Undefined' is not defined",
    ),
    ("3-varargs", _variadic, (), TypeError, "register_op does not support variadic parameter 'xs'"),
    (
        "3-varkw",
        _variadic_kw,
        (),
        TypeError,
        "register_op does not support variadic parameter 'kw'",
    ),
    ("4", _unannotated_input, (), TypeError, "input 'x' must have a type annotation"),
    ("5", _input_default, (), TypeError, "input 'x' must not have a default value"),
    ("6-int", _int_input, (), TypeError, "unsupported input annotation for 'x': <class 'int'>"),
    (
        "6-graph-desc",
        _graph_desc_input,
        (),
        TypeError,
        "unsupported input annotation for 'x': <class 'ge.graph.tensor_desc.TensorDesc'>",
    ),
    ("7", _unannotated_attr, (), TypeError, "attr 'a' must have a type annotation"),
    (
        "8-dict",
        _with_attr(dict, has_default=False),
        (),
        TypeError,
        "unsupported attr annotation for 'a': <class 'dict'>",
    ),
    (
        "8-optional-not-none",
        _with_attr(Optional[int], 3),
        (),
        TypeError,
        "unsupported attr annotation for 'a': typing.Optional[int]",
    ),
    (
        "8-list-of-tuples",
        _with_attr(List[Tuple[int]], has_default=False),
        (),
        TypeError,
        "unsupported attr annotation for 'a': typing.List[typing.Tuple[int]]",
    ),
    (
        "8-graph-tensor-desc",
        _with_attr(TensorDesc, has_default=False),
        (),
        TypeError,
        "unsupported attr annotation for 'a': <class 'ge.runtime.types.TensorDesc'>",
    ),
    (
        "9-tensor-default",
        _with_attr(Tensor, 1),
        (),
        TypeError,
        "Tensor attr 'a' does not support a default value",
    ),
    (
        "9-tensor-none",
        _with_attr(Optional[Tensor], None),
        (),
        TypeError,
        "Tensor attr 'a' does not support a default value",
    ),
    (
        "10-bool-for-int",
        _with_attr(int, True),
        (),
        TypeError,
        "default value for attr 'a' must be int, got bool",
    ),
    (
        "10-int-for-float",
        _with_attr(float, 1),
        (),
        TypeError,
        "default value for attr 'a' must be float, got int",
    ),
    (
        "10-int-for-bool",
        _with_attr(bool, 1),
        (),
        TypeError,
        "default value for attr 'a' must be bool, got int",
    ),
    (
        "10-int-for-datatype",
        _with_attr(DataType, 0),
        (),
        TypeError,
        "default value for attr 'a' must be DataType, got int",
    ),
    (
        "10-bytes-for-str",
        _with_attr(str, b"x"),
        (),
        TypeError,
        "default value for attr 'a' must be str, got bytes",
    ),
    (
        "11-dt-max",
        _with_attr(DataType, DataType.DT_MAX),
        (),
        TypeError,
        "default value for attr 'a' must be a valid DataType",
    ),
    (
        "12-tuple",
        _with_attr(List[int], (1, 2)),
        (),
        TypeError,
        "default value for attr 'a' must be list, got tuple",
    ),
    (
        "12-scalar",
        _with_attr(List[float], 1.0),
        (),
        TypeError,
        "default value for attr 'a' must be list, got float",
    ),
    (
        "13-bool-in-ints",
        _with_attr(List[int], [1, True]),
        (),
        TypeError,
        "default value for attr 'a' contains bool, expected int",
    ),
    (
        "13-int-in-floats",
        _with_attr(List[float], [1.0, 2]),
        (),
        TypeError,
        "default value for attr 'a' contains int, expected float",
    ),
    (
        "13-tuple-row",
        _with_attr(List[List[int]], [(1,)]),
        (),
        TypeError,
        "default value for attr 'a' contains tuple, expected list",
    ),
    (
        "13-float-in-row",
        _with_attr(List[List[int]], [[1.0]]),
        (),
        TypeError,
        "default value for attr 'a' contains float, expected int",
    ),
    (
        "13-int-in-datatypes",
        _with_attr(List[DataType], [0]),
        (),
        TypeError,
        "default value for attr 'a' contains int, expected DataType",
    ),
    (
        "14-dt-max-in-list",
        _with_attr(List[DataType], [DataType.DT_FLOAT, DataType.DT_MAX]),
        (),
        TypeError,
        "default value for attr 'a' must contain valid DataType values",
    ),
    ("16", _no_return, (), TypeError, "register_op return type annotation is required"),
    ("17-int", _int_return, (), TypeError, "unsupported return annotation: <class 'int'>"),
    (
        "17-empty-tuple",
        _empty_tuple_return,
        (),
        TypeError,
        "unsupported return annotation: typing.Tuple[()]",
    ),
    (
        "17-ellipsis",
        _ellipsis_return,
        (),
        TypeError,
        "unsupported return annotation: typing.Tuple[ge.runtime.types.TensorDesc, ...]",
    ),
    (
        "18",
        _bad_tuple_element,
        (),
        TypeError,
        "unsupported return annotation at output index 1: <class 'int'>",
    ),
    ("19-str", _one_out, "x", TypeError, "mutates_args must be a list or tuple"),
    ("19-set", _one_out, {"x"}, TypeError, "mutates_args must be a list or tuple"),
    ("19-none", _one_out, None, TypeError, "mutates_args must be a list or tuple"),
    (
        "20",
        _two_in_two_out,
        ["x", ("y", 1)],
        TypeError,
        "mutates_args sequential and explicit forms cannot be mixed",
    ),
    ("21", _one_out, ("x", "y"), ValueError, "mutates_args has more entries than outputs"),
    (
        "22-short",
        _one_out,
        [("x",)],
        TypeError,
        "mutates_args explicit entries must be (input_name, output_index)",
    ),
    (
        "22-int",
        _one_out,
        [0],
        TypeError,
        "mutates_args explicit entries must be (input_name, output_index)",
    ),
    (
        "23-bool",
        _one_out,
        [("x", True)],
        TypeError,
        "mutates_args explicit entries must be (str, int)",
    ),
    ("23-name", _one_out, [(1, 0)], TypeError, "mutates_args explicit entries must be (str, int)"),
    ("24-high", _one_out, [("x", 1)], ValueError, "mutates_args output index out of range: 1"),
    (
        "24-negative",
        _one_out,
        [("x", -1)],
        ValueError,
        "mutates_args output index out of range: -1",
    ),
    (
        "25",
        _two_in_two_out,
        [("x", 0), ("y", 0)],
        ValueError,
        "mutates_args output index is duplicated: 0",
    ),
    ("26-sequential", _one_out, ("z",), ValueError, "mutates_args input does not exist: 'z'"),
    ("26-explicit", _one_out, [("z", 0)], ValueError, "mutates_args input does not exist: 'z'"),
    (
        "27",
        _two_in_two_out,
        [("x", 0), ("x", 1)],
        ValueError,
        "mutates_args input is duplicated: 'x'",
    ),
    (
        "order-input-before-variadic",
        _input_before_variadic,
        (),
        TypeError,
        "unsupported input annotation for 'x'",
    ),
    (
        "order-attr-before-return",
        _attr_before_return,
        (),
        TypeError,
        "unsupported attr annotation for 'a'",
    ),
    (
        "order-return-before-mutates",
        _return_before_mutates,
        "bad",
        TypeError,
        "unsupported return annotation: <class 'int'>",
    ),
]


@pytest.mark.parametrize(
    ("target", "mutates", "kind", "message"),
    [row[1:] for row in ERRORS],
    ids=[row[0] for row in ERRORS],
)
def test_prototype_errors(
    op_type: str, target: Any, mutates: Any, kind: type, message: str
) -> None:
    before, marked = _state(), getattr(target, "__ge_op_proto_descriptor__", None)
    with pytest.raises(kind) as info:
        register_op(op_type=op_type, mutates_args=mutates)(target)
    text = str(info.value)
    assert text.startswith(f"register_op op_type '{op_type}' failed: ")
    assert message in text
    other = ValueError if kind is TypeError else TypeError
    assert not isinstance(info.value, other)
    assert _state() == before
    assert find_op(op_type) is None
    assert getattr(target, "__ge_op_proto_descriptor__", None) is marked


@pytest.mark.parametrize("bad", ["", 3, None, b"Op"])
def test_op_type_is_checked_at_the_factory_call_unprefixed(bad: Any) -> None:
    with pytest.raises(TypeError) as info:
        register_op(op_type=bad)
    assert str(info.value) == f"register_op op_type must be a non-empty string, got {bad!r}"


def test_register_op_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        register_op("Positional")  # type: ignore[misc]


def test_a_prototype_must_be_an_identifier_for_ge_ops() -> None:
    before = _state()
    with pytest.raises(ValueError, match=r"register_op op_type 'my-op' failed: .*identifier"):
        register_op(op_type="my-op")(_one_out)
    assert _state() == before


# --- the registry: identical, conflicting, built-in ---------------------------------------------
def test_identical_reregistration_is_a_no_op(op_type: str) -> None:
    first = register_op(op_type=op_type)(_one_out).__ge_op_proto_descriptor__
    op = get_op(op_type)
    again = register_op(op_type=op_type)(_one_out).__ge_op_proto_descriptor__
    assert again is first and get_op(op_type) is op
    assert get_registered_op_proto(op_type) is first
    assert get_registered_op_proto_by_descriptor_key(first.descriptor_key) is first
    assert [d.op_type for d in get_registered_op_protos()].count(op_type) == 1


def _same_key(default: float) -> Any:
    def f(x: TensorDesc, *, a: float = default) -> TensorDesc:
        return _same(x)

    f.__qualname__ = "shared_infer"  # one module, one qualname: one descriptor key
    return f


def test_identical_reregistration_with_nan_defaults(op_type: str) -> None:
    first = register_op(op_type=op_type)(_same_key(math.nan)).__ge_op_proto_descriptor__
    again = register_op(op_type=op_type)(_same_key(math.nan)).__ge_op_proto_descriptor__
    assert again is first


def test_changed_content_under_the_same_key_raises_and_changes_nothing(op_type: str) -> None:
    first = register_op(op_type=op_type)(_same_key(1.0)).__ge_op_proto_descriptor__
    op, before = get_op(op_type), _state()
    changed = _same_key(2.0)
    with pytest.raises(ValueError) as info:
        register_op(op_type=op_type)(changed)
    key = first.descriptor_key
    assert str(info.value) == (
        f"register_op op_type '{op_type}' failed: python op proto descriptor content changed "
        f"for descriptor_key '{key}'; existing source: module_name.func_name "
        f"'{__name__}.shared_infer', descriptor_key '{key}'; current source: "
        f"module_name.func_name '{__name__}.shared_infer', descriptor_key '{key}'"
    )
    assert get_op(op_type) is op and _state() == before
    assert get_op(op_type).attrs[0].default == 1.0
    assert not hasattr(changed, "__ge_op_proto_descriptor__")


def test_same_op_type_from_another_function_raises(op_type: str) -> None:
    first = register_op(op_type=op_type)(_one_out).__ge_op_proto_descriptor__
    before = _state()
    with pytest.raises(ValueError) as info:
        register_op(op_type=op_type)(_two_in_two_out)
    text = str(info.value)
    assert text.startswith(
        f"register_op op_type '{op_type}' failed: python op proto op type '{op_type}' already "
        f"registered by '{first.descriptor_key}'; existing source: module_name.func_name "
        f"'{__name__}._one_out'"
    )
    assert f"current source: module_name.func_name '{__name__}._two_in_two_out'" in text
    assert _state() == before and get_op(op_type).inputs == first_inputs(first)


def first_inputs(desc: OpProtoDescriptor) -> Any:
    return tuple(get_op(desc.op_type).inputs)


@pytest.mark.parametrize("builtin", ["Add", "Relu", "Data"])
def test_built_in_op_types_cannot_be_replaced(builtin: str) -> None:
    op, before = get_op(builtin), _state()
    with pytest.raises(ValueError, match=f"'{builtin}' is a built-in ge op"):
        register_op(op_type=builtin)(_one_out)
    assert get_op(builtin) is op and _state() == before


def test_the_decorator_returns_the_function_unchanged(op_type: str) -> None:
    def f(x: TensorDesc) -> TensorDesc:
        return _same(x)

    assert register_op(op_type=op_type)(f) is f
    d = TensorDesc([2], DataType.DT_INT32)
    assert f(d) == d


def test_attr_proto_required_property() -> None:
    assert AttrProto("a", int, VT.VT_INT).required
    assert not AttrProto("a", int, VT.VT_INT, 0).required
