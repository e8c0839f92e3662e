"""``ge.jit``'s cache: same key, no trace; a new key retraces and says why in one exact line on
the ``ge.jit`` logger (summarised from the fifth trace on); static arguments; methods;
``.trace``/``.lower`` inspection; and a new batch size that compiles no new kernel."""

from __future__ import annotations

import linecache
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.compiler.kernels._codegen import compiled_kernel_count
from ge.error import GeTypeError, GeValueError
from ge.graph import Graph

FILE = "test_cache_and_retrace.py"
SUMMARY_TAIL = (
    "Each new shape, dtype, structure or static value traces and compiles again: keep shapes "
    "fixed (pad or bucket them) and pass values that vary as arrays, not as static arguments "
    "or Python scalars"
)


def where(jitted: Any) -> str:
    """``qualname (file:line)`` as the messages print it: the line is the code object's first
    line, which for a decorated function is the decorator's line (CPython 3.11)."""
    code = jitted.__wrapped__.__code__
    line = code.co_firstlineno
    source = linecache.getline(code.co_filename, line).strip()
    assert source.startswith(("@ge.jit", "def ")), source  # pin down which line it is
    return f"{jitted.__wrapped__.__qualname__} ({FILE}:{line})"


@pytest.fixture
def jit_log(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    """The messages logged on ``ge.jit`` since the last read."""
    caplog.set_level(logging.INFO, logger="ge.jit")

    def read() -> list[str]:
        messages = [r.getMessage() for r in caplog.records if r.name == "ge.jit"]
        caplog.clear()
        return messages

    return read


def _f32(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


# --- hits and traces ------------------------------------------------------------------------------
def test_same_key_does_not_trace(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(x, y):
        return np.tanh(x) * y

    x, y = _f32(3, 4), _f32(3, 4) + 1.0
    for _ in range(5):
        np.testing.assert_allclose(f(x, y), np.tanh(x) * y, rtol=1e-5)
    np.testing.assert_allclose(f(x + 1.0, y), np.tanh(x + 1.0) * y, rtol=1e-5)  # new values
    np.testing.assert_allclose(f(x, y=y), np.tanh(x) * y, rtol=1e-5)  # y by keyword
    assert f.cache_info() == (6, 1, 1, 1)  # hits, misses, traces, entries
    assert jit_log() == []  # the first trace is not a retrace


def test_concurrent_first_calls_trace_once() -> None:
    @ge.jit
    def f(x):
        return x * 2.0

    x = _f32(8)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(f(x))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    for r in results:
        np.testing.assert_array_equal(r, x * 2.0)
    assert f.cache_info().traces == 1


@pytest.mark.parametrize("cached", [False, True], ids=["first-calls", "cached"])
def test_cache_info_counts_every_call_from_several_threads(cached: bool) -> None:
    """Calls waiting while another thread traces count as hits, and no count is lost."""

    @ge.jit
    def f(x):
        return x * 2.0

    x = _f32(8)
    if cached:
        f(x)
    n_threads, calls = 8, 200
    start = threading.Barrier(n_threads)

    def work() -> None:
        start.wait()
        for _ in range(calls):
            f(x)
            f(x=x)  # by keyword: the slow path's lookup

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(previous)
    info = f.cache_info()
    total = 2 * n_threads * calls + (1 if cached else 0)
    assert (info.hits + info.misses, info.misses, info.traces, info.entries) == (total, 1, 1, 1)


# --- what a retrace says --------------------------------------------------------------------------
def test_new_shape_retraces_with_an_exact_message(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(x):
        return x + 1.0

    f(_f32(3))
    assert jit_log() == []
    np.testing.assert_array_equal(f(_f32(5)), _f32(5) + 1.0)
    assert jit_log() == [f"ge.jit: retracing {where(f)}, trace 2: x: float32[3] -> float32[5]"]
    f(_f32(3))  # both keys are cached now
    f(_f32(5))
    assert jit_log() == []
    assert f.cache_info().traces == 2


def test_message_names_the_function_file_and_decorator_line(
    jit_log: Callable[[], list[str]],
) -> None:
    @ge.jit
    def f(x):
        return x

    line = f.__wrapped__.__code__.co_firstlineno
    assert linecache.getline(__file__, line).strip() == "@ge.jit"
    name = "test_message_names_the_function_file_and_decorator_line.<locals>.f"
    assert repr(f) == f"<ge.jit {name} ({FILE}:{line})>"
    f(_f32(1))
    f(_f32(2))
    assert jit_log() == [
        f"ge.jit: retracing {name} ({FILE}:{line}), trace 2: x: float32[1] -> float32[2]"
    ]


def test_undecorated_function_names_its_def_line(jit_log: Callable[[], list[str]]) -> None:
    def g(x):
        return x

    f = ge.jit(g)
    f(_f32(1))
    f(_f32(1, 1))
    line = g.__code__.co_firstlineno
    assert linecache.getline(__file__, line).strip() == "def g(x):"
    assert jit_log() == [
        f"ge.jit: retracing {g.__qualname__} ({FILE}:{line}), trace 2: "
        "x: float32[1] -> float32[1, 1]"
    ]


def test_dtype_and_several_arguments(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(x, y, z):
        return x + y, z

    f(_f32(2), _f32(2), _f32(2, 2))
    f(_f32(2).astype(np.float64), _f32(2).astype(np.float64), _f32(2, 2))
    f(_f32(2).astype(np.float64), _f32(2).astype(np.float64), np.zeros((), np.int32))
    assert jit_log() == [
        f"ge.jit: retracing {where(f)}, trace 2: x: float32[2] -> float64[2]; "
        "y: float32[2] -> float64[2]",
        f"ge.jit: retracing {where(f)}, trace 3: z: float32[2, 2] -> int32[]",
    ]


def test_pytree_leaf_paths_in_the_message(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(params, x):
        return x @ params["layers"][0]["w"] + params["b"]

    params = {"layers": [{"w": _f32(3, 4)}], "b": _f32(4)}
    f(params, _f32(2, 3))
    params = {"layers": [{"w": _f32(3, 5)}], "b": _f32(5)}
    f(params, _f32(2, 3))
    assert jit_log() == [
        f"ge.jit: retracing {where(f)}, trace 2: params['b']: float32[4] -> float32[5]; "
        "params['layers'][0]['w']: float32[3, 4] -> float32[3, 5]"
    ]


def test_python_scalar_change(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(x, scale):
        return x * scale

    f(_f32(2), 2.0)
    f(_f32(2), 3.0)
    f(_f32(2), 3)
    assert jit_log() == [
        f"ge.jit: retracing {where(f)}, trace 2: scale: float 2.0 -> float 3.0",
        f"ge.jit: retracing {where(f)}, trace 3: scale: float 3.0 -> int 3",
    ]


def test_static_argument_change(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit(static_argnames="mode")
    def f(x, mode):
        return np.exp(x) if mode == "exp" else np.sin(x)

    x = _f32(3)
    np.testing.assert_allclose(f(x, "exp"), np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(f(x, mode="sin"), np.sin(x), rtol=1e-5, atol=1e-6)
    assert jit_log() == [f"ge.jit: retracing {where(f)}, trace 2: mode: static 'exp' -> 'sin'"]


def test_structure_change(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(x, pair):
        return x * 2.0

    x = _f32(2)
    f(x, (x, x))
    f(x, [x, x])
    f(x, {"a": x, "b": None})
    assert jit_log() == [
        f"ge.jit: retracing {where(f)}, trace 2: argument structure: "
        "x=*, pair=(*, *) -> x=*, pair=[*, *]",
        f"ge.jit: retracing {where(f)}, trace 3: argument structure: "
        "x=*, pair=[*, *] -> x=*, pair={'a': *, 'b': None}",
    ]


def test_fifth_trace_is_summarised_then_quiet_until_the_fifteenth(
    jit_log: Callable[[], list[str]],
) -> None:
    @ge.jit(static_argnums=1)
    def f(x, n):
        return x * float(n)

    f(_f32(1), 0)
    f(_f32(1), 1)  # trace 2: n
    for size in range(2, 4):  # traces 3, 4: x
        f(_f32(size), 1)
    lines = jit_log()
    assert lines == [
        f"ge.jit: retracing {where(f)}, trace 2: n: static 0 -> 1",
        f"ge.jit: retracing {where(f)}, trace 3: x: float32[1] -> float32[2]",
        f"ge.jit: retracing {where(f)}, trace 4: x: float32[2] -> float32[3]",
    ]
    f(_f32(4), 1)  # trace 5
    assert jit_log() == [
        f"ge.jit: {where(f)} has been traced 5 times; x changed in 3 of the 4 retraces. "
        + SUMMARY_TAIL
    ]
    for size in range(5, 14):  # traces 6..14
        f(_f32(size), 1)
    assert jit_log() == []
    assert f.cache_info().traces == 14
    f(_f32(14), 1)  # trace 15
    assert jit_log() == [
        f"ge.jit: {where(f)} has been traced 15 times; x changed in 13 of the 14 retraces. "
        + SUMMARY_TAIL
    ]
    f(_f32(14), 1)  # a hit says nothing
    for size in range(15, 25):  # traces 16..25
        f(_f32(size), 1)
    assert jit_log() == [
        f"ge.jit: {where(f)} has been traced 25 times; x changed in 23 of the 24 retraces. "
        + SUMMARY_TAIL
    ]


def test_summary_counts_an_argument_once_per_retrace(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(p):
        return p["a"] + p["b"]

    for size in range(1, 6):  # both leaves of p change each time
        f({"a": _f32(size), "b": _f32(size)})
    assert jit_log()[-1] == (
        f"ge.jit: {where(f)} has been traced 5 times; p changed in 4 of the 4 retraces. "
        + SUMMARY_TAIL
    )


def test_summary_counts_stay_consistent_when_traces_fail(jit_log: Callable[[], list[str]]) -> None:
    """Calls that fail while tracing (a dtype ge has no type for) are traces in both counts."""

    @ge.jit
    def f(x):
        return x + 1

    for size in range(1, 6):
        if size % 2:
            f(_f32(size))
        else:
            with pytest.raises(GeTypeError, match="has no GE DataType"):
                f(np.array(["a"] * size))
    assert jit_log()[-1] == (
        f"ge.jit: {where(f)} has been traced 5 times; x changed in 4 of the 4 retraces. "
        + SUMMARY_TAIL
    )
    assert f.cache_info().traces == 5


def test_trace_inspections_are_not_retraces(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(x):
        return x * 2.0

    for size in range(1, 5):
        f.trace(_f32(size))
    f(_f32(1))
    f(_f32(2))
    assert jit_log() == [f"ge.jit: retracing {where(f)}, trace 2: x: float32[1] -> float32[2]"]
    assert f.cache_info().traces == 6  # every trace, inspections included


def test_notices_go_to_the_ge_jit_logger_at_info(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ge.jit.logger is logging.getLogger("ge.jit")
    monkeypatch.delenv("GE_JIT_EXPLAIN", raising=False)

    @ge.jit
    def f(x):
        return x

    with caplog.at_level(logging.WARNING):  # nothing at WARNING: Jupyter paints no red
        f(_f32(1))
        f(_f32(2))
    assert caplog.records == []
    with caplog.at_level(logging.INFO, logger="ge.jit"):
        f(_f32(3))
    [record] = caplog.records
    assert (record.name, record.levelno) == ("ge.jit", logging.INFO)


@pytest.mark.parametrize("value", ["warn", " WARN "])
def test_ge_jit_explain_warn_logs_at_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("GE_JIT_EXPLAIN", value)

    @ge.jit
    def f(x):
        return x

    with caplog.at_level(logging.WARNING):
        f(_f32(1))
        f(_f32(2))
    [record] = caplog.records
    assert (record.name, record.levelno) == ("ge.jit", logging.WARNING)
    assert record.getMessage().startswith("ge.jit: retracing")


def test_ge_jit_explain_with_a_bad_value_says_what_it_takes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("GE_JIT_EXPLAIN", "loud")

    @ge.jit
    def f(x):
        return x

    f(_f32(1))  # a first trace explains nothing
    with caplog.at_level(logging.INFO, logger="ge.jit"):
        assert f(_f32(2)).shape == (2,)  # the call still runs
    texts = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert any("GE_JIT_EXPLAIN must be info or warn" in t and "'loud'" in t for _, t in texts)
    assert any(level == logging.WARNING and "retracing" in t for level, t in texts)


# --- clear_cache ----------------------------------------------------------------------------------
def test_clear_cache_empties_and_the_next_call_traces_again() -> None:
    @ge.jit
    def f(x):
        return x - 1.0

    f(_f32(2))
    f(_f32(3))
    assert f.cache_info().entries == 2
    f.clear_cache()
    assert f.cache_info().entries == 0
    np.testing.assert_array_equal(f(_f32(2)), _f32(2) - 1.0)  # the fast path was cleared too
    info = f.cache_info()
    assert (info.traces, info.entries) == (3, 1)
    f(_f32(2))
    assert f.cache_info().traces == 3


# --- static arguments -----------------------------------------------------------------------------
def test_static_argnums_values_reach_the_function_as_python_values() -> None:
    @ge.jit(static_argnums=(1,))
    def f(x, n):
        assert isinstance(n, int)
        for _ in range(n):  # Python control flow on a static value is fine
            x = x * 2.0
        return x

    x = _f32(3)
    np.testing.assert_array_equal(f(x, 3), x * 8.0)
    np.testing.assert_array_equal(f(x, n=3), x * 8.0)  # by keyword: the same key
    np.testing.assert_array_equal(f(x, 1), x * 2.0)
    assert f.cache_info().traces == 2


def test_negative_static_argnums() -> None:
    @ge.jit(static_argnums=-1)
    def f(x, y, axis):
        return np.sum(x * y, axis=axis)

    x = _f32(2, 3)
    np.testing.assert_array_equal(f(x, x, 0), np.sum(x * x, axis=0))
    np.testing.assert_array_equal(f(x, x, 1), np.sum(x * x, axis=1))
    np.testing.assert_array_equal(f(x, x, axis=1), np.sum(x * x, axis=1))
    assert f.cache_info().traces == 2


def test_static_argnames_passed_positionally_and_keyword_only() -> None:
    @ge.jit(static_argnames=("axis", "keep"))
    def f(x, axis, *, keep=False):
        return x.sum(axis=axis, keepdims=keep)

    x = _f32(2, 3)
    np.testing.assert_array_equal(f(x, 1), x.sum(axis=1))
    np.testing.assert_array_equal(f(x, axis=1), x.sum(axis=1))
    np.testing.assert_array_equal(f(x, 0, keep=True), x.sum(axis=0, keepdims=True))
    assert f.cache_info().traces == 2


@pytest.mark.parametrize(
    ("kwargs", "call"),
    [
        ({"static_argnums": 1}, lambda f, x: f(x, [1, 2])),
        ({"static_argnums": -1}, lambda f, x: f(x, {"a": 1})),
        ({"static_argnames": "n"}, lambda f, x: f(x, n=np.ones(2))),
    ],
    ids=["list", "dict-negative-index", "array-by-name"],
)
def test_unhashable_static_argument_names_it(kwargs: dict[str, Any], call: Any) -> None:
    def f(x, n):
        return x

    jitted = ge.jit(**kwargs)(f)
    with pytest.raises(GeTypeError, match=r"static argument n of \S*f must be hashable"):
        call(jitted, _f32(2))


def test_bad_static_specs() -> None:
    def f(x, n):
        return x

    with pytest.raises(GeValueError, match=r"static_argnums 2 is out of range for \S*\.f\(x, n\)"):
        ge.jit(f, static_argnums=2)
    with pytest.raises(GeValueError, match=r"static_argnums -3 is out of range"):
        ge.jit(f, static_argnums=-3)
    with pytest.raises(GeTypeError, match="static_argnums must be an int"):
        ge.jit(f, static_argnums="n")
    with pytest.raises(GeTypeError, match="static_argnames must be a str"):
        ge.jit(f, static_argnames=[1])
    with pytest.raises(GeTypeError, match=r"ge\.jit needs a function, got int"):
        ge.jit(3)


# --- methods --------------------------------------------------------------------------------------
class Scaler:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    @ge.jit
    def apply(self, x):
        return x * self.scale + 1.0


def test_methods_use_self_as_a_static_argument() -> None:
    x = _f32(3)
    two, three = Scaler(2.0), Scaler(3.0)
    np.testing.assert_array_equal(two.apply(x), x * 2.0 + 1.0)
    np.testing.assert_array_equal(three.apply(x), x * 3.0 + 1.0)
    np.testing.assert_array_equal(two.apply(x), x * 2.0 + 1.0)
    np.testing.assert_array_equal(Scaler.apply(three, x), x * 3.0 + 1.0)
    assert Scaler.apply.cache_info().traces == 2
    graph = two.apply.trace(x)
    assert isinstance(graph, Graph)
    assert [n.type for n in graph.get_direct_nodes()].count("Data") == 1  # self is not an input
    assert "plan:" in two.apply.lower(x).as_text()


def test_method_sees_a_changed_attribute(jit_log: Callable[[], list[str]]) -> None:
    class Affine:  # its own class: a fresh jit cache
        def __init__(self, scale: float) -> None:
            self.scale = scale

        @ge.jit
        def apply(self, x):
            return x * self.scale + 1.0

    x = _f32(3)
    s = Affine(2.0)
    s.apply(x)
    s.scale = 5.0
    np.testing.assert_array_equal(s.apply(x), x * 5.0 + 1.0)  # retraced, not stale
    assert jit_log()[-1].endswith("trace 2: self: attributes scale changed")
    s.apply(x)
    assert Affine.apply.cache_info() == (1, 2, 2, 2)


# --- inspection -----------------------------------------------------------------------------------
def test_trace_returns_the_graph_without_caching_it() -> None:
    @ge.jit
    def f(x, w):
        return np.maximum(x @ w, 0.0).sum(axis=1)

    x, w = _f32(2, 3), _f32(3, 4)
    graph = f.trace(x, w)
    assert isinstance(graph, Graph)
    types = [n.type for n in graph.get_direct_nodes()]
    assert types.count("Data") == 2
    assert {"MatMulV2", "Maximum", "ReduceSum", "NetOutput"} <= set(types)
    assert f.cache_info().entries == 0


def test_lower_shows_the_plan_and_caches_the_entry() -> None:
    @ge.jit
    def f(x):
        return np.exp(np.sin(x)) * 2.0

    x = _f32(4, 8)
    lowered = f.lower(x)
    text = lowered.as_text()
    assert "plan:" in text and "launch" in text
    assert isinstance(lowered.graph, Graph) and isinstance(lowered.traced, Graph)
    traces = f.cache_info().traces
    np.testing.assert_allclose(f(x), np.exp(np.sin(x)) * 2.0, rtol=1e-5)
    assert f.cache_info().traces == traces  # lower() compiled what the call runs


def test_a_new_batch_size_compiles_no_new_kernel() -> None:
    @ge.jit
    def f(x, w):
        h = np.tanh(x @ w)
        e = np.exp(h - h.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        h = np.tanh(x @ w)
        e = np.exp(h - h.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 5)).astype(np.float32)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(f(x, w), reference(x, w), rtol=1e-5, atol=1e-6)
    before = compiled_kernel_count()
    for batch in (1, 16, 33):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        np.testing.assert_allclose(f(x, w), reference(x, w), rtol=1e-5, atol=1e-6)
    assert compiled_kernel_count() == before
    assert f.cache_info().traces == 4


def test_traced_graph_shows_itself_in_jupyter() -> None:
    @ge.jit
    def f(x):
        return np.exp(x) + 1.0

    graph = f.trace(_f32(3))
    bundle = graph._repr_mimebundle_()  # a drawing with Graphviz, the HTML listing without
    assert len(bundle) == 1
    if "text/html" in bundle:
        assert "Exp" in bundle["text/html"] and "Add" in bundle["text/html"]
    else:
        assert "<svg" in bundle["image/svg+xml"]


def test_a_retrace_after_clear_cache_says_so(jit_log: Callable[[], list[str]]) -> None:
    @ge.jit
    def f(x):
        return x * 2.0

    f(_f32(2))
    f.clear_cache()
    f(_f32(2))
    assert jit_log() == [
        f"ge.jit: retracing {where(f)}, trace 2: (same signature: the cache was cleared)"
    ]


def test_bound_methods_report_and_clear_their_cache() -> None:
    two = Scaler(2.0)
    two.apply(_f32(3))
    assert two.apply.cache_info() == Scaler.apply.cache_info()
    two.apply.clear_cache()
    assert Scaler.apply.cache_info().entries == 0
