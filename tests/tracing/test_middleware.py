"""In-process unit tests of the middleware: each test builds its own small app."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.types import Message, Receive, Scope, Send

from ridtrace import (
    RequestTracingMiddleware,
    TracingSettings,
    current_request_id,
    current_x_request_id,
    uuid7_id,
)
from tests.support.propagators import (
    XRAY_HEADER,
    XRAY_PARENT,
    XRAY_TRACE,
    JaegerLikePropagator,
    XRayLikePropagator,
)
from tests.tracing.conftest import read_lines


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _app(**fastapi_kwargs: Any) -> FastAPI:
    try:
        app = FastAPI(**fastapi_kwargs)
    except TypeError:
        pytest.skip("this FastAPI has no built-in telemetry")

    @app.get("/ids")
    async def ids() -> dict[str, str | None]:
        return {"request_id": current_request_id(), "x_request_id": current_x_request_id()}

    @app.get("/own-header")
    async def own_header() -> JSONResponse:
        return JSONResponse({}, headers={"x-request-id": "set-by-app", "x-server-request-id": "x"})

    return app


def _get(app: Any, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            request = client.build_request("GET", path)
            for name, value in headers or []:
                # Raw pairs, bypassing httpx's validation: ASGI apps receive whatever
                # bytes the server let through, and these tests want the worst of them.
                request.headers._list.append((name, name, value))
            return await client.send(request)

    return asyncio.run(go())


def test_opens_one_server_span_with_both_ids_when_nothing_else_traces() -> None:
    provider, exporter = _provider()
    app = _app(telemetry={"tracing": False}) if _has_native() else _app()
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    response = _get(app, "/ids", [(b"x-request-id", b"abc")])
    (span,) = exporter.get_finished_spans()
    assert span.name == "http-request" and span.kind is SpanKind.SERVER
    assert span.attributes is not None
    assert span.attributes["request_id"] == response.json()["request_id"]
    assert span.attributes["x_request_id"] == "abc"
    assert span.attributes["http.route"] == "/ids"


def _add_hop(app: FastAPI) -> None:
    """A `/hop` route answering what `propagate.inject` would hand on from the request
    (``sent``, or None) and the ids its lines carry."""
    from opentelemetry import propagate

    from ridtrace.tracing import current_context

    @app.get("/hop")
    async def hop() -> dict[str, Any]:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        ctx = current_context()
        assert ctx is not None
        return {"sent": carrier.get("traceparent"), "trace_id": ctx.trace_id,
                "span_id": ctx.span_id, "parent": ctx.parent_span_id}


def _has_native() -> bool:
    try:
        FastAPI(telemetry={"tracing": False})
    except TypeError:
        return False
    return True


def test_enriches_fastapi_builtin_telemetry_span_instead_of_adding_one() -> None:
    provider, exporter = _provider()
    app = _app(telemetry={"tracer_provider": provider, "metrics": False, "logs": False})
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    response = _get(app, "/ids", [(b"x-request-id", b"abc"), (b"request-id", b"old")])
    server_spans = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert len(server_spans) == 1
    attributes = server_spans[0].attributes or {}
    assert server_spans[0].name != "http-request"  # FastAPI's own span, enriched
    assert attributes["request_id"] == response.json()["request_id"]
    assert attributes["x_request_id"] == "abc"
    assert attributes["deprecated_headers"] == "request-id"


def test_wrapping_a_fastapi_app_enriches_its_builtin_span_as_add_middleware_does() -> None:
    """``app = RequestTracingMiddleware(app)`` (the form the docs give for any ASGI app)
    around a FastAPI app with built-in telemetry: FastAPI opens its server span inside
    the wrapper, from the request headers, so a wrapper that opened its own was a
    second server span (with the ids) beside FastAPI's (without them)."""
    provider, exporter = _provider()
    app = _app(telemetry={"tracer_provider": provider, "metrics": False, "logs": False})
    wrapped = RequestTracingMiddleware(app, settings=TracingSettings(tracer_provider=provider))
    response = _get(wrapped, "/ids", [(b"x-request-id", b"abc")])
    assert response.json()["request_id"] == response.headers["x-server-request-id"]
    assert response.headers["x-request-id"] == "abc"
    server_spans = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert len(server_spans) == 1
    assert server_spans[0].name != "http-request"  # FastAPI's own span, enriched
    attributes = server_spans[0].attributes or {}
    assert attributes["request_id"] == response.json()["request_id"]
    assert attributes["x_request_id"] == "abc"


def test_enriches_contrib_fastapi_instrumentation_span_instead_of_adding_one() -> None:
    provider, exporter = _provider()
    app = _app(telemetry={"tracing": False}) if _has_native() else _app()
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    FastAPIInstrumentor.instrument_app(app, tracer_provider=provider)
    try:
        response = _get(app, "/ids", [(b"x-request-id", b"abc")])
    finally:
        FastAPIInstrumentor.uninstrument_app(app)
    server_spans = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert len(server_spans) == 1
    attributes = server_spans[0].attributes or {}
    assert attributes["request_id"] == response.json()["request_id"]
    assert attributes["x_request_id"] == "abc"


