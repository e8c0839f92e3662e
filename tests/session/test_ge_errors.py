"""GE_ERRORS.md §4 (``ge.session.Session``), §5 (``ge.ge_global.GeApi``), §7 (``ge.allocator``)
and §13.1-13.3 where they concern these, row by row: the condition → GE-PY's exception type and
its text, which must START the message (ours may add the actual type, the entry, what to do
after it); rows named ``order:`` set two conditions at once and expect the check GE runs first.
"""

from __future__ import annotations

import copy
import gc
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from ge import runtime
from ge.allocator import Allocator, MemBlock
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.ge_global.geapi import is_initialized
from ge.graph import Graph, Tensor
from ge.runtime import Stream
from ge.session import Session
from tests._python_errors import assert_like_python_attribute_error

CONFIG = {"ge.exec.deviceId": "0"}


class _Allocator(Allocator):
    def malloc(self, size: int) -> MemBlock:
        return runtime.malloc(size)

    def free(self, block: MemBlock) -> None:
        runtime.free(block)


def _graph() -> Graph:
    b = GraphBuilder("ge_errors")
    x = b.create_input(0, name="x", shape=[4])
    return b.build_and_reset([x + 1.0])


def _tensor() -> Tensor:
    return Tensor.from_numpy(np.ones(4, np.float32))


def _dead_handle() -> int:
    stream = Stream()
    handle = stream.handle
    del stream
    gc.collect()
    return handle


@dataclass
class Ctx:
    """What a row's call works on: a session with graph 1 added (unless GE is not
    initialised), a live stream, a handle that names no live stream."""

    session: Session
    graph: Graph
    stream: Stream
    dead: int


@dataclass(frozen=True)
class Row:
    name: str
    call: Callable[[Ctx], Any]
    error: type[BaseException]
    pattern: str  # a regex matched at the START of str(error)
    initialized: bool = True


def _add_twice(c: Ctx) -> None:
    c.session.add_graph(1, c.graph)


def _unregister_dead(c: Ctx) -> None:
    c.session.register_external_allocator(c.stream, _Allocator())
    c.session.unregister_external_allocator(c.stream)
    c.session.unregister_external_allocator(c.stream)


def _run_on_a_stream_gone_with_its_allocator(c: Ctx) -> None:
    """An external allocator is registered, so GE registers no default one: the dead
    stream fails as the run itself."""
    stream = Stream()
    handle = stream.handle
    c.session.register_external_allocator(stream, _Allocator())
    del stream
    gc.collect()
    c.session.run_graph_with_stream_async(1, handle, [_tensor()])


