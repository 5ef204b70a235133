"""Replies checked against the SDKs' typed models with validation on.

The SDKs build their objects without validating them, so a field their models require
that a reply leaves out reads as ``None`` instead of failing: code that sums
``usage.input_tokens_details.cache_write_tokens`` or keeps the models whose
``lifecycle`` is ``"active"`` broke on a reply every SDK call "parsed".
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import orjson
import pydantic
from anthropic.types import Message, MessageTokensCount, ModelInfo, RawMessageStreamEvent
from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseCompletedEvent, ResponseIncompleteEvent

from tests.frontend_plugin.conftest import Stack

ANTHROPIC = {"anthropic-version": "2023-06-01"}
CHAT: Any = [{"role": "user", "content": "one two three"}]


def _data(stack: Stack, path: str, body: dict[str, Any], headers: Any = None
          ) -> list[dict[str, Any]]:
    """The JSON events of a streamed reply, in order."""
    found: list[dict[str, Any]] = []
    with httpx.stream("POST", stack.url + path, json=body, headers=headers,
                      timeout=30) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                found.append(orjson.loads(line[len("data: "):]))
    return found


def _events(stack: Stack, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The last event of each type in a streamed /v1/responses reply."""
    return {event["type"]: event for event in _data(stack, "/v1/responses", body)}


def test_chat_completions_and_messages_validate_as_the_sdks_type_them(stack: Stack) -> None:
    options: Any = {"logprobs": True, "top_logprobs": 1, "max_tokens": 3}
    chat = {"model": "echo", "messages": CHAT, **options}
    ChatCompletion.model_validate(httpx.post(stack.url + "/v1/chat/completions",
                                             json=chat).json())
    chunks = _data(stack, "/v1/chat/completions",
                   {**chat, "stream": True, "stream_options": {"include_usage": True}})
    pydantic.TypeAdapter(list[ChatCompletionChunk]).validate_python(chunks)
    Completion.model_validate(httpx.post(stack.url + "/v1/completions", json={
        "model": "echo", "prompt": "one two", "logprobs": 1}).json())
    message = {"model": "echo", "max_tokens": 3, "messages": CHAT, "stop_sequences": ["two"]}
    Message.model_validate(httpx.post(stack.url + "/v1/messages", json=message,
                                      headers=ANTHROPIC).json())
    events = _data(stack, "/v1/messages", {**message, "stream": True}, ANTHROPIC)
    pydantic.TypeAdapter(list[RawMessageStreamEvent]).validate_python(events)
    MessageTokensCount.model_validate(httpx.post(stack.url + "/v1/messages/count_tokens", json={
        "model": "echo", "messages": CHAT}, headers=ANTHROPIC).json())


def test_a_response_and_its_final_events_validate_as_the_sdk_types_them(
    oai: openai.OpenAI, stack: Stack
) -> None:
    reply = oai.responses.with_raw_response.create(model="echo", input="count my tokens")
    response = Response.model_validate(orjson.loads(reply.content))
    assert response.usage is not None
    assert response.usage.input_tokens_details.cache_write_tokens == 0
    body = {"model": "echo", "input": "count my tokens", "stream": True}
    completed = _events(stack, body)["response.completed"]
    ResponseCompletedEvent.model_validate(completed)
    # Cut by the smallest limit OpenAI takes (16): an input longer than that.
    long_body = {**body, "input": " ".join(f"w{i}" for i in range(20))}
    incomplete = _events(stack, {**long_body, "max_output_tokens": 16})["response.incomplete"]
    ResponseIncompleteEvent.model_validate(incomplete)


def test_the_listed_model_validates_as_the_anthropic_sdk_types_it(
    claude: anthropic.Anthropic
) -> None:
    listed = claude.models.with_raw_response.list()
    [entry] = orjson.loads(listed.http_response.content)["data"]
    assert ModelInfo.model_validate(entry).lifecycle == "active"
    one = claude.models.with_raw_response.retrieve("echo")
    assert ModelInfo.model_validate(orjson.loads(one.http_response.content)).lifecycle == "active"
    assert [m.id for m in claude.models.list() if m.lifecycle == "active"] == ["echo"]
