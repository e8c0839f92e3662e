"""``ge.jit.numpy_support()`` (the live table of what numpy works on traced values) and the one
``NotSupportedError`` for anything else, never numpy's generic "no implementation found"."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeTypeError
from ge.es import tensor_holder
from ge.jit import NotSupportedError, SupportRow, SupportTable

FILE = "test_numpy_support.py"
HINT = "; supported: see `ge.jit.numpy_support()`"


@pytest.fixture(scope="module")
def table() -> SupportTable:
    return ge.jit.numpy_support()


def _x() -> np.ndarray:
    return np.arange(6, dtype=np.float32).reshape(2, 3)


# --- the error ------------------------------------------------------------------------------------
# (what the function does, the name in the message, why); unlikely ever to get rules. The
# lambdas are the user's code the message points at (numpy's own frames are skipped).
UNSUPPORTED: list[tuple[Callable[[Any], Any], str, str]] = [
    (
        lambda x: np.fft.fft(x),  # noqa: PLW0108
        "numpy.fft.fft",
        "no rule for this numpy function on traced values",
    ),
    (lambda x: np.frexp(x), "numpy.frexp", "no rule for this ufunc on traced values"),  # noqa: PLW0108
    (lambda x: np.isnat(x), "numpy.isnat", "no rule for this ufunc on traced values"),  # noqa: PLW0108
    (
        lambda x: np.exp(x, out=x),
        "numpy.exp",
        "ufunc keywords are not taken on traced values: out=",
    ),
    (lambda x: np.add.at(x, 0, 1.0), "numpy.add.at", "no rule for the ufunc method at"),
    (
        lambda x: x.byteswap(),
        "numpy.ndarray.byteswap",
        "traced values have no method or attribute byteswap",
    ),
]


@pytest.mark.parametrize(("body", "name", "why"), UNSUPPORTED, ids=[u[1] for u in UNSUPPORTED])
def test_unsupported_numpy_raises_one_clear_error(
    body: Callable[[Any], Any], name: str, why: str
) -> None:
    f = ge.jit(body)
    with pytest.raises(NotSupportedError) as caught:
        f(_x())
    text = str(caught.value)
    assert text.startswith(f"ge.jit does not support {name} ({why}; called at {FILE}:")
    assert text.endswith(HINT)
    assert "no implementation found" not in text and "NotImplemented" not in text
    assert isinstance(caught.value, GeTypeError) and isinstance(caught.value, TypeError)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_the_error_names_the_line_that_called_numpy() -> None:
    @ge.jit
    def f(x):
        y = x + 1.0
        return np.fft.ifft(y)  # this line

    with pytest.raises(NotSupportedError) as caught:
        f(_x())
    line = f.__wrapped__.__code__.co_firstlineno + 3
    assert f"; called at {FILE}:{line} in f)" in str(caught.value)


def test_a_missing_method_error_is_also_an_attribute_error() -> None:
    f = ge.jit(lambda x: x.byteswap())
    with pytest.raises(AttributeError, match=r"ge.jit does not support numpy.ndarray.byteswap"):
        f(_x())


def test_a_method_forwarding_to_a_function_without_a_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(tensor_holder._FUNCTIONS, "ravel")  # as if np.ravel had no rule
    f = ge.jit(lambda x: x.ravel())
    with pytest.raises(NotSupportedError) as caught:
        f(_x())
    assert str(caught.value).startswith(
        "ge.jit does not support numpy.ndarray.ravel (it is numpy.ravel, which has no rule; "
        f"called at {FILE}:"
    )
    row = ge.jit.numpy_support().row("numpy.ndarray.ravel")
    assert row is not None and row.status == "unsupported"


def test_a_typo_of_an_attribute_stays_pythons_attribute_error() -> None:
    f = ge.jit(lambda x: x.shpae)
    with pytest.raises(AttributeError) as caught:
        f(_x())
    assert not isinstance(caught.value, NotSupportedError)
    assert "shpae" in str(caught.value)


def test_the_error_inside_a_cond_branch_is_the_same() -> None:
    @ge.jit
    def f(x, p):
        return ge.jit.cond(p, lambda v: np.fft.fft(v), lambda v: v, x)  # noqa: PLW0108

    with pytest.raises(NotSupportedError, match=r"^ge.jit does not support numpy.fft.fft \("):
        f(_x(), np.bool_(True))


def test_other_type_errors_are_left_alone() -> None:
    @ge.jit
    def f(x):
        raise TypeError("the user's own")

    with pytest.raises(TypeError, match=r"^the user's own$") as caught:
        f(_x())
    assert not isinstance(caught.value, GeTypeError)


def test_outside_jit_numpy_keeps_its_error_for_graph_builder_holders() -> None:
    builder = ge.es.GraphBuilder("g")
    x = builder.create_input(0, shape=[2])
    with pytest.raises(TypeError, match="no implementation found"):
        np.fft.fft(x)


# --- the table ------------------------------------------------------------------------------------
def test_rows_have_the_documented_shape(table: SupportTable) -> None:
    assert isinstance(table, tuple) and len(table) > 300
    kinds = {"function", "ufunc", "ufunc method", "method", "attribute", "operator"}
    for row in table:
        assert isinstance(row, SupportRow) and row._fields == ("name", "kind", "status", "notes")
        assert row.kind in kinds, row
        assert row.status in {"supported", "refused", "unsupported"}, row
        assert isinstance(row.notes, str)
    assert {r.kind for r in table} == kinds
    names = [r.name for r in table]
    assert len(names) == len(set(names))  # one row each


@pytest.mark.parametrize(
    ("name", "kind", "status"),
    [
        ("numpy.where", "function", "supported"),
        ("numpy.linalg.norm", "function", "supported"),
        ("numpy.fft.fft", "function", "unsupported"),
        ("numpy.nonzero", "function", "refused"),
        ("numpy.exp", "ufunc", "supported"),
        ("numpy.frexp", "ufunc", "unsupported"),
        ("numpy.add.outer", "ufunc method", "supported"),
        ("numpy.add.at", "ufunc method", "unsupported"),
        ("numpy.ndarray.reshape", "method", "supported"),
        ("numpy.ndarray.byteswap", "method", "unsupported"),
        ("numpy.ndarray.item", "method", "refused"),
        ("numpy.ndarray.T", "attribute", "supported"),
        ("x + y", "operator", "supported"),
        ("x[k] = v", "operator", "supported"),
        ("bool(x)", "operator", "refused"),
    ],
)
def test_known_rows(table: SupportTable, name: str, kind: str, status: str) -> None:
    row = table.row(name)
    assert row is not None, name
    assert (row.kind, row.status) == (kind, status)


def test_notes_say_what_is_missing_or_why(table: SupportTable) -> None:
    nonzero = table.row("numpy.nonzero")
    assert nonzero is not None and "depends on the values" in nonzero.notes
    exp = table.row("numpy.exp")
    assert exp is not None and re.match(r"op Exp; dtypes: .*float32", exp.notes)
    bool_row = table.row("bool(x)")
    assert bool_row is not None and "ge.jit.cond" in bool_row.notes


def test_the_table_follows_the_function_rules(table: SupportTable) -> None:
    rules = tensor_holder._FUNCTIONS
    for row in table.select(kind="function"):
        assert (row.status != "unsupported") == (row.name.rsplit(".", 1)[1] in rules), row


def test_rules_added_later_appear(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ge.jit.numpy_support().row("numpy.fft.fft") == SupportRow(
        "numpy.fft.fft", "function", "unsupported", ""
    )
    monkeypatch.setitem(tensor_holder._FUNCTIONS, "fft", lambda anchor, a, n=None: a)
    row = ge.jit.numpy_support().row("numpy.fft.fft")
    assert row is not None and row.status == "supported"
    assert row.notes == "not taken: axis, norm, out"  # numpy's keywords the rule lacks


def test_every_unsupported_entry_of_the_error_tests_is_unsupported_in_the_table(
    table: SupportTable,
) -> None:
    for _, name, _ in UNSUPPORTED:
        row = table.row(name)
        if name == "numpy.exp":  # supported: only its keyword is not
            assert row is not None and row.status == "supported"
            continue
        assert row is not None and row.status == "unsupported", name


def test_select_and_markdown(table: SupportTable) -> None:
    ufuncs = table.select(kind="ufunc", status="supported")
    assert isinstance(ufuncs, SupportTable) and ufuncs
    assert all(r.kind == "ufunc" and r.status == "supported" for r in ufuncs)
    text = ufuncs.as_markdown()
    lines = text.splitlines()
    assert lines[:2] == ["| name | kind | status | notes |", "|---|---|---|---|"]
    assert len(lines) == 2 + len(ufuncs)
    assert "| `numpy.exp` | ufunc | supported | op Exp;" in text
    assert table._repr_markdown_() == table.as_markdown()
    assert table.row("no such thing") is None


def test_markdown_escapes_pipes() -> None:
    rows = SupportTable([SupportRow("x | y", "operator", "supported", "a|b")])
    assert rows.as_markdown().splitlines()[2] == "| `x | y` | operator | supported | a\\|b |"
