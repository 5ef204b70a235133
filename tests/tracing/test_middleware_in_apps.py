"""The middleware in applications the team did not write: their exception handlers,
background tasks, sub-apps, other middlewares and the ASGI extensions their servers offer."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import BackgroundTasks, FastAPI, WebSocket
from fastapi.responses import JSONResponse
from loguru import logger
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import Message

from ridtrace import (
    RequestTracingMiddleware,
    TracingSettings,
    current_request_id,
    current_x_request_id,
)
from ridtrace.tracing import annotate_span
from tests.tracing.conftest import read_lines


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _get(app: Any, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path, **kwargs)

    return asyncio.run(go())


def _scope(path: str, **extra: Any) -> dict[str, Any]:
    """An HTTP scope as a server builds it, with the ASGI spec version it speaks."""
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1", "method": "GET", "scheme": "http", "path": path,
        "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": [],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80), **extra,
    }  # fmt: skip


def _ends(log_file: Path) -> list[dict[str, Any]]:
    return [x for x in read_lines(log_file) if x.get("event") == "request.end"]


def test_background_tasks_keep_the_ids_but_do_not_count_in_the_requests_duration(
    log_file: Path,
) -> None:
    # Starlette runs a response's background tasks after its last byte, inside the
    # app's call: a 0.4 s e-mail task made a 2 ms request 400 ms long on request.end
    # and on its span.
    provider, exporter = _provider()
    app = FastAPI(telemetry={"tracing": False})

    def send_mail() -> None:
        time.sleep(0.4)
        logger.info("mail sent")

    @app.get("/signup")
    async def signup(tasks: BackgroundTasks) -> dict[str, str | None]:
        tasks.add_task(send_mail)
        return {"request_id": current_request_id()}

    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
    request_id = _get(app, "/signup").json()["request_id"]
    mail = next(x for x in read_lines(log_file) if x["message"] == "mail sent")
    assert mail["request_id"] == request_id
    (end,) = _ends(log_file)
    assert end["outcome"] == "ok" and end["duration_ms"] < 300
    (span,) = exporter.get_finished_spans()
    assert span.end_time is not None and span.start_time is not None
    assert span.end_time - span.start_time < 300_000_000


async def _events(request: Request) -> StreamingResponse:
    """An event stream of 100 messages."""
    async def body() -> Any:
        for index in range(100):
            yield b"data: %d\n\n" % index
            await asyncio.sleep(0)

    return StreamingResponse(body(), media_type="text/event-stream")


def _leave_after_two_messages(app: Any) -> BaseException | None:
    """Serve ``GET /events`` as an ASGI 2.4 server whose client went away after the
    response start and one body message (its next send() fails); what the app raised."""
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.sleep(30)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if len(sent) == 3:
            raise OSError("client went away")
        sent.append(message)

    async def go() -> BaseException | None:
        try:
            await app(_scope("/events"), receive, send)
        except Exception as exc:  # the app's own exception, re-raised unchanged
            return exc
        return None

    return asyncio.run(go())


def test_a_client_gone_mid_stream_under_an_asgi_2_4_server_is_cancelled(
    log_file: Path,
) -> None:
    # ASGI 2.4 servers make send() fail once the client left, and Starlette's
    # StreamingResponse then raises ClientDisconnect: that is a caller walking away,
    # not a server error (it was logged WARN outcome error, the span marked ERROR).
    app = RequestTracingMiddleware(Starlette(routes=[Route("/events", _events)]))
    raised = _leave_after_two_messages(app)
    assert type(raised).__name__ == "ClientDisconnect"
    (end,) = _ends(log_file)
    assert (end["outcome"], end["level"], end["status"]) == ("cancelled", "INFO", 200)


@pytest.mark.parametrize("fastapi_span", [False, True], ids=["ours", "fastapi"])
def test_a_span_of_ours_says_its_stream_was_cut_and_fastapis_is_left_to_it(
    fastapi_span: bool,
) -> None:
    # A client gone mid-stream left our span a clean 200: nothing in Jaeger said so.
    # FastAPI's span ends as the last body byte goes out, before any outcome is known:
    # given one only when a stream was cut, its `outcome` found cut streams alone.
    provider, exporter = _provider()
    settings = TracingSettings(tracer_provider=provider)
    if fastapi_span:
        api = FastAPI(telemetry={"tracer_provider": provider, "metrics": False, "logs": False})
        api.get("/events")(_events)
        app: Any = RequestTracingMiddleware(api, settings=settings)
    else:
        app = RequestTracingMiddleware(Starlette(routes=[Route("/events", _events)]),
                                       settings=settings)
    _leave_after_two_messages(app)
    (span,) = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    attributes = span.attributes or {}
    assert attributes["http.response.status_code"] == 200
    if fastapi_span:
        assert "outcome" not in attributes
    else:
        assert attributes["outcome"] == "cancelled"
        assert span.status.status_code is StatusCode.UNSET


def test_a_file_sent_with_the_pathsend_extension_is_a_finished_response(
    log_file: Path, tmp_path: Path
) -> None:
    # Starlette's FileResponse hands the file to a server that offers
    # http.response.pathsend (Granian does) instead of sending body messages: every
    # such download was logged as outcome error, 0 bytes out.
    document = tmp_path / "report.pdf"
    document.write_bytes(b"%PDF" + b"x" * 996)

    async def download(request: Request) -> FileResponse:
        return FileResponse(document)

    app = RequestTracingMiddleware(Starlette(routes=[Route("/report", download)]))
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = _scope("/report", extensions={"http.response.pathsend": {}})
    asyncio.run(app(scope, receive, send))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.pathsend"]
    (end,) = _ends(log_file)
    assert (end["outcome"], end["level"], end["bytes_out"]) == ("ok", "INFO", 1000)


def _get_traced(app: FastAPI, placement: str, path: str, client_id: str,
                **options: Any) -> httpx.Response:
    """GET `path` of `app` under ridtrace (added with `add_middleware`, or `wrapped`
    around it), the app's exceptions not raised to the client, as a server answers."""
    traced: Any = app
    if placement == "wrapped":
        traced = RequestTracingMiddleware(app, **options)
    else:
        app.add_middleware(RequestTracingMiddleware, **options)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=traced, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path, headers={"x-request-id": client_id})

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("placement", "log_lifecycle"),
    [("add_middleware", True), ("wrapped", True), ("add_middleware", False)],
    ids=["add_middleware", "wrapped", "id-only"],
)
def test_the_apps_own_500_handler_answers_once_with_the_id_headers(
    log_file: Path, placement: str, log_lifecycle: bool
) -> None:
    # FastAPI / Starlette answer an escaped exception with the app's handler in
    # ServerErrorMiddleware, outside ridtrace: the plain 500 ridtrace sent first
    # replaced the service's JSON error body with "Internal Server Error".
    calls: list[str | None] = []
    app = FastAPI(telemetry={"tracing": False})

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> JSONResponse:
        calls.append(current_request_id())
        return JSONResponse({"error": "internal", "request_id": current_request_id()}, 500)

    @app.get("/orders")
    async def orders() -> None:
        raise RuntimeError("database down")

    response = _get_traced(app, placement, "/orders", "order-7", log_lifecycle=log_lifecycle)
    assert response.status_code == 500
    request_id = response.headers["x-server-request-id"]
    assert response.json() == {"error": "internal", "request_id": request_id}
    assert response.headers["x-request-id"] == "order-7"
    assert calls == [request_id]  # once, with the request's ids current
    if log_lifecycle:
        (end,) = _ends(log_file)
        assert (end["status"], end["outcome"]) == (500, "error")


