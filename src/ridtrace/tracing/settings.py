"""Settings of the tracing layer: one frozen dataclass, environment read only in from_env()."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from opentelemetry.trace import TracerProvider

from ridtrace.contract import DEPRECATED_ID_HEADERS
from ridtrace.tracing.identity import (
    DEFAULT_MAX_CLIENT_ID_LENGTH,
    uuid4_id,
    uuid7_id,
    validate_client_id,
)

__all__ = ["DEFAULT_DEPRECATED_HEADERS", "TracingSettings"]

DEFAULT_DEPRECATED_HEADERS: tuple[str, ...] = DEPRECATED_ID_HEADERS

_GENERATORS: dict[str, Callable[[], str]] = {"uuid4": uuid4_id, "uuid7": uuid7_id}


# RFC 9110 §5.1: a field name is a token.
# Headers that frame or describe an HTTP message, which an id must not be sent under.
_MESSAGE_HEADERS = frozenset({
    "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te",
    "trailer", "content-type", "content-encoding", "content-range", "host",
    "proxy-connection", "set-cookie",
})
# Headers that carry a caller's credentials.
_CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "x-api-key", "api-key",
})
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# What the Link header's <URI-reference> holds as sent: printable ASCII, no space, '"',
# '<' or '>' (RFC 3986: other characters percent-encoded).
_LINK = re.compile(r"[!#-;=?-~]+")
_T = TypeVar("_T")


def _parsed(env: Mapping[str, str], key: str, parse: Callable[[str], _T]) -> _T:
    try:
        return parse(env[key])
    except ValueError as exc:  # "invalid literal for int()" alone names no variable
        raise ValueError(f"{key}={env[key]!r}: {exc}") from None


def collection_given(values: Iterable[str], what: str, *, secret: bool = False) -> tuple[str, ...]:
    """``values`` as a tuple, refusing one string given in place of the collection.

    A ``str`` is itself an iterable of ``str``: taken as the collection, each of its
    characters became an item. Raises ``TypeError`` naming ``what`` (the argument), and
    the value only when it is no `secret`.
    """
    if isinstance(values, (str, bytes)):
        kind, example = ("secrets", "(key,)") if secret else ("values", f"({values!r},)")
        raise TypeError(f"{what} takes a collection of {kind}, not one string: "
                        f"pass {what}={example}")
    return tuple(values)


def _check_id_generator(generator: object) -> None:
    """Refuse an `id_generator` that mints no usable ids, when the settings are built.

    Given the name `RIDTRACE_ID_GENERATOR` takes (``"uuid7"``), every request failed
    with a 500 and no log record; one that gives the same value each time (``lambda:
    ""``) gave every request one id, the duplicate the server-side id exists to prevent.
    Two ids are minted to check it (a counting generator skips two).
    """
    if not callable(generator):
        raise TypeError(
            f"id_generator takes a function that returns a new id, not {generator!r} "
            "(ridtrace.tracing.uuid7_id; RIDTRACE_ID_GENERATOR takes the names)")
    first, second = generator(), generator()
    for minted in (first, second):
        if not isinstance(minted, str) or validate_client_id(minted, _LONGEST_ID) != minted:
            raise ValueError(
                f"id_generator returned {minted!r}: an id is 1 to {_LONGEST_ID} printable "
                "ASCII characters, as it goes into every log line and a response header")
    if first == second:
        raise ValueError(f"id_generator returned {first!r} twice: every request needs an id "
                         "of its own")


# The longest server id an `id_generator` may mint: as long as a client's may be.
_LONGEST_ID = DEFAULT_MAX_CLIENT_ID_LENGTH


@dataclass(frozen=True, slots=True, kw_only=True)
class TracingSettings:
    """How the middleware mints, reads, echoes and records request identity.

    Attributes:
        span_name: name of the server span ridtrace opens when no other
            instrumentation has opened one.
        client_id_header: the client's correlation header (echoed back, logged as
            ``x_request_id``); not one of the ``deprecated_headers`` (``ValueError``).
        response_id_header: response header that carries the server ``request_id``;
            not the ``client_id_header`` (``ValueError``).
        max_client_id_length: longest accepted client id; longer ones are dropped.
        deprecated_headers: request headers that used to set the id; now ignored,
            warned about once per name per process, and recorded per request.
        id_generator: returns a fresh ``request_id``; UUID4 by default.
        deprecation_at / sunset_at / deprecation_link: when set, responses to requests
            that sent a deprecated header get RFC 9745 ``Deprecation``, RFC 8594
            ``Sunset`` and ``Link: <...>; rel="deprecation"`` headers.
        log_lifecycle: write ``request.start`` / ``request.end`` lines.
        tracer_provider: provider for the server span; the global one by default.
        read_traceparent: read a W3C ``traceparent`` when the configured propagators
            found no caller (``OTEL_PROPAGATORS=none``, or a format the caller did not
            send). For a service whose only caller is one of ours: ridtrace's worker
            sets it, its frontend's hop always names the frontend's span that way, and
            a worker that ignored it wrote lines forensics could not tie to their
            request (two holders of one ``request_id``, a false ``duplicate_in_flight``).
    """

    span_name: str = "http-request"
    client_id_header: str = "x-request-id"
    response_id_header: str = "x-server-request-id"
    max_client_id_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH
    deprecated_headers: tuple[str, ...] = DEFAULT_DEPRECATED_HEADERS
    id_generator: Callable[[], str] = field(default=uuid4_id)
    deprecation_at: datetime | None = None
    sunset_at: datetime | None = None
    deprecation_link: str | None = None
    log_lifecycle: bool = True
    tracer_provider: TracerProvider | None = None
    read_traceparent: bool = False

    def __post_init__(self) -> None:
        # ("x-legacy-id") without its comma is one string: each of its characters was
        # taken for a header name, a request sending `e: 1` was logged as deprecated,
        # and the real header was neither warned of nor recorded (an audit's false clean).
        object.__setattr__(self, "deprecated_headers",
                           collection_given(self.deprecated_headers, "deprecated_headers"))
        _check_id_generator(self.id_generator)
        # A Unix time or an ISO string here failed only on the first request that sent a
        # deprecated header, deep in the header's encoding (AttributeError: no tzinfo).
        for setting in ("deprecation_at", "sunset_at"):
            moment = getattr(self, setting)
            if moment is not None and not isinstance(moment, datetime):
                raise TypeError(
                    f"{setting} must be a datetime or None, not {type(moment).__name__} "
                    f"({moment!r}): e.g. datetime.fromisoformat('2026-01-01T00:00:00+00:00')")
        # Refused when built, not on every request: a header name with a space made
        # every response fail, a length of 0 dropped every client id.
        for name in (self.client_id_header, self.response_id_header, *self.deprecated_headers):
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"not an HTTP header name: {name!r}")
        # Both names go out on every response (the client's id echoed under its own):
        # under `content-length` or `transfer-encoding` every response broke its framing
        # (an empty reply, or a malformed one), after a start that looked fine.
        for setting, name in (("client_id_header", self.client_id_header),
                              ("response_id_header", self.response_id_header)):
            if name.lower() in _MESSAGE_HEADERS:
                raise ValueError(
                    f"{setting} {name!r} is a header HTTP itself reads (the message's "
                    "framing or content): an id under it breaks every response")
            # One settings object configures the gRPC interceptor too: gRPC keeps
            # `grpc-*` keys for itself (an id there never reached the caller) and takes a
            # `*-bin` value as bytes (every call hung to its deadline, logged OK).
            if name.lower().startswith("grpc-") or name.lower().endswith("-bin"):
                raise ValueError(
                    f"{setting} {name!r} is a key gRPC metadata cannot carry an id under "
                    "('grpc-' is reserved, '-bin' holds bytes)")
        # The client's id is logged and echoed: under a credential header the key every
        # request carried went to each request's lines and back in its response.
        if self.client_id_header.lower() in _CREDENTIAL_HEADERS:
            raise ValueError(
                f"client_id_header {self.client_id_header!r} carries credentials: the "
                "client's id is written to the log and echoed, and so would the key be")
        # One header, one meaning: the client's id and the server's under one name went
        # out as two values of one response header (`x-request-id: abc, 7f3c…`), which
        # no caller can tell apart.
        client = self.client_id_header.lower()
        if self.response_id_header.lower() == client:
            raise ValueError(
                f"response_id_header and client_id_header are both {client!r}: the "
                "server's id and the client's echoed one need headers of their own")
        # The client's id header read first, a deprecated listing of it was never acted
        # on: no WARN, no record, and the deprecated-header count stayed 0 for a header
        # every client sent, which an audit reads as "safe to remove".
        if client in {name.lower() for name in self.deprecated_headers}:
            raise ValueError(
                f"client_id_header {client!r} is among deprecated_headers: a header is "
                "either the client's id or deprecated (move clients to another "
                "client_id_header first)")
        # A line break or a non-Latin-1 IRI in the link made every response to a request
        # with a deprecated header fail (or the middleware's start), so refuse it here.
        if self.deprecation_link and not _LINK.fullmatch(self.deprecation_link):
            raise ValueError(
                f"deprecation_link {self.deprecation_link!r} is no URI a header can carry: "
                "printable ASCII without spaces, '\"', '<' or '>' (percent-encode the rest)")
        # A blank name made spans Jaeger lists under nothing, and lines that name no
        # span kind the forensics or a dashboard could select on.
        if not self.span_name.strip():
            raise ValueError(f"span_name must not be blank: {self.span_name!r}")
        if self.max_client_id_length < 1:
            raise ValueError(
                f"max_client_id_length must be at least 1, not {self.max_client_id_length}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TracingSettings:
        """Build settings from ``RIDTRACE_*`` variables (unset ones keep their defaults).

        ``RIDTRACE_SPAN_NAME``, ``RIDTRACE_CLIENT_ID_HEADER``, ``RIDTRACE_RESPONSE_ID_HEADER``,
        ``RIDTRACE_MAX_CLIENT_ID_LENGTH``, ``RIDTRACE_DEPRECATED_HEADERS`` (comma list),
        ``RIDTRACE_ID_GENERATOR`` (``uuid4`` or ``uuid7``), ``RIDTRACE_DEPRECATION_AT`` and
        ``RIDTRACE_SUNSET_AT`` (ISO 8601), ``RIDTRACE_DEPRECATION_LINK``.
        """
        env = os.environ if environ is None else environ
        kwargs: dict[str, object] = {}
        for key, name in (
            ("RIDTRACE_SPAN_NAME", "span_name"),
            ("RIDTRACE_CLIENT_ID_HEADER", "client_id_header"),
            ("RIDTRACE_RESPONSE_ID_HEADER", "response_id_header"),
            ("RIDTRACE_DEPRECATION_LINK", "deprecation_link"),
        ):
            if env.get(key):
                kwargs[name] = env[key]
        if env.get("RIDTRACE_MAX_CLIENT_ID_LENGTH"):
            kwargs["max_client_id_length"] = _parsed(env, "RIDTRACE_MAX_CLIENT_ID_LENGTH", int)
        if "RIDTRACE_DEPRECATED_HEADERS" in env:
            names = env["RIDTRACE_DEPRECATED_HEADERS"].split(",")
            kwargs["deprecated_headers"] = tuple(n.strip().lower() for n in names if n.strip())
        if env.get("RIDTRACE_ID_GENERATOR"):
            choice = env["RIDTRACE_ID_GENERATOR"].lower()
            if choice not in _GENERATORS:
                raise ValueError(f"RIDTRACE_ID_GENERATOR must be one of {sorted(_GENERATORS)}")
            kwargs["id_generator"] = _GENERATORS[choice]
        for key, name in (
            ("RIDTRACE_DEPRECATION_AT", "deprecation_at"),
            ("RIDTRACE_SUNSET_AT", "sunset_at"),
        ):
            if env.get(key):
                kwargs[name] = _parsed(env, key, datetime.fromisoformat)
        try:
            return cls(**kwargs)  # type: ignore[arg-type]
        except ValueError as exc:
            # Name the variable as a parse error does: "max_client_id_length must be at
            # least 1" named nothing an operator could find in the environment.
            culprits = [_VARIABLES[name] for name, value in kwargs.items()
                        if _refused(cls, name, value)]
            named = culprits or [_VARIABLES[name] for name in kwargs]  # refused together
            raise ValueError(f"{', '.join(named)}: {exc}") from None


# Each field from_env sets, by the variable that sets it.
_VARIABLES = {
    "span_name": "RIDTRACE_SPAN_NAME", "client_id_header": "RIDTRACE_CLIENT_ID_HEADER",
    "response_id_header": "RIDTRACE_RESPONSE_ID_HEADER",
    "deprecation_link": "RIDTRACE_DEPRECATION_LINK",
    "max_client_id_length": "RIDTRACE_MAX_CLIENT_ID_LENGTH",
    "deprecated_headers": "RIDTRACE_DEPRECATED_HEADERS",
    "id_generator": "RIDTRACE_ID_GENERATOR", "deprecation_at": "RIDTRACE_DEPRECATION_AT",
    "sunset_at": "RIDTRACE_SUNSET_AT",
}


def _refused(cls: type[TracingSettings], name: str, value: object) -> bool:
    try:
        cls(**{name: value})  # type: ignore[arg-type]
    except ValueError:
        return True
    return False
