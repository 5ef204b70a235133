"""uvicorn's httptools protocol with a deadline and a size cap on request headers.

uvicorn bounds neither: a connection that sends nothing, or a request line and then
one header byte every few seconds (slowloris), was held open forever, and the headers
of one request could grow to any size (megabytes of them were parsed and kept). Each
held connection costs a file descriptor and memory, so a handful of clients could use
up either without ever reaching the app. Here a request whose headers are not complete
within ``header_timeout`` seconds of its first byte (or of the connection opening)
gets 408 and its connection is closed (the timer: `header_deadline`), and headers over
``max_header_bytes`` get 431 (414 when the request target alone crosses it). The request
body has its own deadline in the app (``FrontendSettings.body_timeout``), where the
answer can take the route's error shape.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import httptools

from ridtrace.cli.chunk_framing import CHUNK_FRAMING_PER_BODY_BYTE, framing_refusal
from ridtrace.cli.cut_short import offer_reset
from ridtrace.cli.expect_continue import ClosedBeforeContinue
from ridtrace.cli.header_deadline import HeaderDeadline
from ridtrace.cli.http10 import framed_for_http10
from ridtrace.cli.pipelining import BoundedPipeline, InOrderRefusals
from ridtrace.cli.refused_bodies import RefusedBodies
from ridtrace.cli.request_target import (
    host_from_target,
    http10_framing_refusal,
    target_refusal,
    version_refusal,
    with_root_path,
)
from ridtrace.cli.upgrade import UpgradeIgnoringProtocol

__all__ = [
    "CHUNK_FRAMING_PER_BODY_BYTE", "MAX_HEADER_BYTES", "MAX_UNREAD_BODY_BYTES",
    "guarded_http_protocol",
]

MAX_HEADER_BYTES = 64 * 1024
"""Largest request line plus headers accepted (nginx and Node allow 8-16 KiB)."""
MAX_UNREAD_BODY_BYTES = 32 * 1024 * 1024
"""Most of a request body the app left unread that is taken after its answer before the
connection is closed: what a 413 takes too (the 1 MiB body cap, 32 times)."""


_REFUSED = "Invalid HTTP request received"  # as uvicorn's WARN for the parser's refusals


class _HeadersTooLarge(Exception):
    """Raised in a parser callback: httptools then stops and reports a callback error."""


class _HeadRefused(Exception):
    """Raised in a parser callback, as :class:`_HeadersTooLarge`: a Host count or a request
    target RFC 9112 section 3.2 refuses."""


class _GuardedHttpToolsProtocol(HeaderDeadline, UpgradeIgnoringProtocol):
    max_header_bytes = MAX_HEADER_BYTES
    max_unread_body_bytes = MAX_UNREAD_BODY_BYTES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_bytes = 0
        # Bytes of the reads that did not end a request's head: what the parser skips
        # (whitespace before a value, blank lines before the request line) is in none
        # of the parts it hands over, and 200 MiB of it passed a cap on those alone.
        self._head_received = 0
        self._head_ended_in_read = False
        # Set once such a head was refused while its client was still sending it: what
        # more may be read and dropped before the connection is closed (`_linger`).
        self._lingering: int | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._too_large = False
        self._target_too_long = False  # the cap was crossed in the request target
        self._hosts = 0  # Host header lines of the request being parsed
        self._head_refusal: str | None = None
        self._head_status = (400, "Bad Request")  # of a _head_refusal (505: a version)
        self._in_trailer = False  # the header section is over: fields now are trailers
        self._unread_body = 0  # body bytes that came after the request was answered
        # Bytes received while the request's body was being read, and how many of them
        # were body: the rest is chunked framing (sizes, extensions, trailers).
        self._body_open = False
        self._received_in_body = 0
        self._body_bytes = 0
        # The read being parsed: whether it ended a header section with no message
        # before it in the read (its first blank line then ends them), and the request
        # whose body it ended, if no other began after it; the last bytes of the read
        # before (a blank line may begin there).
        self._body_began_in_read = self._message_ended_in_read = False
        self._body_ended_last: Any = None
        self._read_tail = b""
        # This connection's requests not yet answered, oldest first (answers go out in
        # order, so the answered ones are always at the left).
        self._cycles: deque[Any] = deque()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
        # uvicorn tells only the newest request that its client left. With requests
        # pipelined behind it, the one being answered is an older one: its next write
        # went to the closed transport (uvloop raises RuntimeError), an 'Exception in
        # ASGI application' traceback and outcome 'error' for a client that went away.
        for cycle in self._cycles:
            if not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._hosts = 0
        self._transfer_coded = False
        self._in_trailer = False
        self._unread_body = 0
        self._body_open = False
        self._body_ended_last = None  # a message began after it
        self._arm_header_timer()

    def on_url(self, url: bytes) -> None:
        try:
            self._count(len(url))
        except _HeadersTooLarge:
            # RFC 9112 section 3: a target too long to parse MUST get 414, not 431.
            self._target_too_long = True
            raise
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        # ":" and CRLF, the least a field takes as sent ("a:" is four bytes): the optional
        # whitespace is in the reads' count (`_count_head_read`).
        self._count(len(name) + len(value) + 3)
        if self._in_trailer:
            # A chunked body's trailer field: RFC 9110 6.5.1 forbids merging it into the
            # header section, and uvicorn appended it to the very list the app reads as
            # the request's headers (a key or client id sent after the body counted).
            # Nothing here reads trailers: dropped, still counted against the cap.
            return
        lowered = name.lower()
        if lowered == b"host":
            self._hosts += 1
        elif lowered == b"transfer-encoding":
            self._transfer_coded = True
        super().on_header(name, value)

    def data_received(self, data: bytes) -> None:
        # Counted before the parser takes it: the part of a buffer that ends one request
        # and begins the next is then left out of the next one's count, never added.
        if self._lingering is not None:
            self._lingering -= len(data)
            if self._lingering < 0:
                self.transport.close()
            return
        in_body = self._body_open
        if in_body:
            self._received_in_body += len(data)
        in_head = not in_body
        self._body_began_in_read = self._message_ended_in_read = False
        self._head_ended_in_read = False
        self._body_ended_last = None
        super().data_received(data)
        if in_head and not self._head_ended_in_read:
            self._count_head_read(len(data))
        if self._body_began_in_read:
            # What came after the header section's blank line was body too: left out,
            # a whole request sent in one read went by the cap with 180 KB of extensions.
            seen = self._read_tail + data  # once a request: not a copy of every read
            self._received_in_body = len(seen) - seen.find(b"\r\n\r\n") - 4
        self._read_tail = (self._read_tail + data[-3:])[-3:]
        if self.transport.is_closing():
            return
        if self._body_open:
            self._check_chunk_framing()
            return
        ended = self._body_ended_last
        if ended is not None and ended is self.cycle and not ended.response_started:
            # Its body ended in this read, nothing after it: the count is exact. The app
            # has not run since, and is not given a body refused (as if it never ended).
            message = self._framing_refusal()
            if message is not None:
                ended.more_body = True
                self._refuse_framing(message)

    def _count_head_read(self, size: int) -> None:
        """A read wholly of a head not yet ended. The read that ends it is left out (the
        parts the parser hands over are counted exactly): its whitespace is bounded by
        one read, where the reads before were not bounded at all."""
        if self.transport.is_closing() or self._too_large:
            return
        self._head_received += size
        if self._head_received > self.max_header_bytes:
            self._too_large = True
            self._lingering = self.max_unread_body_bytes
            message = self._too_large_message()
            self.logger.warning("%s: %s", _REFUSED, message)
            self._answer_and_close(431, "Request Header Fields Too Large", message)

    def _framing_refusal(self) -> str | None:
        return framing_refusal(self._received_in_body, self._body_bytes, self.max_header_bytes)

    def _check_chunk_framing(self) -> None:
        message = self._framing_refusal()
        if message is not None:
            self._refuse_framing(message)

    def _refuse_framing(self, message: str) -> None:
        self.logger.warning("%s: %s", _REFUSED, message)
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:
            self._answer_and_close(400, "Bad Request", message)
        else:  # answered already: nothing more can be said on this connection
            self.transport.close()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        cycle = self.cycle
        if cycle is None or not cycle.response_complete:
            # Called per chunk of a chunked body: spared super()'s lookup.
            UpgradeIgnoringProtocol.on_body(self, body)
            return
        # Answered without reading its body (/health, a 404, 405 or 415): uvicorn reads
        # and drops the rest to reach the next request, however long it is said to be,
        # so one client could keep a core busy taking gigabytes. Past what a 413 takes,
        # the connection goes; the client has long had its answer.
        self._unread_body += len(body)
        if self._unread_body > self.max_unread_body_bytes:
            self.transport.close()

    def on_message_complete(self) -> None:
        cycle = self.cycle
        answered_first = cycle is not None and cycle.response_complete
        if self._transfer_coded and not self._ignoring_upgrade:
            self._body_ended_last = cycle  # its chunk framing is checked after the read
        self._message_ended_in_read = True
        super().on_message_complete()
        # After an ignored upgrade offer this is the end of the headers: the body is
        # still to come (ignored_upgrade_body_complete).
        self._body_open = self._ignoring_upgrade
        if answered_first and not self.transport.is_closing():
            self._arm_header_timer()  # idle from here until the next request begins

    def ignored_upgrade_body_complete(self) -> None:
        self._body_open = False
        if self._transfer_coded:  # checked after the read, as any other body's end
            self._body_ended_last = self.cycle
        super().ignored_upgrade_body_complete()

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        self._head_ended_in_read = True
        self._head_received = 0
        self._in_trailer = True
        self._body_open = True
        self._body_began_in_read = not self._message_ended_in_read
        self._received_in_body = self._body_bytes = 0
        version = self.parser.get_http_version()
        if self._version_refused(version):
            raise _HeadRefused
        # RFC 9112 section 3.2: 400 for an HTTP/1.1 request without Host and for any
        # request with several (h11 answers both so; httptools served them, and the Host
        # check read only the first of several, which a proxy may read otherwise).
        if self._hosts > 1 or (self._hosts == 0 and version == "1.1"):
            self._head_refusal = (f"a request needs exactly one Host header, not {self._hosts} "
                                  "(RFC 9112, section 3.2)")
            raise _HeadRefused
        self._head_refusal = (http10_framing_refusal(version, self._transfer_coded)
                              or target_refusal(self.parser.get_method(), self.url))
        if self._head_refusal is not None:
            raise _HeadRefused
        self.url = with_root_path(self.url)  # uvicorn took no path from it: a 400
        host_from_target(self.url, self.headers)
        super().on_headers_complete()
        cycles = self._cycles
        while cycles and cycles[0].response_complete:
            cycles.popleft()
        cycles.append(self.cycle)
        # The app's task is created but has not run yet: its first send sees the class.
        framed_for_http10(self.cycle, self.scope)
        offer_reset(self.cycle, self.scope)

    def _version_refused(self, version: str) -> bool:
        refusal = version_refusal(version)
        if refusal is not None:
            self._head_refusal, self._head_status = refusal, (505, "HTTP Version Not Supported")
        return refusal is not None

    def refusal(self, exc: Exception) -> str:
        # Our callbacks' refusals: the log line says which, as the parser's own do.
        if self._too_large:
            return f"{_REFUSED}: {self._too_large_message()}"
        if self._head_refusal is None and self.parser.get_method() == b"PRI":
            # HTTP/2's preface (prior knowledge): llhttp stops at it, and its reason was
            # the answer, a 400 saying "Pause on PRI/Upgrade". 505, as for HTTP/2.0 lines.
            self._version_refused(self.parser.get_http_version())
        if self._head_refusal is not None:
            return f"{_REFUSED}: {self._head_refusal}"
        return super().refusal(exc)

    def send_400_response(self, msg: str) -> None:
        # httptools reports our callback's exception as a parse error; say what it was.
        if self._too_large:
            status = ((414, "URI Too Long") if self._target_too_long
                      else (431, "Request Header Fields Too Large"))
            self._answer_and_close(*status, self._too_large_message())
            return
        if self._head_refusal is not None:
            self._answer_and_close(*self._head_status, self._head_refusal)
            return
        super().send_400_response(msg)

    def _too_large_message(self) -> str:
        part = "request target exceeds" if self._target_too_long else "request headers exceed"
        return f"{part} {self.max_header_bytes} bytes"

    def _count(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self.max_header_bytes:
            self._too_large = True
            raise _HeadersTooLarge

    def _answer_and_close(self, status: int, reason: str, message: str) -> None:
        body = message.encode("ascii")
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s"
            % (status, reason.encode("ascii"), len(body), body)
        )
        if self._lingering is None:
            self.transport.close()
            return
        self._linger()

    def _linger(self) -> None:
        """Close once the client has sent what it was sending, up to `_lingering` more
        bytes or the header timeout. Closed with unread bytes, the socket sent a reset,
        and the client's kernel dropped the 431 with it: a client sending a 1 MiB header
        in one write saw "connection reset", not the answer."""
        self._disarm_header_timer()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._linger_timer = self.loop.call_later(self.header_timeout, self.transport.close)


def guarded_http_protocol(*, header_timeout: float,
                          max_header_bytes: int = MAX_HEADER_BYTES) -> type[asyncio.Protocol]:
    """The protocol class to give ``uvicorn.Config(http=...)``."""
    assert httptools is not None  # a dependency: uvicorn would pick it on its own
    bases = (BoundedPipeline, RefusedBodies, InOrderRefusals, ClosedBeforeContinue,
             _GuardedHttpToolsProtocol)
    return type("GuardedHttpToolsProtocol", bases, {
        "header_timeout": header_timeout, "max_header_bytes": max_header_bytes,
    })
