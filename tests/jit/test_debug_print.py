"""``ge.jit.debug_print`` prints the values each call of a compiled function computes (as
``jax.debug.print``), at once outside ``ge.jit``; and formatting a traced value points at it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

import ge
from ge.error import GeError, GeTypeError, GeValueError
from ge.ops.infer import graph_outputs


@pytest.fixture
def out(capsys: pytest.CaptureFixture[str]) -> Callable[[], list[str]]:
    """The lines printed since the last read."""

    def read() -> list[str]:
        return capsys.readouterr().out.splitlines()

    return read


Lines = Callable[[], list[str]]


def _f32(*values: float) -> np.ndarray:
    return np.asarray(values, np.float32)


def test_prints_each_call_with_its_values_from_the_compiled_plan(out: Lines) -> None:
    @ge.jit
    def f(x, y):
        z = x * 2.0
        ge.jit.debug_print("z={} y={y} total={:.2f}", z, z.sum(), y=y)
        return z + y

    assert f(_f32(0, 1, 2), np.float32(1.0)).tolist() == [1.0, 3.0, 5.0]
    assert out() == ["z=[0. 2. 4.] y=1.0 total=6.00"]
    assert f(_f32(1, 2, 3), np.float32(0.5)).tolist() == [2.5, 4.5, 6.5]
    assert out() == ["z=[2. 4. 6.] y=0.5 total=12.00"]
    assert f.cache_info().traces == 1  # the second call ran the compiled plan: no trace
    [entry] = f._cache.values()
    assert entry.runner is not None  # the compiled executor ran, not the interpreter


def test_prints_from_the_reference_interpreter_while_kernels_compile(out: Lines) -> None:
    @ge.jit
    def f(x):
        ge.jit.debug_print("x={} sum={}", x, x.sum())
        return x * 2.0

    f(_f32(1, 2))
    assert out() == ["x=[1. 2.] sum=3.0"]
    [entry] = f._cache.values()

    class Compiling:  # a background job that is not done: calls run on the interpreter
        def done(self) -> bool:
            return False

    entry.job = Compiling()
    assert f(_f32(3, 4)).tolist() == [6.0, 8.0]
    assert out() == ["x=[3. 4.] sum=7.0"]
    entry.job = None


def test_a_call_with_arrays_only_prints_on_the_fast_path_too(out: Lines) -> None:
    @ge.jit
    def f(x):
        ge.jit.debug_print("x={}", x)
        return x + 1.0

    for k in range(3):
        f(_f32(k))
        assert out() == [f"x=[{k}.]"]


def test_prints_keep_trace_order_and_come_after_the_computation(out: Lines) -> None:
    @ge.jit
    def f(x):
        ge.jit.debug_print("first {}", x)
        y = np.exp(x)
        ge.jit.debug_print("second {0} {0}", y > 1.0)
        ge.jit.debug_print("no values")
        return y

    f(_f32(0.0, 1.0))
    assert out() == ["first [0. 1.]", "second [False  True] [False  True]", "no values"]


@dataclasses.dataclass
class Pair:
    a: object
    b: object


def test_pytrees_constants_dtypes_and_odd_shapes(out: Lines) -> None:
    @ge.jit
    def f(x, n):
        ge.jit.debug_print(
            "{}|{}|{}|{}|{}|{}|{k}",
            {"i": n},
            (x[:0], x[1]),
            Pair(n > 1, 3),
            np.arange(2),
            "text",
            x.T[::2],
            k=[n * 2, 1.5],
        )
        return x

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    f(x, np.arange(3, dtype=np.int64))
    assert out() == [
        "{'i': array([0, 1, 2])}|(array([], shape=(0, 2), dtype=float32), array([2., 3.], "
        "dtype=float32))|Pair(a=array([False, False,  True]), b=3)|[0 1]|text|[[0. 2. 4.]]|"
        "[array([0, 2, 4]), 1.5]"
    ]


def test_non_contiguous_arguments_print_their_values(out: Lines) -> None:
    @ge.jit
    def f(x):
        ge.jit.debug_print("{}", x)
        return x

    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    f(base[:, ::2])
    assert out() == str(base[:, ::2]).splitlines()


def test_with_in_place_updates_and_a_constant_result(out: Lines) -> None:
    @ge.jit
    def f(x):
        x[0] = 7.0
        ge.jit.debug_print("x is {}", x)
        return 1

    a = _f32(1, 2)
    assert f(a) == 1
    assert a.tolist() == [7.0, 2.0]
    assert out() == ["x is [7. 2.]"]


def test_prints_the_value_at_the_print_not_after_a_later_update(out: Lines) -> None:
    @ge.jit
    def f(x):
        ge.jit.debug_print("before {}", x)
        x[0] = 7.0
        x += 1.0
        ge.jit.debug_print("after {}", x)
        return x

    assert f(_f32(1, 2)).tolist() == [8.0, 3.0]
    assert out() == ["before [1. 2.]", "after [8. 3.]"]


def test_a_failing_call_prints_nothing(out: Lines) -> None:
    @ge.jit
    def f(x):
        x[0] = 7.0
        ge.jit.debug_print("x is {}", x)
        return x

    a = _f32(1, 2)
    a.flags.writeable = False
    with pytest.raises(GeValueError, match="not writeable"):
        f(a)
    assert out() == []


def test_a_nested_jit_function_prints_inside_the_outer_trace(out: Lines) -> None:
    @ge.jit
    def inner(v):
        ge.jit.debug_print("inner {}", v)
        return v * 3.0

    @ge.jit
    def outer(x):
        return inner(x + 1.0)

    outer(_f32(1))
    outer(_f32(2))
    assert out() == ["inner [2.]", "inner [3.]"]


def test_a_python_loop_prints_each_step(out: Lines) -> None:
    @ge.jit
    def f(x):
        for i in range(2):
            ge.jit.debug_print("step {} {}", i, x)
            x = x + 1.0
        return x

    f(_f32(0))
    assert out() == ["step 0 [0.]", "step 1 [1.]"]


def test_trace_shows_the_printed_values_as_outputs() -> None:
    def f(x):
        ge.jit.debug_print("{}", x * 2.0)
        return x

    plain = ge.jit(lambda x: x).trace(_f32(1))
    graph = ge.jit(f).trace(_f32(1))
    assert len(graph_outputs(graph)) == len(graph_outputs(plain)) + 1


def test_outside_jit_it_prints_at_once(out: Lines) -> None:
    ge.jit.debug_print("{} and {name}", np.arange(2), name="n")
    assert out() == ["[0 1] and n"]


@pytest.mark.parametrize("fmt", [None, 3, b"{}"])
def test_fmt_must_be_a_str(fmt: object) -> None:
    with pytest.raises(GeTypeError, match=r"debug_print: fmt must be a str .*got"):
        ge.jit.debug_print(fmt)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fmt", "why"),
    [("{} {}", "IndexError"), ("{name}", "KeyError"), ("{:.3f}", "TypeError"), ("{", "Value")],
)
def test_a_template_that_does_not_format_fails_when_tracing(fmt: str, why: str) -> None:
    @ge.jit
    def f(x):
        ge.jit.debug_print(fmt, x)
        return x

    with pytest.raises(GeValueError, match=rf"debug_print: fmt .* does not format .*{why}"):
        f(_f32(1, 2))
    assert f.cache_info().entries == 0


def test_a_graph_builder_value_outside_jit_is_refused() -> None:
    builder = ge.es.GraphBuilder("g")
    x = builder.create_input(0, shape=[2])
    with pytest.raises(GeTypeError, match=r"debug_print prints values inside @ge.jit"):
        ge.jit.debug_print("{}", x)


def test_a_leaked_traced_value_is_refused() -> None:
    kept = []

    @ge.jit
    def f(x):
        kept.append(x)
        return x

    f(_f32(1))
    with pytest.raises(GeError, match=r"used after that trace ended"):
        ge.jit.debug_print("{}", kept[0])


def test_a_format_spec_on_a_traced_value_points_at_debug_print() -> None:
    @ge.jit
    def f(x):
        return f"{x.sum():.3f}"

    with pytest.raises(GeTypeError, match=r"format\(\) .* of a traced value at .*debug_print"):
        f(_f32(1))
