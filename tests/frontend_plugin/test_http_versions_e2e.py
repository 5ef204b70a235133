"""Request lines naming an HTTP version other than 1.0 and 1.1, probed with raw sockets
on a real `ridtrace serve` frontend and worker (no well-behaved client sends them).

llhttp reads ``HTTP/2.0`` and ``HTTP/0.9`` (and a request line with no version at all,
HTTP/0.9's form) as versions it knows: uvicorn served them as HTTP/1.1 answers, the span
said ``network.protocol.version`` 2.0, and without a Host header (which only 1.1 needs)
they passed the Host rule. HTTP/2 has no text request line (its connections open with
the binary preface), and a 0.9 client cannot read a status line and headers.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack


def _exchange(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):  # the server closes after its refusal
            answer += chunk
    return answer


@pytest.mark.parametrize(
    ("head", "version"),
    [
        (b"GET /health HTTP/2.0\r\nhost: 127.0.0.1\r\n\r\n", "2.0"),
        (b"GET /health HTTP/2.0\r\n\r\n", "2.0"),
        (b"GET /health HTTP/0.9\r\n\r\n", "0.9"),
        (b"GET /health\r\n\r\n", "0.9"),
        # HTTP/2 with prior knowledge (curl --http2-prior-knowledge, gRPC clients): the
        # connection preface. llhttp stops there, and its reason went out as the
        # answer: a 400 saying "Pause on PRI/Upgrade".
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00", "2.0"),
    ],
    ids=["2.0", "2.0-no-host", "0.9", "no-version", "h2-preface"],
)
def test_an_http_version_other_than_1x_gets_505_saying_which(
    stack: Stack, head: bytes, version: str
) -> None:
    reason = (f"HTTP/{version} is not served here: send HTTP/1.1 "
              "(RFC 9112, section 2.3)")
    for proc in (stack.frontend, stack.workers[0]):
        answer = _exchange(proc.port, head)
        status, _, body = answer.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 505 HTTP Version Not Supported\r\n"), answer[:200]
        assert b"connection: close" in status
        assert body == reason.encode()
        proc.wait_for_lines(lambda line: line.get("level") == "WARN"
                            and line.get("message") == f"Invalid HTTP request received: {reason}",
                            1)
    assert httpx.get(stack.url + "/health", timeout=10).status_code == 200


@pytest.mark.parametrize("version", [b"1.0", b"1.1"])
def test_http_10_and_11_are_still_served(stack: Stack, version: bytes) -> None:
    answer = _exchange(stack.frontend.port, b"GET /health HTTP/%s\r\nhost: 127.0.0.1\r\n"
                                            b"connection: close\r\n\r\n" % version)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
