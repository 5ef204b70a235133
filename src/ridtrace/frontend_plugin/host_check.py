"""Answer only requests addressed to a host this server is meant to be reached by.

A server bound to loopback with no API key trusts whoever can reach it, and a web page
can reach it by DNS rebinding: its own name, re-resolved to 127.0.0.1, makes the page
same-origin with the server, so the browser lets it post JSON and read the answers.
Such a request still names the page's host in ``Host``; refusing hosts that are not
the server's (421 Misdirected Request) closes that path. Bound to loopback, the
server's names are ``localhost`` and the loopback addresses; ``--allowed-host`` adds
others (a reverse proxy's public name) or, with ``*``, lets any name in. A ``Host`` that
is no host at all (``a b``, ``[::1``, ``h:abc``, ``u@h``, empty) gets 400 whatever the
names, as RFC 9112 section 3.2 requires: a 421 sent the caller to ``--allowed-host``,
which could never help, and with ``*`` such requests were served.

Written here rather than taken from Starlette's ``TrustedHostMiddleware``: before
Starlette 1.x it read ``[::1]:8000`` as the host ``[`` and refused IPv6 loopback.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace.host_names import ANY_HOST, checked_host_name, normal_host
from ridtrace.tracing import RequestTracingMiddleware, annotate_request
from ridtrace.tracing.identity import shown_text

__all__ = [
    "INVALID_HOST", "INVALID_HOST_CODE", "LOOPBACK_NAMES", "MISDIRECTED", "MISDIRECTED_CODE",
    "HostCheck", "HostRefusal", "allowed_hosts_for", "answers_for", "checked_host_name",
    "host_checked", "is_loopback",
]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
MISDIRECTED = ("Misdirected request: this server does not answer for that Host "
               "(ridtrace serve --allowed-host adds names)")
"""What a 421 tells the caller."""
MISDIRECTED_CODE = "misdirected_request"
INVALID_HOST = ("Bad request: the Host header is not a host name or address with an "
                "optional port (RFC 9112, section 3.2)")
"""What a 400 for a malformed ``Host`` tells the caller."""
INVALID_HOST_CODE = "invalid_host_header"
HostRefusal = Callable[[Scope, int, str, str], bytes]
"""The body of a Host refusal for a request: (scope, status, message, code) -> JSON."""
# RFC 3986's reg-name (an empty one is no host: RFC 9110 section 4.2.1), and its port.
_REG_NAME = re.compile(rb"(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})+")
_PORT = re.compile(rb"(?::[0-9]*)?")
# Longest Host shown in a log line: the header is the caller's text.
_MAX_SHOWN_HOST = 256


def is_loopback(bind: str) -> bool:
    """Whether a bind address only takes connections from this machine."""
    if bind.lower() == "localhost":
        return True
    return _loopback_address(bind.strip("[]"))


def _loopback_address(text: str) -> bool:
    """Whether `text` is a loopback address, IPv4-mapped ones included: Python <= 3.12
    calls ``::ffff:127.0.0.1`` no loopback, yet a connection to it reaches 127.0.0.1."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


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
    None when the header is not ``uri-host [":" port]`` (RFC 9112 section 3.2)."""
    text = header.strip(b" \t")
    if text.startswith(b"["):
        end = text.find(b"]")
        name, rest = text[1:end], text[end + 1:]  # no "]": rest is all, never a port
        try:
            ipaddress.IPv6Address(name.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return None
    else:
        name, colon, port = text.partition(b":")  # a reg-name holds no colon
        if not _REG_NAME.fullmatch(name):
            return None
        rest = colon + port
    if not _PORT.fullmatch(rest) or not _servable_port(rest[1:]):
        return None
    return normal_host(name.decode("ascii"))


def answers_for(host: str, allowed: frozenset[str]) -> bool:
    """Whether a server that answers for `allowed` answers a request to `host` (`host_of`).

    Where the loopback names are answered, so is every loopback address: 127.0.0.2 is
    this machine as much as 127.0.0.1 is (the docs said so, and it got 421), and no DNS
    rebinding hands a web page an address literal for a Host.
    """
    if host in allowed:
        return True
    if "127.0.0.1" not in allowed:
        return False
    return _loopback_address(host)


def _servable_port(digits: bytes) -> bool:
    """Whether a port's digits (none: the default port) name a TCP port: RFC 3986 takes
    any digits, but ``localhost:99999`` names no port a server listens on, and was served
    as if it named this one."""
    digits = digits.lstrip(b"0")  # any count of zeros; no int() of thousands of digits
    return len(digits) <= 5 and int(digits or b"0") <= 65535


class HostCheck:
    """ASGI middleware: HTTP requests whose ``Host`` is not a host get 400, and those
    whose host is not among `allowed` (None: any) get 421.

    A request without ``Host`` (HTTP/1.0) passes: a browser always sends one. The
    refusal's reason goes on the request (``error`` on ``request.end``) and to
    `on_refused` (with the status), with the ``Host`` as it may be shown in a log line.
    `refusal` builds the JSON body for a request (an API's error shape); OpenAI's by
    default.
    """

    def __init__(
        self, app: ASGIApp, *, allowed: frozenset[str] | None,
        on_refused: Callable[[int, str], None] | None = None,
        refusal: HostRefusal | None = None,
    ) -> None:
        self.app = app
        self._allowed = allowed
        self._on_refused = on_refused
        self._refusal = refusal or _openai_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = next((value for key, value in scope["headers"] if key == b"host"), None)
            if header is not None:
                host = host_of(header)
                if host is None:
                    await self._refuse(scope, send, 400, invalid_host_reason(header),
                                       INVALID_HOST, INVALID_HOST_CODE)
                    return
                if self._allowed is not None and not answers_for(host, self._allowed):
                    await self._refuse(scope, send, 421, refusal_reason(header),
                                       MISDIRECTED, MISDIRECTED_CODE)
                    return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, reason: str,
                      message: str, code: str) -> None:
        annotate_request(error=reason)
        if self._on_refused is not None:
            self._on_refused(status, reason)
        body = self._refusal(scope, status, message, code)
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]})
        await send({"type": "http.response.body", "body": body})


def _openai_refusal(scope: Scope, status: int, message: str, code: str) -> bytes:
    return json.dumps({"error": {
        "message": message, "type": "invalid_request_error", "param": None,
        "code": code}}).encode()


def _shown_host(host: bytes) -> str:
    # Capped and with control characters escaped: the header is the caller's text.
    return repr(shown_text(host.decode("latin-1"), _MAX_SHOWN_HOST))


def refusal_reason(host: bytes) -> str:
    """What a 421 is logged with: the ``Host`` sent, as it may be shown."""
    return f"misdirected request: this server does not answer for Host {_shown_host(host)}"


def invalid_host_reason(host: bytes) -> str:
    """What a 400 for a malformed ``Host`` is logged with."""
    return (f"invalid Host header {_shown_host(host)}: not a host name or address with "
            "an optional port (RFC 9112, section 3.2)")


def host_checked(
    app: ASGIApp, allowed: frozenset[str] | None, *,
    on_refused: Callable[[int, str], None] | None = None,
) -> ASGIApp:
    """`app` with a :class:`HostCheck` right inside its ``RequestTracingMiddleware``.

    Inside, a refusal is answered like any other request: its ``x-server-request-id``,
    its span, its ``request.end`` line (status 421 or 400, the Host in ``error``) and its
    count.
    Wrapped around the whole app, a 421 (a DNS-rebinding attempt, or a proxy that
    forwards its public Host) left no trace anywhere. An app without a ridtrace
    middleware gets the check around it. A Starlette app whose ``state`` holds
    ``host_refusal`` (a :data:`HostRefusal`) and
    ``answer_labels`` (middleware classes that add headers to every answer) gets the
    check inside those too, answering in that body: the frontend's 421 and 400 are then
    in each API's error shape with the ids its SDK reads, as every other refusal is.
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
            refusal = getattr(app.state, "host_refusal", None)
            stack.insert(outer + 1, Middleware(HostCheck, allowed=allowed,
                                               on_refused=on_refused, refusal=refusal))
            return app
    return HostCheck(app, allowed=allowed, on_refused=on_refused)
