"""An inference route's answer as server-sent events, written as the worker's tokens come.

`routes.core` runs the request; this writes its stream, gathering what is ready into
few writes and letting go of a client that stopped reading.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from starlette.types import Send

from ridtrace.contract import RESPONSE_UNLINKED
from ridtrace.fingerprint import fingerprint
from ridtrace.frontend_plugin.direct import Call
from ridtrace.frontend_plugin.drain import Drain
from ridtrace.frontend_plugin.frontend import CallerLeft, Item
from ridtrace.frontend_plugin.pump import UNLINKED_REQUEST, Delta, Failed, Finished
from ridtrace.frontend_plugin.registry import Dropped
from ridtrace.frontend_plugin.routes.base import Renderer
from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.tracing import annotate_request
from ridtrace.tracing.eventlog import EventLog

__all__ = ["as_failed", "stream_to_reader"]

# The lines keep the logger name they had when this code lived in routes.core.
events = EventLog("ridtrace.frontend_plugin.routes.core")

# Bytes of ready events gathered into one write before it goes out.
_MAX_WRITE = 64 * 1024
# Seconds past the total timeout a client may still take to read its stream.
_WRITE_GRACE = 2.0

_SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class _WritesStop:
    """A drain helper beside the call: a stop gives the writes ``drain.write_grace``.

    The call's own stop reaches the stream only between writes; a client that stopped
    reading keeps the writer in a write, which uvicorn then cancelled at the end of its
    grace period: ``request.end`` said ``cancelled`` and uvicorn logged a traceback."""

    __slots__ = ("_deadline", "_grace", "message")

    def __init__(self, deadline: Deadline, grace: float) -> None:
        self._deadline = deadline
        self._grace = grace
        self.message: str | None = None

    def stop(self, message: str) -> None:
        if self.message is None:
            self.message = message
            self._deadline.shorten(self._grace)


async def stream_to_reader(
    send: Send, call: Call, renderer: Renderer, first: Item, total_timeout: float,
    drain: Drain | None = None, reset: Callable[[], None] | None = None,
) -> None:
    """:func:`_stream_events`, ended if the client stops reading past the total timeout.

    Reads from the worker are bounded by the request's deadline, but a write waits for
    the client to read (uvicorn's flow control) without any bound: a caller that stopped
    reading held its registry entry, its worker connection and, on a paced reply, the
    worker's stream for as long as it kept the connection open (a slow-read attack
    needs no more). Past the deadline and a grace (so the reads' own timeouts, which
    tell the caller, come first) the stream is abandoned: uvicorn closes the connection.
    With ``drain``, a server stop ends it sooner (:class:`_WritesStop`). ``reset``
    (`connection_reset`): the server resets the connection once the app returns, rather
    than hold it until the client reads what is buffered for it.
    """
    stop: _WritesStop | None = None
    try:
        with Deadline(call.deadline - time.monotonic() + _WRITE_GRACE) as deadline:
            if drain is None:
                await _stream_events(send, call, renderer, first)
                return
            stop = _WritesStop(deadline, drain.write_grace)
            drain.hold_helper(stop)
            try:
                await _stream_events(send, call, renderer, first)
            finally:
                drain.release_helper(stop)
    except TimeoutError:
        if reset is not None:
            reset()
        if stop is not None and stop.message is not None:
            annotate_request(outcome_override="error", error=(
                f"{stop.message}: the client did not read the end of its stream"))
            return
        annotate_request(outcome_override="error", error=(
            f"client did not read the stream within the total timeout ({total_timeout:g}s)"))


async def _stream_events(send: Send, call: Call, renderer: Renderer, first: Item) -> None:
    """Write the SSE stream; the call is closed by the caller's ``finally``."""
    sent: list[str] = []
    finished = False
    item: Item | None = first
    out = [renderer.start()]
    pending = 0
    await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
    try:
        while True:
            # Everything already waiting goes out in one write, not one per token, up
            # to _MAX_WRITE: /generate repeats the text so far in every event (as SGLang
            # does), so a reply that arrived at once, rendered whole, held the square
            # of its size in memory (a 1 MB prompt of 8000 words: 3.9 GB of events,
            # 6 GB of RSS). Written as they come, the client's reading paces them.
            while item is not None:
                if isinstance(item, Delta):
                    event = renderer.delta(item.text)
                    if not sent:
                        event = renderer.text_start() + event
                    sent.append(item.text)
                    out.append(event)
                    pending += len(event)
                    if pending >= _MAX_WRITE:
                        break
                elif isinstance(item, Finished):
                    finished = True
                    out.append(renderer.finish(item, "".join(sent)))
                    await send({"type": "http.response.body", "body": b"".join(out)})
                    return
                elif isinstance(item, CallerLeft):
                    return  # nobody is reading any more
                else:
                    failed = as_failed(item)
                    # The status line already said 200; the stream says otherwise.
                    annotate_request(outcome_override="error", error=failed.logged)
                    out.append(renderer.fail(failed))
                    await send({"type": "http.response.body", "body": b"".join(out)})
                    return
                item = call.next_nowait()
            await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
            if pending >= _MAX_WRITE:
                # A backlog goes out write after write, and neither a write to a client
                # that reads fast nor a ready item waits: other requests ran only once
                # it was all written (a /health probe waited 3 s behind 970 MB of
                # /generate events). A reply that comes as it is made waits anyway.
                await asyncio.sleep(0)
            out = []
            pending = 0
            item = await call.next()
    finally:
        # A whole reply is delivered even when empty (a stop sequence at its start):
        # the worker fingerprints it, and without the caller's fp_out `ridtrace analyze`
        # took that worker output for one no caller received (unlinked).
        if sent or finished:
            annotate_request(fp_out=fingerprint("".join(sent)))


def as_failed(item: Failed | Dropped) -> Failed:
    if isinstance(item, Dropped):
        events.error(UNLINKED_REQUEST, event=RESPONSE_UNLINKED)
        return Failed(UNLINKED_REQUEST, 500, "unlinked")
    return item
