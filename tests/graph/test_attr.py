"""Attribute values: GE-PY's Python value -> AttrValueType rules (GE_REFERENCE.md §4.5, §10.7)
and every kind reachable through ``set_attr(key, value, value_type)``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ge.graph import (
    AttrValueType,
    DataType,
    Format,
    Graph,
    NamedAttrs,
    Node,
    Tensor,
    TensorDesc,
)
from ge.graph._attr import infer_attr_value, make_attr_value

VT = AttrValueType


def f32(x: float) -> float:
    return float(np.float32(x))


def _node() -> tuple[Graph, Node]:
    g = Graph("g")
    return g, g.add_node("Foo", "n", num_inputs=1, num_outputs=1)


def _tensor(values: list[float] | None = None) -> Tensor:
    return Tensor(values or [1.0, 2.0], None, DataType.DT_FLOAT, Format.FORMAT_ND, [2])


# --- inference order (GE-PY's _AttrValue.set_value) -----------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("text", VT.VT_STRING),  # 1. str
        ("", VT.VT_STRING),
        (1.5, VT.VT_FLOAT),  # 2. float
        (0.0, VT.VT_FLOAT),
        (True, VT.VT_BOOL),  # 3. bool, before int
        (False, VT.VT_BOOL),
        (DataType.DT_INT32, VT.VT_DATA_TYPE),  # 4. DataType, before int (it is an IntEnum)
        (DataType.DT_FLOAT, VT.VT_DATA_TYPE),  # value 0
        (5, VT.VT_INT),  # 6. int
        (0, VT.VT_INT),
        (-(2**63), VT.VT_INT),
        (2**63 - 1, VT.VT_INT),
        (Format.FORMAT_NCHW, VT.VT_INT),  # any other IntEnum is an int
        ([1.0, 2.5], VT.VT_LIST_FLOAT),  # 7. all float
        ([True, False], VT.VT_LIST_BOOL),  # 8. all bool
        ([1, 2, 3], VT.VT_LIST_INT),  # 9. all int
        ([DataType.DT_FLOAT, DataType.DT_INT32], VT.VT_LIST_INT),  # quirk: DataType list is ints
        ([Format.FORMAT_NCHW], VT.VT_LIST_INT),
        (["a", "b"], VT.VT_LIST_STRING),  # 11. all str
    ],
)
def test_inferred_kind(value: Any, kind: AttrValueType) -> None:
    assert infer_attr_value(value).type == kind


def test_tensor_is_vt_tensor() -> None:
    assert infer_attr_value(_tensor()).type == VT.VT_TENSOR


def test_list_mixing_bool_and_int_is_an_int_list() -> None:
    # GE-PY order: not all float, not all bool, but all int (bool is an int) -> VT_LIST_INT.
    value = infer_attr_value([True, 1])
    assert value.type == VT.VT_LIST_INT
    assert value.to_python() == [1, 1]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text", "text"),
        (True, True),
        (False, False),
        (7, 7),
        (-3, -3),
        (DataType.DT_BF16, DataType.DT_BF16),
        ([1, 2, 3], [1, 2, 3]),
        ([True, False, True], [True, False, True]),
        (["x", ""], ["x", ""]),
        ([0.5, -2.0], [0.5, -2.0]),
    ],
)
def test_round_trip_through_node(value: Any, expected: Any) -> None:
    _, n = _node()
    n.set_attr("k", value)
    got = n.get_attr("k")
    assert got == expected
    assert type(got) is type(expected)
    if isinstance(expected, list):
        assert [type(x) for x in got] == [type(x) for x in expected]


def test_bool_is_true_after_round_trip() -> None:
    g, n = _node()
    n.set_attr("b", True)
    g.set_attr("b", True)
    assert n.get_attr("b") is True
    assert g.get_attr("b") is True
    n.set_attr("bl", [True, False])
    assert n.get_attr("bl")[0] is True
    assert n.get_attr("bl")[1] is False


def test_data_type_comes_back_as_data_type() -> None:
    _, n = _node()
    n.set_attr("dt", DataType.DT_INT8)
    assert n.get_attr("dt") is DataType.DT_INT8


def test_data_type_list_comes_back_as_ints() -> None:
    _, n = _node()
    n.set_attr("dts", [DataType.DT_FLOAT, DataType.DT_INT32, DataType.DT_BF16])
    assert n.get_attr("dts") == [0, 3, 27]


def test_floats_rounded_to_float32() -> None:
    _, n = _node()
    n.set_attr("f", 0.1)
    n.set_attr("fl", [0.1, 0.2, 1e-50])
    assert n.get_attr("f") == f32(0.1)
    assert n.get_attr("f") != 0.1
    assert n.get_attr("fl") == [f32(0.1), f32(0.2), 0.0]
    # setting the read-back value again changes nothing
    n.set_attr("f2", n.get_attr("f"))
    assert n.get_attr("f2") == n.get_attr("f")


def test_float_specials() -> None:
    _, n = _node()
    n.set_attr("inf", math.inf)
    n.set_attr("nan", math.nan)
    assert n.get_attr("inf") == math.inf
    assert math.isnan(n.get_attr("nan"))


def test_float_large_rounds_to_float32() -> None:
    _, n = _node()
    n.set_attr("big", 16777217.0)  # 2**24 + 1 is not representable in float32
    assert n.get_attr("big") == 16777216.0


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [([], "Empty list is not supported"), ((), "Unsupported attribute type: <class 'tuple'>")],
)
def test_empty_list_is_refused(value: Any, message: str) -> None:
    g, n = _node()
    before = g.as_text()
    with pytest.raises(ValueError, match=message):
        n.set_attr("e", value)
    with pytest.raises(ValueError, match=message):
        g.set_attr("e", value)
    assert not n.has_attr("e")
    assert not g.has_attr("e")
    assert g.as_text() == before


def test_dict_is_refused_with_exact_message() -> None:
    g, n = _node()
    with pytest.raises(
        ValueError,
        match=r"Unsupported attribute type: <class 'dict'> for value: \{'key': 'value'\}",
    ):
        n.set_attr("d", {"key": "value"})
    with pytest.raises(ValueError, match=r"Unsupported attribute type: <class 'dict'>"):
        g.set_attr("d", {"key": "value"})
    assert not n.has_attr("d")


@pytest.mark.parametrize(
    "value",
    [
        [1, 2.0],
        [1, "a"],
        [1.5, True],
        ["a", DataType.DT_FLOAT],
        [None],
        None,
        {1, 2},
        object(),
        [[1.0, 2.0]],  # list of float lists: only with an explicit value_type
        [_tensor()],  # list of tensors: only with an explicit value_type
        [[1, 2], [3]],  # list of int lists (GE refuses it): VT_LIST_LIST_INT explicitly
        (1, 2),  # tuples: GE refuses them
        b"\x00",
        TensorDesc([1]),
        Graph("sub"),
    ],
)
def test_unsupported_values_are_value_errors(value: Any) -> None:
    _, n = _node()
    with pytest.raises(ValueError, match="Unsupported attribute type"):
        n.set_attr("k", value)
    assert not n.has_attr("k")


def test_mixed_list_message_carries_the_value_repr() -> None:
    _, n = _node()
    with pytest.raises(
        ValueError, match=r"Unsupported attribute type: <class 'list'> for value: \[1, 'a'\]"
    ):
        n.set_attr("k", [1, "a"])


@pytest.mark.parametrize(
    ("value", "stored"),
    [(2**63, -(2**63)), (-(2**63) - 1, 2**63 - 1), ([1, 2**63], [1, -(2**63)]), (2**64 + 5, 5)],
)
def test_int64_overflow_wraps_as_ge_does(value: Any, stored: Any) -> None:
    """GE_ERRORS.md §2.5 rule 6: GE's C ``int64`` wraps silently outside the range."""
    g, n = _node()
    n.set_attr("k", value)
    g.set_attr("k", value)
    assert n.get_attr("k") == stored
    assert g.get_attr("k") == stored


