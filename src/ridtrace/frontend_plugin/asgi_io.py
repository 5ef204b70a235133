"""Small HTTP helpers shared by the frontend routes and the worker app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "GuardedStreamingResponse",
    "fastapi_app",
    "plain_route",
    "read_body",
    "receive_body",
    "wait_for_disconnect",
]

# A body over the cap is still read (and thrown away) up to this multiple of the cap,
# so the client gets to read our 413 instead of a reset connection mid-upload.
_DRAIN_FACTOR = 32


def fastapi_app(*, app_class: type[FastAPI] | None = None, **options: Any) -> FastAPI:
    """A FastAPI app for ridtrace's own servers: FastAPI's native telemetry off.

    ridtrace's middleware opens the one server span per request (docs/tracing.md). In
    FastAPI releases with built-in telemetry that layer switches itself on once a
    tracer provider is set and then wraps every request a second time; in ridtrace's
    own apps it only cost CPU (issue 15). Apps built around ``create_router`` keep
    FastAPI's telemetry if they want it, and ridtrace enriches its span instead.
    ``app_class`` is a ``FastAPI`` subclass to build instead. FastAPI is imported here,
    not with this module: the worker, which shares the module, runs without it.

    A path with a trailing slash (``/v1/chat/completions/``) is a 404 like any unknown
    path: Starlette's redirect to the other spelling built its ``Location`` from the
    client's ``Host`` header, so anyone could make the server send a caller elsewhere.
    """
    from fastapi import FastAPI

    build = app_class or FastAPI
    options.setdefault("redirect_slashes", False)
    try:
        from fastapi.telemetry import TelemetryConfig
    except ImportError:  # FastAPI before built-in telemetry: nothing to turn off
        return build(**options)
    off = TelemetryConfig(tracing=False, metrics=False, logs=False)
    return build(telemetry=off, **options)


def plain_route(path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
    """A ``POST`` Starlette route that names itself in ``scope["route"]``.

    The inference handlers read the body themselves, so FastAPI's dependency solving
    and route contexts were pure per-request cost (issue 15). FastAPI sets
    ``scope["route"]`` only for its own routes, and the tracing middleware reads the
    route template (``http.route``, the ``route`` log field) from there; FastAPI may
    rebuild an included route, so the endpoint, not the route class, records it.
    """

    async def named(request: Request) -> Response:
        request.scope["route"] = route
        return await endpoint(request)

    named.__name__ = endpoint.__name__
    named.__doc__ = endpoint.__doc__
    route = Route(path, named, methods=["POST"])
    return route


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or ``None`` when it is larger than ``limit`` bytes.

    Counts what actually arrives rather than trusting ``content-length``.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit * _DRAIN_FACTOR:
        return None
    body = _CappedBody(limit)
    async for chunk in request.stream():
        if not body.add(chunk):
            break
    return body.result()


async def receive_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """:func:`read_body` for plain ASGI apps: the body, or ``None`` when over ``limit``.

    Raises ``starlette.requests.ClientDisconnect`` if the client leaves mid-body, as
    ``Request.stream`` does. A body that came in one message is returned as it is.
    """
    for name, value in scope["headers"]:
        if name == b"content-length":
            if value.isdigit() and int(value) > limit * _DRAIN_FACTOR:
                return None
            break
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        whole: bytes = message.get("body", b"")
        return whole if len(whole) <= limit else None
    body = _CappedBody(limit)
    while True:
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if not body.add(message.get("body", b"")) or not message.get("more_body", False):
            break
        message = await receive()
    return body.result()


class _CappedBody:
    """A body read chunk by chunk, kept up to `limit` bytes, counted up to the drain cap."""

    __slots__ = ("_limit", "_parts", "_size")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def add(self, chunk: bytes) -> bool:
        """Take one chunk; False once past the drain cap (stop reading)."""
        self._size += len(chunk)
        if self._size <= self._limit:
            self._parts.append(chunk)
            return True
        self._parts.clear()
        return self._size <= self._limit * _DRAIN_FACTOR

    def result(self) -> bytes | None:
        """The body, or None when it was over the limit."""
        return None if self._size > self._limit else b"".join(self._parts)


async def wait_for_disconnect(receive: Receive) -> None:
    """Return when the client goes away (call only after the body was read)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class GuardedStreamingResponse(StreamingResponse):
    """A streaming response whose cleanup runs however the exchange ends.

    Starlette cancels the body iterator when the client disconnects but never closes
    it, so a generator's ``finally`` could wait for garbage collection; and a response
    that fails before its first chunk never starts the generator at all. This class
    closes the iterator and runs ``cleanup`` in ``finally`` of the ASGI call.

    It also streams with one plain watcher task for the disconnect instead of
    Starlette's anyio task group per response, which cost about a tenth of a worker's
    CPU per request (issue 15): when the client leaves, the watcher cancels the
    streaming task, and that cancellation ends here.
    """

    def __init__(
        self,
        content: AsyncIterator[bytes],
        *,
        cleanup: Callable[[], None],
        status_code: int = 200,
        media_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(content, status_code=status_code, media_type=media_type, headers=headers)
        self._iterator = content
        self._cleanup = cleanup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None  # ASGI apps run in a task
        gone = asyncio.Event()
        watcher = asyncio.ensure_future(_cancel_on_disconnect(receive, task, gone))
        try:
            await send({"type": "http.response.start", "status": self.status_code,
                        "headers": self.raw_headers})
            async for chunk in self._iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not gone.is_set():
                raise
            # Our watcher's cancellation: the client left, which ends the exchange.
            uncancel = getattr(task, "uncancel", None)
            if uncancel is not None:
                uncancel()
        finally:
            watcher.cancel()
            aclose = getattr(self._iterator, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await aclose()
            self._cleanup()


async def _cancel_on_disconnect(
    receive: Receive, task: asyncio.Task[Any], gone: asyncio.Event
) -> None:
    await wait_for_disconnect(receive)
    gone.set()
    task.cancel()
