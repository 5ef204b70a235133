"""What every transport reads from a request's headers, and how every call's outcome is named.

One implementation for the ASGI middleware (header names and values are ``bytes``) and
the gRPC interceptor (metadata keys are ``str``; values ``str``, or ``bytes`` for
``-bin`` keys): the rules are built once, in the transport's key type, and the walk
compares keys of that type only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Generic, TypeVar

from ridtrace.tracing import metrics
from ridtrace.tracing.context import RequestContext
from ridtrace.tracing.deprecation import warn_once
from ridtrace.tracing.identity import validate_client_id

__all__ = ["Inbound", "InboundRules", "decide_outcome", "note_inbound", "read_inbound"]

K = TypeVar("K", str, bytes)

TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
# A client that went away: its call did not fail, it was abandoned.
_GONE = (asyncio.CancelledError, GeneratorExit, OSError)

Inbound = tuple[
    "str | None",  # x_request_id: the first valid client id
    "str | None",  # why a client id was not used (metrics reason), None if none was refused
    "list[str] | None",  # deprecated id headers sent, in order, each once
    "dict[str, str] | None",  # W3C trace context headers
    "str | bytes | None",  # user agent, raw
]


class InboundRules(Generic[K]):
    """Header (or metadata key) names a transport acts on, in its own key type."""

    __slots__ = ("client", "client_bin", "deprecated", "every_header", "max_len", "user_agent",
                 "watched")

    def __init__(
        self,
        *,
        client_header: str,
        deprecated_headers: Iterable[str],
        max_length: int,
        as_bytes: bool,
        trace_headers: Iterable[str] | None = TRACE_HEADERS,
    ) -> None:
        """``trace_headers``: what the configured propagators read; ``None`` for every
        header (`ridtrace.tracing.propagation.extracted_header_names`)."""
        def key(name: str) -> K:
            return name.lower().encode("latin-1") if as_bytes else name.lower()  # type: ignore[return-value]

        self.client: K = key(client_header)
        # gRPC's binary variant of the client key: never shown, counted as rejected.
        self.client_bin: K | None = None if as_bytes else key(client_header + "-bin")
        self.deprecated: dict[K, str] = {key(n): n.lower() for n in deprecated_headers}
        if not as_bytes:
            # ``request-id-bin`` is the deprecated key in gRPC's binary encoding: its
            # sender still relies on the old id, so it is counted and warned about under
            # the name it was sent with, and never used, like the text key.
            self.deprecated.update(
                {key(n + "-bin"): n.lower() + "-bin" for n in deprecated_headers}
            )
        self.user_agent: K = key("user-agent")
        self.max_len = max_length
        watched: set[K] = {self.client, self.user_agent}
        watched.update(self.deprecated.keys())
        # Every header not acted on otherwise goes to the propagators then.
        self.every_header = trace_headers is None
        watched.update(key(name) for name in trace_headers or ())
        if self.client_bin is not None:
            watched.add(self.client_bin)
        self.watched: frozenset[K] = frozenset(watched)
        # What this transport can count, reported at 0 from the start (`declare_series`).
        for header in self.deprecated.values():
            metrics.declare_series("deprecated_header_requests", header)
        reasons = metrics.TEXT_REASONS + (() if as_bytes else (metrics.REASON_BINARY,))
        for reason in reasons:
            metrics.declare_series("client_id_rejected", reason)


def read_inbound(rules: InboundRules[K], pairs: Iterable[tuple[K, str | bytes]]) -> Inbound:
    """One pass over the request's headers: the values identity and tracing need.

    Most headers cost one set lookup; lists are allocated only when something is sent.
    """
    x_request_id: str | None = None
    rejected: str | None = None
    deprecated_sent: list[str] | None = None
    carrier: dict[str, str] | None = None
    repeated: dict[str, list[str]] | None = None  # trace headers sent more than once
    user_agent: str | bytes | None = None
    watched = rules.watched
    every_header = rules.every_header
    for name, value in pairs:
        if name not in watched and not every_header:
            continue
        if name == rules.client:
            # Whitespace around a field value is not part of it (RFC 9110 5.5); h11
            # strips it, httptools keeps the trailing part: the same client id must
            # not be logged and echoed as "id" or "id   " depending on the parser.
            value = value.strip(b" \t") if isinstance(value, bytes) else value.strip(" \t")
            valid = validate_client_id(value, rules.max_len)
            if x_request_id is None:
                x_request_id = valid
            # The first valid id wins; an invalid one is rejected wherever it stands
            # (one after the valid id was not, one before it was).
            if valid is None and rejected is None:
                rejected = metrics.rejection_reason(value, rules.max_len)
        elif name in rules.deprecated:
            header = rules.deprecated[name]
            if deprecated_sent is None:
                deprecated_sent = [header]
            elif header not in deprecated_sent:
                deprecated_sent.append(header)
        elif name == rules.user_agent:
            if user_agent is None:
                user_agent = value
        elif name == rules.client_bin:
            rejected = rejected or metrics.REASON_BINARY
        elif isinstance(value, (str, bytes)):
            key = name.decode("latin-1") if isinstance(name, bytes) else name
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            if carrier is None:
                carrier = {key: text}
            elif key not in carrier:
                carrier[key] = text
            else:
                # RFC 9110 5.3: a repeated field is its values joined with commas. A
                # tracestate or baggage sent in pieces is whole again, and two
                # traceparents make an invalid one, so a new trace starts (the W3C
                # test suite's rule) instead of whichever one a transport lists first.
                # Joined once at the end: appending to the text per header copied it
                # each time, quadratic in thousands of one-byte headers.
                if repeated is None:
                    repeated = {}
                if key in repeated:
                    repeated[key].append(text)
                else:
                    repeated[key] = [carrier[key], text]
    if repeated is not None and carrier is not None:
        for key, texts in repeated.items():
            carrier[key] = ",".join(texts)
    return x_request_id, rejected, deprecated_sent, carrier, user_agent


def note_inbound(deprecated_sent: list[str] | None, rejected: str | None) -> None:
    """The deprecation WARN (once per header per process) and the metrics of what was sent.

    Called with the request's context current, so the WARN carries its ids.
    """
    if deprecated_sent:
        for header in deprecated_sent:
            warn_once(header)
            metrics.deprecated_header_sent(header)
    if rejected is not None:
        metrics.client_id_rejected(rejected)


def decide_outcome(
    ctx: RequestContext,
    failure: BaseException | None,
    *,
    finished: bool,
    server_fault: bool,
    gone: bool = False,
) -> str:
    """ok / error / cancelled, unless a handler decided otherwise (``outcome_override``).

    Args:
        finished: the response went out whole (HTTP: last body byte; gRPC: the call
            ended with a status rather than being cancelled).
        server_fault: the status says the server failed (HTTP 5xx; gRPC's server-fault
            codes).
        gone: the transport saw the client leave.
    """
    if ctx.annotations:
        override = ctx.annotations.get("outcome_override")
        if isinstance(override, str):
            return override
    if finished:
        return "error" if server_fault else "ok"
    if gone or isinstance(failure, _GONE):
        return "cancelled"
    return "error"
