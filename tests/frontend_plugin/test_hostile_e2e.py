"""Hostile bodies get a 4xx JSON error naming the problem; nothing is registered."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack

CASES = [
    ("/v1/chat/completions", b"[1, 2, 3]", 400, "JSON object"),
    ("/v1/chat/completions", b'{"messages": "hi"}', 400, "messages"),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1e12}',
     400, "max_tokens"),
    ("/v1/completions", b'{"prompt": "x", "max_tokens": 99999999999}', 400, "max_tokens"),
    ("/v1/completions", b'{"prompt": "x"', 400, "invalid JSON"),
    ("/v1/responses", b'{"input": {"nested": true}}', 400, "input"),
    ("/v1/messages", b'{"messages": [{"role": "user", "content": "x"}]}', 400, "max_tokens"),
    ("/inference/v1/generate", b'{"prompt": "x", "request_id": "a\\u0001b"}', 400, "request_id"),
    ("/generate", b'{"text": "x", "rid": "line\\nbreak"}', 400, "rid"),
    ("/generate", b'{"text": "x", "rid": "tab\\u0009"}', 400, "rid"),
    ("/generate", b"\xff\xfe not even utf-8", 400, "invalid JSON"),
]


def test_hostile_bodies(stack: Stack) -> None:
    before = stack.inflight()["registered"]
    with httpx.Client(timeout=30) as client:
        for path, body, status, needle in CASES:
            response = client.post(stack.url + path, content=body,
                                   headers={"content-type": "application/json"})
            assert response.status_code == status, (path, body, response.text)
            error = response.json()["error"]
            assert needle in error["message"], (path, error)
            if path == "/v1/messages":
                assert response.json()["type"] == "error"  # Anthropic's shape
        ok = client.post(stack.url + "/v1/completions", json={"prompt": "still serving"})
        assert ok.status_code == 200 and "still serving" in ok.json()["choices"][0]["text"]
    assert stack.inflight()["registered"] == before + 1


def _chunks(total: int) -> Iterator[bytes]:
    block = b"x" * 65536
    for _ in range(total // len(block)):
        yield block


@pytest.mark.parametrize("chunked", [False, True])
def test_ten_megabyte_bodies_get_413(stack: Stack, chunked: bool) -> None:
    size = 10 * 1024 * 1024
    content: bytes | Iterator[bytes] = _chunks(size) if chunked else b"{" + b" " * size + b"}"
    with httpx.Client(timeout=30) as client:
        response = client.post(stack.url + "/v1/chat/completions", content=content)
        assert response.status_code == 413
        assert "exceeds" in response.json()["error"]["message"]
        assert client.get(stack.url + "/health").json()["status"] == "ok"
