"""The middleware behind a real uvicorn server, with real spans sent over OTLP/HTTP."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.servers import RunningServer, child_pythonpath, free_port, run_server
from tests.tracing.conftest import app_server, read_lines, wait_for_lines

SHARED_CLIENT_ID = "rollout-42-s7"


def _ended(request_id: str) -> Callable[[list[dict[str, Any]]], bool]:
    """The log holds this request's ``request.end`` line."""
    return lambda lines: any(
        x.get("event") == "request.end" and x.get("request_id") == request_id for x in lines
    )


def _lines_of(lines: list[dict[str, Any]], request_id: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("request_id") == request_id]


def test_concurrent_requests_sharing_a_client_id_get_distinct_ids_everywhere(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    running, log_path = server
    count = 200

    async def send_all() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=count)
        async with httpx.AsyncClient(base_url=running.url, limits=limits, timeout=30) as client:
            return await asyncio.gather(
                *(
                    client.get("/ids", headers={"x-request-id": SHARED_CLIENT_ID})
                    for _ in range(count)
                )
            )

    responses = asyncio.run(send_all())
    ids = []
    for response in responses:
        assert response.status_code == 200
        body = response.json()
        assert body["x_request_id"] == SHARED_CLIENT_ID
        assert response.headers["x-server-request-id"] == body["request_id"]
        assert response.headers.get_list("x-request-id") == [SHARED_CLIENT_ID]
        uuid.UUID(body["request_id"])
        ids.append(body["request_id"])
    assert len(set(ids)) == count

    lines = wait_for_lines(
        log_path,
        lambda ls: (
            sum(
                1 for x in ls if x.get("event") == "request.end" and x.get("request_id") in set(ids)
            )
            == count
        ),
    )
    for request_id in ids:
        mine = _lines_of(lines, request_id)
        kinds = [line.get("event") or line["message"] for line in mine]
        assert kinds == [
            "request.start",
            "handler ran",
            "stdlib line inside the request",
            "request.end",
        ]
        assert {line["x_request_id"] for line in mine} == {SHARED_CLIENT_ID}
        assert len({(line["trace_id"], line["span_id"]) for line in mine}) == 1
        assert mine[-1]["outcome"] == "ok" and mine[-1]["status"] == 200
    assert len({_lines_of(lines, rid)[0]["span_id"] for rid in ids}) == count

    spans = receiver.wait_for(count)
    by_request: dict[str, list[Any]] = defaultdict(list)
    for span in spans:
        if span.attributes.get("request_id") in set(ids):
            by_request[span.attributes["request_id"]].append(span)
    assert set(by_request) == set(ids)
    for request_id, request_spans in by_request.items():
        assert len(request_spans) == 1, "exactly one server span per request"
        span = request_spans[0]
        assert span.name == "http-request"
        assert span.attributes["x_request_id"] == SHARED_CLIENT_ID
        assert span.attributes["http.route"] == "/ids"
        assert span.attributes["http.response.status_code"] == 200
        assert span.service_name == "app-under-test"
        logged = _lines_of(lines, request_id)[0]
        assert (span.trace_id, span.span_id) == (logged["trace_id"], logged["span_id"])


