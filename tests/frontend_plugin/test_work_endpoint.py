"""``POST /v1/work`` as plain ASGI (issue 15), in process: the messages it sends.

Message-level assertions need a recording ``send``; everything a client sees over a
real socket (409 for a held id, the token, streaming with a gate, faults) is covered
by the end-to-end tests on real worker processes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from loguru import logger
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ridtrace import configure_logging
from ridtrace.frontend_plugin import WorkerSettings, create_worker_app
from ridtrace.frontend_plugin.wire import WorkRequest
from ridtrace.tracing import TracingSettings, metrics


def _envelope(request_id: str, prompt: str = "one two three", max_tokens: int = 10) -> bytes:
    return WorkRequest(
        request_id=request_id, x_request_id="client-1", endpoint="completions",
        model="echo", prompt=prompt, max_tokens=max_tokens,
    ).to_json()


def _scope(method: str = "POST", path: str = "/v1/work") -> dict[str, Any]:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
    }


def _call(app: Any, scope: dict[str, Any], parts: list[bytes]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    incoming = [
        {"type": "http.request", "body": part, "more_body": index < len(parts) - 1}
        for index, part in enumerate(parts)
    ]

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()  # nothing more: a client that stays
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


@pytest.fixture(autouse=True)
def _quiet_loguru() -> Any:
    logger.remove()
    yield
    logger.remove()


def test_a_ready_reply_is_one_body_with_its_length(tmp_path: Path) -> None:
    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    app = create_worker_app(WorkerSettings())
    body = _envelope("rid-1")
    start, reply = _call(app, _scope(), [body[:10], body[10:]])  # exactly two messages
    assert start["type"] == "http.response.start" and start["status"] == 200
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"application/x-ndjson"
    assert int(headers[b"content-length"]) == len(reply["body"])
    assert b"x-server-request-id" in headers  # the tracing middleware is around it
    assert reply["type"] == "http.response.body" and not reply.get("more_body", False)
    lines = [orjson.loads(line) for line in reply["body"].splitlines()]
    assert "".join(line.get("text", "") for line in lines) == "echo: one two three"
    assert {line["request_id"] for line in lines} == {"rid-1"}
    assert lines[-1]["done"] is True and lines[-1]["finish_reason"] == "stop"
    logger.remove()
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    start_line, end_line = (e for e in events if e.get("event", "").startswith("worker."))
    assert start_line["event"] == "worker.start" and end_line["event"] == "worker.end"
    assert end_line["outcome"] == "ok" and end_line["tokens"] == 4
    assert start_line["request_id"] == end_line["request_id"] == "rid-1"
    assert end_line["x_request_id"] == "client-1"


def test_the_foreign_chunk_fault_labels_exactly_one_chunk() -> None:
    app = create_worker_app(WorkerSettings(foreign_chunk_after=2))
    _, reply = _call(app, _scope(), [_envelope("rid-f")])
    ids = [orjson.loads(line)["request_id"] for line in reply["body"].splitlines()]
    assert ids == ["rid-f", "rid-f", "foreign-rid-f", "rid-f", "rid-f"]


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b"{not json", 400, "invalid JSON"),
        (b'{"request_id": 1}', 400, "request_id must be a string"),
        (b"x" * 2048, 413, "too large"),
    ],
)
def test_bad_envelopes_are_refused_with_a_json_error(body: bytes, status: int, needle: str) -> None:
    app = create_worker_app(WorkerSettings(max_body_bytes=1024))
    start, reply = _call(app, _scope(), [body])
    assert start["status"] == status
    assert dict(start["headers"])[b"content-type"] == b"application/json"
    assert needle in orjson.loads(reply["body"])["error"]["message"]


def test_max_tokens_over_the_limit_is_refused() -> None:
    app = create_worker_app(WorkerSettings(max_tokens_limit=5))
    start, reply = _call(app, _scope(), [_envelope("rid-2", max_tokens=6)])
    assert start["status"] == 400 and b"at most 5" in reply["body"]


def test_other_methods_on_the_work_path_get_405_and_other_paths_reach_fastapi() -> None:
    app = create_worker_app(WorkerSettings())
    (start, _) = _call(app, _scope("GET"), [b""])
    assert start["status"] == 405 and dict(start["headers"])[b"allow"] == b"POST"

    async def get(path: str, method: str = "GET") -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            return await client.request(method, path)

    health = asyncio.run(get("/health"))
    assert health.status_code == 200 and health.json() == {"status": "ok", "inflight": 0}
    assert asyncio.run(get("/health", "HEAD")).status_code == 200  # what some probes send
    assert asyncio.run(get("/nowhere")).status_code == 404


def test_a_workers_404_and_405_are_in_the_error_shape_of_its_other_answers() -> None:
    # FastAPI's {"detail": "Not Found"} (and the work path's own 405) were the worker's
    # only answers without the {"error": {"message", "type"}} object of its refusals.
    app = create_worker_app(WorkerSettings())

    async def call(path: str, method: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            return await client.request(method, path)

    for method, path, status, message in [
        ("GET", "/nowhere", 404, "Not Found: GET /nowhere"),
        ("POST", "/health", 405, "Method Not Allowed: POST /health"),
        ("GET", "/v1/work", 405, "Method Not Allowed: GET /v1/work"),
        ("DELETE", "/a%09b", 404, "Not Found: DELETE /a\\tb"),
    ]:
        answer = asyncio.run(call(path, method))
        assert answer.status_code == status, (path, answer.text)
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {"error": {"message": message, "type": "invalid_request_error",
                                           "param": None, "code": None}}, answer.text
        if status == 405:
            assert answer.headers["allow"] == ("POST" if path == "/v1/work" else "GET, HEAD")


def test_a_workers_405_names_its_methods_in_one_order_whatever_the_hash_seed() -> None:
    # Starlette joins a route's methods from a set: the worker's 405 said 'HEAD, GET' in
    # some processes and 'GET, HEAD' in others, as the frontend's did before.
    from starlette.exceptions import HTTPException
    from starlette.requests import Request

    from ridtrace.frontend_plugin.worker_errors import worker_http_error

    request = Request(_scope("POST", "/health"))
    for allow in ("HEAD, GET", "GET, HEAD"):
        exc = HTTPException(405, headers={"Allow": allow})
        answer = asyncio.run(worker_http_error(request, exc))
        assert answer.status_code == 405 and answer.headers["allow"] == "GET, HEAD"


def test_a_client_gone_before_its_envelope_gets_no_answer_and_holds_no_id() -> None:
    settings = WorkerSettings(debug_endpoints=True)
    app = create_worker_app(settings)
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": b'{"request_id":', "more_body": True},
                {"type": "http.disconnect"}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(_scope(), receive, send))
    assert sent == []

    async def counters() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            response = await client.get("/debug/inflight")
            return dict(response.json())

    assert asyncio.run(counters())["registered"] == 0


def _envelope_with(**fields: Any) -> bytes:
    return orjson.dumps({**orjson.loads(_envelope("rid-ok")), **fields})


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"request_id": "evil\r\nx-injected: 1"}, "request_id must be 1-128 printable ASCII"),
        ({"request_id": "a" * 129}, "request_id must be"),
        ({"request_id": ""}, "request_id must be"),
        # Spaces alone are no id, as the frontend refuses a body's.
        ({"request_id": "   "}, "request_id must be 1-128 printable ASCII characters (not only"),
        ({"session_id": " "}, "session_id must be 1-128 printable ASCII characters (not only"),
        ({"request_id": "caf\u00e9\u202e"}, "request_id must be"),
        ({"session_id": "s\r\n" * 10}, "session_id must be"),
        ({"endpoint": "gen\x1b[31m"}, "endpoint must be"),
        ({"model": "m\x00odel"}, "model must be at most 256 printable"),
        ({"model": "m" * 257}, "model must be"),
        # Refused at orjson's 1024 levels only, in words naming 200 (frontend-plugin.md).
        ({"extra": orjson.loads(b"[" * 230 + b"]" * 230)},
         "invalid JSON body: nested deeper than 200 levels"),
    ],
)
def test_envelope_ids_and_labels_are_vetted_before_they_reach_a_log_line(
    tmp_path: Path, fields: dict[str, Any], needle: str
) -> None:
    # A caller of /v1/work other than the frontend chose these freely: they were taken
    # as the in-flight key and written on worker.start / worker.end raw (line breaks,
    # bidi controls and terminal escapes, as long as the 4 MiB envelope allowed).
    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    app = create_worker_app(WorkerSettings())
    start, reply = _call(app, _scope(), [_envelope_with(**fields)])
    assert start["status"] == 400
    assert needle in orjson.loads(reply["body"])["error"]["message"]
    logger.remove()
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert not [e for e in events if e.get("event") in ("worker.start", "worker.end")]


def test_a_valid_envelope_with_a_session_and_unicode_model_is_served() -> None:
    app = create_worker_app(WorkerSettings())
    start, _ = _call(app, _scope(), [_envelope_with(session_id="sess-1", model="modèle/échо")])
    assert start["status"] == 200


@pytest.mark.parametrize(
    "stop", [["zz"] * 5, ["z" * 257], [""], "zz", [1]], ids=["five", "long", "empty", "str", "int"]
)
def test_stop_lists_beyond_the_frontends_limits_are_refused(stop: Any) -> None:
    # 20 000 stop strings in a 2 MB envelope held a worker's event loop for over two
    # minutes (the engine searches the reply for each), every other request waiting.
    app = create_worker_app(WorkerSettings())
    start, reply = _call(app, _scope(), [_envelope_with(stop=stop)])
    assert start["status"] == 400
    message = orjson.loads(reply["body"])["error"]["message"]
    assert message == "stop must be a list of at most 4 strings of 1-256 characters"


def test_four_stop_strings_of_256_characters_are_served() -> None:
    app = create_worker_app(WorkerSettings())
    stop = ["one", "t" * 256, "x", "y"]
    start, reply = _call(app, _scope(), [_envelope_with(stop=stop, prompt="a b one c")])
    assert start["status"] == 200
    lines = [orjson.loads(line) for line in reply["body"].splitlines()]
    assert lines[-1]["stop_sequence"] == "one"


@pytest.mark.parametrize(
    ("parts", "headers", "status"),
    [
        ([b"{not json"], [], 400),
        ([_envelope("rid-big", max_tokens=6)], [], 400),
        ([b"x" * 2048], [], 413),
        ([b""], [(b"transfer-encoding", b"gzip, chunked")], 501),
    ],
    ids=["json", "max_tokens", "size", "coding"],
)
def test_a_refused_envelope_is_logged_as_worker_refused_invalid(
    tmp_path: Path, parts: list[bytes], headers: list[tuple[bytes, bytes]], status: int
) -> None:
    # A worker writes no request.start / request.end: these refusals left no line at all.
    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    app = create_worker_app(WorkerSettings(max_body_bytes=1024, max_tokens_limit=5))
    scope = _scope()
    scope["headers"] = [*scope["headers"], *headers]
    start, reply = _call(app, scope, parts)
    assert start["status"] == status
    logger.remove()
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    refused = [e for e in events if e.get("event") == "worker.refused"]
    assert len(refused) == 1 and refused[0]["level"] == "WARN"
    assert refused[0]["outcome"] == "invalid" and refused[0]["status"] == status
    assert refused[0]["error"] == orjson.loads(reply["body"])["error"]["message"]


def test_a_worker_takes_ids_as_long_as_its_max_client_id_length() -> None:
    # A legacy-policy frontend with RIDTRACE_MAX_CLIENT_ID_LENGTH=200 sends the client's
    # 150-character id as request_id: the worker held it to 128 and every such request
    # was a 502 'worker rejected the request'.
    longer = create_worker_app(
        WorkerSettings(), tracing=TracingSettings(max_client_id_length=200, log_lifecycle=False))
    start, _ = _call(longer, _scope(), [_envelope_with(request_id="r" * 150)])
    assert start["status"] == 200
    start, _ = _call(longer, _scope(), [_envelope_with(request_id="r" * 201)])
    assert start["status"] == 400
    # A smaller setting never refuses what the frontend's fixed rules let through.
    shorter = create_worker_app(
        WorkerSettings(), tracing=TracingSettings(max_client_id_length=16, log_lifecycle=False))
    start, _ = _call(shorter, _scope(), [_envelope_with(session_id="s" * 128)])
    assert start["status"] == 200


def test_a_worker_logs_the_client_id_as_long_as_its_max_client_id_length(
    tmp_path: Path,
) -> None:
    # A safe-policy frontend with RIDTRACE_MAX_CLIENT_ID_LENGTH=200 keeps a client's
    # 150-character x-request-id and sends it on: the worker checked it against 128
    # and wrote its lines without x_request_id, which every line of a request carries.
    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    app = create_worker_app(WorkerSettings(), tracing=TracingSettings(max_client_id_length=200))
    start, _ = _call(app, _scope(), [_envelope_with(x_request_id="c" * 150)])
    assert start["status"] == 200
    logger.remove()
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    work = [x for x in lines if x.get("event") in ("worker.start", "worker.end")]
    assert len(work) == 2 and {x.get("x_request_id") for x in work} == {"c" * 150}


@pytest.mark.parametrize(("sent", "reason"), [
    ("a\u0001b", "not_printable_ascii"), ("c" * 300, "too_long"), ("   ", "empty"),
])
def test_a_bad_client_id_in_an_envelope_is_dropped_and_said_so(
    tmp_path: Path, sent: str, reason: str
) -> None:
    # Only a direct caller of /v1/work sends one (the frontend sends the id it checked):
    # the work was served and its lines had no x_request_id, with nothing saying why.
    # As the middleware does with a bad header: served, the id dropped, flagged and
    # counted by its reason (spaces alone are no id: echoed and logged as sent, they
    # were an id no frontend would log).
    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    reader = InMemoryMetricReader()
    metrics.bind_meter_provider(MeterProvider(metric_readers=[reader]))
    try:
        app = create_worker_app(WorkerSettings())
        start, _ = _call(app, _scope(), [_envelope_with(x_request_id=sent)])
        good, _ = _call(app, _scope(), [_envelope_with(request_id="other-1")])
        rejected = _counts(reader, "ridtrace.client_id_rejected", "reason")
    finally:
        metrics.bind_meter_provider(None)
    logger.remove()
    assert (start["status"], good["status"]) == (200, 200)
    assert b"x-request-id" not in b"".join(name for name, _ in start["headers"])
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    [started, clean] = [x for x in lines if x.get("event") == "worker.start"]
    assert "x_request_id" not in started and started["x_request_id_rejected"] is True
    assert clean["x_request_id"] == "client-1" and "x_request_id_rejected" not in clean
    assert rejected == {reason: 1}


def test_the_spaces_around_an_envelopes_client_id_are_not_part_of_it(tmp_path: Path) -> None:
    # As the middleware reads a header: the worker echoed and logged "  abc  ", and an
    # id of the full length with blanks around it was refused as too long.
    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    app = create_worker_app(WorkerSettings())
    start, _ = _call(app, _scope(), [_envelope_with(x_request_id="  abc  ")])
    full, _ = _call(app, _scope(), [_envelope_with(request_id="r-2",
                                                   x_request_id=" " + "a" * 128 + "\t")])
    logger.remove()
    assert (b"x-request-id", b"abc") in [tuple(h) for h in start["headers"]]
    assert (b"x-request-id", b"a" * 128) in [tuple(h) for h in full["headers"]]
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    work = [x for x in lines if x.get("event") in ("worker.start", "worker.end")]
    assert [x.get("x_request_id") for x in work] == ["abc", "abc", "a" * 128, "a" * 128]
    assert not any("x_request_id_rejected" in x for x in work)


def _counts(reader: InMemoryMetricReader, name: str, key: str) -> dict[str, float]:
    """The points of one instrument, by the value of attribute `key`."""
    data = reader.get_metrics_data()
    assert data is not None
    return {str(point.attributes[key]): point.value
            for resource in data.resource_metrics for scope in resource.scope_metrics
            for metric in scope.metrics if metric.name == name
            for point in metric.data.data_points if point.value}  # type: ignore[union-attr]


def test_a_ready_reply_to_a_json_envelope_is_the_json_document() -> None:
    # The whole-reply path (no pacing) and the paced one must both follow json_schema.
    app = create_worker_app(WorkerSettings())
    for fields, text, finish in (
        ({"json_schema": {}}, '{"reply": "echo: one two three"}', "stop"),
        ({"json_schema": {}, "stop": ["three"]}, '{"reply": "echo: one two ', "stop"),
        ({"json_schema": {"properties": {"n": {"type": "integer"}}}}, '{"n": 0}', "stop"),
    ):
        start, reply = _call(app, _scope(), [_envelope_with(**fields)])
        lines = [orjson.loads(line) for line in reply["body"].splitlines()]
        assert start["status"] == 200
        assert "".join(line.get("text", "") for line in lines) == text, fields
        assert lines[-1]["finish_reason"] == finish
        assert lines[-1].get("stop_sequence") == (fields.get("stop") or [None])[0]


def test_a_reply_that_fails_to_be_made_holds_no_id(monkeypatch: pytest.MonkeyPatch) -> None:
    # The id was registered before the reply's tokens were made, outside the block that
    # frees it: had making them raised, the id would have stayed held for good (409s).
    from ridtrace.frontend_plugin import work_endpoint

    def broken(*args: Any) -> Any:
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(work_endpoint, "echo_tokens", broken)
    app = create_worker_app(WorkerSettings(debug_endpoints=True))
    with pytest.raises(RuntimeError, match="the engine broke"):
        _call(app, _scope(), [_envelope("rid-broken")])

    async def counters() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            response = await client.get("/debug/inflight")
            return dict(response.json())

    held = asyncio.run(counters())
    assert (held["registered"], held["released"], held["inflight"]) == (1, 1, 0)


def test_an_engine_failure_is_a_worker_error_event_with_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The line goes through loguru for its traceback; an application's `event` field
    # is written `_event` there, and ridtrace's own worker.error line was too.
    from ridtrace.frontend_plugin.engine import EchoEngine

    async def failing(self: EchoEngine, *args: Any) -> Any:
        yield ["echo:"]
        raise RuntimeError("GPU fell off the bus")

    monkeypatch.setattr(EchoEngine, "batches", failing)
    monkeypatch.setattr(EchoEngine, "ready_now", lambda self: False)  # the paced reply
    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    sent = _call(create_worker_app(WorkerSettings()), _scope(), [_envelope("rid-e")])
    assert b"engine error: GPU fell off the bus" in b"".join(m.get("body", b"") for m in sent)
    logger.remove()
    (error,) = [e for e in map(orjson.loads, log.read_bytes().splitlines())
                if e.get("level") == "ERROR"]
    assert (error["event"], error["request_id"]) == ("worker.error", "rid-e")
    assert error["exception"] == "RuntimeError: GPU fell off the bus" and "_event" not in error


def test_a_deprecated_id_header_sent_to_a_worker_is_named_on_its_work_line(tmp_path: Path) -> None:
    # A worker writes no request.start (its middleware's lifecycle lines are off): a
    # /v1/work call with `request-id` left only the once-per-process WARN, under another
    # id, and `audit` counted no request.
    from tests.support.inprocess_cli import run_in_process

    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    scope = _scope()
    scope["headers"] = [*scope["headers"], (b"request-id", b"old-style")]
    # From an instrumented client: its traceparent names a span no log given holds.
    traced = _scope()
    traced["headers"] = [*scope["headers"], (
        b"traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
    app = create_worker_app(WorkerSettings())
    for n, call_scope in enumerate((scope, traced)):
        _call(app, call_scope, [_envelope(f"rid-d{n}")])
    _call(app, scope, [b'{"nope": 1}'])  # refused as malformed: still a use
    logger.remove()
    lines = [e for e in map(orjson.loads, log.read_bytes().splitlines())
             if e.get("event") in ("worker.start", "worker.refused")]
    assert [e.get("deprecated_headers") for e in lines] == ["request-id"] * 3
    code, out, _ = run_in_process(["audit", str(log), "--format", "json"])
    rows = [(row["header"], row["requests"]) for row in orjson.loads(out)["rows"]]
    assert (code, rows) == (0, [("request-id", 3)])


def test_a_deprecated_id_header_on_a_worker_call_refused_for_its_token_or_host_is_named(
    tmp_path: Path,
) -> None:
    # A worker refusing a call for its token (401) or its Host (421) wrote worker.refused
    # without the headers the call sent, its only line: `audit` counted such uses only
    # when one happened to be the process's first (its once-per-process WARN).
    from ridtrace.frontend_plugin.host_check import host_checked
    from ridtrace.frontend_plugin.worker import log_host_refused
    from tests.support.inprocess_cli import run_in_process

    log = tmp_path / "worker.jsonl"
    configure_logging(log, service="worker", intercept_stdlib=False)
    app = host_checked(create_worker_app(WorkerSettings(worker_token="tok")),
                       frozenset({"127.0.0.1"}), on_refused=log_host_refused)
    old_style = (b"x-dynamo-request-id", b"old-style")
    token = (b"authorization", b"Bearer tok")
    calls = {"no token": [old_style], "no token again": [old_style],
             "other host": [old_style, token, (b"host", b"evil.example")],
             "served": [old_style, token, (b"host", b"127.0.0.1:8000")]}
    for n, headers in enumerate(calls.values()):
        scope = _scope()
        scope["headers"] = [*scope["headers"], *headers]
        _call(app, scope, [_envelope(f"rid-t{n}")])
    logger.remove()
    lines = [e for e in map(orjson.loads, log.read_bytes().splitlines())
             if e.get("event") in ("worker.start", "worker.refused")]
    assert [(e["event"], e.get("status"), e.get("deprecated_headers")) for e in lines] == [
        ("worker.refused", 401, "x-dynamo-request-id"),
        ("worker.refused", 401, "x-dynamo-request-id"),
        ("worker.refused", 421, "x-dynamo-request-id"),
        ("worker.start", None, "x-dynamo-request-id"),
    ]
    code, out, _ = run_in_process(["audit", str(log), "--format", "json"])
    rows = [(row["header"], row["requests"]) for row in orjson.loads(out)["rows"]]
    assert (code, rows) == (0, [("x-dynamo-request-id", 4)])
