"""The instruments of docs/metrics.md, recorded by the middleware and the in-flight table."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ridtrace.frontend_plugin.registry import DuplicateRequestId, InflightRegistry
from ridtrace.tracing import RequestTracingMiddleware, TracingSettings, metrics
from ridtrace.tracing.observed import UNMATCHED_ROUTE


def _points(reader: InMemoryMetricReader) -> dict[tuple[str, frozenset[tuple[str, Any]]], float]:
    data = reader.get_metrics_data()
    out: dict[tuple[str, frozenset[tuple[str, Any]]], float] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    out[(metric.name, frozenset(point.attributes.items()))] = point.value
    return out


def _app(**settings: Any) -> Any:
    async def item(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def boom(request: Request) -> PlainTextResponse:
        return PlainTextResponse("no", status_code=503)

    app = Starlette(routes=[Route("/items/{id}", item), Route("/boom", boom)])
    return RequestTracingMiddleware(app, settings=TracingSettings(**settings))


async def _send(app: Any, requests: list[tuple[str, list[tuple[bytes, bytes]]]]) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        for path, headers in requests:
            await client.get(path, headers=headers)


@pytest.mark.parametrize("log_lifecycle", [True, False])
def test_middleware_counts_requests_deprecated_headers_and_rejected_ids(
    reader: InMemoryMetricReader, log_lifecycle: bool
) -> None:
    # log_lifecycle=False with no SDK tracer: the id-only path, unless metrics are on.
    asyncio.run(_send(_app(log_lifecycle=log_lifecycle), [
        ("/items/1", [(b"x-dynamo-request-id", b"a")]),
        ("/items/2", [(b"x-dynamo-request-id", b"b"), (b"request-id", b"c")]),
        ("/items/3", [(b"x-request-id", b"x" * 200)]),
        ("/items/4", [(b"x-request-id", b"caf\xe9")]),
        ("/boom", []),
        ("/nowhere/5", []),
    ]))
    points = _points(reader)
    assert points[("ridtrace.requests", frozenset({("route", "/items/{id}"), ("outcome", "ok")}))] == 4
    assert points[("ridtrace.requests", frozenset({("route", "/boom"), ("outcome", "error")}))] == 1
    assert points[("ridtrace.requests", frozenset({("route", UNMATCHED_ROUTE), ("outcome", "ok")}))] == 1
    assert points[("ridtrace.deprecated_header.requests", frozenset({("header", "x-dynamo-request-id")}))] == 2
    assert points[("ridtrace.deprecated_header.requests", frozenset({("header", "request-id")}))] == 1
    assert points[("ridtrace.client_id_rejected", frozenset({("reason", "too_long")}))] == 1
    assert points[("ridtrace.client_id_rejected", frozenset({("reason", "not_printable_ascii")}))] == 1


def test_nothing_is_recorded_without_a_meter_provider() -> None:
    assert metrics.instruments() is None
    asyncio.run(_send(_app(), [("/items/1", [(b"x-dynamo-request-id", b"a")])]))
    assert metrics.instruments() is None  # the API's proxy provider was not adopted


def test_registry_counts_inflight_and_refusals(reader: InMemoryMetricReader) -> None:
    safe = InflightRegistry("safe", side="worker")
    first: asyncio.Queue[object] = asyncio.Queue()
    safe.register("k", first)
    with pytest.raises(DuplicateRequestId):
        safe.register("k", asyncio.Queue())
    points = _points(reader)
    assert points[("ridtrace.inflight", frozenset({("side", "worker")}))] == 1
    assert points[("ridtrace.duplicate_refused", frozenset({("side", "worker")}))] == 1
    safe.release("k", first)
    legacy = InflightRegistry("legacy")
    legacy.register("k", asyncio.Queue())
    legacy.register("k", asyncio.Queue())  # replaces: still one entry
    assert _points(reader)[("ridtrace.inflight", frozenset({("side", "frontend")}))] == 1
    assert legacy.claim("k") is not None  # legacy claim removes the entry
    points = _points(reader)
    assert points[("ridtrace.inflight", frozenset({("side", "frontend")}))] == 0
    assert points[("ridtrace.inflight", frozenset({("side", "worker")}))] == 0


def test_rejection_reasons() -> None:
    assert metrics.rejection_reason(b"", 10) == "empty"
    assert metrics.rejection_reason("x" * 11, 10) == "too_long"
    assert metrics.rejection_reason("a\r\nb", 10) == "not_printable_ascii"


# docs/metrics.md's table: kind (monotonic sum = counter, non-monotonic = up-down
# counter), the unit, and the only attribute keys a series may carry.
_CONTRACT = {
    "ridtrace.requests": (True, "{request}", {"route", "outcome"}),
    "ridtrace.inflight": (False, "{request}", {"side"}),
    "ridtrace.duplicate_refused": (True, "{request}", {"side"}),
    "ridtrace.conflict_retries": (True, "{attempt}", set()),
    "ridtrace.foreign_chunks_refused": (True, "{chunk}", set()),
    "ridtrace.deprecated_header.requests": (True, "{request}", {"header"}),
    "ridtrace.client_id_rejected": (True, "{request}", {"reason"}),
}


def test_every_instrument_has_the_documented_kind_unit_and_attributes(
    reader: InMemoryMetricReader,
) -> None:
    metrics.request_finished("/items/{id}", "ok")
    metrics.inflight_changed("frontend", 1)
    metrics.duplicate_refused("frontend")
    metrics.conflict_retry()
    metrics.foreign_chunk_refused()
    metrics.deprecated_header_sent("request-id")
    metrics.client_id_rejected("too_long")
    data = reader.get_metrics_data()
    assert data is not None
    seen: dict[str, tuple[bool, str | None, set[str]]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "ridtrace"
            for metric in scope.metrics:
                keys = set().union(*(p.attributes.keys() for p in metric.data.data_points))
                seen[metric.name] = (metric.data.is_monotonic, metric.unit, keys)
    assert seen == _CONTRACT


_CONFIGURED_TWICE = """
from prometheus_client import REGISTRY, generate_latest
from ridtrace.tracing import configure_metrics, metrics
first = configure_metrics("twice")
metrics.request_finished("/x", "ok")
second = configure_metrics("twice")
metrics.request_finished("/x", "ok")
print(first is second)
print(generate_latest(REGISTRY).decode())
"""


def test_configure_metrics_called_again_keeps_one_exposition() -> None:
    # A second call (an app factory run twice, a lifespan and a module both setting up)
    # built a second provider, which OpenTelemetry would not make global, with a second
    # Prometheus reader: GET /metrics listed every family twice, which Prometheus refuses
    # whole ("second HELP line for metric name"), each copy with part of the counts.
    import subprocess
    import sys

    from tests.support.servers import child_pythonpath

    done = subprocess.run([sys.executable, "-c", _CONFIGURED_TWICE], capture_output=True,
                          text=True, timeout=60, check=True,
                          env={"PYTHONPATH": child_pythonpath(), "PATH": ""})
    same, text = done.stdout.split("\n", 1)
    assert same == "True"
    assert text.count("# HELP ridtrace_requests_total") == 1, text
    assert 'outcome="ok",route="/x"} 2.0' in text, text


_APP_PROVIDER_TWICE = """
from opentelemetry import metrics as otel_metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from ridtrace.tracing import configure_metrics, metrics
reader = InMemoryMetricReader()
otel_metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))  # the app's own
for _ in range(2):  # an app factory per test fixture, each calling configure_metrics
    configure_metrics("app")
    metrics.request_finished("/x", "ok")
    metrics.bind_meter_provider(otel_metrics.get_meter_provider())  # bound again, directly
    metrics.request_finished("/x", "ok")