def test_without_any_sdk_the_log_still_gets_trace_and_span_ids(log_file: Path) -> None:
    app = _app(telemetry={"tracing": False}) if _has_native() else _app()
    app.add_middleware(RequestTracingMiddleware)
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    _get(app, "/ids", [(b"traceparent", parent.encode())])
    _get(app, "/ids")
    starts = [x for x in read_lines(log_file) if x.get("event") == "request.start"]
    assert starts[0]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert starts[0]["parent_span_id"] == "00f067aa0ba902b7"
    assert len(starts[1]["trace_id"]) == 32 and len(starts[1]["span_id"]) == 16
    assert starts[0]["span_id"] != starts[1]["span_id"]


def test_echo_replaces_what_the_app_set_and_never_duplicates() -> None:
    app = _app()
    app.add_middleware(RequestTracingMiddleware)
    response = _get(app, "/own-header", [(b"x-request-id", b"client-1")])
    assert response.headers.get_list("x-request-id") == ["client-1"]
    assert response.headers.get_list("x-server-request-id") != ["x"]
    assert len(response.headers.get_list("x-server-request-id")) == 1


@pytest.mark.parametrize("log_lifecycle", [True, False], ids=["observed", "id-only"])
def test_a_raw_app_reusing_its_message_gets_the_headers_once_per_response(
    log_lifecycle: bool,
) -> None:
    # One module-level message dict, sent on every request, with non-lowercase names
    # and list-shaped pairs: the middleware must copy it and still replace, not add.
    start = {
        "type": "http.response.start",
        "status": 200,
        "headers": [[b"X-Request-ID", b"set-by-app"], (b"content-length", b"2")],
    }

    async def raw_app(scope: Any, receive: Any, send: Any) -> None:
        await send(start)
        await send({"type": "http.response.body", "body": b"ok"})

    app = RequestTracingMiddleware(raw_app, log_lifecycle=log_lifecycle)
    for client_id in (b"first", b"second"):
        response = _get(app, "/", [(b"x-request-id", client_id)])
        assert response.headers.get_list("x-request-id") == [client_id.decode()]
        assert len(response.headers.get_list("x-server-request-id")) == 1
    assert start["headers"] == [[b"X-Request-ID", b"set-by-app"], (b"content-length", b"2")]


@pytest.mark.parametrize(
    "value",
    [b"A" * 1_000_000, b"good\r\nx-injected: 1", b"tab\there", b"\x00nul", b"\xff\xfe", b"x" * 129],
    ids=["1MB", "CRLF", "tab", "NUL", "non-utf8", "129-chars"],
)
def test_hostile_client_ids_are_rejected_and_the_request_served(
    log_file: Path, value: bytes
) -> None:
    provider, exporter = _provider()
    app = _app()
    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
    response = _get(app, "/ids", [(b"x-request-id", value)])
    assert response.status_code == 200
    assert "x-request-id" not in response.headers
    lines = read_lines(log_file)
    start = next(x for x in lines if x.get("event") == "request.start")
    assert "x_request_id" not in start and start["x_request_id_rejected"] is True
    # On the span too, as a refused body id is: Jaeger finds the hostile callers.
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None and "x_request_id" not in span.attributes
    assert span.attributes["x_request_id_rejected"] is True


@pytest.mark.parametrize(
    "value",
    [b"A" * 1_000_000, b"good\r\nx-injected: 1", b"tab\there", b"\x00nul", b"\xff\xfe", b"x" * 129],
    ids=["1MB", "CRLF", "tab", "NUL", "non-utf8", "129-chars"],
)
def test_hostile_client_ids_on_the_id_only_path_are_not_echoed_and_the_request_served(
    value: bytes,
) -> None:
    # No span can record and no line is written: the middleware takes its lean path,
    # which must vet the client's id exactly as the observed path does.
    app = _app()
    app.add_middleware(RequestTracingMiddleware, log_lifecycle=False)
    response = _get(app, "/ids", [(b"x-request-id", value)])
    assert response.status_code == 200
    assert "x-request-id" not in response.headers
    assert response.headers["x-server-request-id"] == response.json()["request_id"]
    assert response.json()["x_request_id"] is None