@pytest.mark.parametrize("placement", ["add_middleware", "wrapped"])
@pytest.mark.parametrize("where", ["background", "stream"])
def test_the_apps_500_handler_runs_once_with_the_ids_for_a_crash_after_the_response(
    placement: str, where: str
) -> None:
    # A background task's or a streaming body's crash comes after the response started:
    # ServerErrorMiddleware still calls the app's handler (its answer unsent), outside
    # ridtrace, so every line the handler logged had no ids.
    calls: list[str | None] = []
    app = FastAPI(telemetry={"tracing": False})

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> JSONResponse:
        calls.append(current_request_id())
        return JSONResponse({"error": "internal"}, 500)

    @app.get("/background")
    async def background(tasks: BackgroundTasks) -> dict[str, bool]:
        def task() -> None:
            raise KeyError("after the answer")

        tasks.add_task(task)
        return {"ok": True}

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        async def body() -> Any:
            yield "first\n"
            raise LookupError("mid-stream")

        return StreamingResponse(body())

    response = _get_traced(app, placement, f"/{where}", "late-1")
    assert response.status_code == 200
    assert calls == [response.headers["x-server-request-id"]]  # once, the ids current


def test_a_sync_500_handler_of_a_starlette_app_answers_and_the_exception_still_escapes() -> None:
    calls: list[str] = []

    def on_error(request: Request, exc: Exception) -> PlainTextResponse:
        calls.append(type(exc).__name__)
        return PlainTextResponse("sorry, try again", status_code=503)

    async def crash(request: Request) -> None:
        raise KeyError("missing")

    app = Starlette(routes=[Route("/", crash)], exception_handlers={500: on_error})
    app.add_middleware(RequestTracingMiddleware)

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            with pytest.raises(KeyError):  # re-raised unchanged, for the server to log
                await client.get("/")
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get("/")

    response = asyncio.run(go())
    assert (response.status_code, response.text) == (503, "sorry, try again")
    assert "x-server-request-id" in response.headers
    assert calls == ["KeyError", "KeyError"]  # one per request


