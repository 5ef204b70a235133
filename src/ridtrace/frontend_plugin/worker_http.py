"""The worker hop's HTTP/1.1 client: one buffer out, httptools in, pooled keep-alive.

Every request on this hop is the same ``POST`` of a JSON envelope to one of a few
workers. aiohttp's general-purpose client spent about a fifth of the frontend's CPU per
request on it (URL and header objects, cookie jar, payload registry, trace hooks,
timers; issue 15). Here the request is written as one buffer and the answer is parsed
by httptools (llhttp, the C parser uvicorn serves with), which also undoes chunked
framing; what is left to this module is the pool.

Keep-alive safety: a connection goes back to the pool only when its answer was read
to the end and neither side asked to close; it is handed out again only if the worker
has not closed it since and it has been idle less than ``CLIENT_KEEP_ALIVE_SECONDS``,
well below the keep-alive of ``ridtrace serve``. Anything else drops it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import cast

import httptools

from ridtrace.frontend_plugin.redaction import checked_worker_url
from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.frontend_plugin.wire import CLIENT_KEEP_ALIVE_SECONDS

__all__ = ["ConnectionPool", "WorkerHttpError", "WorkerResponse"]

# Stop reading a worker while this much of its answer waits for a slow caller.
_HIGH_WATER = 256 * 1024
_LOW_WATER = 64 * 1024


class WorkerHttpError(Exception):
    """A worker could not be reached, broke the connection, or did not speak HTTP."""


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
            self.response.fail(WorkerHttpError(f"worker connection lost: {exc or 'closed'}"))

    def drop(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()

    # httptools callbacks
    def on_headers_complete(self) -> None:
        if self.response is not None:
            self.response.headers_done(self.parser.get_status_code(),
                                       self.parser.should_keep_alive())

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response.feed(body)

    def on_message_complete(self) -> None:
        if self.response is not None:
            self.response.feed_eof()


class WorkerResponse:
    """A worker's answer: :attr:`status` once the head arrived, then the body as it comes.

    ``release()`` hands the connection back when the body was read to its end;
    ``close()`` drops it (how a worker learns that its caller went away).
    """

    __slots__ = ("_chunks", "_conn", "_error", "_paused", "_pool", "_size", "_waiter", "eof",
                 "keep_alive", "status")

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

    def fail(self, exc: Exception) -> None:
        if not self.eof:
            self._error = exc
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

    async def read(self, limit: int | None = None) -> bytes:
        """The rest of the body; with ``limit``, what arrived once that many bytes did
        (the body may go on: :attr:`eof` says whether it ended)."""
        parts = []
        size = 0
        while chunk := await self.readany():
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


class ConnectionPool:
    """Keep-alive connections to the workers, at most ``limit`` in use at once.

    Args:
        limit: connections in use at once (further requests wait for one).
        connect_timeout: seconds to open a connection.
        keep_alive: how long an idle connection may be handed out again.
    """

    def __init__(
        self, *, limit: int, connect_timeout: float, keep_alive: float = CLIENT_KEEP_ALIVE_SECONDS
    ) -> None:
        self.keep_alive = keep_alive
        self._connect_timeout = connect_timeout
        self._slots = asyncio.Semaphore(limit)
        self._origins: dict[str, _Origin] = {}
        self._idle: dict[_Origin, deque[_Connection]] = {}
        self.opened = 0
        """Connections opened so far (for tests and the debug endpoint)."""

    async def reserve(self) -> None:
        """Wait for one of the ``limit`` connections; pass it on with ``post(reserved=True)``.

        Waiting here is the frontend's own queue, not a worker being slow: a caller that
        bounds the worker's answer with a timeout reserves first, outside that timeout.
        """
        await self._slots.acquire()

    def unreserve(self) -> None:
        """Give back a slot from :meth:`reserve` that no :meth:`post` will use."""
        self._slots.release()

    async def post(
        self, url: str, path: str, body: bytes, headers: dict[str, str], *,
        reserved: bool = False,
    ) -> WorkerResponse:
        """Send ``POST url+path`` and return once the answer's head arrived.

        ``reserved``: the caller already holds a slot from :meth:`reserve`; it is
        handed back with the response (or here, on any failure).

        Raises:
            WorkerHttpError: the connection failed or the answer was not HTTP.
        """
        try:
            origin = self._origins.get(url)
            if origin is None:
                origin = self._origins[url] = _Origin(url, path)
            request = [origin.head]
            for name, value in headers.items():
                if "\r" in value or "\n" in value:
                    raise ValueError(f"header {name!r} holds a line break")
                request.append(f"{name}: {value}\r\n".encode("latin-1"))
            request.append(b"content-length: %d\r\n\r\n" % len(body))
            request.append(body)
        except BaseException:
            if reserved:
                self._slots.release()
            raise
        if not reserved:
            await self._slots.acquire()
        response: WorkerResponse | None = None
        try:
            conn = self._reuse(origin) or await self._connect(origin)
            response = conn.response = WorkerResponse(conn, self)
            cast(asyncio.Transport, conn.transport).write(b"".join(request))
            await response.start()
        except BaseException:
            if response is not None:
                response.close()
            else:
                self._slots.release()
            raise
        return response

    def _reuse(self, origin: _Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.lost and now - conn.idle_since < self.keep_alive:
                return conn
            conn.drop()
        return None

    async def _connect(self, origin: _Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            with Deadline(self._connect_timeout):
                _, conn = await loop.create_connection(
                    lambda: _Connection(origin), origin.host, origin.port,
                    ssl=origin.ssl or None,
                )
        except TimeoutError:
            raise WorkerHttpError(
                f"connect to {origin.host}:{origin.port} timed out"
            ) from None
        except OSError as exc:
            raise WorkerHttpError(f"connect to {origin.host}:{origin.port}: {exc}") from None
        self.opened += 1
        return conn

    def give_back(self, conn: _Connection, *, reuse: bool) -> None:
        """Return a connection after its answer (see :meth:`WorkerResponse.release`)."""
        self._slots.release()
        conn.response = None
        if not reuse or conn.lost:
            conn.drop()
            return
        now = time.monotonic()
        conn.idle_since = now
        idle = self._idle.setdefault(conn.origin, deque())
        idle.append(conn)
        # The oldest idle ones expire here, so a burst's connections do not linger.
        while idle and (idle[0].lost or now - idle[0].idle_since >= self.keep_alive):
            idle.popleft().drop()

    def idle_connections(self) -> int:
        """Connections waiting in the pool."""
        return sum(len(idle) for idle in self._idle.values())

    async def aclose(self) -> None:
        """Close every idle connection (those in use close with their answers)."""
        for idle in self._idle.values():
            while idle:
                idle.pop().drop()
        await asyncio.sleep(0)  # let the transports close
