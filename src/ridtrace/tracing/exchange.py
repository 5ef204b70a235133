"""What the ASGI middleware observes of one request/response exchange, and reports.

Kept apart from the middleware so its hot path reads as one sequence: these are the
pieces it calls — span attributes, lifecycle fields, the outcome rule and the 500 it
sends for a crashed request.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode
from starlette.types import Scope, Send

from ridtrace.contract import REQUEST_END, REQUEST_START
from ridtrace.tracing.context import RequestContext
from ridtrace.tracing.exception_text import record_exception
from ridtrace.tracing.identity import shown_text, validate_client_id
from ridtrace.tracing.inbound import decide_outcome
from ridtrace.tracing.jsonline import add_annotations
from ridtrace.tracing.url_query import shown_query

__all__ = [
    "MAX_SHOWN_CLIENT",
    "MAX_SHOWN_METHOD",
    "MAX_SHOWN_PATH",
    "Exchange",
    "add_route_and_audit",
    "annotate_end",
    "answer_unanswered",
    "end_fields",
    "end_time_ns",
    "error_type",
    "file_size",
    "outcome_of",
    "send_internal_error",
    "start_attributes",
    "start_fields",
]

# The path is the client's (percent-decoded, so %0A is a line feed): capped and its
# control characters escaped before a log line or span attribute carries it.
MAX_SHOWN_PATH = 1024
# So is the method: h11 (uvicorn --http h11, hypercorn) takes any token as one, as long
# as the request head. The longest registered method has 17 letters (UPDATEREDIRECTREF).
MAX_SHOWN_METHOD = 32
# And the client's address: behind uvicorn's proxy headers (on by default, believed from
# 127.0.0.1) it is whatever the caller put in X-Forwarded-For. An IPv6 address and its
# port take at most 51 characters.
MAX_SHOWN_CLIENT = 64

# The methods the HTTP semantic conventions know (RFC 9110, PATCH, QUERY), matched
# exactly: any other is ``_OTHER`` on a span.
_KNOWN_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY"}
)

_INTERNAL_ERROR_BODY = b"Internal Server Error"
# "close", as the server's own 500 says: after an exception the server drops the
# connection once the response went out, and a keep-alive client that was not told so
# sent its next request into the closed socket (a reset for a request that did nothing
# wrong).
_INTERNAL_ERROR_HEADERS = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"content-length", str(len(_INTERNAL_ERROR_BODY)).encode()),
    (b"connection", b"close"),
]


class Exchange:
    """What the middleware observed of one request/response exchange.

    Defaults are class attributes, so creating one per request costs no ``__init__``;
    the middleware's writes land on the instance.
    """

    status = 0
    bytes_in = 0
    bytes_out = 0
    response_started = False
    body_done = False
    disconnected = False
    abandoned = False  # the client left before the response started
    finished_at = 0.0  # time.perf_counter() when the last body byte went out; 0: never


def end_time_ns(finished_at: float) -> int | None:
    """The span's end, in the SDK's clock, for a response that ended at ``finished_at``
    (``perf_counter``) — before the background tasks that ran after it; ``None``
    (now) for one that never ended."""
    if not finished_at:
        return None
    return time.time_ns() - int((time.perf_counter() - finished_at) * 1e9)


def file_size(path: object) -> int:
    """Bytes a ``http.response.pathsend`` message sends: the file's size, 0 if unknown."""
    try:
        return os.stat(path).st_size  # type: ignore[arg-type]
    except (OSError, TypeError, ValueError):
        return 0


