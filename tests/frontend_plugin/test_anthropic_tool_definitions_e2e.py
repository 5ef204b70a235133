"""Tool definitions on /v1/messages through the anthropic SDK, checked as Anthropic's
API checks them.

A custom tool's name must match ``^[a-zA-Z0-9_-]{1,128}$`` (MCP clients that namespace
tools as ``server/tool`` meet this one first), it needs an object ``input_schema`` of
type ``object``, and two tools may not share a name. Each was served here and refused
there (400), so tool definitions tested against the frontend broke at the first real
call, as OpenAI's function names did before they were checked.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

CHAT: Any = [{"role": "user", "content": "what is the weather"}]
SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}}


@pytest.mark.parametrize(("tools", "says"), [
    ([{"name": "todoist/find-tasks", "input_schema": SCHEMA}],
     "'tools[0].name': 'todoist/find-tasks' must be 1 to 128 letters, digits"),
    ([{"name": "get weather", "input_schema": SCHEMA}], "'tools[0].name'"),
    ([{"name": "w" * 129, "input_schema": SCHEMA}], "'tools[0].name'"),
    ([{"name": "", "input_schema": SCHEMA}], "'tools[0].name'"),
    ([{"name": "weather"}], "'tools[0].input_schema' is required"),
    ([{"type": "custom", "name": "weather", "input_schema": "{}"}],
     "'tools[0].input_schema' must be an object"),
    ([{"name": "weather", "input_schema": {"type": "string"}}],
     "'tools[0].input_schema.type' must be 'object'"),
    ([{"name": "weather", "input_schema": SCHEMA}, {"name": "weather", "input_schema": SCHEMA}],
     "'tools': tool names must be unique: 'weather' is tools[0] and tools[1]"),
])
def test_a_tool_anthropic_refuses_is_refused(
    claude: anthropic.Anthropic, tools: Any, says: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=16, messages=CHAT, tools=tools)
    assert refused.value.type == "invalid_request_error"
    assert says in (refused.value.api_message or ""), refused.value.body
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=CHAT, tools=tools)


def test_tools_anthropic_takes_are_served(claude: anthropic.Anthropic) -> None:
    tools: Any = [
        {"name": "get_weather-v2", "input_schema": SCHEMA, "description": "weather"},
        {"type": "custom", "name": "W" * 128, "input_schema": {"type": "object"}},
        # Server tools have their own names and no input_schema.
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
        {"type": "bash_20250124", "name": "bash"},
    ]
    reply = claude.messages.create(model="echo", max_tokens=16, messages=CHAT, tools=tools)
    assert reply.content[0].text == "echo: user: what is the weather"  # type: ignore[union-attr]
    assert claude.messages.count_tokens(model="echo", messages=CHAT, tools=tools).input_tokens
