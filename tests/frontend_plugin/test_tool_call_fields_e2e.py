"""An assistant's chat ``tool_calls`` carry the fields OpenAI requires of them.

A history built by hand (or by a framework converting from another API) whose calls
lack ``type`` or the ``function`` object was served here and refused by the real API
(400 ``Missing required parameter: 'messages[1].tool_calls[0].type'``), so an agent
loop tested against the frontend broke at its first real call.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

ASK: Any = {"role": "user", "content": "weather in Paris?"}
RESULT: Any = {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
FUNCTION: Any = {"name": "weather", "arguments": '{"city": "Paris"}'}


@pytest.mark.parametrize(("call", "param"), [
    ({"id": "call_1", "function": FUNCTION}, "messages[1].tool_calls[0].type"),
    ({"id": "call_1", "type": "function"}, "messages[1].tool_calls[0].function"),
    ({"id": "call_1", "type": "function", "function": "weather"},
     "messages[1].tool_calls[0].function"),
])
def test_a_tool_call_without_its_fields_is_refused(
    oai: openai.OpenAI, call: Any, param: str
) -> None:
    messages: Any = [ASK, {"role": "assistant", "tool_calls": [call]}, RESULT]
    with pytest.raises(openai.BadRequestError) as refused:
        oai.chat.completions.create(model="echo", messages=messages)
    assert refused.value.param == param
    assert f"'{param}'" in refused.value.message


def test_function_and_custom_tool_calls_are_served(oai: openai.OpenAI) -> None:
    messages: Any = [ASK, {"role": "assistant", "tool_calls": [
        {"id": "call_1", "type": "function", "function": FUNCTION},
        {"id": "call_2", "type": "custom", "custom": {"name": "grammar", "input": "x"}}]},
        RESULT, {**RESULT, "tool_call_id": "call_2"}]
    reply = oai.chat.completions.create(model="echo", messages=messages)
    assert reply.choices[0].message.content == (
        "echo: user: weather in Paris?\nassistant: \ntool: sunny\ntool: sunny")
