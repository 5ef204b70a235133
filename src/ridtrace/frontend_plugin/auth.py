"""Shared-secret access control as a pure ASGI middleware: API keys and the worker token.

It sits inside :class:`ridtrace.RequestTracingMiddleware`, so a refused request still
gets its ``request_id``, its span and its ``request.end`` line (outcome
``unauthorized``), and anything that counts ``request.end`` counts refusals too. The
presented secret's SHA-256 digest is compared with every configured one's with
``hmac.compare_digest`` (no early exit on a match, and no length to tell apart, so the
time taken does not tell which key was close, nor how long one is), and
is never logged, echoed or put on a span.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace.contract import OUTCOME_UNAUTHORIZED
from ridtrace.tracing import annotate_request, current_request_id
from ridtrace.tracing.settings import collection_given

__all__ = [
    "UNAUTHORIZED",
    "SharedSecretMiddleware",
    "anthropic_error",
    "check_secret",
    "matching_route",
    "openai_error",
    "secrets_given",
]

UNAUTHORIZED = OUTCOME_UNAUTHORIZED
"""The ``request.end`` outcome of a request refused for a missing or wrong secret."""

ErrorBody = Callable[[str], dict[str, object]]
"""Builds the JSON error body for a refusal from its message."""


def check_secret(value: str, what: str) -> None:
    """Refuse a secret no client could present: the check would lock everyone out.

    The SDKs send a key as an HTTP header value, which is ASCII, and the check strips
    the whitespace around what it receives; a key with whitespace, control or non-ASCII
    characters (a stray space or newline from a secret file) can never match. The
    value itself is never shown: it is a secret.
    """
    if not value:
        raise ValueError(f"{what} must not be empty")
    if not all("!" <= char <= "~" for char in value):
        raise ValueError(f"{what} must be printable ASCII without spaces "
                         "(an HTTP header carries it; check for stray whitespace)")


def secrets_given(secrets: Iterable[str], what: str) -> tuple[str, ...]:
    """``secrets`` as a tuple, refusing one string given in place of the collection.

    A ``str`` is itself an iterable of ``str``: taken as the collection, each of its
    characters became a key, so ``Bearer s`` got in while the real key got 401. Raises
    ``TypeError`` naming ``what`` (the argument), never the value: it is a secret.
    """
    return collection_given(secrets, what, secret=True)


def sent_by_anthropic_sdk(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request carries ``anthropic-version``, as the Anthropic SDK sends with
    every call (Anthropic's API requires it) and the OpenAI SDK never does.

    Such a request is answered in Anthropic's error shape, with ``request-id``, on any
    path: the SDK's ``models.retrieve`` reads ``error.type`` and ``request-id`` from a
    404 under ``/v1/models`` just as from one under ``/v1/messages``.
    """
    return any(name == b"anthropic-version" for name, _ in headers)


def openai_error(message: str) -> dict[str, object]:
    """OpenAI's 401 shape: the official SDK raises ``openai.AuthenticationError``."""
    return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": "invalid_api_key"}}


def anthropic_error(message: str) -> dict[str, object]:
    """Anthropic's 401 shape: the official SDK raises ``anthropic.AuthenticationError``.
    Its ``request_id`` is the request's, as on Anthropic's every error body (this
    module must not import the routes, which build the others)."""
    return {"type": "error", "error": {"type": "authentication_error", "message": message},
            "request_id": current_request_id()}


# Refusals under the Anthropic API's path are answered in its shape (`anthropic_error`).
ANTHROPIC_PATHS: dict[str, ErrorBody] = {"/v1/messages": anthropic_error}


def anthropic_if_sdk(scope: Scope) -> ErrorBody | None:
    """`anthropic_error` for a request the Anthropic SDK sent, on any path; else None."""
    return anthropic_error if sent_by_anthropic_sdk(scope["headers"]) else None


def app_route(scope: Scope) -> Any:
    """The route of the application serving the request (``scope["app"]``, which
    Starlette sets before its middleware runs) whose path matches, any method, or None.

    FastAPI keeps a router included with a prefix as one route of its own, whose routes
    are reached through its route contexts (`iter_route_contexts`, FastAPI 0.137.2 on).
    """
    routes = getattr(getattr(scope.get("app"), "router", None), "routes", None)
    if routes is None:
        return None
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # an older FastAPI, or Starlette alone: the list is flat
        return matching_route(routes)(scope)
    contexts: list[Any] = list(iter_route_contexts(routes))  # each with a path and matches()
    return matching_route(contexts)(scope)


