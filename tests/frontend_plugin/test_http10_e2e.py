"""HTTP/1.0 clients against a real frontend: streamed answers must not be chunked.

HTTP/1.0 has no chunked transfer coding (RFC 9112 §6.1: a server MUST NOT send
Transfer-Encoding to a request that does not indicate HTTP/1.1). uvicorn's httptools
protocol chunked every answer without a content-length, so a 1.0 client reading a
stream saw the hex chunk sizes in the middle of the SSE events. The body of such an
answer ends when the connection closes (RFC 9112 §6.3), as h11 frames it.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.frontend_plugin.conftest import Stack


def _exchange(stack: Stack, request: bytes) -> tuple[bytes, bytes]:
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):  # the server closes: that ends the body
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.lower(), body


def _post(path: str, body: dict[str, object], version: bytes = b"1.0") -> bytes:
    raw = json.dumps(body).encode()
    return (b"POST %s HTTP/%s\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"x-request-id: old-client\r\nContent-Length: %d\r\n\r\n%s"
            % (path.encode(), version, len(raw), raw))


@pytest.mark.parametrize(("path", "body", "last"), [
    ("/v1/chat/completions", {"model": "echo", "stream": True,
                              "messages": [{"role": "user", "content": "one point oh"}]},
     b"data: [DONE]\n\n"),
    ("/v1/messages", {"model": "echo", "stream": True, "max_tokens": 32,
                      "messages": [{"role": "user", "content": "one point oh"}]},
     b'event: message_stop\ndata: {"type":"message_stop"}\n\n'),
])
def test_a_stream_to_an_http10_client_is_not_chunked(
    stack: Stack, path: str, body: dict[str, object], last: bytes
) -> None:
    head, payload = _exchange(stack, _post(path, body))
    assert head.startswith(b"http/1.1 200 ")
    assert b"transfer-encoding" not in head and b"connection: close" in head
    assert b"x-request-id: old-client" in head
    assert payload.startswith(b"data: {") or payload.startswith(b"event: message_start")
    assert payload.endswith(last)
    text = "".join(json.loads(line[6:])["choices"][0]["delta"].get("content", "")
                   for line in payload.split(b"\n")
                   if line.startswith(b"data: {") and b'"choices":[{' in line)
    assert path != "/v1/chat/completions" or text == "echo: user: one point oh"


def test_http11_streams_stay_chunked_and_1_0_plain_answers_keep_their_length(
    stack: Stack,
) -> None:
    stream = {"model": "echo", "stream": True,
              "messages": [{"role": "user", "content": "eleven"}]}
    head, payload = _exchange(stack, _post("/v1/chat/completions", stream, b"1.1")
                              .replace(b"Host:", b"Connection: close\r\nHost:"))
    assert b"transfer-encoding: chunked" in head and payload.endswith(b"0\r\n\r\n")
    plain = {"model": "echo", "messages": [{"role": "user", "content": "plain"}]}
    head, payload = _exchange(stack, _post("/v1/chat/completions", plain))
    assert b"transfer-encoding" not in head
    assert f"content-length: {len(payload)}".encode() in head
    assert json.loads(payload)["choices"][0]["message"]["content"] == "echo: user: plain"


def test_an_http10_expectation_gets_no_100_continue(stack: Stack) -> None:
    # HTTP/1.0 has no 1xx statuses: a client read "100 Continue" as its final answer.
    plain = {"model": "echo", "messages": [{"role": "user", "content": "expecting"}]}
    request = _post("/v1/chat/completions", plain).replace(
        b"Host:", b"Expect: 100-continue\r\nHost:")
    head, payload = _exchange(stack, request)
    assert head.startswith(b"http/1.1 200 "), head
    assert json.loads(payload)["choices"][0]["message"]["content"] == "echo: user: expecting"
