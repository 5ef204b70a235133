"""What ``ridtrace demo`` asks a collector before its processes export to it: whether it
answers, speaks the TLS a gRPC endpoint without a scheme asks for, takes the signal at
the URL the variables give, and is an OTLP receiver at all (no web page)."""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NamedTuple

__all__ = ["ExportAnswer", "answers", "empty_export", "grpc_speaks_http1", "grpc_unimplemented",
           "meant_endpoint", "not_found", "speaks_tls"]


def answers(endpoint: str) -> bool:
    """Whether something accepts a connection at the endpoint's host and port."""
    url = urllib.parse.urlsplit(endpoint if "://" in endpoint else "http://" + endpoint)
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
        with socket.create_connection((url.hostname or "localhost", port), timeout=2.0):
            return True
    except (OSError, ValueError):  # refused, unreachable, unknown host, bad port
        return False


def speaks_tls(endpoint: str) -> bool:
    """Whether a scheme-less gRPC endpoint completes a TLS handshake (its certificate
    not checked). A plaintext collector refuses the ClientHello; a timeout says nothing
    either way, so the endpoint is left in use."""
    url = urllib.parse.urlsplit("//" + endpoint)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        host = url.hostname or "localhost"
        with socket.create_connection((host, url.port or 4317), timeout=2.0) as raw, \
                context.wrap_socket(raw, server_hostname=host):
            return True
    except (ssl.SSLError, ConnectionError):
        return False
    except (OSError, ValueError):
        return True


_SIGNAL_PATH = re.compile(r"/v1/(?:traces|metrics|logs)/*$")


def meant_endpoint(signal_name: str) -> tuple[str, str, str] | None:
    """For an endpoint variable one path off, the mistake, the value meant, and the
    signal's URL with it: the signal's own variable, used as it is, without its
    ``/v1/<signal>``; or the shared one, which gets ``/v1/<signal>`` added, with it."""
    suffix = f"/v1/{signal_name}"
    own = f"OTEL_EXPORTER_OTLP_{signal_name.upper()}_ENDPOINT"
    value = os.environ.get(own, "").strip()
    if value:
        url = urllib.parse.urlsplit(value)
        if url.path.rstrip("/").endswith(suffix):
            return None
        meant = urllib.parse.urlunsplit(url._replace(path=url.path.rstrip("/") + suffix))
        return f"{own} is used as it is", meant, meant
    url = urllib.parse.urlsplit(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())
    if not _SIGNAL_PATH.search(url.path):
        return None
    base = urllib.parse.urlunsplit(url._replace(path=_SIGNAL_PATH.sub("", url.path)))
    return (f"OTEL_EXPORTER_OTLP_ENDPOINT gets {suffix} added", base,
            base.rstrip("/") + suffix)


def not_found(endpoint: str) -> bool:
    """Whether an OTLP/HTTP endpoint answers an empty export with 404: a collector with
    no pipeline for that signal. Anything else (200, 401, an error) leaves it in use."""
    answer = empty_export(endpoint)
    return answer is not None and answer.status == 404


class ExportAnswer(NamedTuple):
    """What an OTLP/HTTP endpoint answered an empty export with (one probe per signal:
    against a collector that never answers, each probe waits its whole timeout)."""

    endpoint: str
    status: int
    media_type: str
    location: str
    # A 2xx JSON answer that is no OTLP one (a web API's `{"status": "ok"}`): every
    # export to it fails (`tracing.otlp_session`).
    no_otlp_answer: bool = False
    # No HTTP/1.1 answer (an OTLP/gRPC port's HTTP/2): every export to it fails.
    not_http: bool = False

    @property
    def web_page(self) -> bool:
        """A 2xx HTML page: no OTLP receiver (Jaeger's UI port, 16686, answers any POST
        with its page)."""
        return 200 <= self.status < 300 and self.media_type == "text/html"

    @property
    def unfollowed_redirect(self) -> str | None:
        """Where a redirect points that would resend an export as a GET (301, 302, 303:
        an ingress sending http to https), which fails every export
        (`tracing.otlp_session`); None for any other answer."""
        if self.status not in (301, 302, 303):
            return None
        return urllib.parse.urljoin(self.endpoint, self.location)  # it may be relative


