"""A paced worker reply writes each token when it exists, through real processes.

Each batch was held until the next one existed (so the last could share a write with
the done line): a caller got the first token one ``--token-delay`` after
``--first-token-delay``, and a worker started with ``--hang-after-tokens N`` delivered
N - 1 tokens before it went silent.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson

from tests.frontend_plugin.conftest import start_stack

CHAT = {"model": "echo", "stream": True,
        "messages": [{"role": "user", "content": "one two three four"}]}


def _deltas(body: bytes) -> list[str]:
    pieces = []
    for line in body.split(b"\n"):
        if line.startswith(b"data: {"):
            event = orjson.loads(line[len(b"data: "):])
            if event.get("choices"):
                pieces.append(event["choices"][0]["delta"].get("content") or "")
    return [piece for piece in pieces if piece]


def test_a_hung_worker_has_delivered_the_tokens_it_made(tmp_path: Path) -> None:
    with start_stack(tmp_path, workers=[["--hang-after-tokens", "2"]],
                     frontend=["--chunk-timeout", "1"]) as stack:
        response = httpx.post(stack.url + "/v1/chat/completions", json=CHAT, timeout=30)
    assert response.status_code == 200
    assert _deltas(response.content) == ["echo:", " user:"]
    assert b'"code":"timeout"' in response.content


def test_the_first_token_does_not_wait_for_the_second(tmp_path: Path) -> None:
    # A minute between tokens and 5 s for the first: the first token is there at once.
    with start_stack(tmp_path, workers=[["--token-delay", "60"]],
                     frontend=["--first-byte-timeout", "5", "--chunk-timeout", "120"]
                     ) as stack, httpx.stream("POST", stack.url + "/v1/chat/completions",
                                              json=CHAT, timeout=30) as response:
        assert response.status_code == 200, response.read()
        first = b""
        for part in response.iter_bytes():
            first += part
            if _deltas(first):
                break
    assert _deltas(first) == ["echo:"]
