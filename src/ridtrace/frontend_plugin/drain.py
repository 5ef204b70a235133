"""Ending in-flight requests through the app's own error paths when the server stops.

When uvicorn's graceful-shutdown timeout runs out it cancels the request tasks still
running: a non-streaming caller then gets uvicorn's plain-text 500 without the id
headers, a stream is cut mid-chunk, and ``request.end`` says ``cancelled`` although the
client never left. ``ridtrace serve`` calls :meth:`Drain.stop_all` shortly before that
timeout instead, and every request still held here ends the way any other failure
ends: a 503 in its API's error shape, or the stream's in-band error event and a
clean end of the body, logged with outcome ``error``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from ridtrace.contract import SHUTTING_DOWN

__all__ = ["SHUTTING_DOWN", "Drain", "StopOnDrain", "Stoppable", "Stopped"]

T = TypeVar("T")


class Stoppable(Protocol):
    """An in-flight request that can be ended early (idempotent, never blocks)."""

    def stop(self, message: str) -> None:
        """End the request with ``message`` as its error."""


class Drain:
    """The in-flight requests of one server, so that a shutdown can end them cleanly.

    Requests :meth:`hold` themselves while they run and :meth:`release` themselves in
    ``finally``; both are a set operation, nothing more on the hot path.
    """

    __slots__ = ("_held", "_helpers", "stopping", "write_grace")

    def __init__(self) -> None:
        self._held: set[Stoppable] = set()
        self._helpers: set[Stoppable] = set()  # stopped with the requests, not counted
        self.stopping = False
        """True once :meth:`stop_all` ran: a request arriving now could not finish."""
        self.write_grace = 0.5
        """Seconds a stopped stream may still take to reach a client that reads slowly
        before it is let go (``ridtrace serve`` sets half of what is left of its grace
        period when it stops them), so the server's own cancellation never comes first."""

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, request: Stoppable) -> None:
        """Track ``request`` until :meth:`release`; one held after :meth:`stop_all` ran
        is stopped at once (it could not finish)."""
        self._held.add(request)
        if self.stopping:
            request.stop(SHUTTING_DOWN)

    def release(self, request: Stoppable) -> None:
        """Stop tracking ``request`` (it ended on its own)."""
        self._held.discard(request)

    def hold_helper(self, helper: Stoppable) -> None:
        """Stop ``helper`` with the requests (a part of one, such as its writes), without
        counting it as a request; stopped at once after :meth:`stop_all` ran."""
        self._helpers.add(helper)
        if self.stopping:
            helper.stop(SHUTTING_DOWN)

    def release_helper(self, helper: Stoppable) -> None:
        """Stop tracking ``helper``."""
        self._helpers.discard(helper)

    def stop_all(self, message: str = SHUTTING_DOWN) -> int:
        """End every held request with ``message``; returns how many there were."""
        self.stopping = True
        held = list(self._held)
        for request in held:
            request.stop(message)
        for helper in list(self._helpers):
            helper.stop(message)
        return len(held)


class Stopped(Exception):
    """Raised by :meth:`StopOnDrain.wait` once the request was stopped."""


class StopOnDrain:
    """A :class:`Stoppable` for one task whose waits a shutdown may cut short.

    ``stop`` cancels the task only while it is inside :meth:`wait`, never while it writes
    to its client, so a stop cannot tear a response mid-write; a stop that comes while
    the task is busy elsewhere is seen by its next :meth:`wait`. Create it in the task
    it belongs to.
    """

    __slots__ = ("_cancelled", "_task", "_waiting", "message")

    def __init__(self) -> None:
        self._task = asyncio.current_task()
        self._waiting = False
        self._cancelled = False
        self.message: str | None = None

    def stop(self, message: str) -> None:
        """End the request: its current or next :meth:`wait` raises :class:`Stopped`."""
        if self.message is not None:
            return
        self.message = message
        # From inside the task itself (what it awaits stopped the drain) a cancel would
        # land at its next suspension, after wait() had returned: a stray CancelledError
        # in whatever it did next. wait() sees the message when its awaitable returns.
        if (self._waiting and self._task is not None
                and asyncio.current_task() is not self._task):
            self._cancelled = True
            self._task.cancel()

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """``await awaitable``, unless the request is or gets stopped (:class:`Stopped`)."""
        if self.message is not None:
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()  # a coroutine never awaited would earn a warning
            raise Stopped(self.message)
        self._waiting = True
        try:
            result = await awaitable
            if self.message is not None:
                raise Stopped(self.message)
            return result
        except asyncio.CancelledError:
            if not self._cancelled or self._task is None:
                raise  # not ours: the client left, or the server gave up
            # Our own cancellation ends here; the task goes on to report the stop.
            uncancel = getattr(self._task, "uncancel", None)  # Python 3.11+
            if uncancel is not None:
                uncancel()
            raise Stopped(self.message) from None
        finally:
            self._waiting = False