@pytest.mark.parametrize(
    ("value", "value_type"),
    [
        (2**63, VT.VT_INT),
        ([2**64], VT.VT_LIST_INT),
        ([[1], [-(2**63) - 1]], VT.VT_LIST_LIST_INT),
    ],
)
def test_int64_overflow_of_an_explicit_kind_is_value_error(
    value: Any, value_type: AttrValueType | None
) -> None:
    g, n = _node()
    n.set_attr("k", 1)
    with pytest.raises(ValueError):
        n.set_attr("k", value, value_type)
    with pytest.raises(ValueError):
        g.set_attr("k", value, value_type)
    assert n.get_attr("k") == 1
    assert not g.has_attr("k")


# --- our extra inferred kinds (decisions beyond GE-PY, documented in _attr.py) --------------------


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (b"\x00\x01", VT.VT_BYTES),
        (bytearray(b"ab"), VT.VT_BYTES),
        (TensorDesc([1]), VT.VT_TENSOR_DESC),
        (Graph("sub"), VT.VT_GRAPH),
        (NamedAttrs.of("fn", {"a": 1}), VT.VT_NAMED_ATTRS),
        ([[1, 2], [3]], VT.VT_LIST_LIST_INT),
        ((1, 2), VT.VT_LIST_INT),
        (("a",), VT.VT_LIST_STRING),
    ],
)
def test_extra_inferred_kinds(value: Any, kind: AttrValueType) -> None:
    """Ours, under ``extended=True`` (``NamedAttrs.of``); GE's rules (``set_attr``) refuse
    them, except ``NamedAttrs`` (a type of ours)."""
    assert infer_attr_value(value, extended=True).type == kind
    if kind != VT.VT_NAMED_ATTRS:
        with pytest.raises(ValueError, match="Unsupported attribute type"):
            infer_attr_value(value)


