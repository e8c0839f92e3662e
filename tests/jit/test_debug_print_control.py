"""``ge.jit.debug_print`` inside ``ge.jit.cond`` / ``while_loop`` / ``fori_loop`` bodies:
it prints each time the body runs (each iteration, the branch taken), in trace order within
a graph, with the same text on the reference interpreter and on the compiled plan; prints of
the function's own values come after the call; format errors raise when tracing; offline
models refuse it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import ge
import ge.offline_compile as oc
from ge.compiler import background
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import _codegen
from ge.error import GeError, GeValueError
from ge.es import GraphBuilder
from ge.ops import add_op_node, eval_graph
from ge.ops.debug import PRINT_OP
from ge.runtime import ModelFormatError, host_ops, load_model
from tests.runtime.test_om_format import repack, split

Lines = Callable[[], list[str]]


@pytest.fixture
def out(capsys: pytest.CaptureFixture[str]) -> Lines:
    """The lines printed since the last read."""

    def read() -> list[str]:
        return capsys.readouterr().out.splitlines()

    return read


@pytest.fixture
def host_prints(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per run of a compiled ``debug_print`` host task (the interpreter adds none)."""
    runs: list[int] = []
    spec = host_ops.HOST_OPS["debug_print"]

    def make(params: dict[str, Any]) -> Callable[[list[np.ndarray]], None]:
        run = spec.make(params)

        def counted(views: list[np.ndarray]) -> None:
            runs.append(len(views))
            run(views)

        return counted

    monkeypatch.setitem(host_ops.HOST_OPS, "debug_print", host_ops.HostOp(spec.params, make))
    return runs


class _Compiling:  # a background job that is not done: calls run on the interpreter
    def done(self) -> bool:
        return False


def _entry(f: Any) -> Any:
    (entry,) = f._cache.values()
    return entry


def _both_paths(f: Any, out: Lines, runs: list[int], *args: Any) -> tuple[list[str], Any]:
    """What a call of ``f`` prints on the reference interpreter, checked to be what it prints
    on the compiled plan (whose print tasks must have run); and the result."""
    f(*args)
    out()
    entry = _entry(f)
    entry.job = _Compiling()
    f._fast.clear()  # (its fast path runs a compiled entry's plan directly)
    before = len(runs)
    reference = f(*args)
    assert len(runs) == before  # the interpreter ran it
    on_reference = out()
    entry.job = None
    assert ge.jit.wait_for_compiles(180.0)
    compiled = f(*args)
    assert entry.runner is not None and len(runs) > before  # the compiled plan printed
    assert out() == on_reference
    for got, want in zip(_leaves(compiled), _leaves(reference), strict=True):
        np.testing.assert_array_equal(got, want)
    return on_reference, compiled


def _leaves(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple) else [result]


def _f32(*values: float) -> np.ndarray:
    return np.asarray(values, np.float32)


def _branches(x: Any) -> Any:
    def yes(v: Any) -> Any:
        ge.jit.debug_print("then v={} sum={:.1f}", v, v.sum())
        return v + 1.0

    def no(v: Any) -> Any:
        ge.jit.debug_print("else v={v}", v=v * 2.0)
        return v - 1.0

    return ge.jit.cond(x[0] > 0.0, yes, no, x)


def test_cond_prints_the_branch_taken_on_both_paths(out: Lines, host_prints: list[int]) -> None:
    f = ge.jit(_branches)
    lines, result = _both_paths(f, out, host_prints, _f32(1, 2))
    assert lines == ["then v=[1. 2.] sum=3.0"]
    np.testing.assert_array_equal(result, _f32(2, 3))
    lines, result = _both_paths(f, out, host_prints, _f32(-1, 2))
    assert lines == ["else v=[-2.  4.]"]
    np.testing.assert_array_equal(result, _f32(-2, 1))
    assert f.cache_info().traces == 1


def test_while_loop_prints_each_test_and_each_iteration(out: Lines, host_prints: list[int]) -> None:
    @ge.jit
    def f(x):
        def keep_going(v):
            ge.jit.debug_print("test {}", v)
            return v[0] < 3.0

        def body(v):
            ge.jit.debug_print("body {}", v)
            return v + 1.0

        return ge.jit.while_loop(keep_going, body, x)

    lines, result = _both_paths(f, out, host_prints, _f32(1))
    assert lines == ["test [1.]", "body [1.]", "test [2.]", "body [2.]", "test [3.]"]
    np.testing.assert_array_equal(result, _f32(3))
    lines, _ = _both_paths(f, out, host_prints, _f32(5))  # no iteration: the test alone
    assert lines == ["test [5.]"]