def start_attributes(
    request_id: str,
    x_request_id: str | None,
    deprecated: str | None,
    scope: Scope | None = None,
    user_agent: str | None = None,
    rejected: bool = False,
) -> dict[str, str | int | bool]:
    """The span attributes known when the request arrives.

    The request's own (``scope``: method, path, scheme, the server's address, the
    client's; `user_agent`, as the log line shows it) only for a span ridtrace opened:
    an instrumentation's own server span already carries them under its own
    conventions. ``url.scheme`` is one the HTTP semantic conventions require of a server
    span, ``server.address`` / ``server.port`` what tells which process served it; they
    come from the server (the socket it accepted on, as
    opentelemetry-instrumentation-asgi takes them), not from the client's ``Host``.
    ``client.address`` and ``user_agent.original`` are the conventions' recommended
    ones: the request.start line had them and the span did not.
    """
    attributes: dict[str, str | int | bool] = {"request_id": request_id}
    if x_request_id is not None:
        attributes["x_request_id"] = x_request_id
    if deprecated:
        attributes["deprecated_headers"] = deprecated
    if rejected:  # as on request.start: a search in Jaeger finds the hostile callers
        attributes["x_request_id_rejected"] = True
    if scope is not None:
        method = scope.get("method", "")
        if method in _KNOWN_METHODS:
            attributes["http.request.method"] = method
        else:
            # The conventions' rule for a method they do not know: span-metrics group
            # by http.request.method, and a scanner's invented methods (any token
            # passes h11 and hypercorn) made as many series as it liked.
            attributes["http.request.method"] = "_OTHER"
            attributes["http.request.method_original"] = shown_text(method, MAX_SHOWN_METHOD)
        attributes["url.path"] = shown_text(scope.get("path", ""), MAX_SHOWN_PATH)
        query = scope.get("query_string")
        if query:  # required by the conventions when one was received
            attributes["url.query"] = shown_query(query)
        attributes["url.scheme"] = scope.get("scheme", "http")
        attributes["network.protocol.version"] = scope.get("http_version", "1.1")
        server = scope.get("server")
        if server:
            attributes["server.address"] = server[0]
            if server[1] is not None:  # None: a unix socket, named by the address
                attributes["server.port"] = server[1]
        client = scope.get("client")
        if client:  # behind proxy headers, whatever X-Forwarded-For said: capped
            attributes["client.address"] = shown_text(str(client[0]), MAX_SHOWN_CLIENT)
        if user_agent is not None:
            attributes["user_agent.original"] = user_agent
    return attributes


def shown_agent(user_agent: str | bytes | None, max_length: int) -> str | None:
    """The client's ``User-Agent`` as a log line or span shows it: capped, or None when
    it holds what a line must not carry (control characters)."""
    if user_agent is None:
        return None
    return validate_client_id(user_agent[:max_length], max_length)


def start_fields(
    scope: Scope,
    agent: str | None,
    deprecated: str | None,
    rejected: bool,
) -> dict[str, Any]:
    """``request.start``'s fields (docs/log-schema.md); absent ones are left out.
    `agent`: the ``User-Agent`` as `shown_agent` shows it.

    A null is never written anyway, and every extra key costs loguru and the sink a
    little on each line.
    """
    fields: dict[str, Any] = {
        "event": REQUEST_START,
        "method": shown_text(scope.get("method", ""), MAX_SHOWN_METHOD),
        "path": shown_text(scope.get("path", ""), MAX_SHOWN_PATH),
    }
    client = scope.get("client")
    if client:
        fields["client"] = shown_text(f"{client[0]}:{client[1]}", MAX_SHOWN_CLIENT)
    if agent is not None:
        fields["user_agent"] = agent
    if deprecated:
        fields["deprecated_headers"] = deprecated
    if rejected:
        fields["x_request_id_rejected"] = True
    return fields


def end_fields(
    scope: Scope,
    state: Exchange,
    outcome: str,
    route: str | None,
    duration_s: float,
    deprecated: str | None,
    ctx: RequestContext,
) -> dict[str, Any]:
    """``request.end``'s fields, with what handlers attached by ``annotate_request``."""
    method = scope.get("method", "")
    fields: dict[str, Any] = {
        "event": REQUEST_END,
        "method": shown_text(method, MAX_SHOWN_METHOD),
        "path": shown_text(scope.get("path", ""), MAX_SHOWN_PATH),
        "status": state.status,
        "outcome": outcome,
        "duration_ms": round(duration_s * 1000, 3),
        "bytes_in": state.bytes_in,
        # A HEAD response's body never leaves the server (uvicorn, hypercorn and h11
        # drop it), though Starlette hands it over: a load balancer's HEAD health
        # checks were counted as the full page each.
        "bytes_out": 0 if method == "HEAD" else state.bytes_out,
    }
    add_route_and_audit(fields, scope, route, deprecated)
    if ctx.annotations:
        add_annotations(fields, ctx.annotations)
    return fields


