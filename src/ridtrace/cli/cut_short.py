"""A response cut short for a client that does not read is reset with its connection,
not flushed to it.

uvicorn closes the connection when the app returns (or raises) after starting a
response it did not finish: the frontend letting go of a client that stopped reading its
stream. It closes it gracefully, which waits until what is buffered for the client has
been sent: a client that stopped reading kept its connection, its file descriptor and
megabytes of unsent events for as long as it kept its socket open (30 such clients held
30 connections and ~120 MB of send queues a minute after they were let go). When the
client is not taking what is buffered (uvicorn paused the writes) and the response can
no longer reach it whole, the connection is reset instead, as nginx's
``reset_timedout_connection`` does: closed with no linger, so the kernel keeps no
orphaned send queue either. A response that ended, or one cut short for a client that
is reading (a crash mid-stream), is closed gracefully, as ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Any

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

__all__ = ["abort_when_cut_short"]

_NO_LINGER = struct.pack("ii", 1, 0)  # struct linger {l_onoff = 1, l_linger = 0}: a reset


class _CutShortTransport:
    """The connection as one request's cycle sees it: its ``close()`` resets it while the
    cycle's response is unfinished and its client takes nothing more."""

    __slots__ = ("_cycle", "_transport", "get_extra_info", "is_closing", "write")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self._transport, self._cycle = transport, cycle
        # The cycle's calls per response chunk, bound once: no lookup through __getattr__.
        self.write = transport.write
        self.is_closing = transport.is_closing
        self.get_extra_info = transport.get_extra_info

    def close(self) -> None:
        cycle = self._cycle
        if not (cycle.response_started and not cycle.response_complete
                and cycle.flow.write_paused):
            self._transport.close()
            return
        sock = self._transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _NO_LINGER)
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def abort_when_cut_short(cycle: RequestResponseCycle | None) -> None:
    """Give `cycle` the transport above (a new request's cycle, before its app runs)."""
    if cycle is not None and not isinstance(cycle.transport, _CutShortTransport):
        cycle.transport = _CutShortTransport(cycle.transport, cycle)  # type: ignore[assignment]
