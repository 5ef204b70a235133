"""An agent loop's tool turns (chat and Responses) through the openai SDK, checked as
OpenAI checks them.

A history that drops a tool result, sends a call's ``arguments`` as an object, or a
``tool`` message without its ``tool_call_id`` was served here and refused by the real
API (400), so an agent loop tested against the frontend broke at its first real call.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

ASK: Any = {"role": "user", "content": "weather in Paris?"}


def _calls(*ids: str, arguments: Any = '{"city": "Paris"}') -> Any:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "weather", "arguments": arguments}}
        for i in ids]}


def _result(call_id: str | None) -> Any:
    message = {"role": "tool", "content": "sunny"}
    return message if call_id is None else {**message, "tool_call_id": call_id}


@pytest.mark.parametrize(("messages", "param", "says"), [
    # The loop forgot to append a result (or trimmed it from the history).
    ([ASK, _calls("call_1", "call_2"), _result("call_1"), {"role": "user", "content": "and?"}],
     "messages[1].tool_calls", "did not have response messages: call_2"),
    ([ASK, _calls("call_1")], "messages[1].tool_calls", "call_1"),
    ([ASK, _calls("call_1"), _result(None)], "messages[2].tool_call_id", "tool_call_id"),
    ([ASK, _calls("call_1"), _result("call_9")], "messages[2].tool_call_id", "call_9"),
    ([ASK, _calls("call_1", arguments={"city": "Paris"}), _result("call_1")],
     "messages[1].tool_calls[0].function.arguments", "expected a string"),
    # A history window that cut the assistant's call but kept its result (or a result
    # after a plain reply): OpenAI refuses a tool message no call comes before.
    ([ASK, _result("call_1"), {"role": "user", "content": "and?"}], "messages[1].role",
     "must be a response to a preceeding message with 'tool_calls'"),
    ([ASK, {"role": "assistant", "content": "checking"}, _result("call_1")],
     "messages[2].role", "preceeding message with 'tool_calls'"),
    ([_result("call_1"), ASK], "messages[0].role", "preceeding message with 'tool_calls'"),
    # A reply without calls turned into a history message with its calls defaulted to
    # [] (as openai-node once did): refused by OpenAI, so every later turn broke.
    ([ASK, {"role": "assistant", "content": "sunny", "tool_calls": []},
      {"role": "user", "content": "and?"}], "messages[1].tool_calls", "empty array"),
])
def test_a_broken_tool_turn_is_refused_as_openai_refuses_it(
    oai: openai.OpenAI, messages: Any, param: str, says: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=messages)
    assert info.value.param == param, info.value.body
    assert says in info.value.message


def test_a_whole_tool_round_trip_is_served(oai: openai.OpenAI) -> None:
    messages: Any = [ASK, _calls("call_1", "call_2"), _result("call_2"), _result("call_1"),
                     {"role": "assistant", "content": "sunny twice"},
                     {"role": "user", "content": "thanks"}]
    reply = oai.chat.completions.create(model="echo", messages=messages)
    assert reply.choices[0].message.content == (
        "echo: user: weather in Paris?\nassistant: \ntool: sunny\ntool: sunny\n"
        "assistant: sunny twice\nuser: thanks")


CALL: Any = {"type": "function_call", "call_id": "call_1", "name": "weather",
             "arguments": '{"city": "Paris"}'}
OUTPUT: Any = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}


@pytest.mark.parametrize(("items", "param", "says"), [
    # Nothing is stored here, so the call an output answers must be in the input.
    ([ASK, OUTPUT], "input[1]", "No tool call found for function call output"),
    ([ASK, CALL], "input[1]", "No tool output found for function call call_1"),
    ([ASK, CALL, {**OUTPUT, "call_id": "call_9"}], "input[2]", "call_9"),
    ([ASK, {**CALL, "arguments": {"city": "Paris"}}, OUTPUT], "input[1].arguments",
     "expected a string"),
    ([ASK, {**CALL, "call_id": None}, OUTPUT], "input[1].call_id", "call_id"),
])
def test_a_broken_responses_tool_turn_is_refused_as_openai_refuses_it(
    oai: openai.OpenAI, items: Any, param: str, says: str
) -> None:
    for call in (oai.responses.create, oai.responses.input_tokens.count):
        with pytest.raises(openai.BadRequestError) as info:
            call(model="echo", input=items)
        assert info.value.param == param, info.value.body
        assert says in info.value.message


def test_a_whole_responses_tool_round_trip_is_served(oai: openai.OpenAI) -> None:
    second = {**CALL, "call_id": "call_2"}
    items: Any = [ASK, CALL, second, {**OUTPUT, "call_id": "call_2"}, OUTPUT]
    assert oai.responses.create(model="echo", input=items).output_text == (
        "echo: user: weather in Paris?\ntool: sunny\ntool: sunny")
