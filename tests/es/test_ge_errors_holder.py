"""GE_ERRORS.md §3.3 (TensorHolder) row by row: the condition -> GE-PY's exception type and its
text, which the message must start with (ours may add more after it). Rows named ``order:`` set
two conditions and expect the check GE runs first (§13.1). Then the behaviours §3.3 lists
(which operand goes first in the graph) and the printed form (§12.3), outside and inside
``ge.jit``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeAttributeError, GeError, GeTypeError
from ge.es import GraphBuilder, TensorHolder
from ge.graph.types import DataType, Format

BUILT = "GraphBuilder has already been built. Create a new GraphBuilder to build another graph."
LIKE_OR_NONE = "Value must be TensorHolder or int|float or nested lists of int|float or None"
LIKE = "Value must be int|float or nested lists of int|float"


@dataclass(frozen=True)
class Row:
    name: str
    call: Callable[[GraphBuilder], Any]
    error: type[BaseException]
    text: str


def _x(call: Callable[[TensorHolder], Any]) -> Callable[[GraphBuilder], Any]:
    """``call(x)`` with ``x`` an input of the builder."""
    return lambda b: call(b.create_input(0, shape=[2]))


def _built(call: Callable[[TensorHolder], Any]) -> Callable[[GraphBuilder], Any]:
    """``call(x)`` with ``x`` an input of the builder, after the builder was built."""

    def run(b: GraphBuilder) -> Any:
        x = b.create_input(0, shape=[2])
        b.build_and_reset([x])
        return call(x)

    return run


def _two_builders(call: Callable[[TensorHolder, TensorHolder], Any], built: bool) -> Any:
    def run(b: GraphBuilder) -> Any:
        other = GraphBuilder("h")
        x, y = b.create_input(0, shape=[2]), other.create_input(0, shape=[2])
        if built:
            other.build_and_reset([y])
        return call(x, y)

    return run


def _setter_rows(method: str, operation: str, text: str, good: Any) -> list[Row]:
    bad = 1
    return [
        Row(f"{method}: built", _built(lambda x: getattr(x, method)(good)), RuntimeError,
            f"Cannot {operation}: {BUILT}"),
        Row(f"order: {method} built before type", _built(lambda x: getattr(x, method)(bad)),
            RuntimeError, f"Cannot {operation}: {BUILT}"),
        Row(f"{method}(1)", _x(lambda x: getattr(x, method)(bad)), TypeError, text),
    ]  # fmt: skip


# the method, its operator, and the reflected operator's call (``other <op> x``)
OPERATORS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (lambda x, o: x + o, lambda x, o: o + x),
    "sub": (lambda x, o: x - o, lambda x, o: o - x),
    "mul": (lambda x, o: x * o, lambda x, o: o * x),
    "div": (lambda x, o: x / o, lambda x, o: o / x),
}


def _arithmetic_rows(verb: str) -> list[Row]:
    op, rop = OPERATORS[verb]
    method = lambda x, o: getattr(x, verb)(o)  # noqa: E731
    rows = []
    for form, call in (("method", method), ("operator", op), ("reflected", rop)):
        rows += [
            Row(f"{verb} {form}: str", _x(lambda x, c=call: c(x, "a")), TypeError, LIKE_OR_NONE),
            Row(f"{verb} {form}: tuple", _x(lambda x, c=call: c(x, (1, 2))), TypeError,
                LIKE_OR_NONE),
            Row(f"{verb} {form}: built, int", _built(lambda x, c=call: c(x, 2)), RuntimeError,
                f"Cannot create scalar: {BUILT}"),
            Row(f"{verb} {form}: built, float", _built(lambda x, c=call: c(x, 2.5)),
                RuntimeError, f"Cannot create scalar: {BUILT}"),
            Row(f"{verb} {form}: built, list", _built(lambda x, c=call: c(x, [1, 2])),
                RuntimeError, f"Cannot create constant: {BUILT}"),
            Row(f"order: {verb} {form} type before built", _built(lambda x, c=call: c(x, "a")),
                TypeError, LIKE_OR_NONE),
        ]  # fmt: skip
    for form, call in (("method", method), ("operator", op)):
        rows += [
            Row(f"{verb} {form}: None", _x(lambda x, c=call: c(x, None)), AttributeError,
                "'NoneType' object has no attribute '_builder'"),
            Row(f"order: {verb} {form} None before built", _built(lambda x, c=call: c(x, None)),
                AttributeError, "'NoneType' object has no attribute '_builder'"),
            Row(f"{verb} {form}: different builders", _two_builders(call, built=False),
                ValueError, f"Cannot perform {verb}: tensors from different GraphBuilders "
                "('g' vs 'h')"),
            Row(f"order: {verb} {form} mismatch before built", _two_builders(call, built=True),
                ValueError, f"Cannot perform {verb}: tensors from different GraphBuilders"),
            Row(f"{verb} {form}: built, tensor", _built(lambda x, c=call: c(x, x)),
                RuntimeError, f"Cannot {verb}: {BUILT}"),
        ]  # fmt: skip
    return rows


ROWS: list[Row] = [
    Row("TensorHolder()", lambda b: TensorHolder(), RuntimeError,
        "TensorHolder objects should not be created directly"),
    *_setter_rows("set_data_type", "set data type", "Data type must be a DataType enum",
                  DataType.DT_INT32),
    *_setter_rows("set_format", "set format", "Format must be a Format enum", Format.FORMAT_NCHW),
    *_setter_rows("set_shape", "set shape", "Shape must be a list of integers", [2]),
    Row("set_shape((2,))", _x(lambda x: x.set_shape((2,))), TypeError,
        "Shape must be a list of integers"),
    Row("set_shape([2.0])", _x(lambda x: x.set_shape([2.0])), TypeError,
        "All shape dimensions must be integers"),
    Row("set_shape(['2'])", _x(lambda x: x.set_shape(["2"])), TypeError,
        "All shape dimensions must be integers"),
    Row("add: nested non-number", _x(lambda x: x.add([[]])), TypeError, LIKE),
    Row("add: nested str", _x(lambda x: x.add([1, "a"])), TypeError, LIKE),
    Row("add: ragged", _x(lambda x: x.add([[1, 2], [3]])), ValueError,
        "Irregular nested list: all sub-lists must have the same shape"),
    *(row for verb in OPERATORS for row in _arithmetic_rows(verb)),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_row(row: Row) -> None:
    b = GraphBuilder("g")
    before = len(b._graph.get_direct_nodes())
    with pytest.raises(row.error) as info:
        row.call(b)
    assert isinstance(info.value, GeError)
    assert str(info.value).startswith(row.text), str(info.value)
    if not b._built and "builders" not in row.name:
        assert len(b._graph.get_direct_nodes()) <= before + 1  # the input, no stray Const


def test_none_operand_is_ge_attribute_error() -> None:
    x = GraphBuilder("g").create_input(0)
    with pytest.raises(GeAttributeError):
        x.add(None)


# --- behaviours (§3.3): the operand order GE builds -----------------------------------------------
def _inputs(out: TensorHolder) -> list[str]:
    """The producers' types of ``out``'s node inputs, in order."""
    node = out._node
    return [node.get_in_data_nodes_and_port_indexes(i)[0].type for i in range(2)]


@pytest.mark.parametrize(
    ("call", "op", "order"),
    [
        (lambda x: 1 + x, "Add", ["Data", "Const"]),  # GE swaps: Add(x, 1)
        (lambda x: 1 * x, "Mul", ["Data", "Const"]),
        (lambda x: 1 - x, "Sub", ["Const", "Data"]),
        (lambda x: 1 / x, "Div", ["Const", "Data"]),
        (lambda x: x + 1, "Add", ["Data", "Const"]),
        (lambda x: x / 2.0, "Div", ["Data", "Const"]),
    ],
    ids=["1+x", "1*x", "1-x", "1/x", "x+1", "x/2.0"],
)
def test_operand_order_is_ges(
    call: Callable[[TensorHolder], Any], op: str, order: list[str]
) -> None:
    out = call(GraphBuilder("g").create_input(0, shape=[2]))
    assert out._node.type == op
    assert _inputs(out) == order


def test_numpy_operands_stay_ours() -> None:
    x = GraphBuilder("g").create_input(0, shape=[2])
    assert (x + np.ones(2, np.float32)).shape == (2,)
    assert (x * np.float32(2)).dtype == np.float32


# --- printed form (§12.3): GE's holder has no __str__; a traced value says what it is -----------
def test_str_outside_jit_is_ges_default(capsys: pytest.CaptureFixture[str]) -> None:
    x = GraphBuilder("g").create_input(0, shape=[3])
    print(x)
    out = capsys.readouterr().out.strip()
    assert re.fullmatch(r"<ge\.es\.tensor_holder\.TensorHolder object at 0x[0-9a-f]+>", out), out
    assert f"{x}" == str(x) == out
    with pytest.raises(TypeError):
        f"{x:.3f}"


def test_print_inside_jit_names_debug_print(capsys: pytest.CaptureFixture[str]) -> None:
    texts: list[str] = []

    @ge.jit
    def f(x: Any) -> Any:
        print(x)
        texts.append(f"{x + 1}")
        texts.append(str(x.sum()))
        return x

    f(np.zeros(3, np.float32))
    assert capsys.readouterr().out.strip() == (
        "Traced<f32[3]> (use ge.jit.debug_print to see values)"
    )
    assert texts == [
        "Traced<f32[3]> (use ge.jit.debug_print to see values)",
        "Traced<f32[]> (use ge.jit.debug_print to see values)",
    ]


def test_format_spec_inside_jit_raises_naming_debug_print() -> None:
    @ge.jit
    def f(x: Any) -> Any:
        return f"{x:.3f}"

    with pytest.raises(GeTypeError, match=r"ge\.jit\.debug_print"):
        f(np.zeros(3, np.float32))
