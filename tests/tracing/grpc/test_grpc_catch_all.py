"""A generic handler that serves every method (a proxy, a gateway): the method name is
the client's string, so it must not choose the metric's series nor reach a line
unchecked.

Before, every invented name became a ``ridtrace.requests`` series of its own (the
process's tally and Prometheus grew with each), with the raw string, quotes and
3000 characters included, as the route label, the span name and ``rpc_method``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from click.testing import CliRunner
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ridtrace.cli.main import main
from ridtrace.tracing import metrics
from ridtrace.tracing.grpc import RequestTracingInterceptor, method
from tests.tracing.grpc.conftest import LogLines, serving


def _routes(reader: InMemoryMetricReader) -> dict[str, float]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        str(point.attributes["route"]): point.value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == metrics.REQUESTS
        for point in metric.data.data_points
    }


async def _anything(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return b"proxied"


class _CatchAll(grpc.GenericRpcHandler):  # type: ignore[misc]
    def service(self, handler_call_details: Any) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(_anything)


def _serve_calls(methods: list[str], tracer_provider: TracerProvider) -> None:
    async def go() -> None:
        async with (
            serving(
                lambda server: server.add_generic_rpc_handlers((_CatchAll(),)),
                interceptors=[RequestTracingInterceptor(tracer_provider=tracer_provider)],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            for method in methods:
                assert await channel.unary_unary(method)(b"", timeout=10) == b"proxied"

    asyncio.run(go())


def test_invented_methods_cannot_grow_the_series_or_reach_lines_unchecked(
    reader: InMemoryMetricReader, log_lines: LogLines, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(method, "NAMED_LIMIT", 3)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hostile = '/scan.S/M"x' + "y" * 3000
    named = [f"/proxy.Svc{i}/Call" for i in range(3)]
    methods = [*named, named[0], "/proxy.Svc9/Call", hostile]
    _serve_calls(methods, provider)

    # The first methods the server answered are named; after the limit, and for a name
    # no IDL gives, one fixed series and span name.
    assert _routes(reader) == {named[0]: 2, named[1]: 1, named[2]: 1, "_OTHER": 2}
    names = [span.name for span in exporter.get_finished_spans()]
    assert names == ["proxy.Svc0/Call", "proxy.Svc1/Call", "proxy.Svc2/Call",
                     "proxy.Svc0/Call", "_OTHER", "_OTHER"]
    (span,) = [s for s in exporter.get_finished_spans()
               if str((s.attributes or {}).get("rpc.method_original", "")).startswith("/scan")]
    assert len(str((span.attributes or {})["rpc.method_original"])) < 1100
    ends = log_lines.events("request.end")
    assert [e["outcome"] for e in ends] == ["ok"] * 6
    assert ends[-1]["rpc_method"].endswith(f"...[{len(hostile)} chars]")
    assert ends[-2]["rpc_method"] == "/proxy.Svc9/Call"  # still on the lines

    # `ridtrace export jaeger` names the spans as the live ones are: it named them by the
    # raw method (`/proxy.Svc0/Call`, the invented names whole), so a search by operation
    # found a call live or in the file, never both, and a scan grew the operation list.
    logs = tmp_path / "service.jsonl"
    logs.write_bytes(b"".join(raw + b"\n" for raw in log_lines.raw_lines))
    out = tmp_path / "traces.json"
    result = CliRunner().invoke(main, ["export", "jaeger", str(logs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    exported = [span["operationName"]
                for trace in json.loads(out.read_text())["data"] for span in trace["spans"]]
    assert sorted(exported) == sorted(names)


async def _hello(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return b"hello"


class _SharedCatchAll(grpc.GenericRpcHandler):  # type: ignore[misc]
    # One handler object for every name: a proxy's module-level forwarder.
    handler = grpc.unary_unary_rpc_method_handler(_anything)

    def service(self, handler_call_details: Any) -> grpc.RpcMethodHandler:
        return self.handler


@pytest.mark.parametrize("catch_all", [_CatchAll, _SharedCatchAll])
def test_the_servers_own_methods_keep_their_names_after_a_scan(
    reader: InMemoryMetricReader, monkeypatch: pytest.MonkeyPatch, catch_all: type
) -> None:
    # Invented names the catch-all answered filled the limit: the server's own method,
    # first called after them, was `_OTHER` until the next restart. Its handler is the
    # one object registered for it: named from its second call on. The catch-all's
    # names, called again, are not.
    monkeypatch.setattr(method, "NAMED_LIMIT", 3)
    invented = [f"/scan.S{i}/M" for i in range(5)]

    async def go() -> None:
        async with (
            serving(
                lambda server: server.add_generic_rpc_handlers((
                    grpc.method_handlers_generic_handler(
                        "demo.Greeter", {"Hello": grpc.unary_unary_rpc_method_handler(_hello)}),
                    catch_all(),
                )),
                interceptors=[RequestTracingInterceptor()],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            for name in invented + invented:
                assert await channel.unary_unary(name)(b"", timeout=10) == b"proxied"
            for _ in range(3):
                assert await channel.unary_unary("/demo.Greeter/Hello")(b"", timeout=10) == (
                    b"hello")

    asyncio.run(go())
    routes = _routes(reader)
    assert routes.get("/demo.Greeter/Hello") == 2, routes
    assert routes["_OTHER"] == 2 + 2 + 1  # the last two invented names twice, one Hello
    assert set(routes) == {*invented[:3], "/demo.Greeter/Hello", "_OTHER"}
