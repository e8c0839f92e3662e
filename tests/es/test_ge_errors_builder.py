"""GE_ERRORS.md §3.1 and §3.5 rows where GE-PY lets Python's own ``AttributeError`` escape:
``create_input`` reading ``.value`` of ``type_str``/``data_type``/``format``, and generated op
functions reading ``x.get_owner_builder()``, ``x._handle`` and
``g._transfer_ownership_when_pass_as_subgraph``. Each is a ``ge.error.GeAttributeError`` whose
message *starts* with Python's text (then says what was expected); it is also the
``TypeError``/``ValueError`` these checks raised before. A refused call adds nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import ge.es
from ge.error import GeAttributeError, GeTypeError
from ge.es.graph_builder import GraphBuilder
from ge.graph import DataType, Format, Graph


@dataclass(frozen=True)
class Row:
    name: str
    call: Callable[[GraphBuilder, Any], Any]  # (builder, an input x of it)
    also: type[Exception]  # TypeError or ValueError, as before
    text: str  # GE-PY's text: the message starts with it
    expected: str  # ours, after it: what the argument should have been


def _branch(name: str) -> Graph:
    s = GraphBuilder(name)
    return s.build_and_reset([ge.es.Relu(s.create_input(0))])


ROWS = [
    *[
        Row(
            f"create_input({arg}={value!r})",
            lambda b, x, arg=arg, value=value: b.create_input(1, **{arg: value}),
            TypeError,
            f"'{type(value).__name__}' object has no attribute 'value'",
            f"{arg} must be {kind}, got {value!r}",
        )
        for arg, kind, value in (
            ("type_str", "an InputType", "Data"),
            ("type_str", "an InputType", 0),
            ("data_type", "a DataType", "float32"),
            ("data_type", "a DataType", 1),
            ("format", "a Format", "ND"),
            ("format", "a Format", [2]),
        )
    ],
    Row(
        "order: create_input(-1, format='ND'): .value is read before the C call's index check",
        lambda b, x: b.create_input(-1, format="ND"),
        TypeError,
        "'str' object has no attribute 'value'",
        "format must be a Format",
    ),
    Row(
        "order: type_str is read before data_type",
        lambda b, x: b.create_input(1, type_str="Data", data_type="f"),
        TypeError,
        "'str' object has no attribute 'value'",
        "type_str must be an InputType",
    ),
    *[
        Row(
            f"Relu({value!r}): one required input, not a TensorHolder",
            lambda b, x, value=value: ge.es.Relu(value),
            TypeError,
            f"'{type(value).__name__}' object has no attribute 'get_owner_builder'",
            f"Relu: input 'x' must be a TensorHolder, got {type(value).__name__}",
        )
        for value in (1, 2.5, [1.0], "x", None)
    ],
    Row(
        "AddN([x, 1]): elements of a dynamic input are not converted",
        lambda b, x: ge.es.AddN([x, 1], N=2),
        TypeError,
        "'int' object has no attribute '_handle'",
        "AddN: input 'x' must be a TensorHolder, got int",
    ),
    *[
        Row(
            f"{name}: a required input is None",
            call,
            ValueError,
            "'NoneType' object has no attribute '_handle'",
            f"input '{port}' is required, got None",
        )
        for name, port, call in (
            ("Add(x, None)", "x2", lambda b, x: ge.es.Add(x, None)),
            ("Add(None, x)", "x1", lambda b, x: ge.es.Add(None, x)),
        )
    ],
    *[
        Row(
            f"If with {which} = {value!r}",
            lambda b, x, which=which, value=value: ge.es.If(
                x,
                [x],
                1,
                value if which == "then_branch" else _branch("then"),
                value if which == "else_branch" else _branch("else"),
            ),
            TypeError,
            f"'{type(value).__name__}' object has no attribute "
            f"'_transfer_ownership_when_pass_as_subgraph'",
            f"If: subgraph '{which}' must be a Graph, got {type(value).__name__}",
        )
        for which in ("then_branch", "else_branch")
        for value in ("g", None, 3)
    ],
    Row(
        "order: a later subgraph that is not a Graph before an earlier one's NetOutput check",
        lambda b, x: ge.es.If(x, [x], 1, Graph("no_netoutput"), "g"),
        TypeError,
        "'str' object has no attribute '_transfer_ownership_when_pass_as_subgraph'",
        "subgraph 'else_branch' must be a Graph",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_row(row: Row) -> None:
    b = GraphBuilder("rows")
    x = b.create_input(0, shape=[2])
    before = [n.name for n in b._graph.get_direct_nodes()]
    with pytest.raises(GeAttributeError) as info:
        row.call(b, x)
    message = str(info.value)
    assert isinstance(info.value, AttributeError) and isinstance(info.value, row.also)
    assert message.startswith(row.text), message
    assert row.expected in message[len(row.text) :], message
    assert [n.name for n in b._graph.get_direct_nodes()] == before  # nothing half-made


def test_another_enum_for_data_type_is_our_type_error() -> None:
    """Decision: a value that has a ``.value`` (another enum's member) is not GE-PY's
    ``AttributeError`` (GE-PY would pass its number on as a data type); ours refuses it as a
    ``TypeError`` naming what was given."""
    b = GraphBuilder("enum")
    with pytest.raises(GeTypeError, match=r"Data type must be a DataType, got <Format\.FORMAT_ND"):
        b.create_input(0, data_type=Format.FORMAT_ND)  # type: ignore[arg-type]
    with pytest.raises(GeTypeError, match="type_str must be an InputType, got <DataType"):
        b.create_input(0, type_str=DataType.DT_FLOAT)  # type: ignore[arg-type]
    assert not b._graph.get_direct_nodes()


def test_none_means_the_default() -> None:
    b = GraphBuilder("defaults")
    x = b.create_input(0, type_str=None, data_type=None, format=None, shape=[3])
    assert x.data_type == DataType.DT_FLOAT and x.shape == (3,)
    assert b._graph.find_node_by_name("input_0").type == "Data"