def test_request_end_alone_is_enough_for_the_audit(log_file: Path) -> None:
    # The audit counts a request's clients from its lines: one whose request.start had
    # rotated away was counted under no client. request.end names the client of a
    # request that sent a deprecated header (and only then: others pay nothing).
    app = _app()
    app.add_middleware(RequestTracingMiddleware)
    _get(app, "/ids", [(b"request-id", b"old")])
    _get(app, "/ids")
    ends = [x for x in read_lines(log_file) if x.get("event") == "request.end"]
    assert [("client" in x, x.get("deprecated_headers")) for x in ends] == [
        (True, "request-id"), (False, None)]
    start = next(x for x in read_lines(log_file) if x.get("event") == "request.start")
    assert ends[0]["client"] == start["client"]


def test_a_json_shaped_id_is_escaped_not_interpreted(log_file: Path) -> None:
    app = _app()
    app.add_middleware(RequestTracingMiddleware)
    forged = b'"}{"level":"ERROR","request_id":"forged"}'
    _get(app, "/ids", [(b"x-request-id", forged)])
    raw = log_file.read_text().splitlines()
    parsed = [json.loads(line) for line in raw]
    assert all(x["level"] != "ERROR" for x in parsed)
    assert all(x.get("request_id") != "forged" for x in parsed)
    # The request's own lines: another library's (asyncio's "Using selector", when an
    # earlier test left stdlib logging at DEBUG) may come first in the file.
    ours = [x for x in parsed if x.get("event", "").startswith("request.")]
    assert ours and all(x["x_request_id"] == forged.decode() for x in ours)


def test_deprecation_and_sunset_headers_only_for_requests_that_used_a_deprecated_header() -> None:
    app = _app()
    app.add_middleware(
        RequestTracingMiddleware,
        settings=TracingSettings(
            deprecation_at=datetime(2026, 1, 1, tzinfo=UTC),
            sunset_at=datetime(2027, 1, 1, tzinfo=UTC),
            deprecation_link="https://example.test/migration",
        ),
    )
    old = _get(app, "/ids", [(b"x-dynamo-request-id", b"legacy")])
    assert old.headers["deprecation"] == "@1767225600"
    assert old.headers["sunset"] == "Fri, 01 Jan 2027 00:00:00 GMT"
    assert old.headers["link"] == '<https://example.test/migration>; rel="deprecation"'
    assert old.json()["request_id"] != "legacy"
    new = _get(app, "/ids")
    assert "deprecation" not in new.headers and "sunset" not in new.headers


def test_an_apps_own_deprecation_and_sunset_are_not_doubled() -> None:
    # An endpoint the app itself deprecates answers its own Deprecation and Sunset: a
    # second field line of ours made either unreadable (each holds one value).
    app = _app()

    @app.get("/old")
    async def old_endpoint() -> Response:
        return Response("old", headers={"Deprecation": "@1700000000",
                                        "Sunset": "Sat, 01 Jan 2028 00:00:00 GMT"})

    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(
        deprecation_at=datetime(2026, 1, 1, tzinfo=UTC), sunset_at=datetime(2027, 1, 1, tzinfo=UTC),
        deprecation_link="https://example.test/migration"))
    answer = _get(app, "/old", [(b"request-id", b"legacy")])
    assert answer.headers.get_list("deprecation") == ["@1700000000"]
    assert answer.headers.get_list("sunset") == ["Sat, 01 Jan 2028 00:00:00 GMT"]
    assert "link" not in answer.headers


def test_an_apps_own_deprecation_gets_none_of_ours_beside_it() -> None:
    # The app deprecates the endpoint with no date to retire it: our Sunset and Link
    # beside its Deprecation said the endpoint retires on the request-id header's date,
    # with the header's migration page as its notice. Both RFCs describe the resource.
    app = _app()

    @app.get("/old")
    async def old_endpoint() -> Response:
        return Response("old", headers={"Deprecation": "@1", "Link": '</next>; rel="next"'})

    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(
        deprecation_at=datetime(2026, 1, 1, tzinfo=UTC), sunset_at=datetime(2027, 1, 1, tzinfo=UTC),
        deprecation_link="https://example.test/migration"))
    answer = _get(app, "/old", [(b"x-dynamo-request-id", b"legacy")])
    assert answer.headers.get_list("deprecation") == ["@1"]
    assert "sunset" not in answer.headers
    assert answer.headers.get_list("link") == ['</next>; rel="next"']  # the app's own only
    # Every other answer to such a request still says it, the server id kept here too.
    assert _get(app, "/ids", [(b"x-dynamo-request-id", b"legacy")]).headers["sunset"]
    assert answer.headers["x-server-request-id"]


def test_pluggable_generator_and_context_reset_after_the_request() -> None:
    app = _app()
    app.add_middleware(RequestTracingMiddleware, id_generator=uuid7_id)
    first = _get(app, "/ids").json()["request_id"]
    second = _get(app, "/ids").json()["request_id"]
    assert first[14] == "7" and first < second  # version 7, time-ordered
    assert current_request_id() is None


def test_non_http_scopes_pass_straight_through() -> None:
    seen: list[str] = []

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])
        assert current_request_id() is None

    middleware = RequestTracingMiddleware(inner)

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        pass

    asyncio.run(middleware({"type": "lifespan"}, receive, send))
    assert seen == ["lifespan"]