def test_fori_loop_prints_its_index_and_outer_values_each_iteration(
    out: Lines, host_prints: list[int]
) -> None:
    @ge.jit
    def f(x, scale):
        def body(i, v):
            ge.jit.debug_print("i={} scale={} v={}", i, scale, v)
            return v * scale

        return ge.jit.fori_loop(0, 3, body, x)

    lines, result = _both_paths(f, out, host_prints, _f32(1), np.float32(2))
    assert lines == ["i=0 scale=2.0 v=[1.]", "i=1 scale=2.0 v=[2.]", "i=2 scale=2.0 v=[4.]"]
    np.testing.assert_array_equal(result, _f32(8))


def _nested(x: Any) -> Any:
    def body(i: Any, v: Any) -> Any:
        ge.jit.debug_print("step {} before", i)

        def inner(w: Any) -> Any:
            ge.jit.debug_print("  inner {}", w)
            return w - 1.0

        w = ge.jit.cond(v[0] > 1.0, inner, lambda w: w * 4.0, v)
        ge.jit.debug_print("step {} after {}", i, w)
        return w

    return ge.jit.fori_loop(0, 3, body, x)


def test_nested_bodies_print_in_execution_order(out: Lines, host_prints: list[int]) -> None:
    lines, result = _both_paths(ge.jit(_nested), out, host_prints, _f32(3))
    assert lines == [
        "step 0 before",
        "  inner [3.]",
        "step 0 after [2.]",
        "step 1 before",
        "  inner [2.]",
        "step 1 after [1.]",
        "step 2 before",
        "step 2 after [4.]",
    ]
    np.testing.assert_array_equal(result, _f32(4))


def test_a_cond_on_outer_values_inside_a_loop_runs_each_iteration(out: Lines) -> None:
    @ge.jit
    def f(x, p):
        def body(i, v):
            # a construct over values of the function only: still a node of the body
            ge.jit.cond(p, lambda: ge.jit.debug_print("p={}", p), lambda: None)
            return v + 1.0

        return ge.jit.fori_loop(0, 2, body, x)

    f(_f32(0), np.bool_(True))
    assert out() == ["p=True", "p=True"]
    f(_f32(0), np.bool_(False))
    assert out() == []


def test_independent_printing_constructs_keep_trace_order_and_the_function_prints_last(
    out: Lines, host_prints: list[int]
) -> None:
    @ge.jit
    def f(x, y):
        ge.jit.debug_print("function: x={}", x)  # printed after the call
        a = ge.jit.cond(y[0] > 0.0, lambda v: _say("first", v), lambda v: v, y)
        b = ge.jit.cond(x[0] > 0.0, lambda v: _say("second", v), lambda v: v, x)
        ge.jit.fori_loop(0, 1, lambda i, v: _say("third", v), x)  # its result unused
        return a + b

    lines, _ = _both_paths(f, out, host_prints, _f32(1), _f32(2))
    assert lines == ["first [2.]", "second [1.]", "third [1.]", "function: x=[1.]"]


def _say_then(v: Any) -> Any:
    return _say("then", v)


def _say(what: str, v: Any) -> Any:
    ge.jit.debug_print(what + " {}", v)
    return v


def test_prints_survive_the_optimizer(out: Lines, host_prints: list[int]) -> None:
    @ge.jit
    def f(x):
        def body(i, v):
            ge.jit.debug_print("tick")  # no values at all
            ge.jit.debug_print("tick")  # the same print twice: two prints
            ge.jit.debug_print("double {}", v * 2.0)  # a value computed only to be printed
            ge.jit.debug_print("const {} {}", np.float32(3) * 2, "text")
            return v + 1.0

        ge.jit.fori_loop(0, 1, body, x)  # nothing uses the loop's result
        return x

    lines, _ = _both_paths(f, out, host_prints, _f32(1))
    assert lines == ["tick", "tick", "double [2.]", "const 6.0 text"]


def test_odd_shapes_and_dtypes_print_from_bodies(out: Lines, host_prints: list[int]) -> None:
    @ge.jit
    def f(empty, matrix, n):
        def body(i, v):
            ge.jit.debug_print("{} {} {}", v[0].shape, v[1].T[0], v[2])
            return (v[0], v[1] + 1, v[2] * 2)

        return ge.jit.fori_loop(0, 2, body, (empty, matrix, n))

    matrix = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]  # non-contiguous
    lines, _ = _both_paths(f, out, host_prints, np.zeros((0, 3), np.float64), matrix, np.int64(3))
    assert lines == ["(0, 3) [0 4 8] 3", "(0, 3) [1 5 9] 6"]


