"""Answer only requests addressed to a host this server is meant to be reached by.

A server bound to loopback with no API key trusts whoever can reach it, and a web page
can reach it by DNS rebinding: its own name, re-resolved to 127.0.0.1, makes the page
same-origin with the server, so the browser lets it post JSON and read the answers.
Such a request still names the page's host in ``Host``; refusing hosts that are not
the server's (421 Misdirected Request) closes that path. Bound to loopback, the
server's names are ``localhost`` and the loopback addresses; ``--allowed-host`` adds
others (a reverse proxy's public name) or, with ``*``, turns the check off.

Written here rather than taken from Starlette's ``TrustedHostMiddleware``: before
Starlette 1.x it read ``[::1]:8000`` as the host ``[`` and refused IPv6 loopback.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace.host_names import ANY_HOST, checked_host_name, normal_host
from ridtrace.tracing import RequestTracingMiddleware, annotate_request
from ridtrace.tracing.identity import shown_text

__all__ = [
    "LOOPBACK_NAMES", "MISDIRECTED", "MISDIRECTED_CODE", "HostCheck", "allowed_hosts_for",
    "checked_host_name", "host_checked", "is_loopback",
]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
MISDIRECTED = ("Misdirected request: this server does not answer for that Host "
               "(ridtrace serve --allowed-host adds names)")
"""What a 421 tells the caller."""
MISDIRECTED_CODE = "misdirected_request"
_REFUSAL = json.dumps({"error": {
    "message": MISDIRECTED, "type": "invalid_request_error", "param": None,
    "code": MISDIRECTED_CODE}}).encode()
# Longest Host shown in a log line: the header is the caller's text.
_MAX_SHOWN_HOST = 256


def is_loopback(bind: str) -> bool:
    """Whether a bind address only takes connections from this machine."""
    if bind.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts_for(bind: str, extra: Iterable[str]) -> frozenset[str] | None:
    """The hosts a server bound to `bind` answers for; None when it answers for any.

    Loopback binds get the loopback names; other binds are checked only when the
    operator lists hosts.
    """
    names = {checked_host_name(name) for name in extra}
    if ANY_HOST in names or (not names and not is_loopback(bind)):
        return None
    if is_loopback(bind):
        names |= LOOPBACK_NAMES | {normal_host(bind)}
    return frozenset(names)


def host_of(header: bytes) -> str | None:
    """The host part of a ``Host`` header (no port, IPv6 without brackets), lower case;
    None when it is not one."""
    try:
        text = header.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    if text.startswith("["):
        end = text.find("]")
        rest = text[end + 1:] if end > 0 else "x"
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return normal_host(text[1:end])
    name, colon, port = text.rpartition(":")
    if not colon:
        name = port
    elif not port.isdigit():
        return None
    return normal_host(name) if name else None


class HostCheck:
    """ASGI middleware: HTTP requests whose ``Host`` is not among `allowed` get 421.

    A request without ``Host`` (HTTP/1.0) passes: a browser always sends one. The
    refusal's reason goes on the request (``error`` on ``request.end``) and to
    `on_refused`, with the ``Host`` as it may be shown in a log line. `refusal` picks
    the 421's JSON body for a request (an API's error shape); OpenAI's by default.
    """

    def __init__(
        self, app: ASGIApp, *, allowed: frozenset[str],
        on_refused: Callable[[str], None] | None = None,
        refusal: Callable[[Scope], bytes] | None = None,
    ) -> None:
        self.app = app
        self._allowed = allowed
        self._on_refused = on_refused
        self._refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = next((value for key, value in scope["headers"] if key == b"host"), None)
            if header is not None and host_of(header) not in self._allowed:
                reason = refusal_reason(header)
                annotate_request(error=reason)
                if self._on_refused is not None:
                    self._on_refused(reason)
                body = _REFUSAL if self._refusal is None else self._refusal(scope)
                await send({"type": "http.response.start", "status": 421, "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def refusal_reason(host: bytes) -> str:
    """What a 421 is logged with: the ``Host`` sent, capped and with control characters
    escaped (it is the caller's text)."""
    shown = shown_text(host.decode("latin-1"), _MAX_SHOWN_HOST)
    return f"misdirected request: this server does not answer for Host {shown!r}"


def host_checked(
    app: ASGIApp, allowed: frozenset[str], *, on_refused: Callable[[str], None] | None = None
) -> ASGIApp:
    """`app` with a :class:`HostCheck` right inside its ``RequestTracingMiddleware``.

    Inside, a refusal is answered like any other request: its ``x-server-request-id``,
    its span, its ``request.end`` line (status 421, the Host in ``error``) and its count.
    Wrapped around the whole app, a 421 (a DNS-rebinding attempt, or a proxy that
    forwards its public Host) left no trace anywhere. An app without a ridtrace
    middleware gets the check around it. A Starlette app whose ``state`` holds
    ``misdirected_refusal`` (a body per request, see :class:`HostCheck`) and
    ``answer_labels`` (middleware classes that add headers to every answer) gets the
    check inside those too, answering in that body: the frontend's 421 is then in each
    API's error shape with the ids its SDK reads, as every other refusal is.
    """
    if isinstance(app, RequestTracingMiddleware):
        app.app = HostCheck(app.app, allowed=allowed, on_refused=on_refused)
        return app
    if isinstance(app, Starlette):
        stack = app.user_middleware  # outermost first; built when the server starts
        classes: list[object] = [m.cls for m in stack]
        if RequestTracingMiddleware in classes:
            labels = getattr(app.state, "answer_labels", ())
            outer = max(classes.index(cls) for cls in (RequestTracingMiddleware, *labels)
                        if cls in classes)
            refusal = getattr(app.state, "misdirected_refusal", None)
            stack.insert(outer + 1, Middleware(HostCheck, allowed=allowed,
                                               on_refused=on_refused, refusal=refusal))
            return app
    return HostCheck(app, allowed=allowed, on_refused=on_refused)
