"""An OTLP/HTTP receiver on loopback that decodes the protobuf: traces and metrics."""

from __future__ import annotations

import gzip
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = [
    "OtlpReceiver",
    "ReceivedSpan",
    "otlp_grpc_receiver",
    "otlp_receiver",
    "redirecting_collector",
]


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as it arrived on the wire."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    service_name: str | None
    status_code: int
    trace_state: str = ""
    # Every resource attribute of the export (service.name included).
    resource: dict[str, Any] = field(default_factory=dict)
    # The instrumentation scope that made the span (its name and version).
    scope: tuple[str, str] = ("", "")


MetricKey = tuple[str | None, str, frozenset[tuple[str, Any]]]
"""(service.name, metric name, data point attributes)."""


def _service_of(resource: Any) -> str | None:
    for attr in resource.attributes:
        if attr.key == "service.name":
            return _value(attr.value)  # type: ignore[no-any-return]
    return None


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


@dataclass
class OtlpReceiver:
    """Collects every span posted to ``endpoint + /v1/traces`` and every metric data
    point posted to ``endpoint + /v1/metrics``."""

    port: int
    # "https" behind a TLS context (otlp_receiver(tls=...)).
    scheme: str = "http"
    spans: list[ReceivedSpan] = field(default_factory=list)
    # Latest value per series: the SDK exports cumulative sums, so the last one counts.
    metrics: dict[MetricKey, float] = field(default_factory=dict)
    metric_exports: int = 0
    # Each sum's aggregation temporality as last exported (1 delta, 2 cumulative).
    temporality: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    # Each export's headers (gRPC: its invocation metadata), keys lower-case, in order.
    headers: list[dict[str, str]] = field(default_factory=list)
    # Each OTLP/HTTP export's request target (path and query), in order.
    paths: list[str] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def add(self, request: ExportTraceServiceRequest) -> None:
        with self._cond:
            self.requests += 1
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                service = resource.get("service.name")
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            ReceivedSpan(
                                name=span.name,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_span_id=span.parent_span_id.hex(),
                                kind=span.kind,
                                attributes={a.key: _value(a.value) for a in span.attributes},
                                service_name=service,
                                status_code=span.status.code,
                                trace_state=span.trace_state,
                                resource=resource,
                                scope=(scope_spans.scope.name, scope_spans.scope.version),
                            )
                        )
            self._cond.notify_all()

    def add_metrics(self, request: ExportMetricsServiceRequest) -> None:
        with self._cond:
            self.metric_exports += 1
            for resource_metrics in request.resource_metrics:
                service = _service_of(resource_metrics.resource)
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        kind = metric.WhichOneof("data")
                        if kind not in ("sum", "gauge"):
                            continue
                        if kind == "sum":
                            self.temporality[metric.name] = metric.sum.aggregation_temporality
                        for point in getattr(metric, kind).data_points:
                            attrs = frozenset(
                                (a.key, _value(a.value)) for a in point.attributes
                            )
                            number = point.WhichOneof("value")
                            value = getattr(point, number) if number else 0
                            self.metrics[(service, metric.name, attrs)] = float(value)
            self._cond.notify_all()

    def metric(self, name: str, service: str | None = None, **attributes: Any) -> float:
        """Sum of the latest values of ``name``'s series whose attributes include these."""
        with self._cond:
            return sum(
                value
                for (svc, metric, attrs), value in self.metrics.items()
                if metric == name
                and (service is None or svc == service)
                and set(attributes.items()) <= set(attrs)
            )

    def wait_for_metric_exports(self, count: int, *, timeout: float = 30.0) -> None:
        """Block until ``count`` metric export requests arrived."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.metric_exports >= count, timeout=timeout):
                raise TimeoutError(f"got {self.metric_exports} metric exports, expected {count}")

    def wait_for(self, count: int, *, timeout: float = 30.0) -> list[ReceivedSpan]:
        """Block until at least ``count`` spans arrived (the exporter batches)."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.spans) >= count, timeout=timeout):
                raise TimeoutError(f"got {len(self.spans)} spans, expected {count}")
            return list(self.spans)

    def wait_until(
        self, holds: Callable[[list[ReceivedSpan]], bool], *, timeout: float = 30.0
    ) -> list[ReceivedSpan]:
        """Block until the spans received so far satisfy ``holds``; those spans."""
        with self._cond:
            if not self._cond.wait_for(lambda: holds(list(self.spans)), timeout=timeout):
                raise TimeoutError(f"got {len(self.spans)} spans, never what was waited for")
            return list(self.spans)


