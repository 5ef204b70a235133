"""An inference request's body, read within its deadline and cut short by a server stop.

A body still arriving when the server stops (a large prompt on a slow link, a stalled
upload) is a request in flight like any other. Read outside the drain, it was left to
uvicorn's cancellation at the end of the grace period: the caller got a plain-text 500
without its ids, ``request.end`` said ``cancelled`` though the client never left, and
uvicorn logged a traceback. Held in the drain while it reads, it is ended with the
other requests and answered 503 in its API's shape.
"""

from __future__ import annotations

from starlette.types import Receive, Scope

from ridtrace.frontend_plugin.asgi_io import receive_body
from ridtrace.frontend_plugin.drain import Drain, StopOnDrain, Stopped
from ridtrace.frontend_plugin.failures import GO_ELSEWHERE
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.timers import Deadline

__all__ = ["BODY_TIMED_OUT", "GO_ELSEWHERE", "Stopped", "body_timed_out", "read_request_body"]

# What `request.end`'s `error` says of a body that did not arrive in time.
BODY_TIMED_OUT = "request body not received in full"


def body_timed_out(settings: FrontendSettings) -> str:
    """What the caller is told (a 408), on every route alike."""
    return f"{BODY_TIMED_OUT} within {settings.body_timeout:g}s"


async def read_request_body(
    scope: Scope, receive: Receive, settings: FrontendSettings, drain: Drain | None
) -> bytes | None:
    """The body, or ``None`` when it exceeds ``settings.max_body_bytes``.

    Raises:
        TimeoutError: it did not arrive in full within ``settings.body_timeout``.
        Stopped: the server is stopping (``drain.stop_all``) before it arrived.
        starlette.requests.ClientDisconnect: the client left mid-body.
    """
    stop = StopOnDrain()
    if drain is not None:
        drain.hold(stop)
    try:
        with Deadline(settings.body_timeout):
            return await stop.wait(receive_body(scope, receive, settings.max_body_bytes))
    finally:
        if drain is not None:
            drain.release(stop)
