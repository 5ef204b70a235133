"""A request that offers an upgrade the server does not take (h2c) is served as HTTP/1.1.

Every JDK ``HttpClient`` (its default version is HTTP/2), Ktor/JetBrains clients and
``curl --http2`` offer ``Upgrade: h2c`` on cleartext requests. A server may ignore the
offer and answer as if it had not been made (RFC 9110 §7.8). uvicorn's httptools
protocol stopped reading at the end of the headers instead: the request reached the
app with an empty body (400 "invalid JSON body" for every such client) or, when the
body came in a later packet, a 400 "Invalid HTTP request received." (uvicorn issue
#2722, httptools issue #124).
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from tests.frontend_plugin.conftest import Stack

_OFFER = (b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
          b"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n")


def _exchange(stack: Stack, parts: list[bytes]) -> bytes:
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=30) as sock:
        for part in parts:
            sock.sendall(part)
            time.sleep(0.05)  # separate packets, as Java's and Ktor's clients write them
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _body(text: str, stream: bool = False) -> bytes:
    return json.dumps({"model": "echo", "stream": stream,
                       "messages": [{"role": "user", "content": text}]}).encode()


@pytest.mark.parametrize("split", [False, True])
def test_a_post_offering_h2c_gets_its_body_read(stack: Stack, split: bool) -> None:
    body = _body("java says hello")
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + _OFFER
            + b"Content-Type: application/json\r\nx-request-id: h2c-1\r\n"
            + b"Content-Length: %d\r\n\r\n" % len(body))
    parts = [head, body[:10], body[10:]] if split else [head + body]
    data = _exchange(stack, parts)
    headers, _, payload = data.partition(b"\r\n\r\n")
    assert headers.startswith(b"HTTP/1.1 200 "), data[:300]
    assert b"x-request-id: h2c-1" in headers and b"connection: close" in headers.lower()
    assert json.loads(payload)["choices"][0]["message"]["content"] == "echo: user: java says hello"


def test_a_chunked_streaming_post_offering_h2c_is_served(stack: Stack) -> None:
    body = _body("chunked upgrade offer", stream=True)
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + _OFFER
            + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunks = [b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:7], body[7:])] + [b"0\r\n\r\n"]
    data = _exchange(stack, [head, *chunks])
    assert data.startswith(b"HTTP/1.1 200 "), data[:300]
    assert b"data: [DONE]" in data and b'"content":" upgrade"' in data


@pytest.mark.parametrize("split", [False, True])
def test_chunk_extensions_past_the_cap_are_refused_after_an_ignored_offer(
    stack: Stack, split: bool
) -> None:
    # The end of a body read after an ignored offer was never checked: 140 KB of
    # extensions in the read that ended it were served.
    body = _body("too much framing")
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + _OFFER
            + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    framed = b"%x;%s\r\n%s\r\n0\r\n\r\n" % (len(body), b"e" * 140_000, body)
    data = _exchange(stack, [head, framed] if split else [head + framed])
    assert data.startswith(b"HTTP/1.1 400 "), data[:300]
    assert b"chunk sizes and extensions took" in data


def test_a_get_offering_h2c_and_a_broken_body_after_one(stack: Stack) -> None:
    health = _exchange(stack, [b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + _OFFER + b"\r\n"])
    assert health.startswith(b"HTTP/1.1 200 ") and b'"status":"ok"' in health
    broken = _exchange(stack, [
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + _OFFER
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"zz\r\nnot a chunk\r\n"])
    assert broken.startswith(b"HTTP/1.1 400 "), broken[:200]
    assert stack.inflight()["inflight"] == 0