# The most of a JSON answer read; an OTLP answer to an empty export is a few bytes.
_LONGEST_READ = 65536
_OTLP_ANSWER_FIELDS = frozenset({"partialSuccess", "partial_success"})


def _otlp_json(body: bytes) -> bool:
    """Whether a JSON answer's ``body`` is an OTLP one: nothing, or an object holding
    nothing but a partial success."""
    if not body.strip():
        return True
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and document.keys() <= _OTLP_ANSWER_FIELDS


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # An export follows no redirect but 307/308, and those itself: the probe judges the
    # answer the endpoint gives, not the one a GET to its Location gets.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def empty_export(endpoint: str) -> ExportAnswer | None:
    """What an endpoint answers an empty export with; None when it gives no HTTP answer."""
    url, auth = _without_userinfo(endpoint)
    request = urllib.request.Request(url, data=b"", method="POST",
                                     headers={"content-type": "application/x-protobuf",
                                              **auth})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects())
    try:
        with opener.open(request, timeout=2.0) as answer:
            media_type = answer.headers.get_content_type()
            json_body = answer.read(_LONGEST_READ) if media_type == "application/json" else b""
            return ExportAnswer(endpoint, answer.status, media_type, "",
                                not _otlp_json(json_body))
    except urllib.error.HTTPError as answer:
        headers = answer.headers
        if headers is None:
            return ExportAnswer(endpoint, answer.code, "", "")
        return ExportAnswer(endpoint, answer.code, headers.get_content_type(),
                            headers.get("location", ""))
    except http.client.HTTPException:
        # No HTTP/1.1 answer at all: an OTLP/gRPC port (4317) answers with HTTP/2 frames
        # ("BadStatusLine"), which ended the demo in a traceback and "internal error".
        return ExportAnswer(endpoint, 0, "", "", not_http=True)
    except (OSError, ValueError):
        return None


def _without_userinfo(endpoint: str) -> tuple[str, dict[str, str]]:
    """`endpoint` without its ``user:password@``, and the Basic authorization it stands
    for, as the exporter (requests) sends it. urllib took ``user:token@host`` for the
    host name: no answer, and an endpoint answering every export 404 was left in use."""
    parts = urllib.parse.urlsplit(endpoint)
    if "@" not in parts.netloc:
        return endpoint, {}
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    token = base64.b64encode(pair.encode("latin-1", "replace")).decode("ascii")
    return parts._replace(netloc=host).geturl(), {"authorization": f"Basic {token}"}


_GRPC_EXPORT = {
    "traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    "metrics": "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
}


def grpc_unimplemented(endpoint: str, signal_name: str) -> bool:
    """Whether a plaintext OTLP/gRPC endpoint answers an empty export UNIMPLEMENTED: a
    collector with no service for that signal (Jaeger's metrics). Anything else (OK, an
    error, no answer in time) leaves it in use."""
    import grpc

    target = urllib.parse.urlsplit(endpoint).netloc if "://" in endpoint else endpoint
    with grpc.insecure_channel(target) as channel:
        try:
            channel.unary_unary(_GRPC_EXPORT[signal_name])(b"", timeout=2.0)
        except grpc.RpcError as error:
            return bool(error.code() == grpc.StatusCode.UNIMPLEMENTED)
    return False


def grpc_speaks_http1(endpoint: str, signal_name: str) -> bool:
    """Whether a plaintext OTLP/gRPC endpoint answers HTTP/1.1, not HTTP/2: an OTLP/HTTP
    port (4318) named under ``grpc``, to which every export fails UNAVAILABLE."""
    import grpc

    target = urllib.parse.urlsplit(endpoint).netloc if "://" in endpoint else endpoint
    with grpc.insecure_channel(target) as channel:
        try:
            channel.unary_unary(_GRPC_EXPORT[signal_name])(b"", timeout=2.0)
        except grpc.RpcError as error:
            # grpc's words for an HTTP/1.x answer ("Trying to connect an http1.x server",
            # "Failed parsing HTTP/2 (Expected SETTINGS frame…)").
            details = str(error.details() or "")
            return bool(error.code() == grpc.StatusCode.UNAVAILABLE
                        and ("http1.x" in details or "Failed parsing HTTP/2" in details))
    return False
