"""In-process checks of access settings: keys from the environment, /metrics, secrets in repr,
and the worker-hop headers with and without an SDK span."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState
from starlette.types import Receive, Scope, Send

from ridtrace.frontend_plugin import FrontendSettings, WorkerSettings, create_frontend_app
from ridtrace.frontend_plugin.auth import SharedSecretMiddleware
from ridtrace.frontend_plugin.hop import worker_hop_headers
from ridtrace.tracing import RequestContext


def test_keys_and_token_come_from_their_variables_and_stay_out_of_repr() -> None:
    env = {"RIDTRACE_API_KEYS": " key-one , key-two,, ", "RIDTRACE_WORKER_TOKEN": "secret-token",
           "RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY": "true",
           "RIDTRACE_WORKER_BAGGAGE_ATTRIBUTES": "tenant,user"}
    frontend = FrontendSettings.from_env(env)
    worker = WorkerSettings.from_env(env)
    assert frontend.api_keys == ("key-one", "key-two") and frontend.worker_token == "secret-token"
    assert frontend.metrics_require_key is True
    assert worker.worker_token == "secret-token" and worker.baggage_attributes == ("tenant", "user")
    assert FrontendSettings.from_env({}).api_keys == ()
    assert not FrontendSettings().debug_endpoints and not WorkerSettings().debug_endpoints
    for text in (repr(frontend), repr(worker)):
        assert "key-one" not in text and "secret-token" not in text


def test_a_worker_urls_password_stays_out_of_repr() -> None:
    env = {"RIDTRACE_FRONTEND_WORKERS": "http://proxy:pw-s3cret@127.0.0.1:8101,http://w:9"}
    text = repr(FrontendSettings.from_env(env))
    assert "pw-s3cret" not in text
    assert "workers=('http://***@127.0.0.1:8101', 'http://w:9')" in text, text
    assert text.startswith("FrontendSettings(") and "id_policy='safe'" in text


async def _status(app: FastAPI, path: str, headers: dict[str, str] | None = None) -> int:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return (await client.get(path, headers=headers)).status_code


def _metrics_app(require: bool) -> FastAPI:
    app = create_frontend_app(FrontendSettings(api_keys=("k",), metrics_require_key=require))
    # Stands in for the Prometheus route: whatever serves /metrics sits behind the check.
    app.add_api_route("/metrics", lambda: {"ok": True}, methods=["GET"])
    return app


def test_metrics_is_open_by_default_and_keyed_with_the_flag() -> None:
    assert asyncio.run(_status(_metrics_app(False), "/metrics")) == 200
    assert asyncio.run(_status(_metrics_app(True), "/metrics")) == 401
    assert asyncio.run(_status(_metrics_app(True), "/metrics", {"x-api-key": "k"})) == 200


def test_no_keys_means_no_check_and_an_empty_secret_is_refused() -> None:
    assert asyncio.run(_status(create_frontend_app(FrontendSettings()), "/v1/models")) == 200
    for bad in ({"api_keys": ("k", "")}, {"worker_token": ""}):
        with pytest.raises(ValueError, match="must not be empty"):
            FrontendSettings(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must not be empty"):
        WorkerSettings(worker_token="")


@pytest.mark.parametrize("header", [
    {"authorization": "Basic azE6"}, {"authorization": "Bearer"}, {"authorization": "k"},
    {"x-api-key": "k "}, {"x-api-key": "K"},
])
def test_only_the_exact_key_in_a_known_header_is_accepted(header: dict[str, str]) -> None:
    app = create_frontend_app(FrontendSettings(api_keys=("k",)))
    expected = 200 if header == {"x-api-key": "k "} else 401  # surrounding blanks trimmed
    assert asyncio.run(_status(app, "/v1/models", header)) == expected


def test_x_api_key_can_be_refused() -> None:
    async def ok(scope: object, receive: object, send: object) -> None:
        raise AssertionError("reached the app")

    app = SharedSecretMiddleware(ok, secrets=["s"], accept_x_api_key=False)  # type: ignore[arg-type]
    outer = FastAPI()
    outer.mount("/", app)  # type: ignore[arg-type]
    assert asyncio.run(_status(outer, "/x", {"x-api-key": "s"})) == 401


def test_without_a_recording_span_the_hop_sends_the_minimal_traceparent() -> None:
    ctx = RequestContext("r", "a" * 32, "b" * 16)
    assert worker_hop_headers(ctx) == {"traceparent": f"00-{'a' * 32}-{'b' * 16}-01"}
    assert worker_hop_headers(None) == {}


def test_with_a_recording_span_the_propagators_write_tracestate_and_baggage() -> None:
    tracer = TracerProvider().get_tracer("t")
    caller = SpanContext(int("c" * 32, 16), int("d" * 16, 16), is_remote=True,
                         trace_flags=TraceFlags(1), trace_state=TraceState([("vendor", "v1")]))
    parent = baggage.set_baggage("tenant", "acme",
                                 trace.set_span_in_context(NonRecordingSpan(caller)))
    token = otel_context.attach(parent)
    try:
        span = tracer.start_span("server", parent)
        ctx = RequestContext("r", "c" * 32, format(span.get_span_context().span_id, "016x"))
        ctx.server_span = span
        headers = worker_hop_headers(ctx)
        span.end()
    finally:
        otel_context.detach(token)
    assert headers["traceparent"] == f"00-{'c' * 32}-{ctx.span_id}-01"
    assert headers["tracestate"] == "vendor=v1"
    assert headers["baggage"] == "tenant=acme"


def test_the_cli_refuses_an_empty_secret_as_a_usage_error(tmp_path: object) -> None:
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    for argv in (["frontend", "--worker", "http://w", "--api-key", ""],
                 ["worker", "--worker-token", ""]):
        result = CliRunner().invoke(main, ["serve", *argv, "--port", "1", "--log-file",
                                           f"{tmp_path}/x.jsonl"])
        assert result.exit_code == 2 and "must not be empty" in result.output, result.output


@pytest.mark.parametrize("key", [" sk-zq9", "sk-zq9 ", "sk-zq9\n", "sk zq9", "sk-zq\u00e99", "sk-zq9\x01"])
def test_a_secret_no_client_could_present_is_refused_at_start_up(key: str) -> None:
    # The check strips what it receives and a header is ASCII: such a key never matched,
    # so every caller got 401 (and a worker token like it failed every dispatch).
    with pytest.raises(ValueError, match="printable ASCII") as info:
        FrontendSettings(api_keys=("good", key))
    assert key not in str(info.value)  # a secret is never shown
    with pytest.raises(ValueError, match="printable ASCII"):
        FrontendSettings(worker_token=key)
    with pytest.raises(ValueError, match="printable ASCII"):
        WorkerSettings.from_env({"RIDTRACE_WORKER_TOKEN": key})


def test_api_keys_from_the_environment() -> None:
    env = FrontendSettings.from_env
    assert env({"RIDTRACE_API_KEYS": " k1 , k2,,k3 "}).api_keys == ("k1", "k2", "k3")
    assert env({"RIDTRACE_API_KEYS": ""}).api_keys == ()  # empty is unset, like every variable
    for blank in (" ", ",", " , ,"):
        # Meant to require keys; it served everyone without one.
        with pytest.raises(ValueError, match="holds no key"):
            env({"RIDTRACE_API_KEYS": blank})


def test_serve_refuses_a_blank_key_list_in_the_environment(tmp_path: object) -> None:
    import socket

    from click.testing import CliRunner

    from ridtrace.cli.main import main

    # The port is taken: a frontend that took the variable stops there (exit 3) instead
    # of serving.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = CliRunner(env={"RIDTRACE_API_KEYS": " , "}).invoke(
            main, ["serve", "frontend", "--worker", "http://w", "--host", "127.0.0.1",
                   "--port", str(taken.getsockname()[1]), "--log-file", f"{tmp_path}/x.jsonl"])
    assert result.exit_code == 2 and "RIDTRACE_API_KEYS" in result.output, result.output


def test_the_comparison_takes_no_length_from_the_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # hmac.compare_digest returns at once when the lengths differ: given the raw values,
    # a caller timing guesses of each length learnt how long every key is.
    from ridtrace.frontend_plugin import auth

    compared: list[tuple[int, int]] = []
    real = auth.hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", recording)
    app = create_frontend_app(FrontendSettings(api_keys=("short", "a-much-longer-key-0123")))
    for key, status in (("short", 200), ("a-much-longer-key-0123", 200), ("x", 401),
                        ("y" * 300, 401)):
        assert asyncio.run(_status(app, "/v1/models", {"x-api-key": key})) == status
    assert compared and len(set(compared)) == 1  # every comparison of one fixed length


def test_a_trace_sampled_out_here_is_sent_on_as_sampled_out() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    span = TracerProvider(sampler=ALWAYS_OFF).get_tracer("t").start_span("server")
    ctx = RequestContext("r", format(span.get_span_context().trace_id, "032x"), "b" * 16)
    ctx.server_span = span
    assert worker_hop_headers(ctx)["traceparent"].endswith("-00")
    # No caller and no SDK span: the worker's sampler decides.
    ctx.server_span = NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)
    assert worker_hop_headers(ctx)["traceparent"].endswith("-01")


def test_an_invented_method_is_named_capped_in_the_404() -> None:
    # create_frontend_app under uvicorn --http h11 or hypercorn: any token is a method,
    # and a 15 000-letter one came back whole in the error message.
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_frontend_app(FrontendSettings()))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.request("PROPFIND" * 1875, "/nowhere")

    response = asyncio.run(go())
    assert response.status_code == 404
    message = response.json()["error"]["message"]
    assert message == "Not Found: " + "PROPFIND" * 4 + "...[15000 chars] /nowhere"


def test_a_root_the_frontends_ratio_sampler_left_out_goes_to_the_worker_as_judged() -> None:
    # The lines and the hop of a sampled-out root named a minted trace, not the one the
    # sampler judged: a worker sampling by trace id (traceidratio, not parent-based)
    # judged another trace and exported spans whose parent never reached the collector.
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
    from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

    from ridtrace.tracing import RequestTracingMiddleware, TracingSettings
    from ridtrace.tracing.context import current_context

    judged = (0xABC << 64) | 0xFFFF_FFFF_FFFF_FFFF  # above every ratio's bound: left out

    class FixedTrace(RandomIdGenerator):
        def generate_trace_id(self) -> int:
            return judged

    def provider(exporter: InMemorySpanExporter, ids: RandomIdGenerator | None) -> TracerProvider:
        made = TracerProvider(sampler=TraceIdRatioBased(0.5), id_generator=ids)
        made.add_span_processor(SimpleSpanProcessor(exporter))
        return made

    frontend_spans, worker_spans = InMemorySpanExporter(), InMemorySpanExporter()
    hop: dict[str, str] = {}

    async def worker_app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def frontend_app(scope: Scope, receive: Receive, send: Send) -> None:
        hop.update(worker_hop_headers(current_context()))
        await worker_app(scope, receive, send)

    frontend = RequestTracingMiddleware(frontend_app, settings=TracingSettings(
        tracer_provider=provider(frontend_spans, FixedTrace())))
    worker = RequestTracingMiddleware(worker_app, settings=TracingSettings(
        tracer_provider=provider(worker_spans, None)))

    async def go() -> None:
        for app, headers in ((frontend, {}), (worker, hop)):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                await client.get("/", headers=headers)

    asyncio.run(go())
    assert hop["traceparent"] == f"00-{judged:032x}-{hop['traceparent'][36:52]}-00"
    assert frontend_spans.get_finished_spans() == worker_spans.get_finished_spans() == ()


@pytest.mark.parametrize("workers", [",,", " ", " , "])
def test_serve_names_a_worker_list_that_holds_no_url(tmp_path: object, workers: str) -> None:
    # It said "Missing option '--worker' (or RIDTRACE_FRONTEND_WORKERS)" of a variable set.
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    result = CliRunner(env={"RIDTRACE_FRONTEND_WORKERS": workers}).invoke(
        main, ["serve", "frontend", "--host", "127.0.0.1", "--port", "0",
               "--log-file", f"{tmp_path}/x.jsonl"])
    assert result.exit_code == 2, result.output
    assert "RIDTRACE_FRONTEND_WORKERS is set but holds no worker URL" in result.output


def test_a_worker_given_the_frontends_api_keys_says_it_is_open(tmp_path: object) -> None:
    # One env file for both services: the keys lock nothing on a worker, which took work
    # from anyone without a word. The port is taken: it stops there (exit 3) after it. In
    # a process of its own: a serve command sets up this process's telemetry.
    import os
    import socket
    import subprocess
    import sys

    from tests.support.servers import child_pythonpath

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RIDTRACE_", "OTEL_"))}
    env |= {"RIDTRACE_API_KEYS": "sk-w", "PYTHONPATH": child_pythonpath()}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "ridtrace", "serve", "worker", "--host", "127.0.0.1",
             "--port", str(taken.getsockname()[1]), "--log-file", f"{tmp_path}/w.jsonl"],
            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 3, done.stderr
    assert ("RIDTRACE_API_KEYS is the frontend's (a worker takes no API key): without "
            "RIDTRACE_WORKER_TOKEN, POST /v1/work takes work from anyone") in done.stderr
    assert "sk-w" not in done.stderr + done.stdout