def test_traceparent_continues_the_callers_trace(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    running, log_path = server
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    response = httpx.get(
        running.url + "/ids", headers={"traceparent": f"00-{trace_id}-{parent}-01"}
    )
    request_id = response.json()["request_id"]
    lines = wait_for_lines(log_path, _ended(request_id))
    start = _lines_of(lines, request_id)[0]
    assert start["trace_id"] == trace_id and start["parent_span_id"] == parent
    deadline_spans = receiver.wait_for(1)
    while not any(s.attributes.get("request_id") == request_id for s in deadline_spans):
        deadline_spans = receiver.wait_for(len(deadline_spans) + 1)
    span = next(s for s in deadline_spans if s.attributes.get("request_id") == request_id)
    assert span.trace_id == trace_id and span.parent_span_id == parent


def test_repeated_trace_headers_are_combined_as_http_says(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    # RFC 9110 5.3: a field sent twice is its values joined with commas. Two
    # traceparents are then no valid one, and the W3C test suite expects a new trace
    # (test_traceparent_duplicated); the first one was taken, while grpc.aio took the
    # other. A tracestate sent in two lines is one list (W3C
    # test_tracestate_multiple_headers_different_keys); the second line was dropped.
    running, log_path = server
    callers = ["12345678901234567890123456789011", "12345678901234567890123456789012"]
    twice = [("traceparent", f"00-{trace}-1234567890123456-01") for trace in callers]
    split = [("traceparent", f"00-{callers[0]}-1234567890123456-01"),
             ("tracestate", "foo=1"), ("tracestate", "bar=2")]
    ids = [httpx.get(running.url + "/ids", headers=headers).json()["request_id"]
           for headers in (twice, split)]
    lines = wait_for_lines(log_path, lambda got: all(_ended(x)(got) for x in ids))
    duplicated, combined = (_lines_of(lines, x)[0] for x in ids)
    assert duplicated["trace_id"] not in callers and "parent_span_id" not in duplicated
    assert combined["trace_id"] == callers[0]
    spans = receiver.wait_for(1)
    while not all(any(s.attributes.get("request_id") == x for s in spans) for x in ids):
        spans = receiver.wait_for(len(spans) + 1)
    span = next(s for s in spans if s.attributes.get("request_id") == ids[1])
    assert span.trace_state == "foo=1,bar=2"


def test_streamed_response_keeps_ids_on_lines_logged_mid_stream(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    with httpx.stream(
        "GET", running.url + "/stream?chunks=5&delay=0.01", headers={"x-request-id": "stream-1"}
    ) as response:
        request_id = response.headers["x-server-request-id"]
        body = b"".join(response.iter_bytes())
    assert body.count(request_id.encode()) == 5
    lines = wait_for_lines(log_path, _ended(request_id))
    chunks = [x for x in _lines_of(lines, request_id) if x["message"] == "chunk sent"]
    assert [x["chunk"] for x in chunks] == [0, 1, 2, 3, 4]
    assert all(x["x_request_id"] == "stream-1" for x in chunks)


def test_client_disconnect_mid_stream_ends_with_outcome_cancelled(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    running, log_path = server
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", running.url + "/stream?chunks=1000&delay=0.01") as response,
    ):
        request_id = response.headers["x-server-request-id"]
        next(response.iter_raw())  # one chunk arrived: the stream is live; now walk away
    lines = wait_for_lines(log_path, _ended(request_id))
    end = next(x for x in _lines_of(lines, request_id) if x.get("event") == "request.end")
    assert end["outcome"] == "cancelled"
    assert end["status"] == 200
    # The span says so too: its status went out as a clean 200.
    span = _span_of(receiver, request_id)
    assert span.attributes["outcome"] == "cancelled"
    assert span.attributes["http.response.status_code"] == 200
    assert span.status_code == 0  # OTLP's STATUS_CODE_UNSET
    served = httpx.get(running.url + "/ids").headers["x-server-request-id"]
    assert _span_of(receiver, served).attributes["outcome"] == "ok"


def _span_of(receiver: OtlpReceiver, request_id: str) -> ReceivedSpan:
    spans = receiver.wait_for(1)
    while not any(s.attributes.get("request_id") == request_id for s in spans):
        spans = receiver.wait_for(len(spans) + 1)
    return next(s for s in spans if s.attributes.get("request_id") == request_id)


def test_next_request_on_the_same_connection_never_sees_the_old_client_id(
    server: tuple[RunningServer, Path],
) -> None:
    running, _ = server
    with httpx.Client(base_url=running.url) as client:
        for _ in range(20):
            first = client.get("/ids", headers={"x-request-id": "only-this-one"}).json()
            second = client.get("/ids").json()
            assert first["x_request_id"] == "only-this-one"
            assert second["x_request_id"] is None
            assert second["request_id"] != first["request_id"]


def test_fields_an_app_attaches_to_request_end_keep_its_own_and_stay_flat(
    server: tuple[RunningServer, Path],
) -> None:
    # annotate_request's fields replaced request.end's own: a handler's business
    # request_id stood in for the server's on the line forensics reads, and
    # status="premium" for the HTTP status; objects and arrays were nested.
    running, log_path = server
    client_id = f"annotated-{uuid.uuid4()}"
    response = httpx.get(running.url + "/annotated", headers={"x-request-id": client_id})
    lines = wait_for_lines(log_path, lambda ls: any(
        x.get("event") == "request.end" and x.get("x_request_id") == client_id for x in ls
    ))
    (end,) = [x for x in lines if x.get("event") == "request.end"
              and x.get("x_request_id") == client_id]
    assert (end["request_id"], end["status"]) == (response.headers["x-server-request-id"], 200)
    assert (end["_request_id"], end["_status"]) == ("order-7", "premium")
    assert (end["tags"], end["plan"]) == ('["a","b"]', '{"tier":2}')
    # `message` clashed with the event's own text: a TypeError ended the request with no
    # request.end line and no span.
    assert (end["message"], end["level"]) == ("request.end", "INFO")
    assert (end["_message"], end["_level"], end["_self"]) == ("quota nearly used", "gold", "me")


def test_tasks_spawned_inside_a_request_keep_its_id(server: tuple[RunningServer, Path]) -> None:
    running, _ = server
    body = httpx.get(running.url + "/spawn").json()
    assert body["child"] == body["request_id"]


def test_unhandled_exception_500_still_carries_the_server_id(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    response = httpx.get(running.url + "/boom", headers={"x-request-id": "crash-1"})
    assert response.status_code == 500
    request_id = response.headers["x-server-request-id"]
    assert response.headers["x-request-id"] == "crash-1"
    lines = wait_for_lines(log_path, _ended(request_id))
    end = next(x for x in _lines_of(lines, request_id) if x.get("event") == "request.end")
    assert (end["outcome"], end["status"], end["level"]) == ("error", 500, "WARN")


def test_the_servers_crash_line_for_a_request_carries_its_ids(
    server: tuple[RunningServer, Path],
) -> None:
    # uvicorn logs "Exception in ASGI application" (ERROR, the traceback's only line)
    # after the middleware has left the request's context: without the ids a crash
    # cannot be joined to its request.
    running, log_path = server
    response = httpx.get(running.url + "/boom", headers={"x-request-id": "crash-2"})
    request_id = response.headers["x-server-request-id"]
    lines = wait_for_lines(
        log_path,
        lambda ls: any(
            x.get("logger") == "uvicorn.error" and x.get("level") == "ERROR"
            and x.get("request_id") == request_id for x in ls
        ),
    )
    crash = next(x for x in _lines_of(lines, request_id) if x.get("level") == "ERROR")
    end = next(x for x in _lines_of(lines, request_id) if x.get("event") == "request.end")
    assert crash["x_request_id"] == "crash-2"
    assert (crash["trace_id"], crash["span_id"]) == (end["trace_id"], end["span_id"])
    assert crash["exception"] == "RuntimeError: boom"
    # The traceback is the crash's evidence: it was lost, only "RuntimeError: boom" kept.
    assert crash["traceback"].startswith("Traceback (most recent call last):\n")
    assert "in boom" in crash["traceback"]
    assert crash["traceback"].endswith("RuntimeError: boom\n")


def test_a_crash_whose_str_raises_keeps_its_exception_its_request_end_and_its_span(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    # The span's record_exception takes str() of the crash: raising in the middleware's
    # finally, that RuntimeError replaced the app's exception (the server logged it, not
    # the crash) and skipped the rest: no request.end, the span never ended.
    running, log_path = server
    response = httpx.get(running.url + "/boom-unprintable", headers={"x-request-id": "crash-3"})
    assert response.status_code == 500
    request_id = response.headers["x-server-request-id"]
    lines = wait_for_lines(
        log_path,
        lambda ls: sum(
            x.get("request_id") == request_id
            and (x.get("event") == "request.end" or x.get("logger") == "uvicorn.error")
            for x in ls
        ) == 2,
    )
    crash = next(x for x in _lines_of(lines, request_id) if x.get("logger") == "uvicorn.error")
    assert crash["x_request_id"] == "crash-3"
    assert crash["exception"] == "UnprintableError: <exception str() failed>"
    assert "in boom_unprintable" in crash["traceback"]
    end = next(x for x in _lines_of(lines, request_id) if x.get("event") == "request.end")
    assert (end["outcome"], end["status"]) == ("error", 500)
    spans = receiver.wait_until(
        lambda got: any(s.attributes.get("request_id") == request_id for s in got)
    )
    span = next(s for s in spans if s.attributes.get("request_id") == request_id)
    assert span.attributes["error.type"] == "UnprintableError"
    assert span.span_id == end["span_id"]


def _raw_request(port: int, header_lines: list[bytes]) -> bytes:
    request = b"GET /ids HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    request += b"".join(line + b"\r\n" for line in header_lines) + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "header_lines",
    [
        [b"x-request-id: " + b"A" * 8000],
        [b"x-request-id: caf\xc3\xa9-\xff\xfe"],
        [b'x-request-id: "}{"level":"ERROR","request_id":"forged'],
        [b"x-request-id: id-%d" % i for i in range(100)],
    ],
    ids=["oversized", "non-utf8", "json-shaped", "100-repeats"],
)
def test_hostile_client_ids_over_the_wire_are_answered_and_never_break_the_log(
    server: tuple[RunningServer, Path], header_lines: list[bytes]
) -> None:
    running, log_path = server
    raw = _raw_request(running.port, header_lines)
    head, _, _ = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    request_id = next(
        line.split(b":", 1)[1].strip().decode()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"x-server-request-id:")
    )
    lines = wait_for_lines(log_path, _ended(request_id))
    mine = _lines_of(lines, request_id)
    start = mine[0]
    if header_lines[0].endswith(b"id-0"):
        assert start["x_request_id"] == "id-0", "the first valid repeated header wins"
    elif b"forged" in header_lines[0]:
        # Printable ASCII is accepted, but only ever as an escaped JSON string value.
        assert start["x_request_id"].startswith('"}{"level"')
        assert all(x["level"] != "ERROR" for x in mine)
    else:
        assert "x_request_id" not in start and start["x_request_id_rejected"] is True
    read_lines(log_path)  # still exactly one JSON object per line


def test_deprecated_headers_warn_once_per_name_and_every_request_records_them(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    sent = []
    with httpx.Client(base_url=running.url) as client:
        for index in range(30):
            headers = {"x-dynamo-request-id": f"dyn-{index}"}
            if index % 2:
                headers["request-id"] = f"old-{index}"
            body = client.get("/ids", headers=headers).json()
            assert body["request_id"] not in (
                headers.get("request-id"),
                headers["x-dynamo-request-id"],
            )
            sent.append((body["request_id"], index % 2 == 1))
    lines = wait_for_lines(
        log_path,
        lambda ls: (
            sum(1 for x in ls if x.get("event") == "request.end" and x.get("deprecated_headers"))
            >= 30
        ),
    )
    warns = [x for x in lines if x.get("event") == "deprecated_header"]
    assert sorted(x["header"] for x in warns) == ["request-id", "x-dynamo-request-id"]
    assert all(x["level"] == "WARN" for x in warns)
    # Written inside the request that sent the header first: the WARN joins to it.
    for warn in warns:
        (start,) = [x for x in _lines_of(lines, warn["request_id"]) if x.get("event") == "request.start"]
        assert warn["header"] in start["deprecated_headers"].split(",")
        assert warn["trace_id"] == start["trace_id"]
    for request_id, both in sent:
        start = next(x for x in _lines_of(lines, request_id) if x.get("event") == "request.start")
        expected = "x-dynamo-request-id,request-id" if both else "x-dynamo-request-id"
        assert start["deprecated_headers"] == expected


_SCRIPT_APP = '''
import sys

import uvicorn
from fastapi import FastAPI

from ridtrace import RequestTracingMiddleware, configure_logging, telemetry_lifespan

configure_logging(sys.argv[2], service="script")
app = FastAPI(lifespan=telemetry_lifespan)
app.add_middleware(RequestTracingMiddleware)


@app.get("/")
async def root() -> dict[str, str]:
    return {}

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_config=None)
'''


def test_uvicorn_run_with_the_app_object_logs_uvicorns_lines_as_the_docs_say(
    tmp_path: Path,
) -> None:
    # docs/tracing.md: uvicorn.run(app) builds uvicorn's logging after configure_logging
    # ran; with log_config=None its lines (the access line with the ids) are JSON too.
    script = tmp_path / "my_api.py"
    script.write_text(_SCRIPT_APP)
    log_path = tmp_path / "script.jsonl"
    port = free_port()
    env = {"PYTHONPATH": child_pythonpath()}
    with run_server([str(script), str(port), str(log_path)], port=port, workdir=tmp_path,
                    env=env) as running:  # fmt: skip
        request_id = httpx.get(running.url + "/").headers["x-server-request-id"]
        lines = wait_for_lines(
            log_path,
            lambda ls: any(
                x.get("logger") == "uvicorn.access" and x.get("request_id") == request_id
                for x in ls
            ),
        )
    assert any(x.get("logger") == "uvicorn.error" for x in lines)  # startup lines too


def test_an_invented_method_reaches_lines_and_spans_capped(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    # uvicorn's h11 protocol (and hypercorn) take any token as a method, up to the size
    # of a request head: a 15 000-letter one went whole onto request.start,
    # request.end and the span, where the path, also the client's, is capped.
    log_path = tmp_path / "app.jsonl"
    method = "PROPFIND" * 1875
    with app_server(tmp_path, receiver, "--http", "h11") as running:
        response = httpx.request(method, running.url + "/ids")
        assert response.status_code == 405
        request_id = response.headers["x-server-request-id"]
        lines = wait_for_lines(log_path, _ended(request_id))
        assert httpx.get(running.url + "/ids").status_code == 200  # still serving
    shown = {line["method"] for line in _lines_of(lines, request_id)}
    assert shown == {"PROPFIND" * 4 + "...[15000 chars]"}
    spans = receiver.wait_for(1)
    while not any(s.attributes.get("request_id") == request_id for s in spans):
        spans = receiver.wait_for(len(spans) + 1)
    span = next(s for s in spans if s.attributes.get("request_id") == request_id)
    # And the span names it as the HTTP conventions name a method they do not know:
    # span-metrics group by http.request.method, where every invented one was a series.
    assert span.attributes["http.request.method"] == "_OTHER"
    assert span.attributes["http.request.method_original"] in shown


def test_a_forwarded_client_address_reaches_the_log_capped_and_escaped(
    server: tuple[RunningServer, Path],
) -> None:
    # uvicorn believes X-Forwarded-For from 127.0.0.1 by default (a proxy on the same
    # host), so `client` is what such a caller writes there: 30 000 characters went
    # onto request.start whole, and a C1 control (0x9b, a terminal's CSI) raw.
    running, log_path = server
    request_ids = []
    for value in (b"A" * 30000, b"10.0.0.1\x9b31m", b"10.1.2.3"):
        answer = _raw_request(running.port, [b"x-forwarded-for: " + value])
        request_ids.append(next(
            line.split(b":", 1)[1].strip().decode()
            for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
            if line.lower().startswith(b"x-server-request-id:")
        ))
    lines = wait_for_lines(log_path, lambda got: all(_ended(x)(got) for x in request_ids))
    shown = [_lines_of(lines, x)[0]["client"] for x in request_ids]
    assert shown == ["A" * 64 + "...[30002 chars]", "10.0.0.1\\x9b31m:0", "10.1.2.3:0"]


def test_a_baggage_header_of_many_bad_entries_is_one_warning_with_the_requests_ids(
    server: tuple[RunningServer, Path],
) -> None:
    # OpenTelemetry's baggage propagator warns once per entry it drops, and entries
    # that are not ASCII do not count towards its 180: this 5.4 KB header wrote 2700
    # WARN lines per request, none of them naming the request.
    running, log_path = server
    answer = _raw_request(running.port, [b"baggage: " + b",".join([b"\x80"] * 2700)])
    request_id = next(
        line.split(b":", 1)[1].strip().decode()
        for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
        if line.lower().startswith(b"x-server-request-id:")
    )
    lines = wait_for_lines(log_path, _ended(request_id))
    warned = [x for x in lines if x["logger"] == "opentelemetry.baggage.propagation"]
    assert len(warned) == 1
    assert warned[0]["request_id"] == request_id
    assert warned[0]["message"] == (
        "Baggage entry with key `\\x80` contains non-ASCII characters (and 2699 more "
        "warnings about this request's trace headers, not written)"
    )


@pytest.mark.parametrize(("http", "path"), [
    ("httptools", "/upload"), ("h11", "/upload"), ("httptools", "/typed-upload"),
])
def test_a_client_leaving_mid_upload_is_cancelled_not_a_server_error(
    tmp_path: Path, receiver: OtlpReceiver, http: str, path: str
) -> None:
    """The route reads its body, the client hangs up halfway: Starlette raises
    ClientDisconnect out of the route. The middleware answered that with a 500 nobody
    could receive, and request.end said status 500, outcome ``error`` (a WARN, an error
    span, a count in the error rate) for every caller who gave up mid-upload. A FastAPI
    route with a typed body answers the cut-short body itself with a 400, to nobody:
    that was status 400, outcome ``ok``."""
    log_path = tmp_path / "app.jsonl"
    with app_server(tmp_path, receiver, "--http", http) as running:
        with socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock:
            sock.sendall(b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                         b"x-request-id: gone-mid-upload\r\ncontent-length: 4096\r\n"
                         b"content-type: application/json\r\n\r\n"
                         b'{"half": "of it' % path.encode())
            wait_for_lines(log_path, lambda lines: any(
                x.get("event") == "request.start" and x.get("x_request_id") == "gone-mid-upload"
                for x in lines))
        lines = wait_for_lines(log_path, lambda lines: any(
            x.get("event") == "request.end" and x.get("x_request_id") == "gone-mid-upload"
            for x in lines))
        assert httpx.post(running.url + "/upload", content=b"whole").json() == {"bytes": 5}
    (end,) = [x for x in lines if x.get("event") == "request.end"
              and x.get("x_request_id") == "gone-mid-upload"]
    assert (end["status"], end["outcome"], end["level"]) == (0, "cancelled", "INFO"), end
    spans = receiver.wait_for(1)
    while not any(s.attributes.get("request_id") == end["request_id"] for s in spans):
        spans = receiver.wait_for(len(spans) + 1)
    (span,) = [s for s in spans if s.attributes.get("request_id") == end["request_id"]]
    assert span.status_code != 2  # STATUS_CODE_ERROR
    assert "http.response.status_code" not in span.attributes


def test_the_span_carries_the_client_address_and_user_agent_as_the_log_does(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver,
) -> None:
    # The HTTP conventions recommend client.address and user_agent.original on a server
    # span; request.start had them (the forwarded address, as FORWARDED_ALLOW_IPS
    # decides) and ridtrace's own span had neither.
    running, log_path = server
    answer = httpx.get(running.url + "/ids", headers={
        "x-forwarded-for": "203.0.113.9", "user-agent": "qa-agent/1"})
    request_id = answer.headers["x-server-request-id"]
    (start, *_) = _lines_of(wait_for_lines(log_path, _ended(request_id)), request_id)
    assert (start["client"], start["user_agent"]) == ("203.0.113.9:0", "qa-agent/1")
    spans = receiver.wait_for(1)
    while not any(s.attributes.get("request_id") == request_id for s in spans):
        spans = receiver.wait_for(len(spans) + 1)
    span = next(s for s in spans if s.attributes.get("request_id") == request_id)
    assert span.attributes["client.address"] == "203.0.113.9"
    assert span.attributes["user_agent.original"] == "qa-agent/1"
