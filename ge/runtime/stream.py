"""Streams and events: ordered asynchronous work queues, as a device stream is.

Work submitted to a ``Stream`` runs on that stream's own worker thread, one item after the
other, while the caller goes on. ``synchronize()`` waits for everything submitted so far and
re-raises the first failure (as a ``GeError`` naming the failed task). After a failure the
stream skips the work queued behind it (it would read results that were never written) until
``synchronize`` reports the failure; then the stream is usable again.

``Event``s order work across streams: ``event.record(s1)`` marks a point in ``s1``;
``s2.wait_event(event)`` makes later work on ``s2`` wait for that point.

    >>> from ge.runtime import Stream
    >>> s = Stream()
    >>> out = []
    >>> s.submit(lambda: out.append(1)); s.submit(lambda: out.append(2)); s.synchronize()
    >>> out
    [1, 2]
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from ge.error import GeError, GeTypeError

__all__ = ["Event", "Stream", "resolve_stream"]

_HANDLES = itertools.count(1)
# handle -> the live stream, as weak references (a plain dict: a lookup is two C calls, where
# WeakValueDictionary.get runs Python; kernel launches resolve a handle every time)
_STREAMS: dict[int, weakref.ref[Stream]] = {}


def _forget(handle: int) -> Callable[[object], None]:
    def forget(_ref: object) -> None:
        _STREAMS.pop(handle, None)

    return forget


class _Task:
    __slots__ = ("always", "fn", "name", "settle")

    def __init__(
        self,
        fn: Callable[[], Any],
        name: str,
        always: bool = False,
        settle: Callable[[], Any] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name
        self.always = always  # runs even behind a failure (event records: others wait on them)
        self.settle = settle  # runs after fn, or in its place when fn is skipped


class Stream:
    """An ordered queue of work run asynchronously on a worker thread."""

    def __init__(self) -> None:
        self._handle = next(_HANDLES)
        self._queue: deque[_Task] = deque()
        self._cond = threading.Condition()
        self._busy = False
        self._error: BaseException | None = None
        self._failed_task = ""
        self._closed = False
        self._worker: threading.Thread | None = None
        _STREAMS[self._handle] = weakref.ref(self, _forget(self._handle))

    @property
    def handle(self) -> int:
        """An integer id; ge APIs accept it wherever they accept the stream."""
        return self._handle

    def submit(
        self,
        fn: Callable[[], Any],
        name: str = "",
        *,
        always: bool = False,
        settle: Callable[[], Any] | None = None,
    ) -> None:
        """Queue ``fn()`` to run after everything already queued on this stream.
        ``settle()``, if given, runs once the task is over, whether ``fn`` ran, failed or was
        skipped behind an earlier failure (launches end their uses of memory there)."""
        if not callable(fn):
            raise GeTypeError(f"fn must be callable, got {type(fn).__name__}")
        with self._cond:
            if self._closed:
                raise GeError(f"stream {self._handle} is closed")
            task = _Task(fn, name or getattr(fn, "__name__", "task"), always, settle)
            self._queue.append(task)
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._run, name=f"ge-stream-{self._handle}", daemon=True
                )
                self._worker.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                task = self._queue.popleft()
                skip = self._error is not None and not task.always
                self._busy = True
            try:
                if not skip:
                    task.fn()
            except BaseException as e:  # reported at synchronize()
                with self._cond:
                    self._error, self._failed_task = e, task.name
            finally:
                if task.settle is not None:
                    task.settle()
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def synchronize(self) -> None:
        """Wait until all submitted work has run; re-raise the first failure, then clear it."""
        if threading.current_thread() is self._worker:
            raise GeError("synchronize() called from the stream's own work")
        with self._cond:
            while self._queue or self._busy:
                self._cond.wait()
            error, name = self._error, self._failed_task
            self._error, self._failed_task = None, ""
        if error is not None:
            if isinstance(error, GeError):
                raise GeError(f"stream {self._handle}: {name} failed: {error}") from error
            raise GeError(
                f"stream {self._handle}: {name} failed: {type(error).__name__}: {error}"
            ) from error

    def query(self) -> bool:
        """Whether all submitted work has finished (without waiting)."""
        with self._cond:
            return not self._queue and not self._busy

    def wait_event(self, event: Event) -> None:
        """Later work on this stream waits until ``event``'s recorded point has run."""
        if not isinstance(event, Event):
            raise GeTypeError(f"event must be an Event, got {type(event).__name__}")
        ticket = event._ticket()
        self.submit(lambda: event._wait(ticket), name="wait_event")

    def close(self) -> None:
        """Finish queued work and stop the worker thread."""
        self.synchronize()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._worker is not None:
            self._worker.join()

    def __repr__(self) -> str:
        return f"<Stream {self._handle}>"


class Event:
    """A point in a stream's work that other streams (or the host) can wait for."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._recorded = 0  # how many record() calls were made
        self._reached = 0  # how many recorded points have been reached

    def record(self, stream: Stream | int) -> None:
        """Mark the current end of ``stream``'s queue."""
        s = resolve_stream(stream)
        with self._cond:
            self._recorded += 1
            point = self._recorded
        s.submit(lambda: self._reach(point), name="record_event", always=True)

    def _reach(self, point: int) -> None:
        with self._cond:
            self._reached = max(self._reached, point)
            self._cond.notify_all()

    def _ticket(self) -> int:
        with self._cond:
            return self._recorded

    def _wait(self, ticket: int) -> None:
        with self._cond:
            while self._reached < ticket:
                self._cond.wait()

    def synchronize(self) -> None:
        """Block the host until the last recorded point has been reached."""
        self._wait(self._ticket())

    def query(self) -> bool:
        with self._cond:
            return self._reached >= self._recorded


def resolve_stream(stream: Stream | int) -> Stream:
    """The ``Stream`` for a stream object or its integer handle."""
    if isinstance(stream, Stream):
        return stream
    ref = _STREAMS.get(stream) if type(stream) is int else None
    found = ref() if ref is not None else None
    if found is not None:
        return found
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise GeTypeError(
            f"stream must be a ge.runtime.Stream or its integer handle, got {type(stream).__name__}"
        )
    ref = _STREAMS.get(int(stream))  # an int subclass
    found = ref() if ref is not None else None
    if found is None:
        raise GeError(f"stream handle {stream} names no live stream")
    return found