def test_app_exception_is_reraised_unchanged() -> None:
    class Boom(Exception):
        pass

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        raise Boom("as is")

    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "headers": []}
    with pytest.raises(Boom, match="as is"):
        asyncio.run(RequestTracingMiddleware(inner)(scope, receive, send))
    assert sent[0]["status"] == 500
    assert any(name == b"x-server-request-id" for name, _ in sent[0]["headers"])


def test_an_exception_whose_str_raises_is_reraised_unchanged_and_its_span_ends() -> None:
    # The span's record_exception takes str() of the exception: raising in the
    # middleware's finally, it replaced the app's exception and the span never ended.
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text for this exception")

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        raise Unprintable

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        pass

    provider, exporter = _provider()
    scope = {"type": "http", "method": "GET", "path": "/", "headers": []}
    with pytest.raises(Unprintable):
        asyncio.run(RequestTracingMiddleware(inner, tracer_provider=provider)(scope, receive, send))
    (span,) = exporter.get_finished_spans()
    (event,) = span.events
    assert event.attributes is not None
    assert event.attributes["exception.message"] == "<exception str() failed>"
    assert str(event.attributes["exception.type"]).endswith("Unprintable")
    assert "in inner" in str(event.attributes["exception.stacktrace"])


def test_settings_from_env() -> None:
    settings = TracingSettings.from_env(
        {
            "RIDTRACE_ID_GENERATOR": "uuid7",
            "RIDTRACE_DEPRECATED_HEADERS": "X-Old-Id, request-id",
            "RIDTRACE_MAX_CLIENT_ID_LENGTH": "64",
            "RIDTRACE_SUNSET_AT": "2027-01-01T00:00:00+00:00",
        }
    )
    assert settings.id_generator is uuid7_id
    assert settings.deprecated_headers == ("x-old-id", "request-id")
    assert settings.max_client_id_length == 64
    assert settings.sunset_at == datetime(2027, 1, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="RIDTRACE_ID_GENERATOR"):
        TracingSettings.from_env({"RIDTRACE_ID_GENERATOR": "sequential"})
    with pytest.raises(ValueError, match="RIDTRACE_SPAN_NAME"):
        TracingSettings.from_env({"RIDTRACE_SPAN_NAME": "   "})
    with pytest.raises(ValueError, match="span_name"):
        TracingSettings(span_name="")


