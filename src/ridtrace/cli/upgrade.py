"""Requests offering an upgrade the server does not take are served as HTTP/1.1.

Every JDK ``HttpClient`` (HTTP/2 by default), Ktor and ``curl --http2`` offer
``Upgrade: h2c`` on cleartext requests; a server may ignore the offer and answer as if
it had not been made (RFC 9110 §7.8). llhttp, under uvicorn's httptools protocol, ends
such a request at its headers (it calls ``on_message_complete`` there) and raises
``HttpParserUpgrade`` with the offset where the new protocol would start; uvicorn only
handles WebSocket upgrades, so the app got an empty body and later packets were a parse
error (uvicorn issue #2722). Here the body that follows is read with the request's own
framing (``content-length`` or chunked) by a second parser and handed to the request as
uvicorn would, and the connection closes after the answer: the first parser cannot go
on past the offer.
"""

from __future__ import annotations

from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["UpgradeIgnoringProtocol"]

_INVALID = "Invalid HTTP request received."


class _BodyOnly:
    """Callbacks of the parser that reads the body after an ignored offer."""

    __slots__ = ("done", "protocol")

    def __init__(self, protocol: UpgradeIgnoringProtocol) -> None:
        self.protocol = protocol
        self.done = False

    def on_body(self, body: bytes) -> None:
        if not self.done:
            self.protocol.on_body(body)

    def on_message_complete(self) -> None:
        if not self.done:
            self.done = True
            self.protocol.ignored_upgrade_body_complete()


class UpgradeIgnoringProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, serving a non-WebSocket upgrade offer as HTTP/1.1."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ignoring_upgrade = False
        self._body_reader: httptools.HttpRequestParser | None = None
        self._body_target: _BodyOnly | None = None

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if self.parser.should_upgrade() and not self._should_upgrade():
            self._ignoring_upgrade = True
            if self.cycle is not None:
                self.cycle.keep_alive = False  # answered with "connection: close"

    def on_message_complete(self) -> None:
        if self._ignoring_upgrade:
            return  # llhttp's end of the headers, not of the body: that comes below
        super().on_message_complete()

    def ignored_upgrade_body_complete(self) -> None:
        """The body after an ignored offer has been read in full."""
        self._ignoring_upgrade = False
        super().on_message_complete()

    def data_received(self, data: bytes) -> None:
        if self._body_target is not None:
            self._read_body(data)
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            reason = self.refusal(exc)
            self.logger.warning(reason)
            self.send_400_response(reason)
        except httptools.HttpParserUpgrade as upgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            elif self._ignoring_upgrade:
                self._start_body(data[int(upgrade.args[0]):])

    def refusal(self, exc: Exception) -> str:
        """What the log and the caller are told of a request the parser refused."""
        return _parse_error(exc)

    def _start_body(self, rest: bytes) -> None:
        framing = _framing(self.headers)
        self._body_target = _BodyOnly(self)
        if framing is None:
            self._body_target.on_message_complete()
            return
        self._body_reader = httptools.HttpRequestParser(self._body_target)
        self._body_reader.feed_data(b"POST / HTTP/1.1\r\n" + framing + b"\r\n")
        self._read_body(rest)

    def _read_body(self, data: bytes) -> None:
        target, reader = self._body_target, self._body_reader
        if target is None or reader is None or target.done or not data:
            return  # read in full: what follows is dropped, the connection is closing
        try:
            reader.feed_data(data)
        except httptools.HttpParserError:
            if not target.done:
                target.done = True
                self.logger.warning(_INVALID)
                self.send_400_response(_INVALID)
        except httptools.HttpParserUpgrade:
            pass  # the bytes after the body: dropped as above


def _framing(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The request's body framing as a header line; None when it has no body."""
    length = None
    for name, value in headers:
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            return b"transfer-encoding: chunked\r\n"
        if name == b"content-length":
            length = value.strip()
    if length is None or not length.isdigit() or int(length) == 0:
        return None
    return b"content-length: " + length + b"\r\n"


def _parse_error(exc: Exception) -> str:
    """What the caller and the log are told of a request the parser refused.

    uvicorn said only "Invalid HTTP request received." for a control character in a
    header, a duplicate Content-Length, a request smuggling attempt alike. llhttp's
    reason is a fixed phrase ("Invalid header value char"), never the request's bytes;
    a callback's failure (the header guard's own refusals) keeps the plain text, which
    the guard replaces with its own answer.
    """
    detail = str(exc)
    if isinstance(exc, httptools.HttpParserCallbackError) or not detail:
        return _INVALID
    if len(detail) > 120 or not (detail.isascii() and detail.isprintable()):
        return _INVALID
    return f"{_INVALID[:-1]}: {detail}"
