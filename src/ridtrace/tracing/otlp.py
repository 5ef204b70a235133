"""OTLP exporters and processors configured from one mapping of OTEL_* variables, with
which options (which exporters, where and over which protocol: `tracing.otlp_endpoints`).

``configure_tracing(environ=...)`` and ``configure_metrics(environ=...)`` read the
endpoint and protocol from the mapping they are given, but the exporter libraries read
their other variables (headers, timeout, compression, TLS files) and the batch
processor its ``OTEL_BSP_*`` from ``os.environ`` by themselves: a caller's mapping
picked where spans went while the process environment picked the credentials sent
there. Every value is resolved here from the mapping (a signal's own variable before
the generic one, as the specification says) and passed to the constructors explicitly.
"""

from __future__ import annotations

import importlib
import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from opentelemetry.util.re import parse_env_headers

from ridtrace.tracing.export_failures import say_each_signals_failures
from ridtrace.tracing.export_schedule import export_timeout_seconds
from ridtrace.tracing.otlp_endpoints import otlp_protocol, remember_endpoint_secrets

__all__ = [
    "export_timeout",
    "otlp_exporter",
    "otlp_exporter_module",
    "otlp_timeout",
]

_COMPRESSIONS = ("gzip", "deflate", "none")
# A timeout from this many seconds up was meant in milliseconds, as the specification
# writes it (OTEL_EXPORTER_OTLP_TIMEOUT=10000): said once per variable and value.
_LIKELY_MILLISECONDS = 1000.0
_said_milliseconds: set[tuple[str, str]] = set()
# Header names (lower-cased by the parser) each transport can send: an HTTP token;
# gRPC metadata keys, but not binary ones (``-bin``), whose values the exporter would
# pass as text (a TypeError on every export).
_HTTP_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9a-z]+")
_GRPC_NAME = re.compile(r"(?![0-9a-z_.\-]*-bin$)[0-9a-z_.\-]+")


def otlp_exporter_module(env: Mapping[str, str], signal: str) -> Any:
    """The OTLP exporter module for `signal` (``traces`` or ``metrics``) over the protocol
    ``OTEL_EXPORTER_OTLP_[signal_]PROTOCOL`` names. Imported on use: the exporter pulls in
    requests/protobuf (or grpcio), which services that export nothing should not pay for."""
    module = {"traces": "trace_exporter", "metrics": "metric_exporter"}[signal]
    if otlp_protocol(env, signal) != "grpc":
        return importlib.import_module(f"opentelemetry.exporter.otlp.proto.http.{module}")
    # The gRPC exporter comes with the ``grpc`` extra, not with the core: say so.
    try:
        imported = importlib.import_module(f"opentelemetry.exporter.otlp.proto.grpc.{module}")
    except ImportError as exc:
        # Name the variable that chose gRPC: the signal's own one, when that was it.
        chosen = _setting(env, signal, "PROTOCOL")
        setting = f"{chosen[0] if chosen else 'OTEL_EXPORTER_OTLP_PROTOCOL'}=grpc"
        exporters = f"OTEL_{signal.upper()}_EXPORTER"
        if "otlp_proto_grpc" in env.get(exporters, "").lower():
            setting = f"{exporters}=otlp_proto_grpc"
        raise ImportError(
            f"{setting} needs opentelemetry-exporter-otlp-proto-grpc: "
            "pip install 'ridtrace[grpc]'"
        ) from exc
    say_each_signals_failures()
    return imported


def _setting(env: Mapping[str, str], signal: str, name: str) -> tuple[str, str] | None:
    """(variable, value) of ``OTEL_EXPORTER_OTLP_{SIGNAL}_{NAME}``, else of
    ``OTEL_EXPORTER_OTLP_{NAME}``; ``None`` when the mapping sets neither."""
    for key in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        value = env.get(key, "").strip()
        if value:
            return key, value
    return None


def otlp_timeout(env: Mapping[str, str], signal: str) -> float:
    """``OTEL_EXPORTER_OTLP_[SIGNAL_]TIMEOUT`` in seconds, as the Python exporters read
    these variables (their default is 10); anything else raises ``ValueError``."""
    found = _setting(env, signal, "TIMEOUT")
    if found is None:
        return 10.0
    key, raw = found
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{key}={raw!r}: a timeout is a positive number of seconds")
    if value >= _LIKELY_MILLISECONDS and (key, raw) not in _said_milliseconds:
        _said_milliseconds.add((key, raw))
        logging.getLogger(__name__).warning(
            "%s=%s is read in seconds, as the Python exporters read it: an export to a hung "
            "collector waits %.0f minutes; meant in milliseconds, as the OpenTelemetry "
            "specification writes it? then set %s=%g", key, raw, value / 60, key,
            value / 1000)
    return value


