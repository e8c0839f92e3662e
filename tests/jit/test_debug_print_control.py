"""``ge.jit.debug_print`` and the structured control flow of ``ge.jit`` (``cond``,
``while_loop``, ``fori_loop``): a value computed inside a body or condition graph is refused
with one ``GeValueError`` that says what to print instead (a subgraph has no outputs to
print from); values of the enclosing trace print from inside a body, once per call; a
construct's results print as any value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeValueError

REFUSED = r"debug_print of a value computed inside a ge\.jit\.cond / while_loop / fori_loop body"


def _f32(*values: float) -> np.ndarray:
    return np.asarray(values, np.float32)


def _while_body(x: Any) -> Any:
    def body(v: Any) -> Any:
        ge.jit.debug_print("v={}", v)
        return v + 1.0

    return ge.jit.while_loop(lambda v: v[0] < 3.0, body, x)


def _while_condition(x: Any) -> Any:
    def keep_going(v: Any) -> Any:
        ge.jit.debug_print("v={}", v)
        return v[0] < 3.0

    return ge.jit.while_loop(keep_going, lambda v: v + 1.0, x)


def _fori_index(x: Any) -> Any:
    def body(i: Any, v: Any) -> Any:
        ge.jit.debug_print("i={}", i)
        return v + 1.0

    return ge.jit.fori_loop(0, 3, body, x)


def _else_branch(x: Any) -> Any:
    def no(v: Any) -> Any:
        ge.jit.debug_print("v={v}", v=v * 2.0)
        return v

    return ge.jit.cond(x[0] > 5.0, lambda v: v + 1.0, no, x)


def _nested(x: Any) -> Any:
    def body(i: Any, v: Any) -> Any:
        def inner(w: Any) -> Any:
            ge.jit.debug_print("w={}", w)
            return w - 1.0

        return ge.jit.cond(v[0] > 0.0, inner, lambda w: w, v)

    return ge.jit.fori_loop(0, 2, body, x)


@pytest.mark.parametrize(
    "fn",
    [_while_body, _while_condition, _fori_index, _else_branch, _nested],
    ids=["while_body", "while_condition", "fori_index", "cond_else", "nested"],
)
def test_a_value_of_a_body_graph_is_refused(fn: Callable[[Any], Any]) -> None:
    with pytest.raises(GeValueError, match=REFUSED) as info:
        ge.jit(fn)(_f32(1.0))
    assert "print the values the construct returns instead" in str(info.value)


def test_the_results_of_a_loop_print(capsys: pytest.CaptureFixture[str]) -> None:
    @ge.jit
    def f(x):
        y = ge.jit.fori_loop(0, 3, lambda i, v: v * 2.0, x)
        ge.jit.debug_print("y={}", y)
        return y

    np.testing.assert_array_equal(f(_f32(1.0)), _f32(8.0))
    assert capsys.readouterr().out.splitlines() == ["y=[8.]"]


def test_an_outer_value_printed_inside_a_loop_body_prints_once_per_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @ge.jit
    def f(x):
        def body(v):
            ge.jit.debug_print("x={}", x)
            return v + 1.0

        return ge.jit.while_loop(lambda v: v[0] < 3.0, body, x)

    np.testing.assert_array_equal(f(_f32(0.0)), _f32(3.0))
    f(_f32(2.0))
    assert capsys.readouterr().out.splitlines() == ["x=[0.]", "x=[2.]"]
