"""``ge.runtime`` streams and events: ordered asynchronous queues, failure reporting at
``synchronize``, handles, and cross-stream ordering with events.

Nothing here asserts on elapsed time. Orderings are forced with ``threading.Event`` gates; the
few ``wait(timeout)`` calls are deadlock guards (a correct runtime never gets near them) or give
a broken implementation the chance to misbehave before its result is checked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from ge import runtime
from ge.error import GeError
from ge.runtime import Event, Stream, resolve_stream

GUARD_S = 30.0  # deadlock guard: only reached when the runtime is broken
HANG_S = 5.0  # shorter guard where a hang is the bug under test (the correct run takes ms)
SETTLE_S = 0.2  # chance for a broken implementation to run something too early


@pytest.fixture
def streams() -> Iterator[Callable[[], Stream]]:
    """A factory of streams that are closed after the test."""
    made: list[Stream] = []

    def make() -> Stream:
        s = Stream()
        made.append(s)
        return s

    yield make
    for s in made:
        try:
            s.close()
        except GeError:
            s.close()  # a pending failure is reported once; the second close shuts it down


def _sync_in_thread(
    fn: Callable[[], None], guard: float = GUARD_S
) -> tuple[bool, BaseException | None]:
    """Run ``fn`` on a helper thread; (finished, exception) after at most ``guard`` seconds."""
    box: list[BaseException | None] = [None]

    def target() -> None:
        try:
            fn()
        except BaseException as e:
            box[0] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(guard)
    return not t.is_alive(), box[0]


# --- ordering and asynchrony --------------------------------------------------------------------
def test_work_runs_in_submission_order(streams: Callable[[], Stream]) -> None:
    s = streams()
    out: list[int] = []
    for i in range(2000):
        s.submit(lambda i=i: out.append(i))
    s.synchronize()
    assert out == list(range(2000))


def test_work_runs_on_another_thread(streams: Callable[[], Stream]) -> None:
    s = streams()
    idents: list[int] = []
    s.submit(lambda: idents.append(threading.get_ident()))
    s.submit(lambda: idents.append(threading.get_ident()))
    s.synchronize()
    assert len(idents) == 2
    assert idents[0] != threading.get_ident()
    assert idents[0] == idents[1]  # one worker: the order is the stream's


def test_submit_returns_before_slow_work_finishes(streams: Callable[[], Stream]) -> None:
    s = streams()
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(GUARD_S)
        finished.set()

    s.submit(slow)
    # we got here while slow() cannot finish until we let it
    assert started.wait(GUARD_S)
    assert not finished.is_set()
    assert s.query() is False
    more: list[int] = []
    s.submit(lambda: more.append(1))  # queuing behind running work does not block either
    assert not finished.is_set()
    assert more == []
    release.set()
    s.synchronize()
    assert finished.is_set()
    assert more == [1]
    assert s.query() is True


def test_synchronize_waits_for_all_submitted_work(streams: Callable[[], Stream]) -> None:
    s = streams()
    gate = threading.Event()
    done: list[int] = []
    s.submit(lambda: gate.wait(GUARD_S))
    for i in range(5):
        s.submit(lambda i=i: done.append(i))
    threading.Timer(0.05, gate.set).start()
    s.synchronize()
    assert done == [0, 1, 2, 3, 4]


def test_query_on_new_idle_and_busy_streams(streams: Callable[[], Stream]) -> None:
    s = streams()
    assert s.query() is True  # nothing submitted
    s.synchronize()  # and synchronize on an unused stream returns
    gate = threading.Event()
    s.submit(lambda: gate.wait(GUARD_S))
    assert s.query() is False
    gate.set()
    s.synchronize()
    assert s.query() is True


def test_two_streams_run_concurrently(streams: Callable[[], Stream]) -> None:
    s1, s2 = streams(), streams()
    a, b = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def on_s1() -> None:
        a.set()
        seen["s1"] = b.wait(GUARD_S)

    def on_s2() -> None:
        b.set()
        seen["s2"] = a.wait(GUARD_S)

    s1.submit(on_s1)
    s2.submit(on_s2)
    s1.synchronize()
    s2.synchronize()
    assert seen == {"s1": True, "s2": True}


def test_submit_rejects_a_non_callable(streams: Callable[[], Stream]) -> None:
    s = streams()
    for bad in (None, 1, "task"):
        with pytest.raises(TypeError):
            s.submit(bad)  # type: ignore[arg-type]
    assert s.query() is True
    s.synchronize()


# --- failures -----------------------------------------------------------------------------------
def test_failure_is_reraised_at_synchronize_naming_the_task(streams: Callable[[], Stream]) -> None:
    s = streams()
    ran: list[str] = []

    def bad() -> None:
        ran.append("bad")
        raise ValueError("the bad thing")

    s.submit(lambda: ran.append("before"))
    s.submit(bad, name="my-failing-task")
    s.submit(lambda: ran.append("after-1"))
    s.submit(lambda: ran.append("after-2"))
    with pytest.raises(GeError) as info:
        s.synchronize()
    message = str(info.value)
    assert "my-failing-task" in message
    assert "the bad thing" in message
    assert "ValueError" in message
    assert isinstance(info.value.__cause__, ValueError)
    # work queued behind the failure was skipped
    assert ran == ["before", "bad"]
    # the failure is reported once, and the stream works normally afterwards
    s.synchronize()
    s.submit(lambda: ran.append("later"))
    s.synchronize()
    assert ran == ["before", "bad", "later"]
    assert s.query() is True


def test_task_name_defaults_to_the_function_name(streams: Callable[[], Stream]) -> None:
    s = streams()

    def exploding_task() -> None:
        raise KeyError("k")

    s.submit(exploding_task)
    with pytest.raises(GeError, match="exploding_task"):
        s.synchronize()


def test_a_ge_error_in_a_task_is_wrapped_with_the_task_name(streams: Callable[[], Stream]) -> None:
    s = streams()

    def raise_ge() -> None:
        raise GeError("inner detail")

    s.submit(raise_ge, name="ge-task")
    with pytest.raises(GeError) as info:
        s.synchronize()
    assert "ge-task" in str(info.value)
    assert "inner detail" in str(info.value)
    assert isinstance(info.value.__cause__, GeError)


def test_work_queued_after_a_failure_is_skipped_even_if_submitted_later(
    streams: Callable[[], Stream],
) -> None:
    s = streams()
    failed = threading.Event()

    def bad() -> None:
        failed.set()
        raise RuntimeError("x")

    s.submit(bad)
    assert failed.wait(GUARD_S)
    ran: list[int] = []
    s.submit(lambda: ran.append(1))  # submitted after the failure happened, before it was seen
    with pytest.raises(GeError):
        s.synchronize()
    assert ran == []


def test_only_the_first_failure_is_reported(streams: Callable[[], Stream]) -> None:
    s = streams()

    def first() -> None:
        raise RuntimeError("first")

    def second() -> None:
        raise RuntimeError("second")

    s.submit(first)
    s.submit(second)
    with pytest.raises(GeError, match="first") as info:
        s.synchronize()
    assert "second" not in str(info.value)
    s.synchronize()


def test_synchronize_from_inside_the_stream_raises(streams: Callable[[], Stream]) -> None:
    s = streams()
    caught: list[BaseException] = []

    def task() -> None:
        try:
            s.synchronize()
        except BaseException as e:
            caught.append(e)

    s.submit(task)
    finished, error = _sync_in_thread(s.synchronize)
    assert finished, "synchronize() from the stream's own work deadlocked"
    assert error is None
    assert len(caught) == 1
    assert isinstance(caught[0], GeError)
    assert "synchronize" in str(caught[0])


def test_an_uncaught_self_synchronize_fails_the_task(streams: Callable[[], Stream]) -> None:
    s = streams()
    s.submit(s.synchronize, name="self-sync")
    finished, error = _sync_in_thread(s.synchronize)
    assert finished
    assert isinstance(error, GeError)
    assert "self-sync" in str(error)


def test_a_task_may_synchronize_another_stream(streams: Callable[[], Stream]) -> None:
    s1, s2 = streams(), streams()
    out: list[str] = []
    gate = threading.Event()
    s2.submit(lambda: gate.wait(GUARD_S))
    s2.submit(lambda: out.append("s2"))

    def wait_for_s2() -> None:
        gate.set()
        s2.synchronize()
        out.append("s1")

    s1.submit(wait_for_s2)
    s1.synchronize()
    assert out == ["s2", "s1"]


# --- handles ------------------------------------------------------------------------------------
def test_handles_resolve_to_their_streams(streams: Callable[[], Stream]) -> None:
    s1, s2 = streams(), streams()
    assert isinstance(s1.handle, int)
    assert s1.handle != s2.handle
    assert resolve_stream(s1) is s1
    assert resolve_stream(s1.handle) is s1
    assert resolve_stream(s2.handle) is s2
    assert runtime.resolve_stream is resolve_stream
    assert str(s1.handle) in repr(s1)


@pytest.mark.parametrize("bad", [0, -1, 10**12])
def test_resolve_stream_with_an_unknown_handle_raises(bad: int) -> None:
    with pytest.raises(GeError, match=str(bad)):
        resolve_stream(bad)


@pytest.mark.parametrize("bad", [None, "1", 1.0, True, [1], object()])
def test_resolve_stream_with_a_wrong_type_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="stream"):
        resolve_stream(bad)  # type: ignore[arg-type]


# --- close --------------------------------------------------------------------------------------
def test_close_finishes_queued_work_and_refuses_more() -> None:
    s = Stream()
    gate = threading.Event()
    out: list[int] = []
    s.submit(lambda: gate.wait(GUARD_S))
    s.submit(lambda: out.append(1))
    names_before = {t.name for t in threading.enumerate()}
    worker = f"ge-stream-{s.handle}"
    assert worker in names_before
    threading.Timer(0.05, gate.set).start()
    s.close()
    assert out == [1]
    assert worker not in {t.name for t in threading.enumerate()}
    with pytest.raises(GeError, match="closed"):
        s.submit(lambda: None)
    s.close()  # closing twice is harmless
    s.synchronize()


def test_close_of_an_unused_stream() -> None:
    s = Stream()
    s.close()
    with pytest.raises(GeError):
        s.submit(lambda: None)


# --- events -------------------------------------------------------------------------------------
def test_event_wait_orders_work_across_streams(streams: Callable[[], Stream]) -> None:
    s1, s2 = streams(), streams()
    gate_a = threading.Event()
    at_wait = threading.Event()
    b_ran = threading.Event()
    log: list[str] = []

    def a() -> None:
        gate_a.wait(GUARD_S)
        log.append("A")

    def b() -> None:
        log.append("B")
        b_ran.set()

    s1.submit(a)
    ev = Event()
    ev.record(s1)
    s2.submit(at_wait.set)
    s2.wait_event(ev)
    s2.submit(b)
    assert at_wait.wait(GUARD_S)  # s2 has reached the wait
    assert not b_ran.wait(SETTLE_S)  # ...and holds B while A is blocked on s1
    assert ev.query() is False
    assert s2.query() is False
    gate_a.set()
    s2.synchronize()
    s1.synchronize()
    assert log == ["A", "B"]
    assert ev.query() is True


def test_event_wait_covers_only_the_recorded_point(streams: Callable[[], Stream]) -> None:
    s1, s2 = streams(), streams()
    gate_c = threading.Event()
    b_ran = threading.Event()
    log: list[str] = []
    s1.submit(lambda: log.append("A"))
    ev = Event()
    ev.record(s1)
    s1.submit(lambda: gate_c.wait(GUARD_S))  # work after the recorded point stays blocked
    s2.wait_event(ev)
    s2.submit(lambda: (log.append("B"), b_ran.set()))
    try:
        assert b_ran.wait(GUARD_S), "s2 waited for work recorded after the event"
        assert log == ["A", "B"]
    finally:
        gate_c.set()
    s1.synchronize()
    s2.synchronize()


def test_event_wait_uses_the_latest_record_at_wait_time(streams: Callable[[], Stream]) -> None:
    s1, s2 = streams(), streams()
    gate1, gate2 = threading.Event(), threading.Event()
    b_ran = threading.Event()
    log: list[str] = []
    ev = Event()
    s1.submit(lambda: (gate1.wait(GUARD_S), log.append("A1")))
    ev.record(s1)
    s1.submit(lambda: (gate2.wait(GUARD_S), log.append("A2")))
    ev.record(s1.handle)  # record accepts a handle too
    s2.wait_event(ev)
    s2.submit(lambda: (log.append("B"), b_ran.set()))
    gate1.set()
    assert not b_ran.wait(SETTLE_S)  # the first point is reached, the second is not
    gate2.set()
    s2.synchronize()
    s1.synchronize()
    assert log == ["A1", "A2", "B"]


def test_waiting_on_an_unrecorded_event_does_not_block(streams: Callable[[], Stream]) -> None:
    s = streams()
    ev = Event()
    assert ev.query() is True
    ev.synchronize()
    out: list[int] = []
    s.wait_event(ev)
    s.submit(lambda: out.append(1))
    finished, error = _sync_in_thread(s.synchronize)
    assert finished
    assert error is None
    assert out == [1]


def test_event_synchronize_blocks_the_host_until_the_point(streams: Callable[[], Stream]) -> None:
    s = streams()
    gate = threading.Event()
    log: list[str] = []
    s.submit(lambda: (gate.wait(GUARD_S), log.append("A")))
    ev = Event()
    ev.record(s)
    assert ev.query() is False
    threading.Timer(0.05, gate.set).start()
    ev.synchronize()
    assert log == ["A"]
    assert ev.query() is True
    s.synchronize()


def test_event_argument_types(streams: Callable[[], Stream]) -> None:
    s = streams()
    ev = Event()
    for bad in (None, "s", 1.5, True):
        with pytest.raises(TypeError):
            ev.record(bad)  # type: ignore[arg-type]
    with pytest.raises(GeError):
        ev.record(10**12)
    for bad in (None, object(), 1, s):
        with pytest.raises(TypeError):
            s.wait_event(bad)  # type: ignore[arg-type]
    assert ev.query() is True  # the refused records recorded nothing
    s.synchronize()


def test_waiting_stream_does_not_hang_when_the_recording_stream_failed(
    streams: Callable[[], Stream],
) -> None:
    """A failure on s1 skips the work queued behind it; an event recorded there must still
    let s2 (and the host) go on instead of waiting forever."""
    s1, s2 = streams(), streams()

    def boom() -> None:
        raise RuntimeError("boom")

    s1.submit(boom)
    ev = Event()
    ev.record(s1)
    s2.wait_event(ev)
    after: list[int] = []
    s2.submit(lambda: after.append(1))
    with pytest.raises(GeError, match="boom"):
        s1.synchronize()
    try:
        finished, error = _sync_in_thread(s2.synchronize, HANG_S)
        assert finished, "s2 waits forever for an event recorded behind a failure on s1"
        assert error is None or isinstance(error, GeError)
        host_finished, _ = _sync_in_thread(ev.synchronize, HANG_S)
        assert host_finished, "Event.synchronize() waits forever after the failure"
    finally:
        ev.record(streams())  # unblock a stuck waiter so the fixture can close the streams
