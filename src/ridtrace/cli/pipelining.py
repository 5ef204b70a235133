"""Pipelined HTTP/1.1 requests: a bounded queue, and refusals answered in their turn.

uvicorn parses every request it reads, queues those that come while one is being
answered, and reads on after each answer: one client's connection of pipelined requests
(8 MB of ``GET /health`` lines) was 200 000 queued requests, 1.2 GB of the server's
memory, before the first few were answered. Here at most ``MAX_QUEUED_REQUESTS`` wait
(plus what one slice of a read holds); the rest of what was read waits unparsed, and
reading stops, until the queue has room again.

A server must answer pipelined requests in the order they came (RFC 9112 section
9.3.2). uvicorn writes its answer to a request the parser refuses (and ridtrace's header
guard its 431, Host and chunk-framing refusals) the moment it reads it, ahead of the
answers still owed to the requests before it, and closes the connection: their client
read the refusal as the first request's answer, which was never sent, and the requests
were cancelled. Here such a refusal waits until the answers before it have gone out;
nothing after the refused request is read. A request refused in its body (its headers
read) while it waits in the queue still starts in its turn, its client gone as the
refusal goes out: its middleware logs its ids and the refusal, as it does when the
request was not queued.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["MAX_QUEUED_REQUESTS", "BoundedPipeline", "InOrderRefusals"]

MAX_QUEUED_REQUESTS = 32
"""Pipelined requests parsed ahead of their turn on one connection."""
# Reads are parsed this much at a time, so that a read of many small requests stops
# at the cap (within one read: the rest of a read that ends a body is parsed whole).
_SLICE = 16 * 1024


class BoundedPipeline(HttpToolsProtocol):
    """Put first among the bases, before :class:`InOrderRefusals` and the header guard
    (whose ``_body_open`` it reads): each slice of a read then reaches the guard as a
    read of its own."""

    _held = b""  # read, not parsed: the queue was full

    def data_received(self, data: bytes) -> None:
        if self._held:
            self._held += data  # reading was paused: what was on its way already
            self.flow.pause_reading()
            return
        self._parse(data)

    def _parse(self, data: bytes) -> None:
        start, size = 0, len(data)
        while start < size:
            if len(self.pipeline) >= MAX_QUEUED_REQUESTS:
                self._held = data[start:]
                self.flow.pause_reading()
                return
            # In a body, the rest is parsed at once: slicing a body only copies it more
            # (uvicorn appends each piece to the body read so far).
            in_body = getattr(self, "_body_open", False)
            end = size if in_body or size - start <= _SLICE else start + _SLICE
            super().data_received(data if start == 0 and end == size else data[start:end])
            start = end
            if self.transport.is_closing() or self.transport.get_protocol() is not self:
                return  # refused and closed, or handed over (a WebSocket upgrade)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # starts the next queued request, resumes reading
        if self.transport.is_closing():
            return
        if self._held and len(self.pipeline) < MAX_QUEUED_REQUESTS:
            held, self._held = self._held, b""
            self._parse(held)
        if self._held:
            self.flow.pause_reading()


class InOrderRefusals(HttpToolsProtocol):
    """Put among the bases of a protocol built on the header guard, which keeps
    ``_cycles`` (the connection's requests, oldest first) and ``_answer_and_close``."""

    _cycles: deque[Any]
    _deferred_refusal: Callable[[], None] | None = None
    _queued_refused: Any = None  # the cycle refused in its body while it was queued
    _parser_stopped = False  # at a refused request: nothing after it is read

    def _answer_and_close(self, status: int, reason: str, message: str) -> None:
        if not self._deferred(lambda: super(InOrderRefusals, self)._answer_and_close(  # type: ignore[misc]
                status, reason, message)):
            super()._answer_and_close(status, reason, message)  # type: ignore[misc]

    def send_400_response(self, msg: str) -> None:
        if not self._deferred(lambda: super(InOrderRefusals, self).send_400_response(msg)):
            super().send_400_response(msg)

    def data_received(self, data: bytes) -> None:
        if not self._parser_stopped:
            super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        refusal = self._deferred_refusal
        if refusal is None or self.transport.is_closing():
            return
        if self._owed():
            self.flow.pause_reading()  # uvicorn resumed it for the next request
            return
        self._deferred_refusal = None
        refusal()
        refused, self._queued_refused = self._queued_refused, None
        if refused is not None:
            # Started just now by uvicorn, its app not run yet: it reads no body and
            # sends nothing (the 400 is its answer), and its request.end says the 400.
            refused.disconnected = True
            refused.message_event.set()

    def _deferred(self, refusal: Callable[[], None]) -> bool:
        """Hold ``refusal`` back while answers to earlier requests are owed: true if so."""
        if self._deferred_refusal is not None:
            return True  # the first refusal stands; a parser in error may report again
        refused = self.cycle
        # Refused in its body (not between requests, nor in a new one's headers): the
        # refusal is its answer. Queued behind earlier requests (not started), it stays
        # queued: it had no log line at all (DESIGN.md wants one with its ids), so it
        # starts in its turn, when its refusal goes out.
        if refused is not None and refused.more_body and refused in self._cycles:
            self._cycles.remove(refused)
            if any(queued[0] is refused for queued in self.pipeline):
                self._queued_refused = refused
        if not self._owed():
            return False
        self._deferred_refusal = refusal
        self._parser_stopped = True
        self.flow.pause_reading()
        timer = getattr(self, "_disarm_header_timer", None)
        if timer is not None:
            timer()  # the request was read: no 408 for it
        return True

    def _owed(self) -> bool:
        return any(not cycle.response_complete for cycle in self._cycles)
