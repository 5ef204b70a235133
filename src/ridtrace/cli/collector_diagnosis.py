"""Why the demo's stack could not export a signal to the endpoint it names, if so.

Each case here once ended the demo with "spans were exported" while every process
failed every export (or printed a screen of errors): the demo asks the endpoint first
and says in one line what is wrong and what to set (`why_not_exported`).
"""

from __future__ import annotations

import os

from ridtrace.cli.collector_probe import (
    answers,
    empty_export,
    grpc_speaks_http1,
    grpc_unimplemented,
    meant_endpoint,
    not_found,
    speaks_tls,
)
from ridtrace.tracing.otlp import grpc_insecure
from ridtrace.tracing.otlp_endpoints import otlp_protocol, shown_endpoint


def why_not_exported(signal_name: str, endpoint: str) -> tuple[str, str] | None:
    """(what is wrong, what to do) when `signal_name`'s exports to `endpoint` would
    all fail; None when it takes them."""
    shown = shown_endpoint(endpoint)  # a token in the URL stays out of CI logs
    why: str | None = None
    hint = ""
    over_http = otlp_protocol(os.environ, signal_name) != "grpc"
    reachable = answers(endpoint)
    answer = empty_export(endpoint) if over_http and reachable else None
    if not reachable:
        # Nothing listening (Jaeger not started yet): every process retried its
        # export for seconds, printing ~20 warnings, the run took twice as long,
        # and the demo still said the spans were exported. Said once instead.
        why = f"nothing answers at {shown}"
        hint = "start Jaeger first: docs/jaeger.md"
        if signal_name == "metrics":
            # Started, Jaeger answers metrics with 404: that advice alone led to
            # a second run that failed them again.
            hint = ("start the collector first; for Jaeger, which takes none, set "
                    "OTEL_METRICS_EXPORTER=none: docs/jaeger.md")
    elif (otlp_protocol(os.environ, signal_name) == "grpc" and "://" not in endpoint
          and not grpc_insecure(os.environ, signal_name, endpoint)
          and not speaks_tls(endpoint)):
        # OTEL_EXPORTER_OTLP_ENDPOINT=127.0.0.1:4317 over grpc: without a scheme
        # the channel is TLS, every export failed its handshake on Jaeger's
        # plaintext port (a screen of SSL errors), and the demo still said the
        # spans were exported.
        why = f"{shown} does not speak TLS, which gRPC uses without http://"
        hint = f"name it http://{shown}, or set OTEL_EXPORTER_OTLP_INSECURE=true"
    elif (otlp_protocol(os.environ, signal_name) == "grpc"
          and grpc_insecure(os.environ, signal_name, endpoint)
          and grpc_unimplemented(endpoint, signal_name)):
        # Jaeger's 4317 has no metrics service: every process logged "Failed to
        # export metrics … UNIMPLEMENTED" as an ERROR, the clean run's included.
        why = f"{shown} has no OTLP {signal_name} service (as Jaeger)"
        hint = f"set OTEL_{signal_name.upper()}_EXPORTER=none for it: docs/jaeger.md"
    elif (otlp_protocol(os.environ, signal_name) == "grpc"
          and grpc_insecure(os.environ, signal_name, endpoint)
          and grpc_speaks_http1(endpoint, signal_name)):
        why = f"{shown} answers HTTP/1.1, as an OTLP/HTTP port does, not gRPC"
        hint = "name its gRPC port, 4317, or set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
    elif answer is not None and answer.unfollowed_redirect is not None:
        # http sent on to https with a 301/302: every export failed with an
        # ERROR, and the demo still said the spans were exported.
        why = f"{shown} answers {answer.status}, a redirect an export cannot follow"
        hint = f"name where it points, {shown_endpoint(answer.unfollowed_redirect)}"
    elif answer is not None and answer.web_page:
        # Jaeger's UI port, the URL a user has open, answers every export 200
        # with its page: each process failed every export, and the demo still
        # ended with "spans were exported to …".
        why = f"{shown} answers with an HTML page, it is not an OTLP receiver"
        hint = ("Jaeger's UI port 16686? name its OTLP/HTTP port, 4318: "
                "docs/jaeger.md")
    elif answer is not None and answer.not_http:
        # OTLP/gRPC's port under the default http/protobuf: a traceback before.
        why = f"{shown} gives no HTTP/1.1 answer, as an OTLP/gRPC port does"
        hint = "name its OTLP/HTTP port, 4318, or set OTEL_EXPORTER_OTLP_PROTOCOL=grpc"
    elif answer is not None and answer.no_otlp_answer:
        # A web API answers every POST 200 with JSON of its own: each process
        # failed every export, and the demo still said the spans were exported.
        why = (f"{shown} answers with JSON that is no OTLP answer, it is not an "
               "OTLP receiver")
        hint = "name the collector's OTLP/HTTP port, 4318: docs/jaeger.md"
    elif answer is not None and answer.status in (405, 501):
        # A server that takes no POST (a static file server: `python -m http.server`
        # answers 501): every export failed, and the demo still sent the user to
        # search Jaeger for spans nobody kept.
        why = (f"{shown} answers {answer.status} to an export's POST, it is not an OTLP "
               "receiver")
        hint = "name the collector's OTLP/HTTP port, 4318: docs/jaeger.md"
    elif answer is not None and answer.status == 404:
        meant = meant_endpoint(signal_name)
        if meant is not None and not not_found(meant[2]):
            # OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://jaeger:4318 is used as it
            # is (and OTEL_EXPORTER_OTLP_ENDPOINT=…/v1/traces gets one more added),
            # so every export got 404: the demo said Jaeger took no traces and
            # advised turning them off, where the URL was one path off.
            why = f"{shown} answers 404"
            hint = f"{meant[0]}: set it to {shown_endpoint(meant[1])}"
        else:
            # Jaeger takes traces only: every process of both runs logged "Failed
            # to export metrics batch code: 404" as an ERROR, the clean run's too.
            why = f"{shown} answers 404, it takes no {signal_name} (as Jaeger)"
            hint = f"set OTEL_{signal_name.upper()}_EXPORTER=none for it: docs/jaeger.md"
    return None if why is None else (why, hint)
