"""A caller that reads its worker stream itself: no pump task, no queue (safe policy).

Under the safe policy a response stream can only ever reach the caller that started
it, so the hand-over through the registry's channel buys nothing: the request's own
task dispatches, reads the worker's NDJSON and turns each message into an item. That
saves a task, a queue and a wake-up per chunk on every request (issue 15). The legacy
policy keeps :class:`~ridtrace.frontend_plugin.frontend.InferenceCall`: its pump must
outlive the caller and take whichever entry holds the key, which is the bug it shows.

Timeouts are the same as the pump's: first byte per attempt (in the dispatcher), then
at most ``chunk_timeout`` of silence and the request's total deadline, armed only when
a read has to wait on the network.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from ridtrace.frontend_plugin.dispatch import DispatchError, WorkerStream
from ridtrace.frontend_plugin.failures import Failed
from ridtrace.frontend_plugin.frontend import (
    CALLER_LEFT,
    SHUTDOWN,
    CallState,
    Frontend,
    InferenceCall,
    Item,
)
from ridtrace.frontend_plugin.pump import (
    Finished,
    drain,
    ended,
    lost,
    message_item,
    overdue,
    silent,
)
from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.frontend_plugin.wire import WorkRequest

__all__ = ["Call", "DirectCall", "new_call"]

BODY_END_WAIT = 0.5
"""Seconds a finished reply waits for its worker's body to end, to keep the connection."""


class Call(Protocol):
    """One caller's in-flight request, as the routes use it."""

    worker: str | None
    attempts: int
    deadline: float  # time.monotonic() at which total_timeout runs out

    def start(self) -> None:
        """Register; raises ``DuplicateRequestId`` with nothing started."""

    async def next(self) -> Item:
        """The next item for the caller."""

    def next_nowait(self) -> Item | None:
        """The next item if it is already there."""

    def interrupt(self) -> None:
        """The caller's client disconnected."""

    def stop(self, message: str) -> None:
        """The server is stopping: end the call with a 503 ``message``."""

    def close(self) -> None:
        """Release the key and the worker stream; idempotent."""


def new_call(
    frontend: Frontend, *, key: str, work: WorkRequest, trace_headers: dict[str, str]
) -> Call:
    """The call for one request: a :class:`DirectCall` under the safe policy, else a
    pump-fed :class:`InferenceCall` (legacy)."""
    if frontend.registry.policy == "safe":
        return DirectCall(frontend, key=key, work=work, trace_headers=trace_headers)
    return InferenceCall(frontend, key=key, work=work, trace_headers=trace_headers)