def test_trace_shows_the_print_node_in_its_body() -> None:
    graph = ge.jit(_branches).trace(_f32(1))
    types = {
        sub.name: [n.type for n in sub.get_direct_nodes()] for sub in graph.get_all_subgraphs()
    }
    assert sorted(t.count(PRINT_OP) for t in types.values()) == [1, 1]
    assert PRINT_OP not in [n.type for n in graph.get_direct_nodes()]


@pytest.mark.parametrize(
    ("fmt", "why"),
    [("{} {}", "IndexError"), ("{name}", "KeyError"), ("{:.3f}", "TypeError")],
)
def test_a_template_that_does_not_format_in_a_body_fails_when_tracing(fmt: str, why: str) -> None:
    def f(x):
        def body(i, v):
            ge.jit.debug_print(fmt, v)
            return v + 1.0

        return ge.jit.fori_loop(0, 2, body, x)

    with pytest.raises(GeValueError, match=rf"fmt .* does not format .*{why}"):
        ge.jit(f)(_f32(1, 2))
    with pytest.raises(GeValueError, match=rf"fmt .* does not format .*{why}"):
        ge.jit(lambda x: ge.jit.cond(x[0] > 0, f, lambda v: v, x))(_f32(1, 2))


def test_a_value_of_a_body_printed_outside_it_is_refused() -> None:
    kept: list[Any] = []

    @ge.jit
    def f(x):
        def body(v):
            kept.append(v * 2.0)
            return v + 1.0

        y = ge.jit.while_loop(lambda v: v[0] < 3.0, body, x)
        ge.jit.debug_print("{}", kept[-1])
        return y

    with pytest.raises(GeError, match=r"is used after that trace ended: it leaked out"):
        f(_f32(1))


def test_a_print_node_of_another_process_is_refused_naming_it() -> None:
    """(A graph read back from a file, say: its ``print_id`` names no sink of this process.)"""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    node = add_op_node(b._graph, PRINT_OP, [[(x._node, 0)]], {"fmt": "{}", "print_id": 0})
    graph = b.build_and_reset([x + 1.0])
    refused = rf"node {node.name} \({PRINT_OP}\): print_id 0 is not a debug_print traced in"
    with pytest.raises(GeError, match=refused):  # the reference interpreter
        eval_graph(graph, [np.ones(3, np.float32)])
    with pytest.raises(GeError, match=refused):  # the compiler, when lowering it
        CompiledGraph(graph)


@pytest.fixture
def build_session() -> Iterator[None]:
    oc.build_initialize({})
    yield
    oc.build_finalize()


def test_an_offline_model_refuses_a_body_print(build_session: None) -> None:
    graph = ge.jit(lambda x, p: ge.jit.cond(p, _say_then, _say_then, x)).trace(_f32(1), True)
    with pytest.raises(
        GeError,
        match=r"JitDebugPrint_\d+ \(debug_print\) prints through a Python function of the "
        r"process that traced it \(ge.jit.debug_print in a cond/while_loop/fori_loop body\); "
        r"an offline model cannot hold it",
    ):
        oc.build_model(graph)


def test_a_model_file_holding_a_print_task_is_refused(build_session: None) -> None:
    b = GraphBuilder("m")
    x = b.create_input(0, name="x", shape=[3])
    data = oc.build_model(b.build_and_reset([x + 1.0])).get_bytes()
    header, payload = split(data)
    params = {"node": "p", "print_id": 1}  # as a writer that took it would
    header["graphs"][0]["tasks"].append(
        {"name": "p", "host": "debug_print", "buffers": [0], "params": params}
    )
    with pytest.raises(ModelFormatError, match=r"host op debug_print prints through Python"):
        load_model(repack(header, payload))
    (result,) = load_model(data).execute([np.ones(3, np.float32)])  # the untouched file loads
    np.testing.assert_array_equal(result, np.full(3, 2.0, np.float32))


@pytest.mark.slow
def test_prints_while_kernels_compile_in_the_background(
    out: Lines, worker: background.BackgroundCompiler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GE_JIT_BACKGROUND", "1")
    monkeypatch.setattr(_codegen, "_CACHE", {})  # as a new process: nothing loaded yet
    f = ge.jit(lambda x: _nested(np.sin(x) * 0.0 + x))  # kernels at the top level to compile
    x = np.full(257, 3.0, np.float32)
    f(x)
    assert _entry(f).job is not None and _entry(f).runner is None  # the interpreter ran
    first = out()
    _nested(np.sin(x) * 0.0 + x)  # not traced: cond, fori_loop and the prints run at once
    assert first == out()
    job = _entry(f).job
    assert ge.jit.wait_for_compiles(180.0)
    assert not job.failed  # the worker compiled it (body plans compile where they run)
    f(x)
    assert _entry(f).runner is not None
    assert out() == first