@pytest.mark.parametrize("log_lifecycle", [True, False], ids=["outer-logs", "outer-silent"])
def test_a_mounted_sub_app_with_its_own_middleware_serves_under_the_outer_ones_ids(
    log_file: Path, log_lifecycle: bool
) -> None:
    # A team's sub-app ships with the middleware and is mounted in an app that has it
    # too: the inner one minted a second request_id, so the handler's lines (and the
    # shared span's request_id) named an id the client never got in
    # x-server-request-id, under two request.start / request.end pairs.
    provider, exporter = _provider()
    billing = FastAPI(telemetry={"tracing": False})

    @billing.get("/invoices/{number}")
    async def invoice(number: int) -> dict[str, str | None]:
        logger.info("invoice read")
        return {"request_id": current_request_id()}

    billing.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
    app = FastAPI(telemetry={"tracing": False})
    app.mount("/billing", billing)
    app.add_middleware(
        RequestTracingMiddleware, tracer_provider=provider, log_lifecycle=log_lifecycle
    )
    response = _get(app, "/billing/invoices/7", headers={"x-request-id": "inv-7"})
    request_id = response.headers["x-server-request-id"]
    assert response.json()["request_id"] == request_id
    lines = read_lines(log_file)
    assert next(x for x in lines if x["message"] == "invoice read")["request_id"] == request_id
    assert [x["request_id"] for x in lines if "event" in x] == (
        [request_id, request_id] if log_lifecycle else []
    )
    if log_lifecycle:
        assert _ends(log_file)[0]["route"] == "/billing/invoices/{number}"
    spans = exporter.get_finished_spans()
    assert [s.attributes["request_id"] for s in spans if s.attributes] == [request_id]
    assert current_request_id() is None


def test_asgi_correlation_id_inside_keeps_its_generated_id_on_the_response() -> None:
    # Side by side with asgi-correlation-id (inside ridtrace): a caller that sent no
    # x-request-id got none back, though the service logged every line under the id
    # asgi-correlation-id generated; a caller that sent one still gets exactly it.
    from asgi_correlation_id import CorrelationIdMiddleware, correlation_id

    app = FastAPI(telemetry={"tracing": False})

    @app.get("/ids")
    async def ids() -> dict[str, str | None]:
        return {"correlation_id": correlation_id.get(), "request_id": current_request_id()}

    app.add_middleware(CorrelationIdMiddleware)
    app.add_middleware(RequestTracingMiddleware)
    plain = _get(app, "/ids")
    assert plain.headers.get_list("x-request-id") == [plain.json()["correlation_id"]]
    assert plain.headers["x-server-request-id"] == plain.json()["request_id"]
    sent = "5b0f4d6e-1c2a-4e8f-9a7b-3c4d5e6f7a8b"
    echoed = _get(app, "/ids", headers={"x-request-id": sent})
    assert echoed.headers.get_list("x-request-id") == [sent]


def test_an_app_echoing_a_refused_client_id_raw_does_not_get_it_out() -> None:
    # The client sent an id ridtrace refused: whatever the app echoes under that name
    # is dropped, as before, since it is most likely the raw value.
    async def echo_raw(request: Request) -> PlainTextResponse:
        raw = request.headers.get("x-request-id", "")
        return PlainTextResponse("ok", headers={"x-request-id": raw})

    app = RequestTracingMiddleware(Starlette(routes=[Route("/", echo_raw)]))
    response = _get(app, "/", headers={"x-request-id": "x" * 500})
    assert "x-request-id" not in response.headers


