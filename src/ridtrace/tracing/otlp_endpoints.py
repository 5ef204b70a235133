"""Where OTLP export goes, read from one mapping of OTEL_* variables: which exporters
a signal has, over which protocol, to which endpoint URL.

Read, not assumed, and from the mapping given (``configure_tracing(environ=...)``,
``configure_metrics(environ=...)``): the exporters' own options are `tracing.otlp`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlparse, urlsplit, urlunsplit

__all__ = [
    "endpoint_secrets_hidden",
    "endpoint_secrets_known",
    "exporter_names",
    "otlp_endpoint",
    "otlp_export_endpoint",
    "otlp_protocol",
    "remember_endpoint_secrets",
    "shown_endpoint",
]


def otlp_protocol(env: Mapping[str, str], signal: str) -> str:
    """``OTEL_EXPORTER_OTLP_{SIGNAL}_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL``:
    ``grpc``, or ``http/protobuf`` (the default); the one ``OTEL_{SIGNAL}_EXPORTER``
    names (``otlp_proto_grpc``, ``otlp_proto_http``) before either. ``http/json`` is sent as
    http/protobuf, which every OTLP/HTTP receiver also takes on the same URL.

    Read, not assumed: a collector's gRPC port (4317) answers nothing an HTTP
    exporter sends, and every span was lost with only the exporter's retries to show.
    """
    named = _PROTOCOL_OF_EXPORTER.get(_named_otlp(env, signal))
    if named is not None:
        return named
    for key in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(key, "").strip().lower()
        if not value:
            continue
        if value in ("http/protobuf", "http/json"):
            return "http/protobuf"
        if value == "grpc":
            return "grpc"
        raise ValueError(f"{key}={env[key]!r}: OTLP protocols are grpc, http/protobuf, http/json")
    return "http/protobuf"


# What OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER may name. "prometheus" is the
# GET /metrics route, which ridtrace serves whatever the variable says.
_EXPORTERS = {
    "traces": ("otlp", "otlp_proto_http", "otlp_proto_grpc", "console", "none"),
    "metrics": ("otlp", "otlp_proto_http", "otlp_proto_grpc", "prometheus", "console", "none"),
}
# The Python SDK's names for OTLP over one protocol (opentelemetry-instrument's
# configuration): the protocol they name wins over OTEL_EXPORTER_OTLP_*PROTOCOL, as
# there. Refused as unknown, they kept a service set up for it from starting.
_PROTOCOL_OF_EXPORTER = {"otlp_proto_http": "http/protobuf", "otlp_proto_grpc": "grpc"}


def _named_otlp(env: Mapping[str, str], signal: str) -> str:
    """The protocol-specific OTLP exporter ``OTEL_{SIGNAL}_EXPORTER`` names, else ``""``."""
    raw = env.get(f"OTEL_{signal.upper()}_EXPORTER", "")
    named = {n.strip().lower() for n in raw.split(",")} & _PROTOCOL_OF_EXPORTER.keys()
    return named.pop() if len(named) == 1 else ""
# The SDK's defaults when OTLP export is asked for by name but no endpoint is set.
_DEFAULT_ENDPOINTS = {"grpc": "http://localhost:4317", "http/protobuf": "http://localhost:4318"}


def exporter_names(env: Mapping[str, str], signal: str) -> frozenset[str]:
    """The exporters ``OTEL_{SIGNAL}_EXPORTER`` names (comma list; ``otlp`` when unset,
    and for the Python SDK's ``otlp_proto_http`` / ``otlp_proto_grpc``), ``none`` left
    out. An unknown name, or ``none`` beside another, raises ``ValueError`` naming the
    variable.

    Read, not assumed: ``OTEL_TRACES_EXPORTER=none`` beside a shared
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (metrics wanted, spans not) exported every span.
    """
    key = f"OTEL_{signal.upper()}_EXPORTER"
    raw = env.get(key, "")
    names = {name.strip().lower() for name in raw.split(",") if name.strip()} or {"otlp"}
    unknown = names.difference(_EXPORTERS[signal])
    if unknown:
        raise ValueError(
            f"{key}={raw!r}: ridtrace exports {signal} with {', '.join(_EXPORTERS[signal])}"
        )
    # `none` is the absence of any exporter: with others named beside it (`none,otlp`)
    # the list says two opposite things. Its `none` was left out and the others kept,
    # so every span went to the collector that `none` was written to keep them from; the
    # Python SDK fails to start on such a list and Java's refuses it, as this does.
    if "none" in names and len(names) > 1:
        raise ValueError(f"{key}={raw!r}: 'none' means no exporter and cannot be named "
                         "beside others; set none alone, or only the exporters wanted")
    if len(names & _PROTOCOL_OF_EXPORTER.keys()) > 1:
        raise ValueError(f"{key}={raw!r}: OTLP goes over one protocol; name "
                         "otlp_proto_http or otlp_proto_grpc, not both")
    return frozenset({"otlp" if n in _PROTOCOL_OF_EXPORTER else n for n in names} - {"none"})


def otlp_export_endpoint(env: Mapping[str, str], signal: str) -> str | None:
    """Where ``signal`` goes over OTLP, or ``None`` for no OTLP export.

    ``OTEL_{SIGNAL}_EXPORTER`` decides whether OTLP is used at all; the endpoint
    variables where to (:func:`otlp_endpoint`). With no endpoint set, nothing is sent,
    unless the exporter variable names ``otlp`` itself: then the SDK's default
    (``localhost:4318``, ``4317`` over grpc), as its documentation says.
    """
    if "otlp" not in exporter_names(env, signal):
        return None
    endpoint = otlp_endpoint(env, signal)
    if endpoint is None and env.get(f"OTEL_{signal.upper()}_EXPORTER", "").strip():
        protocol = otlp_protocol(env, signal)
        endpoint = otlp_endpoint(
            {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": _DEFAULT_ENDPOINTS[protocol]}, signal
        )
    return endpoint


def otlp_endpoint(env: Mapping[str, str], signal: str) -> str | None:
    """The OTLP URL for ``signal`` (``traces``, ``metrics``), or ``None``.

    Over http/protobuf the base endpoint gets the signal's path (``/v1/traces``); over
    grpc it is used as it is, as the specification says. A signal's own endpoint is
    always used as it is.
    """
    key = f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
    # Blanks around a value (a quoted YAML line) are no part of the URL, as for the
    # exporter's other variables: kept, they failed every export ("Host '…:4318 '
    # contains invalid character").
    specific = env.get(key, "").strip()
    if specific:
        return _url_checked(env, signal, key, specific)
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not base:
        return None
    if otlp_protocol(env, signal) == "grpc":
        return _url_checked(env, signal, "OTEL_EXPORTER_OTLP_ENDPOINT", base)
    _url_checked(env, signal, "OTEL_EXPORTER_OTLP_ENDPOINT", base)
    # Onto the URL's path, its query kept after it: appended to the whole string, a
    # base with a query (`?tenant=a`, a gateway's key) sent every export to
    # `/?tenant=a/v1/traces`, which no collector serves.
    url = urlsplit(base)
    return urlunsplit(url._replace(path=f"{url.path.rstrip('/')}/v1/{signal}"))


def _url_checked(env: Mapping[str, str], signal: str, key: str, value: str) -> str:
    """``value``, if the exporter can send to it: over http/protobuf, an http(s) URL;
    over grpc, one without ``user:password``.

    ``collector:4318``, right for a gRPC exporter, is no URL to the HTTP one: every
    batch failed ("No connection adapters were found") while the service ran on, its
    spans and metrics dropped with one ERROR line per batch in its log.
    """
    if otlp_protocol(env, signal) == "grpc":
        # gRPC sends no userinfo: the exporter took `user:password@host` for a host
        # name, failed every export, and wrote the password into every ERROR line.
        authority = urlsplit(value if "://" in value else "//" + value).netloc
        if "@" in authority:
            raise ValueError(f"{key}={shown_endpoint(value)!r}: an OTLP/gRPC endpoint takes "
                             "no user:password; send the collector's credentials in "
                             "OTEL_EXPORTER_OTLP_HEADERS")
        return value
    url = urlparse(value)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise ValueError(f"{key}={shown_endpoint(value)!r}: an OTLP/HTTP endpoint is an "
                         "http:// or https:// URL")
    return value


def shown_endpoint(endpoint: str) -> str:
    """``endpoint`` as it may be printed: ``user:password`` becomes ``***`` and a query
    becomes ``?…``. A hosted collector's URL may carry a token in either, and the demo
    printed it verbatim to terminals and CI logs.

    Everything up to the last ``@`` counts as userinfo, as for worker URLs: a password
    holding an unencoded ``/`` or ``?`` shows too little rather than leaking its rest.
    """
    head, at, tail = endpoint.rpartition("@")
    if at:
        scheme, sep, _ = head.partition("://")
        endpoint = (scheme + sep if sep else "") + "***@" + tail
    base, query, _ = endpoint.partition("?")
    return base + "?…" if query else base


# The credential parts of the endpoints exporters were built for: the query (``?api_key=…``)
# and the userinfo. The OTLP/HTTP exporter's own warnings quote the URL it failed on
# (``Max retries exceeded with url: /v1/traces?api_key=…``), once per retry, and those
# lines reached the service's JSON log, the file shipped to log stores.
_endpoint_secrets: set[str] = set()


def remember_endpoint_secrets(endpoint: str) -> None:
    """Keep `endpoint`'s query and userinfo to hide in OpenTelemetry's log lines."""
    head, at, tail = endpoint.rpartition("@")
    if at:
        userinfo = head.partition("://")[2] or head
        if userinfo:
            _endpoint_secrets.add(userinfo)
        endpoint = tail
    query = endpoint.partition("?")[2]
    if query:
        _endpoint_secrets.add(query)


def endpoint_secrets_hidden(text: str) -> str:
    """`text` with every remembered endpoint secret shown as ``…`` (`shown_endpoint`)."""
    for secret in _endpoint_secrets:
        if secret in text:
            text = text.replace(secret, "…")
    return text


def endpoint_secrets_known() -> bool:
    return bool(_endpoint_secrets)
