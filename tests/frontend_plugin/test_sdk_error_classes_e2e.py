"""The error classes and error types the official SDKs see for the frontend's failures.

Real processes: a worker that never produces a token (504), a body over the limit (413). Anthropic's API names a 504 ``timeout_error``: the
Messages route said ``api_error``, which reads as a server bug rather than a timeout.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack

CHAT: Any = [{"role": "user", "content": "error classes"}]


@pytest.fixture(scope="module")
def hung(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with start_stack(tmp_path_factory.mktemp("hung"), workers=[["--hang-after-tokens", "0"]],
                     frontend=["--first-byte-timeout", "0.5", "--max-body-bytes", "4096"]) as stack:
        yield stack


def _clients(stack: Stack) -> tuple[openai.OpenAI, anthropic.Anthropic]:
    return (openai.OpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0),
            anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0))


def test_a_worker_timeout_is_504_timeout_in_both_sdks(hung: Stack) -> None:
    oai, claude = _clients(hung)
    with pytest.raises(openai.InternalServerError) as chat:
        oai.chat.completions.create(model="echo", messages=CHAT)
    assert chat.value.status_code == 504 and chat.value.type == "timeout"
    with pytest.raises(anthropic.InternalServerError) as message:
        claude.messages.create(model="echo", max_tokens=8, messages=CHAT)
    assert message.value.status_code == 504
    assert message.value.body["error"]["type"] == "timeout_error"  # type: ignore[index]
    assert "timed out" in message.value.message


def test_a_body_over_the_limit_is_413_in_both_sdks(hung: Stack) -> None:
    oai, claude = _clients(hung)
    big: Any = [{"role": "user", "content": "x" * 10_000}]
    with pytest.raises(openai.APIStatusError) as chat:
        oai.chat.completions.create(model="echo", messages=big)
    assert chat.value.status_code == 413 and "exceeds" in chat.value.message
    with pytest.raises(anthropic.RequestTooLargeError) as message:
        claude.messages.create(model="echo", max_tokens=8, messages=big)
    assert message.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]



def test_the_anthropic_sdk_reads_the_server_request_id(hung: Stack, stack: Stack) -> None:
    # The Anthropic SDK takes a response's id from `request-id` (as Anthropic's API
    # sends it): `_request_id` and every APIStatusError's `request_id` were None, so a
    # caller had nothing to quote from an error. They are now the server's request_id.
    claude = anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0)
    raw = claude.messages.with_raw_response.create(
        model="echo", max_tokens=8, messages=CHAT, extra_headers={"x-request-id": "corr-1"})
    server_id = raw.headers["x-server-request-id"]
    assert raw.headers["request-id"] == server_id and raw.headers["x-request-id"] == "corr-1"
    assert raw.parse()._request_id == server_id
    with claude.messages.stream(model="echo", max_tokens=8, messages=CHAT) as stream:
        assert stream.response.headers["request-id"] == stream.response.headers[
            "x-server-request-id"]
    errors: list[anthropic.APIStatusError] = []
    for call in (
        lambda: claude.messages.create(model="echo", max_tokens=0, messages=CHAT),  # 400
        lambda: claude.messages.batches.retrieve("batch_1"),  # 404
        lambda: anthropic.Anthropic(base_url=hung.url, api_key="k", max_retries=0)
        .messages.create(model="echo", max_tokens=8, messages=CHAT),  # 504
    ):
        with pytest.raises(anthropic.APIStatusError) as info:
            call()
        errors.append(info.value)
    assert [e.status_code for e in errors] == [400, 404, 504]
    for error in errors:
        assert error.request_id == error.response.headers["x-server-request-id"]
    # The OpenAI routes keep OpenAI's header only: there `x-request-id` is the echo.
    oai = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0)
    chat = oai.chat.completions.with_raw_response.create(model="echo", messages=CHAT)
    assert "request-id" not in chat.headers


def test_a_timeout_mid_stream_is_timeout_error_as_when_not_streamed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # A stream the worker fell silent in ended with an `error` event of type api_error,
    # while the same failure without streaming was 504 timeout_error: a caller deciding
    # by type (retry a timeout, report a server bug) took one for the other.
    with start_stack(tmp_path_factory.mktemp("silent"), workers=[["--hang-after-tokens", "2"]],
                     frontend=["--chunk-timeout", "0.5"]) as stack:
        claude = anthropic.Anthropic(base_url=stack.url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as raw:
            for _ in claude.messages.create(model="echo", max_tokens=64, messages=CHAT,
                                            stream=True):
                pass
        with (pytest.raises(anthropic.APIStatusError) as helper,
              claude.messages.stream(model="echo", max_tokens=64, messages=CHAT) as stream):
            stream.get_final_message()
        with pytest.raises(anthropic.InternalServerError) as plain:
            claude.messages.create(model="echo", max_tokens=64, messages=CHAT)
    assert plain.value.status_code == 504
    for error in (raw.value, helper.value, plain.value):
        assert error.body == {"type": "error", "error": {
            "type": "timeout_error", "message": "worker timed out"},
            "request_id": error.request_id}, error.body
