"""One keep-alive connection to a worker, and the answer read on it.

`_Origin` is a worker URL parsed once, `_Connection` the asyncio protocol that feeds
httptools, and `WorkerResponse` the answer as the dispatcher reads it, with back-pressure
on a slow caller. The pool that hands connections out is `worker_http.ConnectionPool`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, cast

import httptools

from ridtrace.frontend_plugin.redaction import checked_worker_url

if TYPE_CHECKING:
    from ridtrace.frontend_plugin.worker_http import ConnectionPool

__all__ = ["OutOfLocalResources", "WorkerHttpError", "WorkerRefusedConnection", "WorkerResponse"]

# Stop reading a worker while this much of its answer waits for a slow caller.
_HIGH_WATER = 256 * 1024
_LOW_WATER = 64 * 1024


class WorkerHttpError(Exception):
    """A worker could not be reached, broke the connection, or did not speak HTTP."""


class WorkerRefusedConnection(WorkerHttpError):
    """The worker's host refused the connection at once: nothing was sent, no time spent."""


class OutOfLocalResources(Exception):
    """This process could not open a socket (no file descriptor or socket memory left):
    its own overload, which says nothing about the worker it was meant for."""


class _Origin:
    """A worker URL, parsed once: where to connect and the fixed part of the request."""

    __slots__ = ("head", "host", "port", "ssl")

    def __init__(self, url: str, path: str) -> None:
        parts = checked_worker_url(url)
        assert parts.hostname is not None  # checked
        self.ssl = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.ssl else 80)
        target = parts.path.rstrip("/") + path
        # Host is host[:port] only (RFC 9110 7.2): userinfo in it would hand the URL's
        # credentials to the worker and anything that logs its headers.
        host = parts.netloc.rpartition("@")[2]
        self.head = f"POST {target} HTTP/1.1\r\nHost: {host}\r\n".encode("latin-1")


class _Connection(asyncio.Protocol):
    """One TCP connection; the response in progress gets what the parser finds."""

    def __init__(self, origin: _Origin) -> None:
        self.origin = origin
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.response: WorkerResponse | None = None
        self.lost = False
        self.idle_since = 0.0
        # An interim 1xx answer (103 Early Hints, 100 Continue) is being parsed: not the
        # answer. Taken for it, the request failed as refused and the connection went
        # back to the pool with the real answer still to come, which the next request
        # on it then read as its own.
        self.interim = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.response is None:  # bytes nobody asked for: the connection is unusable
            self.drop()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.response.fail(WorkerHttpError(f"invalid HTTP from the worker: {exc}"))
            self.drop()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.response is not None:
            self.response.fail(WorkerHttpError(f"worker connection lost: {exc or 'closed'}"),
                               closed=exc is None)

    def drop(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()

    # httptools callbacks
    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # RFC 9110 15.2: the answer follows
            self.interim = True
        elif self.response is not None:
            self.response.headers_done(status, self.parser.should_keep_alive())

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response.feed(body)

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
        elif self.response is not None:
            self.response.feed_eof()


class WorkerResponse:
    """A worker's answer: :attr:`status` once the head arrived, then the body as it comes.

    ``release()`` hands the connection back when the body was read to its end;
    ``close()`` drops it (how a worker learns that its caller went away).
    """

    __slots__ = ("_chunks", "_conn", "_error", "_paused", "_pool", "_size", "_waiter",
                 "closed", "eof", "keep_alive", "status")

    def __init__(self, conn: _Connection, pool: ConnectionPool) -> None:
        self._conn: _Connection | None = conn
        self._pool = pool
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._error: Exception | None = None
        self.status = 0
        self.keep_alive = False
        self.eof = False
        self.closed = False  # the worker closed the connection cleanly before the end

    # fed by the connection
    def headers_done(self, status: int, keep_alive: bool) -> None:
        self.status, self.keep_alive = status, keep_alive
        self._wake()

    def feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        conn = self._conn
        if self._size > _HIGH_WATER and not self._paused and conn and conn.transport:
            self._paused = True
            conn.transport.pause_reading()
        self._wake()

    def feed_eof(self) -> None:
        self.eof = True
        self._wake()

    def fail(self, exc: Exception, *, closed: bool = False) -> None:
        if not self.eof:
            self._error = exc
            self.closed = closed
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    # read by the dispatcher
    async def start(self) -> None:
        """Wait for the status line and headers."""
        while not self.status:
            await self._wait()

    async def readany(self) -> bytes:
        """What arrived of the body since the last read; ``b""`` at its end."""
        while not self._chunks:
            if self.eof:
                return b""
            await self._wait()
        data = self._chunks.popleft() if len(self._chunks) == 1 else b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        if self._paused and self._conn is not None and self._conn.transport is not None:
            self._paused = False
            self._conn.transport.resume_reading()
        return data

    async def read(self, limit: int | None = None, *, to_close: bool = False) -> bytes:
        """The rest of the body; with ``limit``, what arrived once that many bytes did
        (the body may go on: :attr:`eof` says whether it ended).

        ``to_close``: a clean close ends the body. A body with no length that is not
        chunked ends so (RFC 9112 6.3, as a proxy may frame a refusal), which httptools,
        with no end-of-input call, can only report as a lost connection.
        """
        parts = []
        size = 0
        while True:
            try:
                chunk = await self.readany()
            except WorkerHttpError:
                if to_close and self.closed:
                    break
                raise
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
            if limit is not None and size >= limit:
                break
        return b"".join(parts)

    def release(self) -> None:
        """Back to the pool if the answer was read to its end and may be followed; else
        :meth:`close`. Idempotent."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.give_back(conn, reuse=self.eof and self.keep_alive and not self._paused)

    def close(self) -> None:
        """Drop the connection. Idempotent."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.give_back(conn, reuse=False)