def add_route_and_audit(
    fields: dict[str, Any], scope: Scope, route: str | None, deprecated: str | None,
) -> None:
    """A ``request.end``'s ``route``, and its ``deprecated_headers`` with the client."""
    if route:
        fields["route"] = route
    if deprecated:
        fields["deprecated_headers"] = deprecated
        # With its client, so this line alone is enough for audits: whose request.start
        # had rotated away was counted under no client. Only then: every other request
        # pays nothing for it.
        client = scope.get("client")
        if client:
            fields["client"] = shown_text(f"{client[0]}:{client[1]}", MAX_SHOWN_CLIENT)


def outcome_of(state: Exchange, failure: BaseException | None, ctx: RequestContext) -> str:
    """ok / error / cancelled by the rules every transport shares (``decide_outcome``).

    An exception the app raised after its last body byte is its failure too: a
    ``BaseHTTPMiddleware`` inside sends the end of a stream its route broke off (the
    client gets a cut-short body that looks whole) and only then raises the route's
    exception, and a background task fails after the response; both were ``ok``.
    """
    raised_after_end = state.body_done and isinstance(failure, Exception)
    return decide_outcome(
        ctx, failure, finished=state.body_done,
        server_fault=state.status >= 500 or raised_after_end, gone=state.disconnected,
    )


async def send_internal_error(send: Send) -> None:
    """The plain 500 sent for an exception raised before the response started.

    Outer error handlers (Starlette's ServerErrorMiddleware, the server) would send
    their 500 with the raw ``send``, without ridtrace's id header; the middleware sends
    this one so even crashed requests can be found. It never raises: the caller
    re-raises the app's exception, which a gone client must not mask.
    """
    with contextlib.suppress(Exception):
        await send(
            {"type": "http.response.start", "status": 500, "headers": list(_INTERNAL_ERROR_HEADERS)}
        )
        await send({"type": "http.response.body", "body": _INTERNAL_ERROR_BODY})


async def answer_unanswered(send: Send) -> None:
    """The 500 for a request the application returned from without answering (a
    branch that forgot to respond).

    The server sends one then (uvicorn: "ASGI callable returned without starting
    response."), but after the application returned, once the request's context was
    gone: the client's 500 had no id header, the server's ERROR line no ids, and the
    request's ``request.end`` and span said no answer went out. Sent from here, it is
    the request's own, as the 500 of an unhandled exception is, and so is the line.
    """
    logging.getLogger(__name__).error("ASGI application returned without starting a response")
    await send_internal_error(send)


def annotate_end(
    span: Span, status: int, route: str | None, outcome: str, failure: BaseException | None,
    *, owns_span: bool,
) -> None:
    """The response's status and route on a recording server span; the outcome, an error
    status and the exception only on a span of ours (another instrumentation sets its own).

    ``outcome`` is ``request.end``'s: a client that went away mid-stream left a span of a
    clean 200 (the status had gone out), so Jaeger showed nothing of it; a cancellation
    is the client's act, as a 4xx is, and leaves the span's status unset. FastAPI's span
    and an instrumentation's end as the last body byte goes out, before the outcome is
    known: only a cut stream's was still open, so only it would have carried one.
    """
    attributes: dict[str, str | int] = {"outcome": outcome} if owns_span else {}
    if status:  # 0: no response went out (cancelled, crashed past the app): no status
        attributes["http.response.status_code"] = status
    if route:
        attributes["http.route"] = route
    span.set_attributes(attributes)
    if outcome == "error" and owns_span:
        span.set_attribute("error.type", error_type(status, failure))
        span.set_status(Status(StatusCode.ERROR))
        if failure is not None and isinstance(failure, Exception):
            record_exception(span, failure)


def error_type(status: int, failure: BaseException | None) -> str:
    """``error.type`` of a request that ended in error, as the HTTP semantic conventions
    ask of a server span: the exception's class, else the 5xx status, else ``_OTHER``
    (an error reported inside a 200 stream). Error views and span metrics group failures
    by it; without it every failed request was one unnamed kind."""
    if isinstance(failure, Exception):
        return type(failure).__qualname__
    if status >= 500:
        return str(status)
    return "_OTHER"
