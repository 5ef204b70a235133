"""OTEL_PYTHON_EXCLUDED_URLS as an operator writes it: a trailing comma, a pattern that is
no regular expression."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.types import Receive, Scope, Send

from ridtrace.tracing import RequestTracingMiddleware
from ridtrace.tracing.excluded_urls import excluded_urls
from tests.support.servers import child_pythonpath, free_port


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.mark.parametrize("value", ["/health$,", "/health$, ,metrics", ",/health$"])
def test_an_empty_entry_leaves_out_no_request(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    # A trailing comma (a Helm value built from a list) made an empty pattern, which
    # OpenTelemetry's list joins into a regular expression matching every URL: no
    # request got a span, and nothing said so.
    monkeypatch.setenv("OTEL_PYTHON_EXCLUDED_URLS", value)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = RequestTracingMiddleware(_ok, tracer_provider=provider)

    async def go() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for path in ("/health", "/work"):
                assert (await client.get(path)).status_code == 200

    asyncio.run(go())
    paths = [(s.attributes or {}).get("url.path") for s in exporter.get_finished_spans()]
    assert paths == ["/work"]


@pytest.mark.parametrize("variable", ["OTEL_PYTHON_EXCLUDED_URLS",
                                      "OTEL_PYTHON_FASTAPI_EXCLUDED_URLS"])
def test_a_pattern_that_is_no_regular_expression_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "/health$,/items/(")
    with pytest.raises(ValueError, match=rf"^{variable}: '/items/\(' is no regular expression"):
        excluded_urls()


def test_ridtrace_serve_refuses_such_a_pattern_before_it_serves(tmp_path: Path) -> None:
    # The frontend started and answered every request, /health included, with a 500
    # ("Exception in ASGI application": its middleware is built at the first request),
    # and its lifespan was taken for unsupported, so nothing was flushed at its stop;
    # the worker died in a traceback, "internal error (exit 4)".
    env = {**os.environ, "PYTHONPATH": child_pythonpath(), "OTEL_EXPORTER_OTLP_ENDPOINT": "",
           "OTEL_PYTHON_EXCLUDED_URLS": "/health("}
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "serve", "frontend", "--port", str(free_port()),
         "--worker", f"http://127.0.0.1:{free_port()}", "--log-file", str(tmp_path / "f.jsonl")],
        env=env, capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert "OTEL_PYTHON_EXCLUDED_URLS: '/health(' is no regular expression" in done.stderr
    assert "Traceback" not in done.stderr
