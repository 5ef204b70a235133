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
from anthropic.types import ModelInfo
from openai.types.responses import Response, ResponseCompletedEvent, ResponseIncompleteEvent

from tests.frontend_plugin.conftest import Stack


def _events(stack: Stack, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The last event of each type in a streamed /v1/responses reply."""
    seen: dict[str, dict[str, Any]] = {}
    with httpx.stream("POST", stack.url + "/v1/responses", json=body, timeout=30) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: "):
                event = orjson.loads(line[len("data: "):])
                seen[event["type"]] = event
    return seen


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
    incomplete = _events(stack, {**body, "max_output_tokens": 1})["response.incomplete"]
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