# --- every kind through an explicit value_type ---------------------------------------------------

_SUB = Graph("sub_graph")
_SUB2 = Graph("sub_graph2")


GE_READABLE = {
    VT.VT_STRING,
    VT.VT_FLOAT,
    VT.VT_BOOL,
    VT.VT_INT,
    VT.VT_DATA_TYPE,
    VT.VT_TENSOR,
    VT.VT_LIST_FLOAT,
    VT.VT_LIST_BOOL,
    VT.VT_LIST_INT,
    VT.VT_LIST_DATA_TYPE,
    VT.VT_LIST_STRING,
}


def _read(holder: Any, key: str) -> Any:
    """Any kind, through ``attr_value`` (ours); ``get_attr`` reads GE-PY's kinds only."""
    return holder.attr_value(key).to_python()


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.get_data() == b.get_data() and a.get_tensor_desc() == b.get_tensor_desc()
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


EXPLICIT = [
    (VT.VT_NONE, None, None),
    (VT.VT_STRING, "s", "s"),
    (VT.VT_FLOAT, 0.5, 0.5),
    (VT.VT_FLOAT, 2, 2.0),
    (VT.VT_BOOL, True, True),
    (VT.VT_INT, 7, 7),
    (
        VT.VT_TENSOR_DESC,
        TensorDesc([2, 3], Format.FORMAT_NCHW, DataType.DT_INT8),
        TensorDesc([2, 3], Format.FORMAT_NCHW, DataType.DT_INT8),
    ),
    (VT.VT_TENSOR, _tensor([3.0, 4.0]), _tensor([3.0, 4.0])),
    (VT.VT_BYTES, b"\x00\xff", b"\x00\xff"),
    (VT.VT_GRAPH, _SUB, _SUB),
    (
        VT.VT_NAMED_ATTRS,
        NamedAttrs.of("fn", {"a": 1, "b": "x"}),
        NamedAttrs.of("fn", {"a": 1, "b": "x"}),
    ),
    (VT.VT_LIST_LIST_INT, [[1, 2], [], [3]], [[1, 2], [], [3]]),
    (VT.VT_DATA_TYPE, DataType.DT_INT64, DataType.DT_INT64),
    (VT.VT_LIST_LIST_FLOAT, [[0.5], [1.0, 2.0]], [[0.5], [1.0, 2.0]]),
    (VT.VT_LIST_STRING, ["a", "b"], ["a", "b"]),
    (VT.VT_LIST_FLOAT, [1, 0.25], [1.0, 0.25]),
    (VT.VT_LIST_BOOL, [True, False], [True, False]),
    (VT.VT_LIST_INT, [1, -1], [1, -1]),
    (
        VT.VT_LIST_TENSOR_DESC,
        [TensorDesc([1]), TensorDesc([2])],
        [TensorDesc([1]), TensorDesc([2])],
    ),
    (
        VT.VT_LIST_TENSOR,
        [_tensor([1.0, 2.0]), _tensor([5.0, 6.0])],
        [_tensor([1.0, 2.0]), _tensor([5.0, 6.0])],
    ),
    (VT.VT_LIST_BYTES, [b"a", b""], [b"a", b""]),
    (VT.VT_LIST_GRAPH, [_SUB, _SUB2], [_SUB, _SUB2]),
    (
        VT.VT_LIST_NAMED_ATTRS,
        [NamedAttrs.of("f", {}), NamedAttrs.of("g", {"x": 1.5})],
        [NamedAttrs.of("f", {}), NamedAttrs.of("g", {"x": 1.5})],
    ),
    (
        VT.VT_LIST_DATA_TYPE,
        [DataType.DT_FLOAT, DataType.DT_INT8],
        [DataType.DT_FLOAT, DataType.DT_INT8],
    ),
]