class SharedSecretMiddleware:
    """Refuses HTTP requests and WebSocket handshakes that do not present one of
    ``secrets``, with a 401 (a handshake the server cannot answer with a denial response
    is closed with 1008 instead).

    Accepted as ``Authorization: Bearer SECRET`` or (``accept_x_api_key``) as
    ``x-api-key: SECRET``, the headers the OpenAI and Anthropic SDKs send; a request
    that repeats one of these headers is refused, match or not. Paths in
    ``open_paths`` are served without a secret. With no secrets configured the
    middleware passes everything through (add it unconditionally).

    Args:
        app: the wrapped ASGI app.
        secrets: the accepted secrets; none at all turns the check off. An empty
            one, or one no client could present (see `check_secret`), is a
            ``ValueError``; one string in place of the collection a ``TypeError``.
        open_paths: exact paths that need no secret (``/health``).
        error_bodies: path prefix → error body builder; the longest matching prefix wins,
            ``default_error`` otherwise (by default Anthropic's shape under
            ``/v1/messages``, `ANTHROPIC_PATHS`).
        default_error: error body builder for paths no prefix matches.
        error_of: picks the error body builder from the request itself, before the
            prefixes are tried (``None``: go by the path); by default Anthropic's shape
            for a request the Anthropic SDK sent (`anthropic_if_sdk`).
        accept_x_api_key: also accept the ``x-api-key`` header.
        hint: appended to the refusal message (how to send the secret).
        secret_name: what the refusal message calls the secret ("API key"; a worker's
            check says "worker token", as its caller knows it).
        on_refused: called (with the path) for every refusal, inside the request's
            context, e.g. to write a lifecycle line of the app's own.
        route_of: the route a request was meant for (anything with a ``path``
            template, see `matching_route`): a refusal is labelled with it
            (``http.route``, the ``route`` of ``ridtrace.requests``), as the router
            never saw the request; by default the serving app's route (`app_route`).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        secrets: Iterable[str],
        open_paths: Iterable[str] = ("/health",),
        error_bodies: dict[str, ErrorBody] | None = None,
        default_error: ErrorBody = openai_error,
        error_of: Callable[[Scope], ErrorBody | None] | None = anthropic_if_sdk,
        accept_x_api_key: bool = True,
        hint: str = "",
        secret_name: str = "API key",
        on_refused: Callable[[str], None] | None = None,
        route_of: Callable[[Scope], Any] | None = app_route,
    ) -> None:
        self.app = app
        self._route_of = route_of
        # Compared as SHA-256 digests: hmac.compare_digest returns at once on a length
        # mismatch, so comparing the raw values told a caller each key's length.
        given = secrets_given(secrets, "secrets")
        for secret in given:
            # Dropped without a word, an empty secret (the "".split(",") of a variable
            # left unset) turned the whole check off when it was the only one.
            check_secret(secret, "a secret")
        self._secrets = tuple(_digest(s.encode("utf-8")) for s in given)
        self._open = frozenset(open_paths)
        # Longest prefix first, so "/v1/messages" wins over "/v1".
        bodies = ANTHROPIC_PATHS if error_bodies is None else error_bodies
        self._errors = sorted(bodies.items(), key=lambda kv: -len(kv[0]))
        self._default_error = default_error
        self._error_of = error_of
        self._headers = {b"authorization"} | ({b"x-api-key"} if accept_x_api_key else set())
        self._on_refused = on_refused
        self._hint = hint
        self._secret_name = secret_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A WebSocket handshake is checked too: passed through, an app's WebSocket route
        # behind this check took every connection without a key.
        if (scope["type"] not in ("http", "websocket") or not self._secrets
                or _own_path(scope) in self._open):
            await self.app(scope, receive, send)
            return
        presented: set[bytes] = set()
        matched = repeated = offered = False
        for name, value in scope["headers"]:
            if name in self._headers:
                # One value per header name: each repeat was one more guess, so a single
                # request could try thousands of keys and be logged as one refusal.
                repeated |= name in presented
                presented.add(name)
                candidate = _bearer(value) if name == b"authorization" else value.strip()
                offered |= bool(candidate)
                matched |= self._matches(candidate)
        if matched and not repeated:
            await self.app(scope, receive, send)
            return
        # An Authorization of another scheme (curl -u sends Basic) holds no key the check
        # read: told "invalid API key" with error="invalid_token", its sender took a right
        # key for a wrong one. RFC 6750 (3.1) counts it as no credentials.
        name = self._secret_name
        reason = (f"{name} header sent more than once" if repeated
                  else f"invalid {name}" if offered
                  else "no Bearer key in the Authorization header"
                  if b"authorization" in presented else f"missing {name}")
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get(
                "extensions", {}):
            # No denial response to send: closing before accepting denies the handshake
            # (the server answers it 403), 1008 being "policy violation".
            if self._on_refused is not None:
                self._on_refused(scope["path"])
            await send({"type": "websocket.close", "code": 1008, "reason": reason})
            return
        await self._refuse(scope, send, reason, _CHALLENGES[repeated, offered])

    def _matches(self, candidate: bytes) -> bool:
        # Every secret is compared, match or not: the loop's time does not depend on
        # which secret (if any) the candidate matches.
        digest = _digest(candidate)
        matched = False
        for secret in self._secrets:
            matched |= hmac.compare_digest(digest, secret)
        return matched

    async def _refuse(self, scope: Scope, send: Send, reason: str, challenge: bytes) -> None:
        path: str = scope["path"]
        annotate_request(outcome_override=UNAUTHORIZED, error=reason)
        # Refusals are rare: matching the routes here costs the served requests nothing.
        route = self._route_of(scope) if self._route_of is not None else None
        if route is not None:
            scope["route"] = route
        if self._on_refused is not None:
            self._on_refused(path)
        build = self._error_of(scope) if self._error_of is not None else None
        if build is None:
            own = _own_path(scope)
            build = next((b for prefix, b in self._errors if own.startswith(prefix)),
                         self._default_error)
        body = orjson.dumps(build(reason + self._hint))
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", challenge),
        ]
        if _announces_body(scope):
            # The body is never read: kept open, the connection went on taking it (uvicorn
            # drains an unread body to reach the next request), so a caller with no key
            # could push gigabytes at the server. Closed, it is dropped.
            headers.append((b"connection", b"close"))
        # A WebSocket handshake's denial goes through the ASGI extension, as an HTTP answer.
        kind = "websocket.http.response" if scope["type"] == "websocket" else "http.response"
        await send({"type": f"{kind}.start", "status": 401, "headers": headers})
        await send({"type": f"{kind}.body", "body": body})


# The WWW-Authenticate challenge per (key header repeated, some key offered), as RFC
# 6750 (3.1) has it: no error code for a request without credentials (another scheme's
# included), ``invalid_token`` for a wrong key, ``invalid_request`` for a key header sent
# more than once. Clients and proxies tell "log in" from "your key is wrong" by it.
_REPEATED = b'Bearer realm="ridtrace", error="invalid_request"'
_CHALLENGES: dict[tuple[bool, bool], bytes] = {
    (False, False): b'Bearer realm="ridtrace"',
    (False, True): b'Bearer realm="ridtrace", error="invalid_token"',
    (True, False): _REPEATED,
    (True, True): _REPEATED,
}


def _announces_body(scope: Scope) -> bool:
    """Whether the request says a body follows (a non-zero length, or chunked)."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            digits = value.strip()
            return not digits.isdigit() or int(digits) > 0
    return False


def matching_route(routes: Sequence[BaseRoute]) -> Callable[[Scope], BaseRoute | None]:
    """`route_of` for a router's routes: the first that matches the path (any method).

    Only routes with a path template count: an included router (FastAPI keeps one
    as a route of its own) matches the path but has no template to label it with.
    """

    def route_of(scope: Scope) -> BaseRoute | None:
        return next((r for r in routes if isinstance(getattr(r, "path", None), str)
                     and r.matches(scope)[0] != Match.NONE), None)

    return route_of


def _own_path(scope: Scope) -> str:
    """The path as the app itself names it: without the prefix it is mounted under.

    Mounted (``Mount("/api", app)``, a server's ``--root-path``), ``path`` carries the
    prefix ``root_path`` names: compared whole, ``/api/health`` was not the open
    ``/health`` and every load balancer probe got 401.
    """
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root):] or "/"
    return path


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


def _bearer(value: bytes) -> bytes:
    """The token of ``Bearer TOKEN`` (scheme case-insensitive), else the empty string."""
    value = value.strip()
    return value[7:].strip() if value[:7].lower() == b"bearer " else b""