SESSION_ROWS = [
    # --- Session(options) ----------------------------------------------------------------
    *(
        Row(
            f"Session({bad!r})",
            lambda c, b=bad: Session(b),
            TypeError,
            "option must be a dictionary",
        )
        for bad in ("a=b", [("a", "b")], 0, ("a", "b"))
    ),
    Row(
        "Session: a value not str",
        lambda c: Session({"ge.graphRunMode": 0}),
        AttributeError,
        "'int' object has no attribute 'encode'",
    ),
    Row(
        "Session: a key not str",
        lambda c: Session({b"k": "v"}),
        AttributeError,
        "'bytes' object has no attribute 'encode'",
    ),
    Row(
        "order: Session: the key is encoded before its value",
        lambda c: Session({1: None}),
        AttributeError,
        "'int' object has no attribute 'encode'",
    ),
    Row(
        "copy.copy", lambda c: copy.copy(c.session), RuntimeError, "Session does not support copy$"
    ),
    Row(
        "copy.deepcopy",
        lambda c: copy.deepcopy(c.session),
        RuntimeError,
        "Session does not support deepcopy$",
    ),
    # --- add_graph -------------------------------------------------------------------------
    *(
        Row(
            f"add_graph graph_id={bad!r}",
            lambda c, b=bad: c.session.add_graph(b, c.graph),
            TypeError,
            "Graph_id must be an integer",
        )
        for bad in ("1", 1.0, None, np.int32(1))
    ),
    Row(
        "add_graph graph not a Graph",
        lambda c: c.session.add_graph(2, "g"),
        TypeError,
        "Add_graph must be a Graph",
    ),
    Row(
        "add_graph options not a dict",
        lambda c: c.session.add_graph(2, c.graph, "opts"),
        TypeError,
        "options must be a dictionary",
    ),
    Row(
        "add_graph options: a value not str",
        lambda c: c.session.add_graph(2, c.graph, {"k": 1}),
        AttributeError,
        "'int' object has no attribute 'encode'",
    ),
    Row(
        "order: add_graph graph_id before graph",
        lambda c: c.session.add_graph("1", "g", "o"),
        TypeError,
        "Graph_id must be an integer",
    ),
    Row(
        "order: add_graph graph before options",
        lambda c: c.session.add_graph(1, "g", "o"),
        TypeError,
        "Add_graph must be a Graph",
    ),
    Row(
        "order: add_graph types before the init check",
        lambda c: c.session.add_graph(7, c.graph, "o"),
        TypeError,
        "options must be a dictionary",
        initialized=False,
    ),
    Row(
        "add_graph before GEInitialize (E10062)",
        lambda c: c.session.add_graph(7, c.graph),
        GeError,
        r"AddGraph failed; graph_id=7; E10062: Failed to call AddGraph\. Reason: GE is not "
        r"correctly initialized\. Ensure that the GEInitialize API has been correctly executed "
        r"before adding a graph\.",
        initialized=False,
    ),
    Row("add_graph a duplicate id", _add_twice, GeError, "AddGraph failed; graph_id=1; "),
    Row(
        "add_graph an invalid option",
        lambda c: c.session.add_graph(2, c.graph, {"ge.graphRunMode": "9"}),
        GeError,
        "AddGraph failed; graph_id=2; option 'ge.graphRunMode'",
    ),
    Row(
        "add_graph an invalid session option",
        lambda c: Session({"ge.oo.level": "O9"}).add_graph(2, c.graph),
        GeError,
        "AddGraph failed; graph_id=2; session option 'ge.oo.level'",
    ),
    # --- remove_graph ----------------------------------------------------------------------
    Row(
        "remove_graph graph_id not an int",
        lambda c: c.session.remove_graph("1"),
        TypeError,
        "Graph_id must be an integer",
    ),
    Row(
        "remove_graph an unknown id",
        lambda c: c.session.remove_graph(5),
        GeError,
        "RemoveGraph failed; graph_id=5; ",
    ),
    Row(
        "remove_graph before GEInitialize",
        lambda c: c.session.remove_graph(5),
        GeError,
        "RemoveGraph failed; graph_id=5; E10062: .*GE is not correctly initialized",
        initialized=False,
    ),
    # --- run_graph -------------------------------------------------------------------------
    Row(
        "run_graph graph_id not an int",
        lambda c: c.session.run_graph(1.0, [_tensor()]),
        TypeError,
        "Graph_id must be an integer",
    ),
    *(
        Row(
            f"run_graph inputs={type(bad).__name__}",
            lambda c, b=bad: c.session.run_graph(1, b),
            TypeError,
            "inputs must be a list of Tensor",
        )
        for bad in ((), None, _tensor())
    ),
    Row(
        "run_graph an element not a Tensor",
        lambda c: c.session.run_graph(1, [np.ones(4, np.float32)]),
        TypeError,
        "All elements in inputs must be the type of Tensor",
    ),
    Row(
        "order: run_graph graph_id before inputs",
        lambda c: c.session.run_graph("1", None),
        TypeError,
        "Graph_id must be an integer",
    ),
    Row(
        "order: run_graph types before the init check",
        lambda c: c.session.run_graph(1, [None]),
        TypeError,
        "All elements in inputs must be the type of Tensor",
        initialized=False,
    ),
    Row(
        "run_graph an unknown id",
        lambda c: c.session.run_graph(42, []),
        GeError,
        "RunGraph failed; graph_id=42; ",
    ),
    Row(
        "run_graph before GEInitialize",
        lambda c: c.session.run_graph(42, []),
        GeError,
        "RunGraph failed; graph_id=42; E10062: .*GE is not correctly initialized",
        initialized=False,
    ),
    # --- run_graph_with_stream_async ---------------------------------------------------------
    Row(
        "async graph_id not an int",
        lambda c: c.session.run_graph_with_stream_async("1", c.stream, [_tensor()]),
        TypeError,
        "Graph_id must be an integer",
    ),
    *(
        Row(
            f"async stream={bad!r}",
            lambda c, b=bad: c.session.run_graph_with_stream_async(1, b, [_tensor()]),
            TypeError,
            "Stream must be an integer",
        )
        for bad in ("0", 0.0, None, np.int64(0))
    ),
    Row(
        "async inputs not a list",
        lambda c: c.session.run_graph_with_stream_async(1, c.stream, (_tensor(),)),
        TypeError,
        "inputs must be a list of Tensor",
    ),
    Row(
        "async an element not a Tensor",
        lambda c: c.session.run_graph_with_stream_async(1, c.stream, [1]),
        TypeError,
        "All elements in inputs must be the type of Tensor",
    ),
    Row(
        "order: async graph_id before stream",
        lambda c: c.session.run_graph_with_stream_async(None, None, None),
        TypeError,
        "Graph_id must be an integer",
    ),
    Row(
        "order: async stream type before inputs",
        lambda c: c.session.run_graph_with_stream_async(1, None, None),
        TypeError,
        "Stream must be an integer",
    ),
    Row(
        "order: async inputs' types before the stream (0)",
        lambda c: c.session.run_graph_with_stream_async(1, 0, [None]),
        TypeError,
        "All elements in inputs must be the type of Tensor",
    ),
    Row(
        "async stream 0: RegisterDefaultAllocator",
        lambda c: c.session.run_graph_with_stream_async(1, 0, [_tensor()]),
        GeError,
        "RegisterDefaultAllocator failed; stream=0x0; ",
    ),
    Row(
        "order: async default-allocator registration before GE's init check",
        lambda c: c.session.run_graph_with_stream_async(42, c.dead, []),
        GeError,
        "RegisterDefaultAllocator failed; stream=0x[0-9a-f]+; ",
        initialized=False,
    ),
    Row(
        "order: async default-allocator registration before the graph lookup",
        lambda c: c.session.run_graph_with_stream_async(42, c.dead, []),
        GeError,
        "RegisterDefaultAllocator failed; stream=0x[0-9a-f]+; ",
    ),
    Row(
        "async an unknown id",
        lambda c: c.session.run_graph_with_stream_async(42, c.stream, []),
        GeError,
        "RunGraphWithStreamAsync failed; graph_id=42, stream=0x[0-9a-f]+; ",
    ),
    Row(
        "async before GEInitialize",
        lambda c: c.session.run_graph_with_stream_async(42, c.stream, []),
        GeError,
        "RunGraphWithStreamAsync failed; graph_id=42, stream=0x[0-9a-f]+; E10062: ",
        initialized=False,
    ),
    Row(
        "async a dead stream that has an external allocator",
        _run_on_a_stream_gone_with_its_allocator,
        GeError,
        "RunGraphWithStreamAsync failed; graph_id=1, stream=0x[0-9a-f]+; ",
    ),
    # --- external allocators ---------------------------------------------------------------
    Row(
        "register stream not an int",
        lambda c: c.session.register_external_allocator("0", _Allocator()),
        TypeError,
        "stream must be an integer",
    ),
    *(
        Row(
            f"register allocator={getattr(bad, '__name__', bad)}",  # stable ids (no addresses)
            lambda c, b=bad: c.session.register_external_allocator(c.stream, b),
            TypeError,
            "allocator must be an Allocator instance",
        )
        for bad in (None, _Allocator, runtime.malloc)
    ),
    Row(
        "order: register stream type before allocator",
        lambda c: c.session.register_external_allocator(None, None),
        TypeError,
        "stream must be an integer",
    ),
    Row(
        "order: register allocator type before the stream (0)",
        lambda c: c.session.register_external_allocator(0, None),
        TypeError,
        "allocator must be an Allocator instance",
    ),
    Row(
        "register stream 0",
        lambda c: c.session.register_external_allocator(0, _Allocator()),
        GeError,
        "RegisterExternalAllocator failed; stream=0x0; ",
    ),
    Row(
        "register a negative stream prints 0x-<hex>",
        lambda c: c.session.register_external_allocator(-31, _Allocator()),
        GeError,
        "RegisterExternalAllocator failed; stream=0x-1f; ",
    ),
    Row(
        "unregister stream not an int",
        lambda c: c.session.unregister_external_allocator([1]),
        TypeError,
        "stream must be an integer",
    ),
    Row(
        "unregister with none registered",
        _unregister_dead,
        GeError,
        "UnregisterExternalAllocator failed; stream=0x[0-9a-f]+; ",
    ),
]