class DirectCall(CallState):
    """One caller's request under the safe policy, read by the caller's own task.

    The call is its own registry channel: nothing is ever delivered to it under the
    safe policy, but whatever is (``put_nowait``) is handed out before anything else.
    """

    __slots__ = ("_ended", "_held", "_inbox", "_interrupted", "_stream", "_waiting")

    def __init__(
        self, frontend: Frontend, *, key: str, work: WorkRequest,
        trace_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(frontend, key=key, work=work, trace_headers=trace_headers)
        self._stream: WorkerStream | None = None
        self._held: dict[str, Any] | None = None  # a done line seen by next_nowait
        self._inbox: list[Item] = []
        self._waiting: asyncio.Task[Any] | None = None  # our task, while it waits on I/O
        # What ends the call early: CALLER_LEFT, or the Failed of a server shutdown.
        self._ended: Item | None = None
        self._interrupted = False

    def put_nowait(self, item: Any, /) -> None:
        """The registry's channel protocol (see the class docstring)."""
        self._inbox.append(item)

    def start(self) -> None:
        """Register the key; raises ``DuplicateRequestId`` with nothing started."""
        self._frontend.registry.register(self.key, self, owner_request_id=self.work.request_id)

    def interrupt(self) -> None:
        """The client left: a read in progress ends now, and every later one at once."""
        self._end(CALLER_LEFT)

    def stop(self, message: str) -> None:
        """The server is stopping: a read in progress, or the next one, returns a 503
        ``Failed``, which the route reports in its API's shape."""
        self._end(Failed(message, 503, SHUTDOWN, self.attempts))

    def _end(self, item: Item) -> None:
        if self._ended is not None:
            return  # the first reason wins
        self._ended = item
        task = self._waiting
        if task is not None and not self._interrupted:
            self._interrupted = True
            task.cancel()

    async def next(self) -> Item:
        """The next item: dispatches first, then reads the worker's stream."""
        if self._inbox:
            return self._inbox.pop(0)
        if self._ended is not None:
            return self._ended
        self._waiting = asyncio.current_task()
        try:
            if self._stream is None:
                return await self._open()
            return await self._read(self._stream)
        except asyncio.CancelledError:
            if not self._interrupted:
                raise
            # Our interrupt's cancellation ends here: the caller left, or the server stops.
            _uncancel(self._waiting)
            assert self._ended is not None  # set before the cancellation
            return self._ended
        finally:
            self._waiting = None

    def next_nowait(self) -> Item | None:
        """The next item if it already arrived (several tokens go out in one write)."""
        if self._inbox or self._ended is not None:
            return self._inbox.pop(0) if self._inbox else self._ended
        stream = self._stream
        while stream is not None and self._held is None and stream.ready:
            try:
                message = stream.next_ready()
            except Exception as exc:
                return lost(stream.worker, exc, self.attempts)
            if message.get("done") is True:
                self._held = message  # reading the body's end may wait: next() does it
                return None
            item = message_item(message, request_id=self.work.request_id,
                                check_ids=self._frontend.check_ids, worker=stream.worker,
                                attempts=self.attempts)
            if item is not None:
                return item
        return None

    async def _open(self) -> Item:
        fe = self._frontend
        try:
            stream = await fe.dispatcher.open(
                self.work, trace_headers=self.trace_headers, deadline=self.deadline,
                on_attempt=self._attempting,
            )
        except DispatchError as exc:
            # Every attempt failed: no worker served it (the error names the last one).
            self.worker, self.attempts = None, exc.attempts
            return Failed(str(exc), exc.status, exc.reason, exc.attempts, exc.detail)
        self._stream = stream
        self.worker, self.attempts = stream.worker, stream.attempts
        fe.registry.claim(self.key)  # the link, counted as the pump counts it
        if self.deadline <= time.monotonic():
            return overdue(stream.worker, fe.settings.total_timeout, self.attempts)
        item = await self._item(stream, stream.first)
        return item if item is not None else await self._read(stream)

    def _attempting(self, worker: str, attempt: int) -> None:
        # A caller that leaves (or a shutdown) mid-dispatch ends the call before open()
        # returns; its request.end must still name the worker the request went to and
        # count the attempts made, not say 0 as if nothing had been sent.
        self.worker, self.attempts = worker, attempt

    async def _read(self, stream: WorkerStream) -> Item:
        settings = self._frontend.settings
        while True:
            message = self._held
            if message is not None:
                self._held = None
            elif stream.ready:
                try:
                    message = stream.next_ready()
                except Exception as exc:
                    return lost(stream.worker, exc, self.attempts)
            else:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    return overdue(stream.worker, settings.total_timeout, self.attempts)
                chunk = settings.chunk_timeout
                try:
                    with Deadline(min(chunk, remaining)):
                        message = await stream.next_message()
                except TimeoutError:
                    if self._ended is not None:  # both fired: the interrupt's
                        if self._interrupted:     # cancellation ends here too
                            _uncancel(self._waiting)
                        return self._ended
                    if remaining <= chunk:
                        return overdue(stream.worker, settings.total_timeout, self.attempts)
                    return silent(stream.worker, chunk, self.attempts)
                except Exception as exc:  # connection lost, bad line: this caller's alone
                    return lost(stream.worker, exc, self.attempts)
                if message is None:
                    return ended(stream.worker, self.attempts)
            item = await self._item(stream, message)
            if item is not None:
                return item

    async def _item(self, stream: WorkerStream, message: dict[str, Any]) -> Item | None:
        item = message_item(message, request_id=self.work.request_id,
                            check_ids=self._frontend.check_ids, worker=stream.worker,
                            attempts=self.attempts)
        if type(item) is Finished:
            # Reading the body's end hands the connection back to the pool; the end
            # nearly always came with the done line, so this rarely waits. Not for long:
            # the reply is complete, and a worker (or a proxy) that ends its body late
            # held the caller's last event for the whole chunk timeout.
            remaining = min(BODY_END_WAIT, self.deadline - time.monotonic())
            try:
                with Deadline(remaining):
                    await drain(stream)
            except TimeoutError:
                pass  # the reply is complete; only the connection is lost
        return item

    def close(self) -> None:
        """Release the key (if still ours) and the worker stream. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._frontend.registry.release(self.key, self)
        if self._stream is not None:
            self._stream.close()


def _uncancel(task: asyncio.Task[Any] | None) -> None:
    uncancel = getattr(task, "uncancel", None)  # Python 3.11+
    if uncancel is not None:
        uncancel()