for scope in reader.get_metrics_data().resource_metrics[0].scope_metrics:
    for metric in scope.metrics:
        if metric.name == "ridtrace.requests":
            print(sum(p.value for p in metric.data.data_points if p.attributes["route"] == "/x"))
"""


def test_a_provider_the_application_set_counts_on_when_bound_again() -> None:
    # Each configure_metrics on a provider the app set made new instruments; its meter
    # handed back the observable counters it had, whose callbacks read the first ones'
    # tallies: every count after the second call went where nothing read it.
    import subprocess
    import sys

    from tests.support.servers import child_pythonpath

    done = subprocess.run([sys.executable, "-c", _APP_PROVIDER_TWICE], capture_output=True,
                          text=True, timeout=60, check=True,
                          env={"PYTHONPATH": child_pythonpath(), "PATH": ""})
    assert done.stdout.split() == ["4"], (done.stdout, done.stderr)


def _scrape(accept: str) -> httpx.Response:
    from ridtrace.tracing.meters import METRICS_PATH, metrics_endpoint

    app = Starlette(routes=[Route(METRICS_PATH, metrics_endpoint)])

    async def scrape() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(METRICS_PATH, headers={"accept": accept})

    return asyncio.run(scrape())


def _negotiated(accept: str) -> str:
    answer = _scrape(accept)
    assert answer.status_code == 200, answer.text
    return answer.headers["content-type"]


@pytest.mark.parametrize(("accept", "answered"), [
    # A version no encoder writes was claimed in the answer ("version=99"), over a body
    # in another format: the next acceptable entry, or the default, is answered instead.
    ("application/openmetrics-text; version=99", "text/plain; version=0.0.4"),
    ("application/openmetrics-text;version=99.0.0,text/plain;version=1.0.0",
     "text/plain; version=1.0.0"),
    # q=0 says "not acceptable" (RFC 9110 12.4.2): the entry was answered regardless.
    ("application/openmetrics-text;version=1.0.0;q=0, text/plain;version=0.0.4",
     "text/plain; version=0.0.4"),
    ("text/plain;version=1.0.0;q=0.0", "text/plain; version=0.0.4"),
    ("application/openmetrics-text;version=1.0.0;q=0.5", "application/openmetrics-text; "
     "version=1.0.0"),
])
def test_metrics_answer_only_a_format_the_scraper_accepts(accept: str, answered: str) -> None:
    assert _negotiated(accept).startswith(answered), accept


@pytest.mark.parametrize("accept", [
    "text/plain;q=0", "*/*;q=0", "text/plain;version=0.0.4;q=0", "text/*; q=0",
    "application/openmetrics-text;version=99, text/plain;q=0",
])
def test_metrics_refused_in_every_format_written_is_a_406(accept: str) -> None:
    # Text 0.0.4, the answer when nothing else is left, was sent though refused (q=0).
    answer = _scrape(accept)
    assert answer.status_code == 406, (accept, answer.headers)
    assert _negotiated("text/plain;q=0, application/openmetrics-text;version=1.0.0"
                       ).startswith("application/openmetrics-text")