def test_importing_tracing_stays_off_pandas_click_and_fastapi_routing() -> None:
    code = (
        "import sys, ridtrace.tracing;"
        "print([m for m in ('pandas','click','fastapi','pyarrow') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_default_ids_are_valid_uuid4() -> None:
    import uuid

    from ridtrace import uuid4_id

    ids = {uuid4_id() for _ in range(2000)}
    assert len(ids) == 2000
    for text in list(ids)[:200]:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text


class _RecordingSampler:
    """A sampler that keeps the attributes each span was started with."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def should_sample(self, parent_context: Any, trace_id: int, name: str, *args: Any,
                      **kwargs: Any) -> Any:
        from opentelemetry.sdk.trace.sampling import Decision, SamplingResult

        attributes = kwargs.get("attributes", args[1] if len(args) > 1 else None)
        self.seen.append(dict(attributes or {}))
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "recording"


def test_a_sampler_sees_the_request_ids_when_the_span_starts() -> None:
    # Attribute-based sampling (keep every request of one client, say) needs the ids
    # at start_span time, not set afterwards.
    sampler = _RecordingSampler()
    provider = TracerProvider(sampler=sampler)  # type: ignore[arg-type]
    # With no processor no span would reach anyone and none is started (next test).
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    app = _app(telemetry={"tracing": False}) if _has_native() else _app()
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    response = _get(app, "/ids", [(b"x-request-id", b"client-7")])
    (seen,) = sampler.seen
    assert seen["request_id"] == response.json()["request_id"]
    assert seen["x_request_id"] == "client-7"
    assert seen["http.request.method"] == "GET"


def test_an_sdk_provider_with_no_processor_starts_no_span_until_one_is_added() -> None:
    # configure_tracing() without an OTLP endpoint builds such a provider: an SDK span
    # there cost ~40 µs per request for nothing (issue 15). The lines keep minted ids.
    sampler = _RecordingSampler()
    provider = TracerProvider(sampler=sampler)  # type: ignore[arg-type]
    app = _app(telemetry={"tracing": False}) if _has_native() else _app()
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    quiet = _get(app, "/ids", [(b"traceparent", parent.encode())])
    assert quiet.status_code == 200 and quiet.json()["request_id"]
    assert sampler.seen == []  # no span was started
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _get(app, "/ids", [(b"traceparent", parent.encode())])
    (span,) = exporter.get_finished_spans()
    assert len(sampler.seen) == 1
    assert format(span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"


def test_noop_tracer_detection_follows_the_proxy_once_an_sdk_provider_arrives() -> None:
    from opentelemetry import trace

    from ridtrace.tracing.serverspan import is_noop_tracer

    assert is_noop_tracer(trace.NoOpTracer())
    assert not is_noop_tracer(TracerProvider().get_tracer("t"))
    proxy = trace.ProxyTracer("t")
    live = TracerProvider().get_tracer("t")
    if trace.get_tracer_provider().__class__.__name__ == "ProxyTracerProvider":
        assert is_noop_tracer(proxy)
    # What the proxy does once trace.set_tracer_provider() ran: it hands out the real
    # tracer, and the middleware must then start real spans again.
    proxy._real_tracer = live
    assert not is_noop_tracer(proxy)


def test_the_callers_baggage_is_current_while_the_request_is_handled(log_file: Path) -> None:
    from opentelemetry import baggage

    provider, _ = _provider()
    app = FastAPI()

    @app.get("/baggage")
    async def read_baggage() -> dict[str, object]:
        return {"tenant": baggage.get_baggage("tenant")}

    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    parent = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    response = _get(app, "/baggage", [(b"traceparent", parent), (b"baggage", b"tenant=acme")])
    assert response.json() == {"tenant": "acme"}


@pytest.mark.parametrize("exporting", [True, False], ids=["sdk", "no-processor"])
def test_baggage_sent_without_a_traceparent_is_current_and_stays_with_its_request(
    exporting: bool,
) -> None:
    # A caller that propagates baggage (a tenant) but no trace: with no span processor
    # (no collector) the baggage never became current, though the docs promise the
    # caller's context is. A request made in process from inside it is one of its own.
    from opentelemetry import baggage

    provider = _provider()[0] if exporting else TracerProvider()
    app = FastAPI(telemetry={"tracing": False}) if _has_native() else FastAPI()

    @app.get("/inner")
    async def inner() -> dict[str, object]:
        return {"tenant": baggage.get_baggage("tenant")}

    @app.get("/outer")
    async def outer() -> dict[str, object]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            called = (await client.get("/inner")).json()
        return {"tenant": baggage.get_baggage("tenant"), "inner": called["tenant"]}

    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
    response = _get(app, "/outer", [(b"baggage", b"tenant=acme")])
    assert response.json() == {"tenant": "acme", "inner": None}


@pytest.mark.parametrize("log_lifecycle", [True, False], ids=["observed", "identity-only"])
def test_an_escaped_exception_carries_the_request_ids_to_the_servers_error_line(
    log_file: Path, log_lifecycle: bool
) -> None:
    # uvicorn logs "Exception in ASGI application" through the standard library once
    # the exception has left the middleware, so after the request's context is reset.
    import logging

    from ridtrace.tracing.stdlib_bridge import InterceptHandler

    async def crash(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("kaboom")

    app = RequestTracingMiddleware(crash, log_lifecycle=log_lifecycle)
    server_log = logging.getLogger("probe.server")

    async def go() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            try:
                await client.get("/", headers={"x-request-id": "crash-1"})
            except RuntimeError as escaped:
                assert current_request_id() is None
                # In the task the exception escaped in, inside the handling of it, as
                # uvicorn's request task logs it.
                server_log.error("Exception in ASGI application\n", exc_info=escaped)
            else:
                pytest.fail("the crash did not escape the middleware")

    server_log.addHandler(InterceptHandler())
    # Its own handler alone: a root logger that an earlier test in this process routed
    # to loguru (configure_logging) wrote the line a second time.
    server_log.propagate = False
    try:
        asyncio.run(go())
    finally:
        server_log.handlers.clear()
        server_log.propagate = True
    (crash_line,) = [x for x in read_lines(log_file) if x["level"] == "ERROR"]
    assert crash_line["x_request_id"] == "crash-1"
    assert len(crash_line["request_id"]) == 36 and len(crash_line["span_id"]) == 16
    assert crash_line["exception"] == "RuntimeError: kaboom"


def test_a_route_in_a_mounted_sub_app_is_named_with_its_mounts(log_file: Path) -> None:
    # The inner router overwrites scope["route"] with a route that knows only its own
    # part of the path: two sub-apps' "/items/{item_id}" were one route on request.end,
    # on the span and in ridtrace.requests.
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    async def item(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def raw(scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse("raw")(scope, receive, send)

    api = FastAPI()

    @api.get("/items/{item_id}")
    async def api_item(item_id: int) -> dict[str, int]:
        return {"item_id": item_id}

    tenant = Starlette(routes=[Route("/items/{item_id}", item), Mount("/v2", routes=[
        Route("/items/{item_id}", item)])])
    app = Starlette(routes=[
        Route("/items/{item_id}", item),
        Mount("/api", app=api),
        Mount("/t/{tenant}", app=tenant),
        Mount("/raw", app=raw),
    ])
    provider, exporter = _provider()
    traced = RequestTracingMiddleware(app, tracer_provider=provider)
    expected = {
        "/items/1": "/items/{item_id}",
        "/api/items/1": "/api/items/{item_id}",
        "/t/acme/items/1": "/t/{tenant}/items/{item_id}",
        "/t/acme/v2/items/1": "/t/{tenant}/v2/items/{item_id}",
        "/raw/anything": "/raw",
    }
    for path in expected:
        assert _get(traced, path).status_code == 200
    ends = [x for x in read_lines(log_file) if x.get("event") == "request.end"]
    assert {x["path"]: x["route"] for x in ends} == expected
    spans = exporter.get_finished_spans()
    assert {s.attributes["url.path"]: s.attributes["http.route"] for s in spans} == expected


def test_a_server_span_is_an_error_with_its_error_type_for_5xx_and_crashes_only() -> None:
    # The HTTP conventions: a server span's 4xx is the client's and leaves the status
    # unset; a 5xx or a crash is an error, named by error.type (it was missing, so
    # error views and span metrics could not tell a crash from a 503).
    provider, exporter = _provider()
    app = FastAPI(telemetry={"tracing": False}) if _has_native() else FastAPI()

    @app.get("/teapot")
    async def teapot() -> JSONResponse:
        return JSONResponse({}, status_code=418)

    @app.get("/busy")
    async def busy() -> JSONResponse:
        return JSONResponse({}, status_code=503)

    @app.get("/crash")
    async def crash() -> None:
        raise LookupError("gone")

    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)

    async def go() -> None:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for path in ("/teapot", "/missing", "/busy", "/crash"):
                await client.get(path)

    asyncio.run(go())
    spans = {s.attributes["url.path"]: s for s in exporter.get_finished_spans() if s.attributes}
    for path in ("/teapot", "/missing"):
        assert spans[path].status.status_code is StatusCode.UNSET
        assert "error.type" not in (spans[path].attributes or {})
    assert spans["/busy"].status.status_code is StatusCode.ERROR
    assert (spans["/busy"].attributes or {})["error.type"] == "503"
    crashed = spans["/crash"]
    assert crashed.status.status_code is StatusCode.ERROR
    assert (crashed.attributes or {})["error.type"] == "LookupError"
    (event,) = crashed.events
    assert event.name == "exception" and (event.attributes or {})["exception.type"] == "LookupError"


def test_urls_opentelemetry_is_told_to_leave_out_get_no_span_but_keep_their_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Health probes and scrapes every few seconds: OpenTelemetry's instrumentations leave
    # out the URLs OTEL_PYTHON_EXCLUDED_URLS names, and ridtrace exported a span for each.
    monkeypatch.setenv("OTEL_PYTHON_EXCLUDED_URLS", "/health$,metrics")
    provider, exporter = _provider()
    app = FastAPI(telemetry={"tracing": False}) if _has_native() else FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/work")
    async def work() -> dict[str, str]:
        return {"done": "yes"}

    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return [await client.get(p) for p in ("/health", "/work", "/health")]

    answers = asyncio.run(go())
    assert [a.status_code for a in answers] == [200, 200, 200]
    ids = [a.headers["x-server-request-id"] for a in answers]
    assert len(set(ids)) == 3  # every request still gets its own id
    paths = [(s.attributes or {}).get("url.path") for s in exporter.get_finished_spans()]
    assert paths == ["/work"]


def test_a_request_fastapis_telemetry_was_told_to_leave_out_gets_no_span_of_ours() -> None:
    # FastAPI(telemetry={"exclude": ...}) skips health probes; ridtrace, finding no
    # server span, opened its own http-request span for every probe the app excluded.
    provider, exporter = _provider()
    app = _app(telemetry={
        "tracer_provider": provider, "metrics": False, "logs": False,
        "exclude": lambda scope: scope.get("path") == "/own-header",
    })
    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
    excluded = _get(app, "/own-header")
    traced = _get(app, "/ids")
    assert excluded.headers["x-server-request-id"] != "x"  # the request keeps its id
    spans = [(s.attributes or {}).get("request_id") for s in exporter.get_finished_spans()
             if s.kind is SpanKind.SERVER]
    assert spans == [traced.json()["request_id"]]


@pytest.mark.parametrize("flags", ["01", "00"])
def test_read_traceparent_continues_a_hop_the_propagators_do_not_read(flags: str) -> None:
    # ridtrace's worker under OTEL_PROPAGATORS=none: the frontend's traceparent names
    # the request the work is for, and its sampled flag is the frontend's decision.
    from opentelemetry import propagate
    from opentelemetry.propagators.composite import CompositePropagator

    provider, exporter = _provider()
    app = _app()
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(
        tracer_provider=provider, read_traceparent=True))
    ignoring = _app()
    ignoring.add_middleware(RequestTracingMiddleware, settings=TracingSettings(
        tracer_provider=provider))
    hop = f"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}".encode()
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([]))
    try:
        _get(app, "/ids", [(b"traceparent", hop)])
        _get(ignoring, "/ids", [(b"traceparent", hop)])
    finally:
        propagate.set_global_textmap(before)
    parents = [s.parent.span_id if s.parent else None for s in exporter.get_finished_spans()]
    if flags == "00":  # sampled out by the frontend: left out here too
        assert parents == [None]
    else:
        assert parents == [0x00f067aa0ba902b7, None]


def test_propagators_none_keeps_a_sampled_out_span_already_current_as_the_parent() -> None:
    # Under OTEL_PROPAGATORS=none the extraction stood for an empty context, so a span
    # of ours began a trace beside a sampled-out one already current (an outer
    # instrumentation's, FastAPI's own) and was exported though the request was not.
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
    from opentelemetry.propagators.composite import CompositePropagator
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    provider, exporter = _provider()
    inner = _app()
    inner.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    outer_span = NonRecordingSpan(SpanContext(0x5 << 100, 0x7, False, TraceFlags(0)))

    async def sampled_out_outside(scope: Scope, receive: Receive, send: Send) -> None:
        token = otel_context.attach(trace.set_span_in_context(outer_span))
        try:
            await inner(scope, receive, send)
        finally:
            otel_context.detach(token)

    before = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([]))
    try:
        caller = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        response = _get(sampled_out_outside, "/ids", [(b"traceparent", caller)])
    finally:
        propagate.set_global_textmap(before)
    assert response.status_code == 200
    assert exporter.get_finished_spans() == ()


def test_a_propagator_asking_for_its_header_in_mixed_case_finds_it() -> None:
    # ASGI servers hand header names over in lower case, and the middleware looked them
    # up as the propagator spelt them: X-Ray's `X-Amzn-Trace-Id` was never found, so
    # under OTEL_PROPAGATORS=xray every request began a new trace. (OpenTelemetry's
    # ASGI instrumentation compares the names in lower case.)
    from opentelemetry import propagate

    provider, exporter = _provider()
    app = _app()
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(XRayLikePropagator())
    try:
        _get(app, "/ids", [(b"x-amzn-trace-id", XRAY_HEADER.encode())])
    finally:
        propagate.set_global_textmap(before)
    (span,) = exporter.get_finished_spans()
    assert span.parent is not None and f"{span.parent.span_id:016x}" == XRAY_PARENT
    assert f"{span.context.trace_id:032x}" == XRAY_TRACE


def test_a_propagator_reading_headers_beyond_its_fields_sees_them() -> None:
    # Jaeger's propagator takes baggage from every `uberctx-*` header (OT's from
    # `ot-baggage-*`), which its `fields` cannot list: the middleware handed the
    # propagators only the headers named there, and under OTEL_PROPAGATORS=jaeger the
    # caller's baggage never reached the app. OpenTelemetry's ASGI instrumentation
    # shows them every header.
    from opentelemetry import baggage, propagate
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.routing import Route

    async def tenant(request: Request) -> JSONResponse:
        return JSONResponse({"tenant": baggage.get_baggage("tenant")})

    provider, _ = _provider()
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(JaegerLikePropagator())  # as OTEL_PROPAGATORS sets it
    try:
        app = RequestTracingMiddleware(Starlette(routes=[Route("/tenant", tenant)]),
                                       settings=TracingSettings(tracer_provider=provider))
        response = _get(app, "/tenant", [(b"uberctx-tenant", b"acme")])
    finally:
        propagate.set_global_textmap(before)
    assert response.json() == {"tenant": "acme"}


def test_only_propagators_that_may_read_any_header_are_shown_every_header() -> None:
    # Collecting every header costs the identity-only fast path each request: only for
    # propagators that may need it, not the W3C default nor OTEL_PROPAGATORS=none.
    from opentelemetry import propagate
    from opentelemetry.propagators.composite import CompositePropagator

    from ridtrace.tracing.inbound import TRACE_HEADERS
    from ridtrace.tracing.propagation import extracted_header_names

    before = propagate.get_global_textmap()
    try:
        seen = []
        for textmap in (CompositePropagator([]), before, JaegerLikePropagator()):
            propagate.set_global_textmap(textmap)
            seen.append(extracted_header_names())
    finally:
        propagate.set_global_textmap(before)
    assert seen[0] is not None and set(seen[0]) == set(TRACE_HEADERS)
    assert seen[1] is not None and set(seen[1]) == set(TRACE_HEADERS)
    assert seen[2] is None


@pytest.mark.parametrize("caller", [None, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"])
def test_a_request_sampled_out_names_the_span_id_it_passes_on(caller: str | None) -> None:
    # The lines named a span id ridtrace minted while the SDK's non-recording span, a
    # span id of its own, went on to the next service: its parent_span_id named no line
    # of this one for every request the sampler left out (99 % at 1 % sampling).
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased


    provider = TracerProvider(sampler=ParentBased(ALWAYS_OFF))
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    app = _app(telemetry={"tracing": False}) if _has_native() else _app()

    _add_hop(app)

    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    headers = [(b"traceparent", caller.encode())] if caller else []
    got = _get(app, "/hop", headers).json()
    _, trace_id, span_id, flags = got["sent"].split("-")
    assert (got["trace_id"], got["span_id"]) == (trace_id, span_id)
    assert not int(flags, 16) & 1  # sampled out
    if caller:
        assert (trace_id, got["parent"]) == (caller.split("-")[1], caller.split("-")[2])
        assert span_id != caller.split("-")[2]


def test_an_unanswered_request_on_the_id_only_path_gets_the_ids_500(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nothing recorded, logged or counted (no lifecycle lines, no span, no metrics): the
    # server's own 500 came once the request's context was gone, with no id header, and
    # its ERROR line without the ids, where the observed path answers it itself.
    import logging

    from ridtrace.tracing import current_request_id
    from ridtrace.tracing import metrics as ridtrace_metrics

    monkeypatch.setattr(ridtrace_metrics, "_active", None)
    seen: list[tuple[str, str | None]] = []

    class Remember(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append((record.getMessage(), current_request_id()))

    async def silent(scope: Scope, receive: Receive, send: Send) -> None:
        return None

    app = RequestTracingMiddleware(silent, settings=TracingSettings(
        tracer_provider=TracerProvider(), log_lifecycle=False))
    handler = Remember(level=logging.ERROR)
    logging.getLogger("ridtrace.tracing.exchange").addHandler(handler)
    try:
        response = _get(app, "/", [(b"x-request-id", b"silent-1")])
    finally:
        logging.getLogger("ridtrace.tracing.exchange").removeHandler(handler)
    assert response.status_code == 500
    assert response.headers["x-request-id"] == "silent-1"
    request_id = response.headers["x-server-request-id"]
    assert seen == [("ASGI application returned without starting a response", request_id)]


@pytest.mark.parametrize("provider", ["sdk-without-processor", "no-sdk"])
@pytest.mark.parametrize("lifecycle", [True, False])
@pytest.mark.parametrize("caller", [
    None,
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
])
def test_with_nothing_exported_a_call_onward_names_the_ids_of_the_lines(
    provider: str, lifecycle: bool, caller: str | None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `configure_tracing()` with no endpoint (an SDK with no span processor) or no SDK at
    # all: `inject` handed on the caller's span, or nothing, while the lines named ids
    # ridtrace minted. A gateway's backend then linked to no line of the gateway's, and
    # `analyze` counted every forwarded request twice (false client_id_reuse).
    from opentelemetry.trace import NoOpTracerProvider

    from ridtrace.tracing import metrics as ridtrace_metrics

    if not lifecycle:  # the id-only path: nothing logged, nothing counted
        monkeypatch.setattr(ridtrace_metrics, "_active", None)
    app = _app(telemetry={"tracing": False}) if _has_native() else _app()

    _add_hop(app)

    tracer_provider = TracerProvider() if provider == "sdk-without-processor" else NoOpTracerProvider()
    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(
        tracer_provider=tracer_provider, log_lifecycle=lifecycle))
    headers = [(b"traceparent", caller.encode())] if caller else []
    got = _get(app, "/hop", headers).json()
    assert got["sent"] is not None
    _, trace_id, span_id, flags = got["sent"].split("-")
    assert (got["trace_id"], got["span_id"]) == (trace_id, span_id)
    if caller:  # the caller's trace and sampled flag go on, this request as the parent
        assert (trace_id, got["parent"]) == (caller.split("-")[1], caller.split("-")[2])
        assert span_id != caller.split("-")[2]
        assert flags == caller.split("-")[3]
    else:  # no caller: the next service decides
        assert flags == "01"


def test_without_fastapis_operation_spans_a_call_onward_names_the_requests_span() -> None:
    # docs/tracing.md: under FastAPI's operation spans a call onward names the operation
    # span, which no line carries; with them off the server span is current, and the
    # id it hands on is the one the request's lines carry.


    provider, _ = _provider()
    try:
        app = FastAPI(telemetry={"tracer_provider": provider, "metrics": False, "logs": False,
                                 "operation_spans": False})
    except TypeError:
        pytest.skip("this FastAPI has no built-in telemetry")

    _add_hop(app)

    app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(tracer_provider=provider))
    got = _get(app, "/hop").json()
    assert got["sent"].split("-")[1:3] == [got["trace_id"], got["span_id"]]
