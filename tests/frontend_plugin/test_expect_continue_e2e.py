"""Requests that wait for ``100 Continue`` and are answered from their headers alone.

RFC 9110 §10.1.1: a client that asked ``Expect: 100-continue`` and gets a final status
first need not send its body; the server then closes the connection (or reads and
drops the body, which never comes).
"""

from __future__ import annotations

import socket

import pytest

from tests.frontend_plugin.conftest import Stack

_NEXT = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"


def _head(path: bytes, *extra: bytes) -> bytes:
    # The body it announces is as long as the next request: read as that body, the next
    # request got no answer at all.
    return (b"POST " + path + b" HTTP/1.1\r\nhost: 127.0.0.1\r\nexpect: 100-continue\r\n"
            + b"".join(extra) + b"content-length: %d\r\n\r\n" % len(_NEXT))


def _answer_then_close(port: int, head: bytes) -> bytes:
    """What the server answers ``head`` with, read until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and b"connection: close" not in answer.lower():
                # Kept open: the client now sends its next request, not the body.
                sock.sendall(_NEXT)
    return answer


@pytest.mark.parametrize(("side", "path", "extra", "status"), [
    ("frontend", b"/v1/completions", b"content-type: text/plain\r\n", 415),
    ("frontend", b"/no-such-route", b"", 404),
    ("frontend", b"/health", b"", 405),
    ("worker", b"/no-such-route", b"", 404),
], ids=["frontend-415", "frontend-404", "frontend-405", "worker-404"])
def test_an_answer_before_100_continue_closes_the_connection(
    stack: Stack, side: str, path: bytes, extra: bytes, status: int
) -> None:
    # The answer kept the connection open, still owing the body the client never sent:
    # the client's next request on it was read as that body and never answered.
    port = stack.frontend.port if side == "frontend" else stack.workers[0].port
    answer = _answer_then_close(port, _head(path, extra))
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
    assert b"100 Continue" not in answer
    headers, _, body = answer.partition(b"\r\n\r\n")
    assert b"\r\nconnection: close\r\n" in headers.lower() + b"\r\n", headers
    assert b"HTTP/1.1" not in body, body  # one answer, then the close
    if side == "frontend":  # a worker logs its work alone (worker.start / worker.end)
        request_id = headers.split(b"x-server-request-id: ", 1)[1].split(b"\r\n", 1)[0]
        end = stack.frontend.wait_for_event(request_id.decode(), "request.end")
        assert end["status"] == status, end


def test_a_body_read_after_100_continue_keeps_the_connection(stack: Stack) -> None:
    body = b'{"prompt": "continued", "max_tokens": 3}'
    head = (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nexpect: 100-continue\r\n"
            b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body))
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=10) as sock:
        sock.sendall(head)
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        answer = b""
        while b"}" not in answer.partition(b"\r\n\r\n")[2]:
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 ") and b"connection: close" not in answer
        sock.sendall(_NEXT)  # the same connection carries the next request
        rest = b""
        while chunk := sock.recv(65536):
            rest += chunk
    assert rest.startswith(b"HTTP/1.1 200 "), rest[:200]


def test_a_worker_refuses_an_envelope_over_its_limit_before_100_continue(stack: Stack) -> None:
    # The frontend answered such a request 413 at once; a worker said 100 Continue and
    # took 100 MB before refusing it (its drain cap is 32 times its 4 MiB limit).
    head = (b"POST /v1/work HTTP/1.1\r\nhost: 127.0.0.1\r\nexpect: 100-continue\r\n"
            b"content-type: application/json\r\ncontent-length: 100000000\r\n\r\n")
    with socket.create_connection(("127.0.0.1", stack.workers[0].port), timeout=10) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"100 Continue" not in answer and b"work envelope too large" in answer
    assert b"\r\nconnection: close\r\n" in answer.lower()