GEAPI_ROWS = [
    *(
        Row(
            f"ge_initialize({bad!r})",
            lambda c, b=bad: GeApi.ge_initialize(b),
            TypeError,
            "Ge init config must be a dictionary",
        )
        for bad in (None, [("a", "b")], "a=b", ("a", "b"), [])
    ),
    Row(
        "ge_initialize a value not str",
        lambda c: GeApi.ge_initialize({"ge.exec.deviceId": 0}),
        AttributeError,
        "'int' object has no attribute 'encode'",
    ),
    Row(
        "ge_initialize a key not str",
        lambda c: GeApi().ge_initialize({None: "0"}),
        AttributeError,
        "'NoneType' object has no attribute 'encode'",
    ),
    Row(
        "ge_initialize({})",
        lambda c: GeApi.ge_initialize({}),
        TypeError,
        "Ge init config must not be empty$",
    ),
    Row(
        "ge_initialize GE refuses (a bad known option)",
        lambda c: GeApi.ge_initialize({"ge.graphRunMode": "train"}),
        GeError,
        "GEInitialize failed; option 'ge.graphRunMode'",
    ),
]


class _OnlyFree(Allocator):
    def free(self, block: MemBlock) -> None:
        pass


class _OnlyMalloc(Allocator):
    def malloc(self, size: int) -> MemBlock:
        return MemBlock(0, size)