def test_one_exception_object_raised_by_two_requests_reaches_the_handler_for_each() -> None:
    # An app that raises one module-level exception object: the second request's crash
    # comes after its response started, so the layer above ridtrace answers it with
    # the app's handler, which must run (it reports the error) though ridtrace
    # answered the same object for the first request.
    shared = RuntimeError("upstream unavailable")
    reported: list[str] = []

    async def on_error(request: Request, exc: Exception) -> PlainTextResponse:
        reported.append(request.url.path)
        return PlainTextResponse("unavailable", status_code=503)

    async def before(request: Request) -> None:
        raise shared

    async def midstream(request: Request) -> StreamingResponse:
        async def body() -> Any:
            yield b"partial"
            raise shared

        return StreamingResponse(body())

    app = Starlette(routes=[Route("/before", before), Route("/midstream", midstream)],
                    exception_handlers={Exception: on_error})
    app.add_middleware(RequestTracingMiddleware)
    assert _get(app, "/before").status_code == 503
    # The stream broke off: the client sees what its transport makes of that.
    with contextlib.suppress(httpx.HTTPError):
        _get(app, "/midstream")
    assert reported == ["/before", "/midstream"]


def test_the_server_id_cannot_be_sent_under_the_client_ids_header() -> None:
    # response_id_header="X-Request-ID" (the server's id where many services return
    # it) sent the echo and the server's id as two values of one header, which no
    # caller can tell apart: refused when the settings are built.
    async def ok(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    with pytest.raises(ValueError, match="x-request-id"):
        RequestTracingMiddleware(Starlette(routes=[Route("/", ok)]),
                                 response_id_header="X-Request-ID")
    with pytest.raises(ValueError, match="x-correlation-id"):
        TracingSettings(client_id_header="x-correlation-id",
                        response_id_header="X-Correlation-Id")


def test_the_client_ids_header_cannot_also_be_deprecated() -> None:
    # deprecated_headers=("x-request-id",) beside the default client_id_header (an
    # operator starting the move off x-request-id) was silently not deprecated: the
    # header stayed the client's id, no WARN, nothing in deprecated_headers, and the
    # deprecated-header metric and audit reported 0 requests for it while every client
    # sent it: a confident "nobody uses it" before its removal. Refused when built.
    async def ok(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    with pytest.raises(ValueError, match="x-request-id"):
        RequestTracingMiddleware(Starlette(routes=[Route("/", ok)]),
                                 deprecated_headers=("request-id", "X-Request-ID"))
    with pytest.raises(ValueError, match="x-dynamo-request-id"):
        TracingSettings(client_id_header="X-Dynamo-Request-Id")
    TracingSettings(client_id_header="x-correlation-id", deprecated_headers=("x-request-id",))


def test_a_head_response_sends_no_body_bytes(log_file: Path) -> None:
    # Starlette hands a HEAD response's body to the server, which drops it: request.end
    # counted a load balancer's HEAD health checks as the full page each.
    async def page(request: Request) -> PlainTextResponse:
        return PlainTextResponse("x" * 5000)

    app = RequestTracingMiddleware(Starlette(routes=[Route("/", page, methods=["GET", "HEAD"])]))

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            await client.head("/")
            await client.get("/")

    asyncio.run(go())
    assert [(x["method"], x["bytes_out"]) for x in _ends(log_file)] == [("HEAD", 0), ("GET", 5000)]


def test_a_500_handler_that_reads_the_body_gets_the_request_the_layer_gives_it() -> None:
    # ServerErrorMiddleware hands its handler a Request without a receive channel: a
    # handler that tries to read the body fails at once (and the plain 500 goes out).
    # ridtrace gave it the live channel, so after an endpoint had read the body the
    # handler waited for more of it until the client gave up.
    async def on_error(request: Request, exc: Exception) -> PlainTextResponse:
        return PlainTextResponse(f"failed on {len(await request.body())} bytes", 500)

    async def upload(request: Request) -> None:
        await request.body()
        raise RuntimeError("storage down")

    app = Starlette(routes=[Route("/upload", upload, methods=["POST"])],
                    exception_handlers={500: on_error})
    app.add_middleware(RequestTracingMiddleware)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await asyncio.wait_for(client.post("/upload", content=b"abc"), 5)

    response = asyncio.run(go())
    assert (response.status_code, response.text) == (500, "Internal Server Error")
    assert "x-server-request-id" in response.headers


def test_a_request_made_in_process_from_inside_a_request_does_not_take_over_its_span() -> None:
    # The inner request (httpx's ASGITransport, in the outer request's task) found the
    # outer request's span current, took it for an instrumentation's server span and
    # wrote its own request_id over it: the outer request had no span naming its id.
    provider, exporter = _provider()
    app = FastAPI(telemetry={"tracing": False})

    @app.get("/inner")
    async def inner() -> dict[str, str | None]:
        return {"request_id": current_request_id()}

    @app.get("/outer")
    async def outer() -> dict[str, Any]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            called = (await client.get("/inner")).json()
        return {"request_id": current_request_id(), "inner": called["request_id"]}

    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)

    async def go() -> dict[str, Any]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            return dict((await client.get("/outer")).json())

    body = asyncio.run(go())
    spans = {span.attributes["request_id"]: span for span in exporter.get_finished_spans()}
    assert set(spans) == {body["request_id"], body["inner"]}
    assert spans[body["request_id"]].attributes["url.path"] == "/outer"
    assert spans[body["inner"]].attributes["url.path"] == "/inner"


def test_a_sub_app_with_the_middleware_names_its_routes_with_the_mount_it_is_served_under(
    log_file: Path,
) -> None:
    # A team's sub-app ships with the middleware and is mounted in an app without it: its
    # routes were named without the mount (/invoices/{number}), so two sub-apps' routes
    # shared one name in request.end, the span and the metric, and FastAPI's own span
    # named the request /billing/invoices/{number}.
    provider, exporter = _provider()
    app = FastAPI(telemetry={"tracing": False})
    billing = FastAPI(telemetry={"tracing": False})

    @billing.get("/invoices/{number}")
    async def invoice(number: int) -> dict[str, int]:
        return {"number": number}

    billing.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
    app.mount("/billing", billing)

    async def go() -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            return (await client.get("/billing/invoices/7")).status_code

    assert asyncio.run(go()) == 200
    (end,) = _ends(log_file)
    (span,) = exporter.get_finished_spans()
    assert end["route"] == "/billing/invoices/{number}"
    assert (span.attributes or {})["http.route"] == "/billing/invoices/{number}"


def test_a_websocket_connection_is_served_under_ids_of_its_own(log_file: Path) -> None:
    # A WebSocket handshake is an HTTP request, and its handler's lines are written
    # while it is handled: they carried no ids at all (the scope passed straight
    # through), and the client got no x-server-request-id to quote.
    app = FastAPI(telemetry={"tracing": False})

    @app.websocket("/chat")
    async def chat(websocket: WebSocket) -> None:
        await websocket.accept()
        logger.info("chat message")
        await websocket.send_json(
            {"request_id": current_request_id(), "x_request_id": current_x_request_id()}
        )
        await websocket.close()

    app.add_middleware(RequestTracingMiddleware)
    seen = []
    with TestClient(app) as client:
        for _ in range(2):
            with client.websocket_connect(
                "/chat", headers={"x-request-id": "chat-1", "request-id": "legacy"}
            ) as session:
                ids = session.receive_json()
                accept_headers = {
                    bytes(name).decode(): bytes(value).decode()
                    for name, value in session.extra_headers or ()
                }
            seen.append(ids["request_id"])
            assert ids["x_request_id"] == "chat-1"
            assert accept_headers["x-server-request-id"] == ids["request_id"]
            assert accept_headers["x-request-id"] == "chat-1"
    assert len(set(seen)) == 2 and None not in seen  # fresh per connection
    lines = read_lines(log_file)
    chats = [x for x in lines if x["message"] == "chat message"]
    assert [x["request_id"] for x in chats] == seen
    assert all(x["x_request_id"] == "chat-1" and x["trace_id"] and x["span_id"] for x in chats)
    (warned,) = [x for x in lines if x.get("event") == "deprecated_header"]
    assert (warned["header"], warned["request_id"]) == ("request-id", seen[0])


def test_an_instrumentations_span_for_a_websocket_gets_its_ids(log_file: Path) -> None:
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
    from starlette.routing import WebSocketRoute

    provider, exporter = _provider()

    async def chat(websocket: WebSocket) -> None:
        await websocket.accept()
        annotate_span(room="lobby")
        await websocket.send_text(current_request_id() or "")
        await websocket.close()

    inner = RequestTracingMiddleware(Starlette(routes=[WebSocketRoute("/chat", chat)]))
    app = OpenTelemetryMiddleware(inner, tracer_provider=provider)
    with TestClient(app) as client, client.websocket_connect(
        "/chat", headers={"x-request-id": "chat-2"}
    ) as session:
        request_id = session.receive_text()
    (server,) = [s for s in exporter.get_finished_spans() if s.kind.name == "SERVER"]
    assert server.attributes is not None
    assert server.attributes["request_id"] == request_id
    assert server.attributes["x_request_id"] == "chat-2"
    assert server.attributes["room"] == "lobby"
