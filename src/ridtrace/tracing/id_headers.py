"""The id headers on a response: the server's ``request_id`` and the echoed client id."""

from __future__ import annotations

from starlette.types import Message

from ridtrace.tracing.context import RequestContext

__all__ = ["IdHeaders"]


class IdHeaders:
    """The two header names as lower-case bytes, compared once per response start."""

    __slots__ = ("_client", "_response", "_stripped", "_stripped_server_only")

    def __init__(self, client_id_header: str, response_id_header: str) -> None:
        self._client = client_id_header.lower().encode("latin-1")
        self._response = response_id_header.lower().encode("latin-1")
        self._stripped = {self._client, self._response}
        self._stripped_server_only = {self._response}

    def server_id(self, request_id: str) -> tuple[bytes, bytes]:
        """The response header that carries the server's ``request_id``."""
        return (self._response, request_id.encode("latin-1"))

    def on_response_start(
        self,
        message: Message,
        ctx: RequestContext,
        extra: list[tuple[bytes, bytes]],
        rejected: str | None,
    ) -> Message:
        """A copy of a response start with the id headers: an app may send the same
        message again, and must not find our headers already in it."""
        # The echoed client id is the validated one: printable ASCII, capped, so it
        # cannot split the header block. Read now: a route may have learnt it from the body.
        x_request_id = ctx.x_request_id
        # Replace, never duplicate: the app's server-id header is always dropped, its
        # client-id header when the client sent one (ours replaces it; a refused value
        # the app echoed raw must not go out either). When the client sent none, the
        # app's own is kept: asgi-correlation-id, inside ridtrace, answers with the id
        # it generated and logged, and stripping it left the caller nothing to quote.
        if x_request_id is not None or rejected is not None:
            stripped = self._stripped
        else:
            stripped = self._stripped_server_only
        # A plain loop: on this per-response path it beat both a comprehension and a
        # C-level "any of ours?" pre-check followed by a copy.
        headers: list[tuple[bytes, bytes]] = []
        for header in message.get("headers", ()):
            if header[0].lower() not in stripped:
                headers.append(header)
        if x_request_id is not None:
            headers.append((self._client, x_request_id.encode("latin-1")))
        if ctx.answered_as is not None:
            extra = [self.server_id(ctx.answered_as), *extra[1:]]
        if len(extra) > 1:  # the deprecation headers, for a request that used an old one
            extra = _unless_the_app_said_so(headers, extra)
        headers += extra
        return dict(message, headers=headers)


# RFC 9745's Deprecation is one structured-field Item and RFC 8594's Sunset one date:
# a second field line of either (ours after the app's own, on an endpoint it deprecates)
# makes the header unreadable. The app's statement stands, and ours is left out whole:
# both RFCs speak of the resource, so our Sunset and deprecation Link beside the app's
# Deprecation told a client its endpoint retires on the request-id header's date, with
# the header's migration page as the endpoint's notice.
_ONE_VALUE = frozenset({b"deprecation", b"sunset"})
_OURS = frozenset({*_ONE_VALUE, b"link"})


def _unless_the_app_said_so(
    headers: list[tuple[bytes, bytes]], extra: list[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    if any(name.lower() in _ONE_VALUE for name, _ in headers):
        return [header for header in extra if header[0] not in _OURS]
    return extra
