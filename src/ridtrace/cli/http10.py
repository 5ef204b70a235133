"""HTTP/1.0 requests get HTTP/1.0 framing: no chunked coding, no 1xx.

uvicorn's httptools protocol chunks every answer that has no ``content-length``
(streams), whatever the request's version. HTTP/1.0 has no chunked coding and a server
must not send it one (RFC 9112 §6.1), so a 1.0 client read the hex chunk sizes as part
of the SSE events. Such an answer is delimited by closing the connection (RFC 9112
§6.3), which uvicorn already does after every 1.0 answer; h11 frames it the same way.
uvicorn also answered ``Expect: 100-continue`` with ``100 Continue``, a status HTTP/1.0
does not have (RFC 9110 §10.1.1: a 1.0 request's expectation is ignored, §15.2: no
1xx to a 1.0 client), which such a client read as its final answer.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

__all__ = ["framed_for_http10"]

_NO_BODY_STATUSES = frozenset({204, 304})


class _Http10Cycle(RequestResponseCycle):
    """uvicorn's cycle, writing a length-less body as it comes, closed at its end."""

    _close_delimited = False

    async def send(self, message: dict) -> None:  # type: ignore[type-arg, override]
        if message["type"] == "http.response.start" and not self.response_started:
            headers = message.get("headers", ())
            framed = any(name.lower() in (b"content-length", b"transfer-encoding")
                         for name, _ in headers)
            if (not framed and self.scope["method"] != "HEAD"
                    and message["status"] not in _NO_BODY_STATUSES):
                # Not None: uvicorn adds "transfer-encoding: chunked" only when it is.
                self.chunked_encoding = False
                self._close_delimited = True
        elif message["type"] == "http.response.body" and self._close_delimited:
            # uvicorn's plain-body path checks the bytes against the expected length:
            # each piece is exactly what is expected, and keep_alive is off for 1.0, so
            # the last piece closes the connection, which ends the body.
            self.expected_content_length = len(message.get("body", b""))
        await super().send(message)  # type: ignore[arg-type]


def framed_for_http10(cycle: RequestResponseCycle | None, scope: object) -> None:
    """Give the cycle of an HTTP/1.0 request (``scope``) the framing above, before its
    app runs. Upgrades leave the connection's previous cycle in place: not touched."""
    if (cycle is not None and cycle.scope is scope and type(cycle) is RequestResponseCycle
            and cycle.scope.get("http_version") == "1.0" and not cycle.keep_alive):
        cycle.waiting_for_100_continue = False
        cycle.__class__ = _Http10Cycle
