"""Footguns that ``@ge.jit`` turns into errors (Python control flow on traced values, leaked
traced values, arguments it cannot take, donation) and the control flow it offers instead:
``ge.jit.cond`` and ``ge.jit.while_loop``, traced and concrete."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeError, GeTypeError, GeValueError

FILE = "test_errors_and_control.py"


def line_of(marker: str) -> int:
    """The line of this file that carries ``# <marker>`` (the one statement a message names)."""
    with open(__file__, encoding="utf-8") as source:
        hits = [i for i, text in enumerate(source, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def def_line(fn: Any) -> int:
    return (fn.__wrapped__ if isinstance(fn, ge.jit.JitFunction) else fn).__code__.co_firstlineno


def _f32(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


# --- Python control flow on a traced value --------------------------------------------------------
def _if(x):
    if x.sum() > 0:  # concrete:if
        return x
    return -x


def _bool(x):
    return x * 2.0 if bool(x.max()) else x  # concrete:bool


def _int(x):
    return x * int(x.sum())  # concrete:int


def _float(x):
    return x * float(x[0])  # concrete:float


def _range(x):
    for _ in range(x.astype(np.int32).sum()):  # concrete:range
        x = x * 2.0
    return x


def _while(x):
    while x.sum() < 10:  # concrete:while
        x = x * 2.0
    return x


def _and(x):
    return (x.sum() > 0) and x  # concrete:and


def _helper(y):
    return y if y.min() > 0 else -y  # concrete:helper


def _calls_helper(x):
    return _helper(x + 1.0)


@pytest.mark.parametrize(
    ("fn", "marker", "what"),
    [
        (_if, "concrete:if", "bool() (an if, while, and, or, not)"),
        (_bool, "concrete:bool", "bool() (an if, while, and, or, not)"),
        (_int, "concrete:int", "int()"),
        (_float, "concrete:float", "float()"),
        (_range, "concrete:range", "use as a Python index or size"),
        (_while, "concrete:while", "bool() (an if, while, and, or, not)"),
        (_and, "concrete:and", "bool() (an if, while, and, or, not)"),
        (_calls_helper, "concrete:helper", "bool() (an if, while, and, or, not)"),
    ],
    ids=["if", "bool", "int", "float", "range", "while", "and", "in-a-helper"],
)
def test_python_control_flow_on_a_traced_value_is_an_error(
    fn: Callable[..., Any], marker: str, what: str
) -> None:
    jitted = ge.jit(fn)
    with pytest.raises(TypeError) as info:
        jitted(_f32(1.0, 2.0))
    assert isinstance(info.value, GeTypeError)
    message = str(info.value)
    assert message.startswith(
        f"{what} of a traced value at {FILE}:{line_of(marker)} in @ge.jit function "
        f"{fn.__qualname__} ({FILE}:{def_line(fn)}): its value is only known when the "
        "compiled graph runs."
    ), message
    assert "ge.jit.cond(pred, true_fn, false_fn, *operands)" in message
    assert "ge.jit.while_loop(cond_fn, body_fn, init)" in message
    assert "static_argnums" in message
    assert jitted.cache_info().entries == 0  # nothing half-built is cached
    with pytest.raises(GeTypeError):  # and the next call says so again
        jitted(_f32(1.0, 2.0))


def test_decorated_function_error_names_the_decorator_line() -> None:
    @ge.jit
    def f(x):
        return x * 2.0 if x[0] > 0 else x  # concrete:decorated

    with pytest.raises(GeTypeError) as info:
        f(_f32(1.0))
    assert (
        f"at {FILE}:{line_of('concrete:decorated')} in @ge.jit function "
        f"{f.__wrapped__.__qualname__} ({FILE}:{def_line(f)})"
    ) in str(info.value)


def test_static_argument_makes_python_control_flow_fine() -> None:
    @ge.jit(static_argnames="negate")
    def f(x, negate):
        return -x if negate else x

    np.testing.assert_array_equal(f(_f32(1.0, -2.0), negate=True), _f32(-1.0, 2.0))
    np.testing.assert_array_equal(f(_f32(1.0, -2.0), negate=False), _f32(1.0, -2.0))


# --- leaked traced values -------------------------------------------------------------------------
LEAKED: list[Any] = []


@ge.jit
def _leaks(x):
    y = x * 2.0
    LEAKED.append(y)
    return y


def _leak_message() -> str:
    return (
        f"a value traced in @ge.jit function {_leaks.__wrapped__.__qualname__} "
        f"({FILE}:{def_line(_leaks)}) is used after that trace ended: it leaked out"
    )


@pytest.fixture
def leaked() -> Any:
    LEAKED.clear()
    _leaks.clear_cache()
    np.testing.assert_array_equal(_leaks(_f32(1.0)), _f32(2.0))  # the trace leaks y
    (value,) = LEAKED
    yield value
    LEAKED.clear()


def test_leaked_value_used_in_a_later_trace(leaked: Any) -> None:
    @ge.jit
    def uses(x):
        return x + leaked

    @ge.jit
    def returns(x):
        return x, leaked

    for fn in (uses, returns):
        with pytest.raises(GeError, match=re.escape(_leak_message())):
            fn(_f32(1.0))


@pytest.mark.parametrize(
    "use",
    [
        lambda v: v + 1.0,
        lambda v: 1.0 - v,
        np.exp,
        lambda v: np.maximum(v, 0.0),
        lambda v: v.reshape(1, 1),
        lambda v: v[0],
    ],
    ids=["add", "rsub", "np.exp", "np.maximum", "reshape", "index"],
)
def test_leaked_value_used_outside_any_trace(leaked: Any, use: Callable[[Any], Any]) -> None:
    with pytest.raises(GeError, match=re.escape(_leak_message())):
        use(leaked)


def test_leaked_value_used_in_a_later_trace_of_the_same_function(leaked: Any) -> None:
    @ge.jit
    def f(x):
        return x + LEAKED[0]

    with pytest.raises(GeError, match="leaked out"):
        f(_f32(1.0))


# --- arguments and results ge.jit cannot take -----------------------------------------------------
@pytest.mark.parametrize(
    ("args", "path", "kind"),
    [
        (("text",), "x", "str"),
        ((object(),), "x", "object"),
        (({"a": [np.ones(2), b"raw"]},), "x['a'][1]", "bytes"),
        (((np.ones(2), {1, 2}),), "x[1]", "set"),
        ((np.ones(2), slice(1)), "args[1]", "slice"),
    ],
    ids=["str", "object", "nested-bytes", "set", "vararg"],
)
def test_unsupported_argument_types_name_the_path(args: Any, path: str, kind: str) -> None:
    def f(x, *rest):
        return x

    with pytest.raises(GeTypeError) as info:
        ge.jit(f)(*args)
    assert str(info.value).startswith(
        f"argument {path} of {f.__qualname__} is a {kind}: @ge.jit takes numpy arrays, "
        "Python scalars, ge.graph.Tensor and tuples/lists/dicts/dataclasses of them"
    ), str(info.value)
    assert "static_argnums/static_argnames" in str(info.value)


def test_unsupported_result_type() -> None:
    @ge.jit
    def f(x):
        return x, object()

    with pytest.raises(GeTypeError, match=r"f returned a object at output 1"):
        f(_f32(1.0))


def test_nested_jit_functions_trace_inline() -> None:
    @ge.jit
    def g(x):
        return x * 2.0

    @ge.jit
    def f(x):
        return g(x) + 1.0

    np.testing.assert_array_equal(f(_f32(1.0, 2.0)), _f32(3.0, 5.0))


# --- ge.jit.cond ----------------------------------------------------------------------------------
def test_cond_takes_either_branch_from_data() -> None:
    @ge.jit
    def f(x, y):
        return ge.jit.cond(x.sum() > 0, lambda a, b: a * b, lambda a, b: a - b, x, y)

    def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x * y if x.sum() > 0 else x - y

    y = _f32(2.0, 2.0, 2.0)
    for x in (_f32(1.0, 2.0, 3.0), _f32(-1.0, -2.0, 0.5), _f32(0.0, 0.0, 0.0)):
        np.testing.assert_array_equal(f(x, y), reference(x, y))
    assert f.cache_info().traces == 1  # one graph serves both outcomes
    types = {n.type for n in f.trace(_f32(1.0), _f32(1.0)).get_direct_nodes()}
    assert "If" in types


def test_cond_with_pytree_operands_and_results() -> None:
    @ge.jit
    def f(params, x):
        def big(p, v):
            return {"out": v @ p["w"], "scale": p["s"] * 2.0}

        def small(p, v):
            return {"out": v @ p["w"] * 0.0, "scale": p["s"]}

        return ge.jit.cond(np.max(x) > 1.0, big, small, params, x)

    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    s = np.float32(3.0)
    for x, expected in (
        (_f32(1.0, 2.0, 0.0), {"out": _f32(1.0, 2.0, 0.0) @ w, "scale": np.asarray(s * 2.0)}),
        (_f32(1.0, 0.5, 0.0), {"out": np.zeros(2, np.float32), "scale": np.asarray(s)}),
    ):
        out = f({"w": w, "s": s}, x)
        assert sorted(out) == ["out", "scale"]
        for key in out:
            np.testing.assert_allclose(out[key], expected[key], rtol=1e-6)
            assert out[key].dtype == np.float32


def test_cond_with_a_python_pred_or_no_operands_inside_a_trace() -> None:
    @ge.jit
    def f(x, flag):
        return ge.jit.cond(flag, lambda a: a + 1.0, lambda a: a - 1.0, x)

    np.testing.assert_array_equal(f(_f32(1.0), True), _f32(2.0))
    np.testing.assert_array_equal(f(_f32(1.0), False), _f32(0.0))

    @ge.jit
    def g(x):
        return ge.jit.cond(x.sum() > 0, lambda: np.float32(1.0), lambda: np.float32(-1.0))

    np.testing.assert_array_equal(g(_f32(3.0)), np.float32(1.0))
    np.testing.assert_array_equal(g(_f32(-3.0)), np.float32(-1.0))


@pytest.mark.parametrize(
    ("true_fn", "false_fn", "detail"),
    [
        (lambda a: a, lambda a: a.astype(np.int32), "* ['float32[1]'] vs * ['int32[1]']"),
        (
            lambda a: (a, a),
            lambda a: a,
            "(*, *) ['float32[1]', 'float32[1]'] vs * ['float32[1]']",
        ),
        (
            lambda a: {"x": a},
            lambda a: {"y": a},
            "{'x': *} ['float32[1]'] vs {'y': *} ['float32[1]']",
        ),
        (lambda a: a, lambda a: a.reshape(1, 1), "* ['float32[1]'] vs * ['float32[1, 1]']"),
    ],
    ids=["dtype", "structure", "keys", "shape"],
)
def test_cond_branches_that_disagree(true_fn: Any, false_fn: Any, detail: str) -> None:
    @ge.jit
    def f(x):
        return ge.jit.cond(x.sum() > 0, true_fn, false_fn, x)

    with pytest.raises(GeValueError) as info:
        f(_f32(1.0))
    assert str(info.value) == (
        f"ge.jit.cond: the branches return different structures, dtypes or shapes: {detail}"
    )


def test_cond_on_concrete_values_just_runs_python() -> None:
    calls: list[str] = []

    def yes(a, b):
        calls.append("yes")
        return a + b

    def no(a, b):
        calls.append("no")
        return a - b

    assert ge.jit.cond(True, yes, no, 5, 3) == 8
    assert ge.jit.cond(np.bool_(False), yes, no, 5, 3) == 2
    x = _f32(1.0, 2.0)
    out = ge.jit.cond(x.sum() > 0, yes, no, x, x)  # a numpy pred: still plain Python
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, x + x)
    assert calls == ["yes", "no", "yes"]


def test_cond_branch_closing_over_a_traced_value() -> None:
    @ge.jit
    def f(x):
        y = x * 3.0
        return ge.jit.cond(x.sum() > 0, lambda a: a + y, lambda a: a, x)

    np.testing.assert_array_equal(f(_f32(1.0, 2.0)), _f32(4.0, 8.0))


# --- ge.jit.while_loop ----------------------------------------------------------------------------
def _double_until_over_100(x: np.ndarray) -> tuple[np.ndarray, np.int32]:
    count = np.int32(0)
    while x <= 100:
        x, count = x * 2.0, count + np.int32(1)
    return x, count


def test_while_loop_doubles_until_over_100() -> None:
    @ge.jit
    def f(x):
        return ge.jit.while_loop(
            lambda s: s[0] <= 100.0, lambda s: (s[0] * 2.0, s[1] + 1), (x, np.int32(0))
        )

    for start in (1.0, 3.0, 99.0, 100.0, 101.0, 0.5):
        x = np.float32(start)
        value, count = f(x)
        want_value, want_count = _double_until_over_100(x)
        assert value.dtype == np.float32 and count.dtype == np.int32
        assert (value, count) == (want_value, want_count), start
    assert f.cache_info().traces == 1
    types = {n.type for n in f.trace(np.float32(1.0)).get_direct_nodes()}
    assert "While" in types


def test_while_loop_with_a_dict_state_and_arrays() -> None:
    @ge.jit
    def f(x):
        state = {"i": np.int32(0), "acc": np.zeros_like(x)}

        def body(s):
            return {"i": s["i"] + 1, "acc": s["acc"] + s["i"].astype(np.float32)}

        return ge.jit.while_loop(lambda s: s["i"] < 5, body, state)

    out = f(np.ones((2, 3), np.float32))
    assert out["i"] == 5 and out["i"].dtype == np.int32
    np.testing.assert_array_equal(out["acc"], np.full((2, 3), 10.0, np.float32))


def test_nested_control_flow() -> None:
    @ge.jit
    def collatz_steps(n):
        def body(s):
            v, steps = s
            v = ge.jit.cond(v % 2 == 0, lambda a: a // 2, lambda a: a * 3 + 1, v)
            return v, steps + 1

        return ge.jit.while_loop(lambda s: s[0] != 1, body, (n, np.int32(0)))[1]

    def reference(n: int) -> int:
        steps = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        return steps

    for n in (1, 6, 27):
        assert collatz_steps(np.int32(n)) == reference(n)


def test_while_loop_errors() -> None:
    @ge.jit
    def changes_dtype(x):
        return ge.jit.while_loop(lambda s: s.sum() < 10.0, lambda s: s.astype(np.int32), x)

    with pytest.raises(GeTypeError, match="body_fn must return the loop state's structure"):
        changes_dtype(_f32(1.0))

    @ge.jit
    def two_conditions(x):
        return ge.jit.while_loop(lambda s: (s < 1.0, s < 2.0), lambda s: s, x)

    with pytest.raises(GeValueError, match="cond_fn must return one value, got"):
        two_conditions(np.float32(0.0))


def test_while_loop_on_concrete_values_just_runs_python() -> None:
    assert ge.jit.while_loop(lambda s: s < 100, lambda s: s * 2, 1) == 128
    assert ge.jit.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2), (0, 1)) == (3, 8)
    value, count = ge.jit.while_loop(
        lambda s: s[0] <= 100, lambda s: (s[0] * 2.0, s[1] + 1), (np.float32(3.0), np.int32(0))
    )
    assert (value, count) == _double_until_over_100(np.float32(3.0))


def test_while_loop_and_nested_cond_close_over_traced_values() -> None:
    @ge.jit
    def loop(x: Any, n: Any) -> Any:
        step = x * 0.5

        def body(state: Any) -> Any:
            i, acc = state
            return i + 1, acc + step  # step comes from the enclosing trace

        return ge.jit.while_loop(lambda st: st[0] < n, body, (np.int32(0), x))[1]

    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(loop(x, np.int32(4)), x + 4 * (x * 0.5))

    @ge.jit
    def nested(x: Any) -> Any:
        y = x * 2.0

        def inner(a: Any) -> Any:  # two levels down, y is captured through both
            return ge.jit.cond(a.sum() > 100.0, lambda b: b + y, lambda b: b * y, a)

        return ge.jit.cond(x.sum() > 0, inner, lambda a: a - y, x)

    np.testing.assert_allclose(nested(x), x * (x * 2))
    np.testing.assert_allclose(nested(-x), -x - (-x * 2))