class _Super(Allocator):
    def malloc(self, size: int) -> MemBlock:
        return super().malloc(size)  # type: ignore[safe-super]

    def free(self, block: MemBlock) -> None:
        super().free(block)  # type: ignore[safe-super]


ALLOCATOR_ROWS = [
    Row(
        "Allocator()",
        lambda c: Allocator(),  # type: ignore[abstract]
        TypeError,
        "Can't instantiate abstract class Allocator",
    ),
    Row(
        "a subclass without malloc",
        lambda c: _OnlyFree(),  # type: ignore[abstract]
        TypeError,
        "Can't instantiate abstract class _OnlyFree",
    ),
    Row(
        "a subclass without free",
        lambda c: _OnlyMalloc(),  # type: ignore[abstract]
        TypeError,
        "Can't instantiate abstract class _OnlyMalloc",
    ),
    Row("super().malloc", lambda c: _Super().malloc(8), NotImplementedError, "$"),
    Row("super().free", lambda c: _Super().free(MemBlock(0, 8)), NotImplementedError, "$"),
]


@pytest.fixture
def ctx(request: pytest.FixtureRequest) -> Iterator[Ctx]:
    row: Row = request.param
    GeApi.ge_initialize(CONFIG)
    session = Session(CONFIG)
    graph = _graph()
    session.add_graph(1, graph)
    if not row.initialized:
        GeApi.ge_finalize()
    yield Ctx(session, graph, Stream(), _dead_handle())
    GeApi.ge_finalize()


ROWS = SESSION_ROWS + GEAPI_ROWS + ALLOCATOR_ROWS