def export_timeout(env: Mapping[str, str], signal: str) -> float:
    """Seconds one export of ``signal`` may take: the exporter's timeout, or less when
    ``OTEL_BSP_EXPORT_TIMEOUT`` / ``OTEL_METRIC_EXPORT_TIMEOUT`` says so, as the
    specification has them bound an export. Left to the SDK, neither did: every export
    to a hung collector, and every stop, waited the exporter's 10 s whatever they said."""
    return min(otlp_timeout(env, signal), export_timeout_seconds(env, signal))


def _parsed_quietly(entry: str) -> dict[str, str]:
    """OpenTelemetry's parse of one header entry, without its WARN: that line quotes the
    whole entry, the credential it often holds included, and the standard library's
    logging goes to the service's JSON log (the token was written there, while the
    refusal on stderr named the header only)."""
    logger = logging.getLogger("opentelemetry.util.re")
    was_disabled = logger.disabled
    logger.disabled = True
    try:
        return dict(parse_env_headers(entry, liberal=True))
    finally:
        logger.disabled = was_disabled


def _headers(env: Mapping[str, str], signal: str) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_[SIGNAL_]HEADERS``, URL-decoded; an entry the exporters
    cannot send raises ``ValueError`` naming the variable.

    Left to them, an entry that is no ``name=value`` was dropped with a WARN (the
    collector then refused every export for want of its ``authorization``), and a
    value holding what a request cannot carry (a line break or NUL, ``%0A``; over HTTP
    a character past Latin-1; over gRPC anything but printable ASCII) failed every
    export, every span and metric lost while the service ran on.
    """
    found = _setting(env, signal, "HEADERS")
    if found is None:
        return {}
    key, raw = found
    grpc = otlp_protocol(env, signal) == "grpc"
    headers: dict[str, str] = {}
    for number, entry in enumerate((e.strip() for e in raw.split(",")), 1):
        parsed = _parsed_quietly(entry) if entry else {}
        if entry and not parsed:
            # Its name only: the value is often a credential.
            name = entry.partition("=")[0].strip()[:40] if "=" in entry else "(no '=')"
            raise ValueError(f"{key}: entry {number}, {name!r}, is no name=value header "
                             "with its value URL-encoded")
        if parsed:
            # Decoded however the parser took it: an entry outside strict percent-encoding
            # (a literal space: `authorization=Basic dXNlcg%3D%3D`) it keeps as typed, %3D
            # and all, where the Go and Java SDKs decode it; the collector refused every
            # export for want of the token meant.
            raw_name, _, raw_value = entry.partition("=")
            parsed = {unquote(raw_name).strip().lower(): unquote(raw_value).strip()}
        for name, value in parsed.items():
            if not (_GRPC_NAME if grpc else _HTTP_NAME).fullmatch(name):
                raise ValueError(f"{key}: {name!r} is no OTLP/{'gRPC' if grpc else 'HTTP'} "
                                 "header name")
            bad = [c for c in value if not (" " <= c <= "~" or (
                not grpc and (c == "\t" or "\x80" <= c <= "\xff")))]
            if bad:
                raise ValueError(f"{key}: the value of {name!r} holds {bad[0]!r}, which no "
                                 f"OTLP/{'gRPC' if grpc else 'HTTP'} request can carry")
            headers[name] = value
    return headers


def _compression(env: Mapping[str, str], signal: str) -> str:
    """``OTEL_EXPORTER_OTLP_[SIGNAL_]COMPRESSION``: gzip, none, and over HTTP deflate.

    Not deflate over gRPC: grpc-go, which the OpenTelemetry Collector and Jaeger
    serve OTLP/gRPC with, has no deflate, and answered every export UNIMPLEMENTED
    ("Decompressor is not installed for grpc-encoding \"deflate\"").
    """
    found = _setting(env, signal, "COMPRESSION")
    if found is None:
        return "none"
    key, raw = found
    value = raw.lower()
    grpc = otlp_protocol(env, signal) == "grpc"
    if value not in _COMPRESSIONS or (grpc and value == "deflate"):
        known = "gzip, none" if grpc else "gzip, deflate, none"
        raise ValueError(f"{key}={raw!r}: OTLP/{'gRPC' if grpc else 'HTTP'} compressions "
                         f"are {known}")
    return value


def _files(
    env: Mapping[str, str], signal: str, tls: bool, *, pair: bool = False
) -> list[str | None]:
    """The TLS file paths; with ``tls`` each one named must exist (a missing one crashed
    the grpc exporter's build, and failed every https export at run time), and with
    ``pair`` the client key and certificate come both or neither (gRPC's core aborted
    the process, SIGABRT, on one alone)."""
    found = [_setting(env, signal, name)
             for name in ("CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE")]
    for key, path in (f for f in found if f and tls):
        if not Path(path).is_file():
            raise ValueError(f"{key}={path!r}: no such file")
    alone = found[1] or found[2]
    if tls and pair and alone and not (found[1] and found[2]):
        raise ValueError(f"{alone[0]}={alone[1]!r}: a gRPC client key and client "
                         "certificate go together; set both or neither")
    return [f[1] if f else None for f in found]


def grpc_insecure(env: Mapping[str, str], signal: str, endpoint: str) -> bool:
    """Whether the gRPC exporter's channel to ``endpoint`` is plaintext. The exporter's
    rule: https never is; else ``OTEL_EXPORTER_OTLP_[SIGNAL_]INSECURE`` says; else an
    ``http://`` URL is, and an endpoint without a scheme (``collector:4317``) is TLS."""
    scheme = urlparse(endpoint).scheme
    insecure = _setting(env, signal, "INSECURE")
    return scheme != "https" and (insecure[1].lower() == "true" if insecure else scheme == "http")


def otlp_exporter(env: Mapping[str, str], signal: str, endpoint: str) -> Any:
    """The OTLP span or metric exporter for ``signal`` (``traces``, ``metrics``) sending
    to ``endpoint``, every option taken from ``env``: headers, timeout, compression,
    TLS files (and, over grpc, whether the channel is insecure)."""
    module = otlp_exporter_module(env, signal)
    remember_endpoint_secrets(endpoint)
    cls = module.OTLPSpanExporter if signal == "traces" else module.OTLPMetricExporter
    headers = _headers(env, signal)
    compression = _compression(env, signal)
    options: dict[str, Any] = {"endpoint": endpoint, "timeout": export_timeout(env, signal)}
    if headers:
        options["headers"] = headers
    if signal == "metrics":
        options["preferred_temporality"] = _temporality(env)
    scheme = urlparse(endpoint).scheme
    if otlp_protocol(env, signal) == "grpc":
        import grpc

        options["compression"] = {
            "gzip": grpc.Compression.Gzip,
            "none": grpc.Compression.NoCompression,
        }[compression]
        options["insecure"] = grpc_insecure(env, signal, endpoint)
        certificate, client_key, client_certificate = _files(
            env, signal, not options["insecure"], pair=True)
        if not options["insecure"] and (certificate or client_key or client_certificate):
            options["credentials"] = grpc.ssl_channel_credentials(
                root_certificates=_read(certificate),
                private_key=_read(client_key),
                certificate_chain=_read(client_certificate),
            )
    else:
        from opentelemetry.exporter.otlp.proto.http import Compression

        from ridtrace.tracing.otlp_session import export_session  # imports requests

        options["compression"] = Compression(compression)
        certificate, client_key, client_certificate = _files(env, signal, scheme == "https")
        options["certificate_file"] = certificate
        options["client_key_file"] = client_key
        options["client_certificate_file"] = client_certificate
        # Its CA file trusted whatever REQUESTS_CA_BUNDLE says, redirects answered as
        # HTTP says (the exporter took any 3xx for a delivery) and a partial success
        # said (the exporter never read it): tracing.otlp_session.
        options["session"] = export_session(signal, certificate, frozenset(headers))
    exporter = cls(**options)
    if otlp_protocol(env, signal) == "grpc":
        # The gRPC exporter drops each answer, a partial success with it.
        from ridtrace.tracing.otlp_partial import watch_grpc_answers

        watch_grpc_answers(exporter, signal, endpoint)
    return exporter


_TEMPORALITY_KEY = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
# The instruments each preference makes delta (the specification's table); the others
# stay cumulative, up-down counters (ridtrace.inflight) always.
_DELTA = {"cumulative": (), "delta": ("Counter", "Histogram", "ObservableCounter"),
          "lowmemory": ("Counter", "Histogram")}


def _temporality(env: Mapping[str, str]) -> dict[type, Any]:
    """Each instrument's temporality under the preference ``env`` names (cumulative by
    default), given whole to the exporter: left to it, it read the variable from
    ``os.environ`` whatever mapping ``configure_metrics(environ=...)`` had."""
    import opentelemetry.sdk.metrics as sdk
    from opentelemetry.sdk.metrics.export import AggregationTemporality as Temporality

    raw = env.get(_TEMPORALITY_KEY, "").strip()
    delta = _DELTA.get(raw.lower() or "cumulative")
    if delta is None:
        raise ValueError(f"{_TEMPORALITY_KEY}={raw!r}: it is cumulative, delta or lowmemory")
    return {getattr(sdk, name): Temporality.DELTA if name in delta else Temporality.CUMULATIVE
            for name in ("Counter", "UpDownCounter", "Histogram", "ObservableCounter",
                         "ObservableUpDownCounter", "ObservableGauge")}


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None
