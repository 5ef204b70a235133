"""Small HTTP helpers shared by the frontend routes and the worker app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

__all__ = [
    "EarlyRefusal",
    "GuardedStreamingResponse",
    "early_refusal",
    "fastapi_app",
    "json_body_refusal",
    "plain_route",
    "read_body",
    "receive_body",
    "transfer_coding_refusal",
    "wait_for_disconnect",
]

# A body over the cap is still read (and thrown away) up to this multiple of the cap,
# so the client gets to read our 413 instead of a reset connection mid-upload.
_DRAIN_FACTOR = 32


def json_body_refusal(scope: Scope) -> str | None:
    """Why a request's body cannot be read as JSON from its headers, or ``None``.

    The body is JSON when ``content-type`` is absent (curl with ``--data-binary``,
    clients that send none) or names JSON (``application/json``,
    ``application/*+json``), as FastAPI decides for its own body parameters, and it
    is not compressed. Parsing a ``text/plain``, form or multipart body as JSON
    anyway would let any web page make a visitor's browser call the routes (those
    types are sent cross-site without a preflight), and a gzip body failed with a
    confusing "not valid UTF-8".
    """
    for name, value in scope["headers"]:
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            main, _, sub = media.partition(b"/")
            if main != b"application" or not (sub == b"json" or sub.endswith(b"+json")):
                shown = media.decode("latin-1")[:64]
                if not shown.isprintable():
                    shown = "?"
                return f"unsupported content-type '{shown}': send 'application/json'"
        elif name == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
            return "unsupported content-encoding: send the JSON body uncompressed"
    return None


# Transfer codings the server undoes itself: chunked (the HTTP parser), and identity
# (no coding at all, as old clients still name it).
_KNOWN_TRANSFER_CODINGS = frozenset({b"chunked", b"identity"})


def transfer_coding_refusal(scope: Scope) -> str | None:
    """Why the request's ``transfer-encoding`` cannot be read, or ``None``.

    The HTTP parser undoes ``chunked`` only: for ``gzip, chunked`` it hands on the body
    still gzipped, which then failed as "invalid JSON body" (400). RFC 9112 (section
    6.1) asks for 501 Not Implemented for a transfer coding the server does not
    understand. A coding list that does not end in ``chunked`` never gets here: the
    parser answers that 400 itself, as the RFC requires (section 6.3).
    """
    for name, value in scope["headers"]:
        if name == b"transfer-encoding":
            for coding in value.split(b","):
                coding = coding.split(b";", 1)[0].strip().lower()
                if coding and coding not in _KNOWN_TRANSFER_CODINGS:
                    shown = coding.decode("latin-1")[:32]
                    if not shown.isprintable():
                        shown = "?"
                    return (f"unsupported transfer-encoding '{shown}': "
                            "send the body chunked or with a content-length")
    return None


def fastapi_app(*, app_class: type[FastAPI] = FastAPI, **options: Any) -> FastAPI:
    """A FastAPI app for ridtrace's own servers: FastAPI's native telemetry off.

    ridtrace's middleware opens the one server span per request (docs/tracing.md). In
    FastAPI releases with built-in telemetry that layer switches itself on once a
    tracer provider is set and then wraps every request a second time; in ridtrace's
    own apps it only cost CPU (issue 15). Apps built around ``create_router`` keep
    FastAPI's telemetry if they want it, and ridtrace enriches its span instead.
    ``app_class`` is a ``FastAPI`` subclass to build instead.

    A path with a trailing slash (``/v1/chat/completions/``) is a 404 like any unknown
    path: Starlette's redirect to the other spelling built its ``Location`` from the
    client's ``Host`` header, so anyone could make the server send a caller elsewhere.
    """
    options.setdefault("redirect_slashes", False)
    try:
        from fastapi.telemetry import TelemetryConfig
    except ImportError:  # FastAPI before built-in telemetry: nothing to turn off
        return app_class(**options)
    off = TelemetryConfig(tracing=False, metrics=False, logs=False)
    return app_class(telemetry=off, **options)


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


@dataclass(frozen=True)
class EarlyRefusal:
    """A request answered from its headers alone, its body left unread."""

    status: int
    message: str
    # The unread body may still come: the connection cannot carry another request.
    close: bool


def early_refusal(scope: Scope, limit: int) -> EarlyRefusal | None:
    """What every route that reads a JSON body answers before reading it, or ``None``:
    501 for a transfer coding the parser does not undo (the client's fault though a
    5xx: the RFC's code), 415 for a body that is not plain JSON, 413 for an announced
    body over ``limit`` that waits for ``100 Continue``."""
    refusal = transfer_coding_refusal(scope)
    if refusal is not None:
        return EarlyRefusal(501, refusal, close=True)
    refusal = json_body_refusal(scope)
    if refusal is not None:
        return EarlyRefusal(415, refusal, close=False)
    if _refused_before_continue(scope, limit):
        return EarlyRefusal(413, f"request body exceeds {limit} bytes", close=True)
    return None


def _refused_before_continue(scope: Scope, limit: int) -> bool:
    """True when the client waits for ``100 Continue`` before sending a body whose
    ``content-length`` is already over ``limit``.

    Answering 413 without the 100 spares it the upload (RFC 9110 §10.1.1); reading
    the body, as for any request, first sent it the 100 and then took up to the drain
    cap of bytes it did not want. The body is then never sent, so the connection
    cannot carry another request: the answer closes it.
    """
    expects = declared = False
    for name, value in scope["headers"]:
        if name == b"expect":
            expects = value.lower() == b"100-continue"
        elif name == b"content-length":
            declared = value.isdigit() and int(value) > limit
    return expects and declared


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
