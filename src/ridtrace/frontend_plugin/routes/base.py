"""What each inference API contributes: body parsing, id rules, error shape, rendering."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from ridtrace.frontend_plugin import json_codec
from ridtrace.frontend_plugin.bodies import Parsed
from ridtrace.frontend_plugin.pump import Failed, Finished
from ridtrace.frontend_plugin.settings import FrontendSettings

__all__ = ["INTERNAL_ERROR", "ApiSpec", "Ids", "Renderer", "SseTemplate", "sse"]

INTERNAL_ERROR = "Internal server error"
"""What a caller is told of a crash: the exception's text is the log's, not the caller's."""


# Line ends to Python's str.splitlines, not to SSE: orjson writes them raw, and a reader
# splitting lines as str does (httpx's iter_lines, the SDKs' `with_streaming_response`
# `.iter_lines()`) cut the data line of a prompt holding one in two, and lost the chunk.
# In UTF-8 these bytes encode only these characters, inside JSON strings only.
_STR_LINE_ENDS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"),
                  (b"\xe2\x80\xa9", b"\\u2029"))


def one_line(payload: bytes) -> bytes:
    """`payload` (JSON) with the characters str.splitlines breaks at escaped."""
    if b"\xc2\x85" in payload or b"\xe2\x80" in payload:
        for raw, escaped in _STR_LINE_ENDS:
            payload = payload.replace(raw, escaped)
    return payload


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event."""
    payload = one_line(data.encode() if isinstance(data, str) else json_codec.dumps(data))
    if event is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


# Unguessable per process, so no client-chosen string (a model name) can fake it.
_HOLE = "\x00" + uuid.uuid4().hex


class SseTemplate:
    """An SSE event whose only per-chunk part is one string value, encoded once.

    ``render(text)`` returns exactly ``sse(data with text in place)`` — orjson keeps key
    order and writes no spaces — but encodes only ``text`` per chunk instead of the whole
    event (issue 15: per-token work).

    Args:
        data: the event, with :attr:`HOLE` as the value that changes per chunk.
        event: the SSE event name, if any.
    """

    HOLE = _HOLE
    __slots__ = ("_prefix", "_suffix")

    def __init__(self, data: dict[str, Any], event: str | None = None) -> None:
        self._prefix, _, self._suffix = sse(data, event).rpartition(orjson.dumps(_HOLE))

    def render(self, text: str) -> bytes:
        """The event with ``text`` in the hole."""
        try:
            encoded = orjson.dumps(text)
        except TypeError:  # a lone surrogate the prompt carried (json_codec)
            encoded = json_codec.dumps(text)
        return self._prefix + one_line(encoded) + self._suffix


@dataclass(frozen=True, slots=True)
class Ids:
    """The ids a response may show.

    ``request_id`` is the internal id (response ids derive from it); ``public_id`` is
    the client's id where the route returns one (native generate routes), else the
    internal id.
    """

    request_id: str
    public_id: str

    @property
    def hex(self) -> str:
        """The internal id without dashes, for ``msg_…`` / ``resp_…`` style ids."""
        return self.request_id.replace("-", "")


class Renderer:
    """Turns one call's items into an API's SSE events or JSON body.

    Subclasses override what their API needs; ``created`` is shared by all of them.
    """

    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        self.parsed = parsed
        self.ids = ids
        self.created = int(time.time())
        # The text of a non-streamed reply piece by piece (one piece per token), set
        # before body() for what needs the tokens (logprobs).
        self.pieces: list[str] = []

    def prompt_token_count(self, finished: Finished) -> int:
        """The prompt's tokens: as many as the ids a caller sent as its prompt, else
        what the worker counted."""
        sent = self.parsed.prompt_tokens
        return finished.prompt_tokens if sent is None else sent

    def start(self) -> bytes:
        """Events that open a stream, before anything the worker sent."""
        return b""

    def text_start(self) -> bytes:
        """Events sent once before the first piece of text, only when there is one."""
        return b""

    def delta(self, text: str) -> bytes:
        """One piece of text."""
        raise NotImplementedError

    def finish(self, finished: Finished, text: str) -> bytes:
        """Events that end a successful stream (``text`` is all that was sent)."""
        raise NotImplementedError

    def fail(self, failed: Failed) -> bytes:
        """The event that ends a stream that cannot complete."""
        raise NotImplementedError

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        """The non-streaming response body."""
        raise NotImplementedError


class ApiSpec:
    """One inference route: path, endpoint name, id rules, parsing and shapes.

    Attributes:
        path: the route path.
        endpoint: the ``endpoint`` value logged on ``request.end``.
        body_id_field: body field carrying a client id (``request_id`` / ``rid``).
        body_id_first: the body id wins over the ``x-request-id`` header.
        legacy_id_headers: headers whose value became the in-flight key before the fix
            (used only by the legacy policy, which reproduces that).
    """

    path = ""
    endpoint = ""
    body_id_field: str | None = None
    body_id_first = False
    legacy_id_headers: tuple[str, ...] = ("x-request-id",)

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        """Validate ``body``; raises ``InvalidRequest``."""
        raise NotImplementedError

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        """A renderer for one response."""
        raise NotImplementedError

    def error_body(self, status: int, message: str, kind: str, param: str | None,
                   code: str | None = None) -> dict[str, Any]:
        """The API's error JSON (OpenAI's shape unless overridden)."""
        return {"error": {"message": message, "type": kind, "param": param, "code": code}}

    def error_payload(
        self, status: int, message: str, kind: str | None = None, param: str | None = None,
        code: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`error_body` with the default ``kind`` for ``status``."""
        if kind is None:
            kind = "invalid_request_error" if status < 500 else "server_error"
        return self.error_body(status, message, kind, param, code)