@contextmanager
def otlp_receiver(
    *, metrics: bool = True, tls: ssl.SSLContext | None = None, delay: float = 0.0,
    rejecting: tuple[int, str] | None = None,
) -> Iterator[OtlpReceiver]:
    """Run a receiver on a free loopback port for the duration of the block.

    ``metrics=False`` makes it a collector with no metrics pipeline, as Jaeger is: a
    metrics export gets 404. ``tls``: a server context, and the receiver takes https.
    ``delay``: seconds it takes to answer each export, as a collector under load does.
    ``rejecting``: (count, message) of the partial success it answers every export with.
    """
    receiver_ref: list[OtlpReceiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            time.sleep(delay)
            with receiver_ref[0]._cond:
                receiver_ref[0].headers.append({k.lower(): v for k, v in self.headers.items()})
                receiver_ref[0].paths.append(self.path)
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            elif self.headers.get("content-encoding") == "deflate":  # zlib's, as HTTP's is
                body = zlib.decompress(body)
            path = self.path.partition("?")[0]  # a collector routes by the path alone
            if path == "/v1/traces":
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver_ref[0].add(request)
                answer = ExportTraceServiceResponse()
                if rejecting:
                    answer.partial_success.rejected_spans = rejecting[0]
                    answer.partial_success.error_message = rejecting[1]
                payload = answer.SerializeToString()
            elif path == "/v1/metrics" and metrics:
                metrics_request = ExportMetricsServiceRequest()
                metrics_request.ParseFromString(body)
                receiver_ref[0].add_metrics(metrics_request)
                metrics_answer = ExportMetricsServiceResponse()
                if rejecting:
                    metrics_answer.partial_success.rejected_data_points = rejecting[0]
                    metrics_answer.partial_success.error_message = rejecting[1]
                payload = metrics_answer.SerializeToString()
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    receiver_ref.append(OtlpReceiver(port=server.server_address[1],
                                     scheme="http" if tls is None else "https"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver_ref[0]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def otlp_grpc_receiver(
    *, metrics: bool = True, rejecting: tuple[int, str] | None = None
) -> Iterator[OtlpReceiver]:
    """The same receiver behind OTLP/gRPC (a collector's port 4317) on a free loopback
    port; ``endpoint`` is ``http://127.0.0.1:PORT``, as exporters are given it.

    ``metrics=False`` serves no metrics service, as Jaeger: an export is UNIMPLEMENTED.
    ``rejecting``: (count, message) of the partial success it answers every export with.
    """
    from concurrent.futures import ThreadPoolExecutor

    import grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    port = server.add_insecure_port("127.0.0.1:0")
    receiver = OtlpReceiver(port=port)

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> ExportTraceServiceResponse:
            with receiver._cond:
                receiver.headers.append(dict(context.invocation_metadata()))
            receiver.add(request)
            answer = ExportTraceServiceResponse()
            if rejecting:
                answer.partial_success.rejected_spans = rejecting[0]
                answer.partial_success.error_message = rejecting[1]
            return answer

    class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> ExportMetricsServiceResponse:
            with receiver._cond:
                receiver.headers.append(dict(context.invocation_metadata()))
            receiver.add_metrics(request)
            answer = ExportMetricsServiceResponse()
            if rejecting:
                answer.partial_success.rejected_data_points = rejecting[0]
                answer.partial_success.error_message = rejecting[1]
            return answer

    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    if metrics:
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    server.start()
    try:
        yield receiver
    finally:
        server.stop(None)


@contextmanager
def unresponsive_collector() -> Iterator[str]:
    """A collector that accepts connections and never answers (hung, or a firewall that
    swallows packets): every export waits out its exporter's timeout. Yields the
    endpoint."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed at the end of the block
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for connection in held:
            connection.close()


@contextmanager
def answering_posts(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A loopback HTTP server that reads each POST's body, then lets `answer` write the
    whole reply; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            answer(self)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def answering_200(body: bytes, content_type: str) -> Iterator[str]:
    """An endpoint answering every POST 200 with `body` as `content_type`."""

    def answer(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("content-type", content_type)
        request.send_header("content-length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    with answering_posts(answer) as url:
        yield url


def web_page_server(
    content_type: str = "text/html; charset=utf-8",
) -> AbstractContextManager[str]:
    """A loopback server answering every POST 200 with a page, as Jaeger's UI does."""
    return answering_200(b"<!doctype html><html><title>Jaeger UI</title></html>", content_type)


def answering_json(body: bytes) -> AbstractContextManager[str]:
    """An endpoint answering every POST 200 with `body` as application/json."""
    return answering_200(body, "application/json")


@contextmanager
def redirecting_collector(location: str, status: int = 308) -> Iterator[str]:
    """An endpoint that answers every export ``status`` with ``Location: location`` and
    the export's path (an ingress redirecting http to https, a collector that moved).
    Yields its URL."""

    def redirect(request: BaseHTTPRequestHandler) -> None:
        request.send_response(status)
        request.send_header("location", location + request.path)
        request.send_header("content-length", "0")
        request.end_headers()

    with answering_posts(redirect) as url:
        yield url


def export_one_of_each(service: str, env: Mapping[str, str]) -> None:
    """One span and one finished request through exporters configured by `env` (not the
    process environment), flushed by the shutdown."""
    from ridtrace.tracing import (
        configure_metrics,
        configure_tracing,
        metrics,
        shutdown_telemetry,
    )

    provider = configure_tracing(service, environ=env, set_global=False)
    assert configure_metrics(service, environ=env, set_global=False, prometheus=False)
    provider.get_tracer("t").start_span("s").end()
    metrics.request_finished("/x", "ok")
    shutdown_telemetry()
