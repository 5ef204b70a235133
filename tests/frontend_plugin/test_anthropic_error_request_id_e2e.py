"""Anthropic's error bodies name the request, as Anthropic's API writes them.

Anthropic's API answers an error with ``{"type": "error", "error": {"type", "message"},
"request_id": "req_…"}``, the ``request-id`` header's value, and puts the same field on
an ``error`` event mid-stream. The frontend's errors had the header only, so code that
logs or reports ``error.body["request_id"]`` (the field the API documents for quoting
an error) read nothing here and a ``KeyError`` in a stricter parser. Real processes,
the official SDK, one frontend with an API key, a small body limit and a worker that
falls silent after its first token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack

CHAT: Any = [{"role": "user", "content": "which request was this"}]


@pytest.fixture(scope="module")
def silent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with start_stack(tmp_path_factory.mktemp("silent"), workers=[["--hang-after-tokens", "1"]],
                     frontend=["--chunk-timeout", "0.5", "--api-key", "k",
                               "--max-body-bytes", "4096"]) as stack:
        yield stack


def _raised(call: Callable[[], object]) -> anthropic.APIStatusError:
    with pytest.raises(anthropic.APIStatusError) as caught:
        call()
    return caught.value


def test_every_error_body_carries_the_request_id_of_its_header(silent: Stack) -> None:
    claude = anthropic.Anthropic(base_url=silent.url, api_key="k", max_retries=0)
    errors = {
        400: _raised(lambda: claude.messages.create(model="echo", max_tokens=0,
                                                    messages=CHAT)),
        401: _raised(lambda: anthropic.Anthropic(base_url=silent.url, api_key="wrong",
                                                 max_retries=0).models.list()),
        404: _raised(lambda: claude.messages.batches.retrieve("batch_1")),
        413: _raised(lambda: claude.messages.create(
            model="echo", max_tokens=8, messages=[{"role": "user", "content": "x" * 8000}])),
        504: _raised(lambda: claude.messages.create(model="echo", max_tokens=8,
                                                    messages=CHAT)),
    }
    counted = _raised(lambda: claude.messages.count_tokens(model="echo", messages=[]))
    missing = _raised(lambda: claude.models.retrieve("not-echo"))
    for status, error in [*errors.items(), (400, counted), (404, missing)]:
        assert error.status_code == status
        server_id = error.response.headers["x-server-request-id"]
        assert error.request_id == server_id
        assert isinstance(error.body, dict), error.body
        assert error.body == {"type": "error", "error": error.body["error"],
                              "request_id": server_id}, error.body


def test_a_body_refused_before_it_is_read_names_its_request_too(silent: Stack) -> None:
    # A 415 is answered from the headers alone, before any route reads the body.
    refused = httpx.post(silent.url + "/v1/messages", content=b"{}", headers={
        "content-type": "text/plain", "x-api-key": "k", "anthropic-version": "2023-06-01"})
    assert refused.status_code == 415
    assert refused.json()["request_id"] == refused.headers["request-id"]


def test_an_error_event_mid_stream_names_its_request(silent: Stack) -> None:
    claude = anthropic.Anthropic(base_url=silent.url, api_key="k", max_retries=0)
    streamed = _raised(lambda: [None for _ in claude.messages.create(
        model="echo", max_tokens=8, messages=CHAT, stream=True)])
    server_id = streamed.response.headers["x-server-request-id"]
    assert streamed.request_id == server_id
    assert streamed.body == {"type": "error", "error": {
        "type": "timeout_error", "message": "worker timed out"}, "request_id": server_id}