@pytest.mark.parametrize(
    ("kind", "value", "expected"), EXPLICIT, ids=lambda x: getattr(x, "name", None)
)
def test_explicit_kind_round_trip(kind: AttrValueType, value: Any, expected: Any) -> None:
    g, n = _node()
    n.set_attr("k", value, kind)
    g.set_attr("k", value, kind)
    assert make_attr_value(value, kind).type == kind
    for got in (_read(n, "k"), _read(g, "k")):
        assert _eq(got, expected), (got, expected)
    if kind in GE_READABLE:
        assert _eq(n.get_attr("k"), expected)
    else:  # GE_ERRORS.md §2.5: GE-PY's get_value reads only its kinds
        with pytest.raises(RuntimeError, match=rf"^Unsupported attribute type: {int(kind)}"):
            n.get_attr("k")
        with pytest.raises(RuntimeError, match=rf"^Unsupported attribute type: {int(kind)}"):
            g.get_attr("k")


def test_every_attr_value_type_is_covered() -> None:
    covered = {kind for kind, _, _ in EXPLICIT}
    assert covered == set(AttrValueType) - {VT.VT_LIST_BASE}


def test_explicit_list_data_type_keeps_members() -> None:
    _, n = _node()
    n.set_attr("dts", [DataType.DT_FLOAT, DataType.DT_INT8], VT.VT_LIST_DATA_TYPE)
    got = n.get_attr("dts")
    assert got[0] is DataType.DT_FLOAT
    assert got[1] is DataType.DT_INT8


def test_explicit_kind_allows_empty_list() -> None:
    _, n = _node()
    n.set_attr("e", [], VT.VT_LIST_INT)
    assert _read(n, "e") == []
    with pytest.raises(RuntimeError, match=r"^Failed to get list value"):  # as GE's C getter
        n.get_attr("e")
    n.set_attr("s", [], VT.VT_LIST_STRING)
    with pytest.raises(RuntimeError, match=r"^Failed to get list_string value"):
        n.get_attr("s")


def test_graph_attr_is_the_same_graph() -> None:
    _, n = _node()
    n.set_attr("g", _SUB, VT.VT_GRAPH)
    assert _read(n, "g") is _SUB


def test_named_attrs_of_infers_each_kind() -> None:
    na = NamedAttrs.of("fn", {"i": 1, "f": 0.1, "b": True, "l": [1, 2], "s": "x"})
    assert na.name == "fn"
    kinds = {k: v.type for k, v in na.attrs.items()}
    assert kinds == {
        "i": VT.VT_INT,
        "f": VT.VT_FLOAT,
        "b": VT.VT_BOOL,
        "l": VT.VT_LIST_INT,
        "s": VT.VT_STRING,
    }
    assert na.attrs["f"].to_python() == f32(0.1)
    assert na == NamedAttrs.of("fn", {"i": 1, "f": 0.1, "b": True, "l": [1, 2], "s": "x"})
    assert na != NamedAttrs.of("fn", {"i": 2, "f": 0.1, "b": True, "l": [1, 2], "s": "x"})
    assert na != NamedAttrs.of("other", {"i": 1, "f": 0.1, "b": True, "l": [1, 2], "s": "x"})


