"""An agent loop's tool turns on /v1/messages through the anthropic SDK, checked as
Anthropic's API checks them.

Each ``tool_use`` block of an assistant turn needs a ``tool_result`` in the next
message, and a ``tool_result`` needs its ``tool_use`` in the message before. A loop that
dropped a result, or sent one for a call the history no longer holds (trimmed away),
was served here and refused by the real API (400), so an agent loop tested against the
frontend broke at its first real call; chat and Responses were already checked.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

TOOLS: Any = [{"name": "weather", "input_schema": {"type": "object"}}]
ASK: Any = {"role": "user", "content": "weather in Paris and Rome?"}


def _uses(*ids: str, tool_input: Any = None) -> Any:
    return {"role": "assistant", "content": [{"type": "text", "text": "checking"}, *(
        {"type": "tool_use", "id": i, "name": "weather",
         "input": {"city": "Paris"} if tool_input is None else tool_input} for i in ids)]}


def _results(*ids: str, text_first: bool = False) -> Any:
    blocks: list[Any] = [{"type": "tool_result", "tool_use_id": i, "content": "sunny"}
                         for i in ids]
    text = {"type": "text", "text": "there you go"}
    return {"role": "user", "content": [text, *blocks] if text_first else [*blocks, text]}


@pytest.mark.parametrize(("messages", "says"), [
    # The loop forgot a result (or appended the next question instead of the results).
    ([ASK, _uses("toolu_1", "toolu_2"), _results("toolu_1")],
     "'messages[2].content': `tool_use` ids were found without `tool_result` blocks "
     "immediately after: toolu_2"),
    ([ASK, _uses("toolu_1"), {"role": "user", "content": "and?"}],
     "without `tool_result` blocks immediately after: toolu_1"),
    # A result whose call was trimmed from the history, or sent twice a turn later.
    ([ASK, _results("toolu_9")],
     "'messages[1].content[0]': unexpected `tool_use_id` found in `tool_result` blocks: "
     "toolu_9"),
    ([ASK, _uses("toolu_1"), _results("toolu_1"), {"role": "assistant", "content": "ok"},
      _results("toolu_1")], "unexpected `tool_use_id`"),
    # A result for a call the previous turn did not make, beside the answers to the ones
    # it did (an id from an older turn, or a made-up one): it was served here.
    ([ASK, _uses("toolu_1"), _results("toolu_1", "toolu_2")],
     "'messages[2].content[1]': unexpected `tool_use_id` found in `tool_result` blocks: "
     "toolu_2"),
    ([ASK, _uses("toolu_1"), _results("toolu_1", text_first=True)],
     "'messages[2].content[1]': `tool_result` blocks must come first"),
    ([ASK, _uses("toolu_1", tool_input='{"city": "Paris"}'), _results("toolu_1")],
     "'messages[1].content[1].input' must be an object"),
    ([ASK, {"role": "assistant", "content": [{"type": "tool_use", "name": "weather",
                                               "input": {}}]}, _results("toolu_1")],
     "'messages[1].content[0].id' must be a non-empty string"),
    ([ASK, _uses("toolu_1"), {"role": "user", "content": [{"type": "tool_result",
                                                            "content": "sunny"}]}],
     "'messages[2].content[0].tool_use_id' must be a non-empty string"),
    # A call kept without the tool it named (a loop that stored id and input only).
    ([ASK, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                               "input": {}}]}, _results("toolu_1")],
     "'messages[1].content[0].name' must be a non-empty string"),
    ([ASK, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                               "name": "", "input": {}}]}, _results("toolu_1")],
     "'messages[1].content[0].name' must be a non-empty string"),
    # Ids Anthropic's pattern refuses: another provider's call ids (Kimi's
    # "functions.name:0"), MCP-namespaced ones, in a call or in its result.
    ([ASK, _uses("functions.weather:0"), _results("functions.weather:0")],
     "'messages[1].content[1].id': 'functions.weather:0' must be letters, digits, "
     "underscores and dashes (the pattern ^[a-zA-Z0-9_-]+$)"),
    ([ASK, _uses("toolu_1"), _results("toolu 1")],
     "'messages[2].content[0].tool_use_id': 'toolu 1' must be letters, digits, "
     "underscores and dashes"),
    # One id twice: a stream's call kept twice, or a backend counting its calls from
    # call_0 in every reply. Anthropic wants every tool_use id of a request unique.
    ([ASK, _uses("toolu_1", "toolu_1"), _results("toolu_1")],
     "'messages[1].content[2]': `tool_use` ids must be unique: toolu_1"),
    ([ASK, _uses("call_0"), _results("call_0"), _uses("call_0"), _results("call_0")],
     "'messages[3].content[1]': `tool_use` ids must be unique: call_0"),
])
def test_a_broken_tool_turn_is_refused_as_anthropic_refuses_it(
    claude: anthropic.Anthropic, messages: Any, says: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=64, messages=messages, tools=TOOLS)
    assert refused.value.type == "invalid_request_error"
    assert says in (refused.value.api_message or ""), refused.value.body
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=messages, tools=TOOLS)


def test_a_whole_tool_round_trip_is_served(claude: anthropic.Anthropic) -> None:
    messages: Any = [ASK, _uses("toolu_1", "toolu_2"), _results("toolu_2", "toolu_1"),
                     {"role": "assistant", "content": "sunny twice"},
                     {"role": "user", "content": "thanks"},
                     _uses("toolu_3")]  # a final assistant turn is a prefill: served
    reply = claude.messages.create(model="echo", max_tokens=64, messages=messages,
                                   tools=TOOLS)
    assert reply.content[0].text == (  # type: ignore[union-attr]
        "echo: user: weather in Paris and Rome?\nassistant: checking\n"
        "user: sunny\nsunny\nthere you go\nassistant: sunny twice\nuser: thanks\n"
        "assistant: checking")
    counted = claude.messages.count_tokens(model="echo", messages=messages, tools=TOOLS)
    assert counted.input_tokens == reply.usage.input_tokens