@pytest.mark.parametrize("ctx", ROWS, ids=[r.name for r in ROWS], indirect=True)
def test_row(ctx: Ctx, request: pytest.FixtureRequest) -> None:
    row: Row = request.node.callspec.params["ctx"]
    with pytest.raises(row.error) as info:
        row.call(ctx)
    assert re.match(row.pattern, str(info.value)), str(info.value)
    if row.error is AttributeError:
        assert_like_python_attribute_error(info.value)
    if isinstance(info.value, GeError) and row.error is not GeError:
        return  # a GeTypeError etc.: the builtin GE documents is what the row checks
    if row.error is GeError:
        assert isinstance(info.value, RuntimeError)
        assert info.value.api_name == row.pattern.split(" failed")[0]


def test_every_session_failure_carries_ge_context() -> None:
    GeApi.ge_finalize()
    session = Session()
    with pytest.raises(GeError) as info:
        session.add_graph(3, _graph())
    assert info.value.api_name == "AddGraph"
    assert info.value.context == {"graph_id": 3}
    assert "GE is not correctly initialized" in info.value.error_message
    GeApi.ge_initialize(CONFIG)
    try:
        stream = Stream()
        with pytest.raises(GeError) as info:
            session.run_graph_with_stream_async(9, stream, [])
        assert info.value.context == {"graph_id": 9, "stream": f"0x{stream.handle:x}"}
        with pytest.raises(GeError) as info:
            session.register_external_allocator(0, _Allocator())
        assert info.value.context == {"stream": "0x0"}
    finally:
        GeApi.ge_finalize()


# --- what GE accepts (GE_ERRORS.md §4 notes, §13.2) ---------------------------------------------
def test_session_needs_no_initialisation_and_accepts_any_option_value() -> None:
    GeApi.ge_finalize()
    Session()
    Session(None)
    Session({"ge.graphRunMode": "not checked here", "unknown": ""})
    assert GeApi.ge_finalize() == 0  # without ge_initialize too
    assert not is_initialized()


def test_graph_ids_are_uint32_and_bools_are_ints() -> None:
    GeApi.ge_initialize(CONFIG)
    try:
        session = Session()
        assert session.add_graph(-1, _graph()) == 0  # c_uint32(-1): graph 2**32 - 1
        (out,) = session.run_graph(2**32 - 1, [_tensor()])
        np.testing.assert_array_equal(out.numpy(), 2.0)
        with pytest.raises(GeError, match=r"^AddGraph failed; graph_id=4294967295; "):
            session.add_graph(2**32 - 1, _graph())
        assert session.remove_graph(-1) is None
        assert session.add_graph(True, _graph()) == 0  # a bool passes GE-PY's int check
        (out,) = session.run_graph(1, [_tensor()])
        np.testing.assert_array_equal(out.numpy(), 2.0)
        with pytest.raises(GeError, match=r"^RemoveGraph failed; graph_id=-5; "):
            session.remove_graph(-5)
    finally:
        GeApi.ge_finalize()


def test_memblock_validates_nothing() -> None:
    for addr, size in ((-1, -1), ("x", None), (1.5, [1]), (True, False)):
        block = MemBlock(addr, size)  # type: ignore[arg-type]
        assert (block.addr, block.size) == (addr, size)


def test_a_block_an_allocator_serves_is_checked_where_it_is_used() -> None:
    class Bad(_Allocator):
        def malloc(self, size: int) -> MemBlock:
            return MemBlock("0x1000", size)  # type: ignore[arg-type]

    GeApi.ge_initialize(CONFIG)
    try:
        session, stream = Session(), Stream()
        session.add_graph(1, _graph())
        session.register_external_allocator(stream, Bad())
        with pytest.raises(GeError, match=r"Bad\.malloc\(\d+\) returned .*addr must be an integer"):
            session.run_graph_with_stream_async(1, stream, [_tensor()])
        stream.synchronize()
    finally:
        GeApi.ge_finalize()
