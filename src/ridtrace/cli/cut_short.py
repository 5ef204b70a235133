"""A response the app gave up on for a client that does not read is reset with its
connection, not flushed to it.

uvicorn closes the connection when the app returns after starting a response it did not
finish: the frontend letting go of a client that stopped reading its stream. It closes
it gracefully, which waits until what is buffered for the client has been sent: a client
that stopped reading kept its connection, its file descriptor and megabytes of unsent
events for as long as it kept its socket open (30 such clients held 30 connections and
~120 MB of send queues a minute after they were let go). The server offers each request
the ASGI extension `RESET_EXTENSION`; an app that lets go of such a client asks for it,
and the connection is then reset, as nginx's ``reset_timedout_connection`` does: closed
with no linger, so the kernel keeps no orphaned send queue either. Any other close (a
response that ended, a crash mid-stream, whose reader still gets what was written) is
uvicorn's graceful one. Uvicorn's paused writes tell no reader from a stalled one: a
client reading over a slow network has them paused too.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Any

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from ridtrace.frontend_plugin.connection_reset import RESET_EXTENSION

__all__ = ["offer_reset"]

_NO_LINGER = struct.pack("ii", 1, 0)  # struct linger {l_onoff = 1, l_linger = 0}: a reset


class _ResettableTransport:
    """The connection as one request's cycle sees it: its ``close()`` resets it once the
    app asked (`request_reset`) and the response is unfinished."""

    __slots__ = ("_cycle", "_reset", "_transport", "get_extra_info", "is_closing", "write")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self._transport, self._cycle, self._reset = transport, cycle, False
        # The cycle's calls per response chunk, bound once: no lookup through __getattr__.
        self.write = transport.write
        self.is_closing = transport.is_closing
        self.get_extra_info = transport.get_extra_info

    def request_reset(self) -> None:
        self._reset = True

    def close(self) -> None:
        cycle = self._cycle
        if not (self._reset and cycle.response_started and not cycle.response_complete):
            self._transport.close()
            return
        sock = self._transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _NO_LINGER)
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def offer_reset(cycle: RequestResponseCycle | None, scope: Any) -> None:
    """Offer `cycle`'s request (`scope`, before its app runs) the reset extension."""
    if cycle is None or cycle.scope is not scope or isinstance(
            cycle.transport, _ResettableTransport):
        return
    transport = _ResettableTransport(cycle.transport, cycle)
    cycle.transport = transport  # type: ignore[assignment]
    scope.setdefault("extensions", {})[RESET_EXTENSION] = {"reset": transport.request_reset}
