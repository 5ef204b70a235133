"""The deadline on a request's headers: 408 when they take too long (slowloris).

uvicorn gives none: a connection that sends nothing, or a request line and then one
header byte every few seconds, was held open forever. The timer here runs while the
server waits for a request's headers (`header_guard` arms it at a connection's start,
at each request's first byte and when a request was answered before its body was in,
and disarms it when the headers are complete); when it runs out the client gets 408
and the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HeaderDeadline"]


class HeaderDeadline(HttpToolsProtocol):
    """A base of the header guard's protocol, whose ``_answer_and_close`` sends the 408."""

    header_timeout = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    if TYPE_CHECKING:
        def _answer_and_close(self, status: int, reason: str, message: str) -> None: ...

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()  # a connection that never says anything

    def on_response_complete(self) -> None:
        super().on_response_complete()
        cycle = self.cycle
        if (cycle is not None and cycle.response_complete and cycle.more_body
                and not self.transport.is_closing()):
            # Answered before its body was in: every byte of the rest put off uvicorn's
            # keep-alive timeout, and no other timer ran, so a client trickling a body it
            # said was long (or idle once the body was in) held the connection forever.
            # The rest of the body gets the time headers get, as does the idle after it.
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_timed_out)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # A pipelined request waits (reading paused) behind one still being
            # answered: that answer must not be cut; the next one's headers are read
            # once it is done.
            self._arm_header_timer()
            return
        message = f"request headers not received within {self.header_timeout:g}s"
        self.logger.warning("Request Timeout (408): %s", message)  # slowloris leaves a trace
        self._answer_and_close(408, "Request Timeout", message)