def test_named_attrs_of_refuses_bad_entries() -> None:
    with pytest.raises(TypeError, match="Attribute key must be a string"):
        NamedAttrs.of("fn", {1: 1})
    with pytest.raises(ValueError, match="Unsupported attribute type"):
        NamedAttrs.of("fn", {"d": {"key": "value"}})
    with pytest.raises(TypeError):
        NamedAttrs.of(1, {})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (VT.VT_INT, "1"),
        (VT.VT_INT, 1.5),
        (VT.VT_INT, True),
        (VT.VT_INT, None),
        (VT.VT_INT, [1]),
        (VT.VT_FLOAT, "1.0"),
        (VT.VT_FLOAT, True),
        (VT.VT_FLOAT, None),
        (VT.VT_BOOL, 1),
        (VT.VT_BOOL, "True"),
        (VT.VT_BOOL, 0.0),
        (VT.VT_STRING, 1),
        (VT.VT_STRING, b"s"),
        (VT.VT_BYTES, "s"),
        (VT.VT_BYTES, 1),
        (VT.VT_DATA_TYPE, 0),
        (VT.VT_DATA_TYPE, "DT_FLOAT"),
        (VT.VT_TENSOR, [1.0]),
        (VT.VT_TENSOR, TensorDesc()),
        (VT.VT_TENSOR_DESC, [1]),
        (VT.VT_GRAPH, "g"),
        (VT.VT_NAMED_ATTRS, {"a": 1}),
        (VT.VT_LIST_INT, 1),
        (VT.VT_LIST_INT, [1, "2"]),
        (VT.VT_LIST_INT, [1.5]),
        (VT.VT_LIST_INT, [True]),
        (VT.VT_LIST_INT, "12"),
        (VT.VT_LIST_STRING, "ab"),
        (VT.VT_LIST_BOOL, [1, 0]),
        (VT.VT_LIST_LIST_INT, [1, 2]),
        (VT.VT_LIST_LIST_INT, [[1.5]]),
        (VT.VT_LIST_LIST_INT, [[1], "a"]),
        (VT.VT_LIST_LIST_FLOAT, [1.0]),
        (VT.VT_LIST_LIST_FLOAT, [["a"]]),
        (VT.VT_LIST_DATA_TYPE, [0, 1]),
        (VT.VT_LIST_TENSOR, [None]),
        (VT.VT_LIST_GRAPH, ["g"]),
    ],
)
def test_wrong_value_for_explicit_kind_is_type_error(kind: AttrValueType, value: Any) -> None:
    g, n = _node()
    n.set_attr("k", "old")
    before = str(g)
    with pytest.raises(TypeError):
        n.set_attr("k", value, kind)
    with pytest.raises(TypeError):
        g.set_attr("k", value, kind)
    assert n.get_attr("k") == "old"
    assert not g.has_attr("k")
    assert str(g) == before


@pytest.mark.parametrize("bad_kind", [999, "VT_INT", 4.5, VT.VT_LIST_BASE])
def test_value_type_must_be_an_attr_value_type(bad_kind: Any) -> None:
    _, n = _node()
    with pytest.raises(TypeError):
        n.set_attr("k", 1, bad_kind)
    assert not n.has_attr("k")


# --- values are copied in and out ----------------------------------------------------------------


def test_get_attr_returns_fresh_lists() -> None:
    _, n = _node()
    n.set_attr("l", [1, 2])
    n.set_attr("ll", [[1], [2]], VT.VT_LIST_LIST_INT)
    got = n.get_attr("l")
    got.append(3)
    got[0] = 99
    nested = _read(n, "ll")
    nested[0].append(5)
    nested.append([7])
    assert n.get_attr("l") == [1, 2]
    assert _read(n, "ll") == [[1], [2]]
    assert n.get_attr("l") is not n.get_attr("l")


def test_set_attr_copies_the_list_in() -> None:
    g, n = _node()
    value = [1, 2]
    nested = [[0.5], [1.0]]
    n.set_attr("l", value)
    g.set_attr("ll", nested, VT.VT_LIST_LIST_FLOAT)
    value.append(3)
    nested[0].append(2.0)
    assert n.get_attr("l") == [1, 2]
    assert _read(g, "ll") == [[0.5], [1.0]]


def test_tensor_attr_is_copied_in_and_out() -> None:
    _, n = _node()
    t = _tensor([1.0, 2.0])
    n.set_attr("t", t)
    t.set_data_type(DataType.DT_INT32)  # reinterprets the caller's tensor only
    got = n.get_attr("t")
    assert got.get_data_type() == DataType.DT_FLOAT
    assert got.get_data() == [1.0, 2.0]
    got.set_format(Format.FORMAT_NCHW)
    again = n.get_attr("t")
    assert again.get_format() == Format.FORMAT_ND
    assert again is not got


def test_tensor_desc_attr_is_copied_in_and_out() -> None:
    _, n = _node()
    d = TensorDesc([2])
    n.set_attr("d", d, VT.VT_TENSOR_DESC)
    d.set_shape([5])
    got = _read(n, "d")
    assert got.shape == [2]
    got.set_shape([7])
    assert _read(n, "d").shape == [2]


def test_list_of_tensor_descs_is_copied_out() -> None:
    _, n = _node()
    n.set_attr("ds", [TensorDesc([1])], VT.VT_LIST_TENSOR_DESC)
    _read(n, "ds")[0].set_shape([9])
    assert _read(n, "ds")[0].shape == [1]
