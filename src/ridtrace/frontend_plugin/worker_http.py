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

The pool is here; one connection and the answer read on it are in `worker_connection`.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import time
from collections import deque
from typing import cast

from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.frontend_plugin.wire import CLIENT_KEEP_ALIVE_SECONDS
from ridtrace.frontend_plugin.worker_connection import (
    OutOfLocalResources,
    WorkerHttpError,
    WorkerRefusedConnection,
    WorkerResponse,
    _Connection,
    _Origin,
)

__all__ = ["ConnectionPool"]

# What socket() and connect() fail with when this process or the kernel has no room for
# another connection (the errors asyncio's accept loop treats as "out of system
# resource"): no fault of the worker being connected to.
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def _out_of_descriptors() -> bool:
    """Whether this process can open no socket now.

    A worker named by host name is looked up first, and a lookup with no descriptor left
    to read /etc/hosts or ask DNS with fails as 'Name or service not known': it was
    taken for a worker that does not exist, and marked it down.
    """
    try:
        socket.socket().close()
    except OSError as exc:
        return exc.errno in _OUT_OF_RESOURCES
    return False


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
        # Per worker, the timer that closes its idle connections once they expire.
        self._sweeps: dict[_Origin, asyncio.TimerHandle] = {}
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
            OutOfLocalResources: this process could not open a connection.
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
            if exc.errno in _OUT_OF_RESOURCES or (
                isinstance(exc, socket.gaierror) and _out_of_descriptors()
            ):
                raise OutOfLocalResources(
                    f"connect to {origin.host}:{origin.port}: {exc}: this process is out of "
                    "file descriptors or socket memory; raise its open-file limit (ulimit -n, "
                    "LimitNOFILE) or lower max_connections"
                ) from None
            # Refused at once (nothing listens there): the request was not sent.
            refused = isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED
            raise (WorkerRefusedConnection if refused else WorkerHttpError)(
                f"connect to {origin.host}:{origin.port}: {exc}") from None
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
        self._expire(conn.origin, now)

    def _expire(self, origin: _Origin, now: float) -> None:
        """Close `origin`'s expired idle connections, and time the next expiry: with no
        more traffic to that worker (a burst over, the worker marked down), a burst's
        connections stayed open until the worker closed them, or for ever."""
        idle = self._idle.get(origin)
        while idle and (idle[0].lost or now - idle[0].idle_since >= self.keep_alive):
            idle.popleft().drop()
        if idle and origin not in self._sweeps:
            self._sweeps[origin] = asyncio.get_running_loop().call_later(
                idle[0].idle_since + self.keep_alive - now, self._sweep, origin)

    def _sweep(self, origin: _Origin) -> None:
        del self._sweeps[origin]
        self._expire(origin, time.monotonic())

    def idle_connections(self) -> int:
        """Connections waiting in the pool."""
        return sum(len(idle) for idle in self._idle.values())

    async def aclose(self) -> None:
        """Close every idle connection (those in use close with their answers)."""
        for sweep in self._sweeps.values():
            sweep.cancel()
        self._sweeps.clear()
        for idle in self._idle.values():
            while idle:
                idle.pop().drop()
        await asyncio.sleep(0)  # let the transports close
