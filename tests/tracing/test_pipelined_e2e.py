"""HTTP/1.1 pipelining under a real uvicorn: each queued request is a request of its own.

uvicorn starts a queued request's task from inside the previous request's last
``send`` (unless ``--reset-contextvars``), so the new task inherits that request's
context: ridtrace's ids and the OpenTelemetry span it made current.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.servers import RunningServer
from tests.tracing.conftest import wait_for_lines


def _pipelined(port: int, paths: list[str]) -> list[tuple[int, dict[str, str], bytes]]:
    """Send every request in one write on one connection (the i-th with x-request-id
    ``piped-i``); each response's status, headers and body, in order."""
    request = b"".join(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: piped-{index}\r\n"
        f"{'Connection: close' + chr(13) + chr(10) if index == len(paths) - 1 else ''}"
        "\r\n".encode()
        for index, path in enumerate(paths)
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    responses = []
    for response in received.split(b"HTTP/1.1 ")[1:]:
        head, _, body = response.partition(b"\r\n\r\n")
        status, *fields = head.decode().split("\r\n")
        headers = dict(field.lower().split(": ", 1) for field in fields)
        responses.append((int(status.split()[0]), headers, body))
    return responses


def _spans_of(receiver: OtlpReceiver, ids: list[str]) -> dict[str, ReceivedSpan]:
    """The spans naming these request ids, once each has one (or after 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        spans = {s.attributes.get("request_id"): s for s in list(receiver.spans)}
        if all(request_id in spans for request_id in ids) or time.monotonic() > deadline:
            return {x: span for x, span in spans.items() if x in ids}
        time.sleep(0.05)


def test_pipelined_requests_each_get_a_span_and_a_trace_of_their_own(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    # The second and third requests enriched the first one's span (it was still
    # recording: its background task ran), overwriting its request_id, and had no span
    # of their own; without a background task each was its predecessor's child. Their
    # log lines carried the first request's span id, the per-request key.
    running, log_path = server
    answers = _pipelined(running.port, ["/after", "/ids", "/ids"])
    bodies = [json.loads(body) for _, _, body in answers]
    ids = [body["request_id"] for body in bodies]
    assert [body["x_request_id"] for body in bodies] == ["piped-0", "piped-1", "piped-2"]
    lines = wait_for_lines(
        log_path,
        lambda got: sum(1 for x in got if x.get("event") == "request.end"
                        and x.get("request_id") in ids) == 3,
    )
    mine = _spans_of(receiver, ids)
    assert set(mine) == set(ids)
    for index, request_id in enumerate(ids):
        span = mine[request_id]
        assert span.attributes["x_request_id"] == f"piped-{index}"
        assert span.parent_span_id == "", "a request nobody called from a trace is a root"
        own_lines = [x for x in lines if x.get("request_id") == request_id]
        assert {(x["trace_id"], x["span_id"]) for x in own_lines} == {
            (span.trace_id, span.span_id)
        }
        assert all("parent_span_id" not in x for x in own_lines)
    assert len({s.trace_id for s in mine.values()}) == 3


def test_the_servers_crash_line_for_a_pipelined_request_carries_its_own_ids(
    server: tuple[RunningServer, Path],
) -> None:
    # uvicorn logs "Exception in ASGI application" after the middleware has left the
    # request, in a task that inherited the previous request's context: the crash line
    # named the previous request (piped-0), so the crash was joined to the wrong one.
    running, log_path = server
    (_, _, first), (status, headers, _) = _pipelined(running.port, ["/after", "/boom"])
    crashed = headers["x-server-request-id"]
    assert status == 500 and json.loads(first)["request_id"] != crashed

    def crash_lines(got: list[dict[str, str]]) -> list[dict[str, str]]:
        # This module's server crashes for this test only.
        return [x for x in got if x.get("logger") == "uvicorn.error"
                and x.get("exception") == "RuntimeError: boom"]

    lines = wait_for_lines(log_path, lambda got: bool(crash_lines(got)))
    (crash,) = crash_lines(lines)
    end = next(x for x in lines if x.get("event") == "request.end" and x["request_id"] == crashed)
    assert (crash["request_id"], crash["x_request_id"]) == (crashed, "piped-1")
    assert (crash["trace_id"], crash["span_id"]) == (end["trace_id"], end["span_id"])
