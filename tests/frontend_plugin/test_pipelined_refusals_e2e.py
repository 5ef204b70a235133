"""Pipelined HTTP/1.1 requests on a real `ridtrace serve frontend`, sent as raw bytes.

A server must answer pipelined requests in the order they came (RFC 9112 section
9.3.2), whatever it thinks of the later ones, and need not read them faster than it
answers them.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack

STREAMED = (b'{"prompt": "one two three four five six seven eight nine ten", '
            b'"max_tokens": 200, "stream": true}')


def _completion(client_id: bytes) -> bytes:
    return (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            b"content-type: application/json\r\nx-request-id: " + client_id + b"\r\n"
            b"content-length: %d\r\n\r\n" % len(STREAMED) + STREAMED)


def _rss_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_flood_of_pipelined_requests_is_read_as_it_is_answered(tmp_path: Path) -> None:
    # uvicorn parsed every request it read and read on after each answer: 1.2 MB of
    # pipelined `GET /health` lines were 30 000 queued requests (~6 KB each) before the
    # first few were answered; 8 MB took 1.2 GB. Now a few dozen wait, the rest unread.
    count = 30_000
    request = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
    with start_stack(tmp_path, workers=[[]]) as stack, \
            socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=60) as sock:
        pid = stack.frontend.process.pid
        before = _rss_kib(pid, "VmHWM")
        answered = 0

        def read_answers() -> None:
            nonlocal answered
            tail = b""  # shorter than the status line: no line is counted twice
            while answered < count and (chunk := sock.recv(1 << 20)):
                answered += (tail + chunk).count(b"HTTP/1.1 200 OK\r\n")
                tail = chunk[-16:]

        reader = threading.Thread(target=read_answers)
        reader.start()
        sock.sendall(request * count)
        reader.join(timeout=120)
        assert answered == count
        grown = _rss_kib(pid, "VmHWM") - before
    assert grown < 60_000, f"the frontend's peak RSS grew by {grown} KiB"


def _until_closed(port: int, sent: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(sent)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize(("refused", "status", "reason"), [
    (b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: " + b"a" * 70_000 + b"\r\n\r\n",
     431, b"request headers exceed 65536 bytes"),
    (b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nhost: other\r\n\r\n",
     400, b"a request needs exactly one Host header, not 2 (RFC 9112, section 3.2)"),
    (b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-a: a\x01b\r\n\r\n",
     400, b"Invalid HTTP request received: Invalid header value char"),
    (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 2\r\n"
     b"content-length: 3\r\n\r\n{}", 400, b"Invalid HTTP request received: Duplicate Content-Length"),
    # Refused in its body, its headers read: queued behind the others, it never runs.
    (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nx-request-id: refused\r\n"
     b"transfer-encoding: chunked\r\n\r\nzz\r\n", 400, b"Invalid HTTP request received: Invalid character in chunk size"),
], ids=["431", "two-hosts", "control-character", "two-lengths", "chunk-size"])
def test_a_refused_request_is_answered_after_the_requests_before_it(
    stack: Stack, refused: bytes, status: int, reason: bytes
) -> None:
    # The refusal of a request the parser (or ridtrace's header guard) turns away was
    # written the moment it was read, ahead of the answers still owed to the requests
    # pipelined before it: their client read the refusal as the first request's answer,
    # that answer was never sent, and the request was cancelled (the connection closed).
    # Now the answers go out in order, the refusal last, then the connection closes.
    answer = _until_closed(stack.frontend.port, _completion(b"piped-first") * 2 + refused)
    first, second, rest = answer.split(b"HTTP/1.1 ", 3)[1:]
    for streamed in (first, second):
        assert streamed.startswith(b"200 OK\r\n"), answer[:300]
        assert b"x-request-id: piped-first\r\n" in streamed
        assert streamed.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"), streamed[-200:]
    assert rest.startswith(b"%d " % status) and rest.endswith(reason), rest[:300]
    assert b"connection: close" in rest.lower()
    ends = stack.frontend.wait_for_lines(
        lambda line: line.get("event") == "request.end"
        and line.get("x_request_id") == "piped-first", 2)
    assert all(end["outcome"] == "ok" and end["status"] == 200 for end in ends[-2:]), ends
    # One more request's end line, written after any line of the refused request: none.
    after = httpx.post(stack.url + "/v1/completions", json={"prompt": "after"},
                       headers={"x-request-id": "after-refusal"}, timeout=30)
    assert after.status_code == 200
    stack.frontend.wait_for_event(after.headers["x-server-request-id"], "request.end")
    # The request refused in its body had its headers read: it is logged as its 400
    # (the test below), once; the others never were requests the app saw.
    logged = [(x.get("event"), x.get("status")) for x in stack.frontend.lines()
              if x.get("x_request_id") == "refused"]
    assert logged == ([("request.start", None), ("request.end", 400)]
                      if b"chunk size" in reason else []), logged
    stack.wait_inflight(lambda snap: snap["inflight"] == 0)


@pytest.mark.parametrize("path", [b"/v1/completions", b"/no-such-route"])
def test_a_request_refused_in_its_body_while_queued_is_logged_with_its_ids(
    stack: Stack, path: bytes
) -> None:
    # Refused in its body while it waited behind an earlier request on the connection,
    # it was dropped from the queue and never ran: its 400 went out with no log line,
    # where DESIGN.md wants every answered request logged with its ids. Now it starts in
    # its turn, its client gone as the refusal goes out, and request.end says the 400.
    client_id = b"queued-refused-" + path.strip(b"/").replace(b"/", b"-")
    refused = (b"POST " + path + b" HTTP/1.1\r\nhost: 127.0.0.1\r\nx-request-id: "
               + client_id + b"\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n")
    answer = _until_closed(stack.frontend.port, _completion(b"piped-before") + refused)
    first, rest = answer.split(b"HTTP/1.1 ", 2)[1:]
    assert first.startswith(b"200 OK\r\n") and b"x-request-id: piped-before\r\n" in first
    reason = b"Invalid HTTP request received: Invalid character in chunk size"
    assert rest.startswith(b"400 ") and rest.endswith(reason), rest[:300]
    end = stack.frontend.wait_for_lines(
        lambda line: line.get("event") == "request.end"
        and line.get("x_request_id") == client_id.decode(), 1)[0]
    assert end["status"] == 400 and end["error"] == reason.decode(), end
    assert end["request_id"] and end["span_id"] and end["trace_id"]
    assert end["bytes_out"] == len(reason)
    stack.wait_inflight(lambda snap: snap["inflight"] == 0)
