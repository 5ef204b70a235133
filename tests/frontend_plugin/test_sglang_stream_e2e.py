"""SGLang-style ``/generate`` streams as SGLang's own server does, through a real stack."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson

from tests.frontend_plugin.conftest import Stack, start_stack


def _events(body: str) -> list[dict[str, object]]:
    return [orjson.loads(line[len("data: "):]) for line in body.splitlines()
            if line.startswith("data: {")]


def test_every_event_counts_the_tokens_generated_so_far(stack: Stack) -> None:
    # SGLang puts the tokens generated so far in every event's meta_info (its benchmark
    # and progress bars read them mid-stream); every event but the last said 0 here.
    response = httpx.post(stack.url + "/generate", timeout=30, json={
        "text": "one two three four", "stream": True,
        "sampling_params": {"max_new_tokens": 16}})
    assert response.status_code == 200, response.text
    events = _events(response.text)
    counts = [event["meta_info"]["completion_tokens"] for event in events]  # type: ignore[index]
    assert counts == [1, 2, 3, 4, 5, 5], counts
    assert events[-1]["meta_info"]["finish_reason"] == {"type": "stop"}  # type: ignore[index]


def test_a_reply_cut_by_the_token_limit_says_the_length_as_sglang_does(stack: Stack) -> None:
    # SGLang's finish_reason for the limit is {"type": "length", "length": N}; callers
    # that read the length (to retry with a larger limit) found no key.
    body = {"text": "one two three four", "sampling_params": {"max_new_tokens": 2}}
    whole = httpx.post(stack.url + "/generate", json=body, timeout=30).json()
    streamed = _events(httpx.post(stack.url + "/generate", json={**body, "stream": True},
                                  timeout=30).text)[-1]
    for reply in (whole, streamed):
        meta = reply["meta_info"]
        assert meta["finish_reason"] == {"type": "length", "length": 2}, meta  # type: ignore[index]
        assert meta["completion_tokens"] == 2  # type: ignore[index]


def test_a_stream_that_fails_still_ends_with_done(tmp_path: Path) -> None:
    # SGLang's server writes `data: [DONE]` after the error event too: a client (or a
    # proxy) reading to [DONE] told a failed generation from a dropped connection by it,
    # and here the stream ended without it.
    with start_stack(tmp_path, workers=[["--hang-after-tokens", "2"]],
                     frontend=["--chunk-timeout", "1"]) as stack:
        response = httpx.post(stack.url + "/generate", timeout=30, json={
            "text": "one two three four", "rid": "failing", "stream": True})
    assert response.status_code == 200
    *_, error, done = [line for line in response.text.split("\n") if line]
    assert orjson.loads(error[len("data: "):]) == {"rid": "failing", "error": {
        "message": "worker timed out", "type": "server_error", "code": "timeout"}}
    assert done == "data: [DONE]"
