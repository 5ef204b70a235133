"""Names in a conversation's history, checked as OpenAI checks them.

A chat message's ``name`` (a participant: a person's "John Doe", an agent's
"planner.v2"), and a Responses ``function_call`` item's ``name`` or a chat tool call's
``function.name`` (a model's call sent back, "functions.get_me" as models sometimes
write it) must match OpenAI's pattern
``^[a-zA-Z0-9_-]+$``; the API answers 400 "string does not match pattern". They were
served here, so a multi-agent chat or an agent loop broke at its first real call.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest


@pytest.mark.parametrize("name", ["John Doe", "planner.v2", ""])
def test_a_chat_participant_name_openai_refuses_is_refused(
    oai: openai.OpenAI, name: str
) -> None:
    messages: Any = [{"role": "system", "content": "s"},
                     {"role": "user", "content": "hi", "name": name}]
    with pytest.raises(openai.BadRequestError) as refused:
        oai.chat.completions.create(model="echo", messages=messages)
    assert refused.value.param == "messages[1].name"
    assert "^[a-zA-Z0-9_-]+$" in refused.value.message


def test_a_function_call_item_needs_a_name_openai_takes(oai: openai.OpenAI) -> None:
    for name, says in (("functions.get_me", "letters, digits, underscores and dashes"),
                       (None, "Missing required parameter")):
        call: Any = {"type": "function_call", "call_id": "call_1", "arguments": "{}"}
        if name is not None:
            call["name"] = name
        items: Any = [{"role": "user", "content": "who am i"}, call,
                      {"type": "function_call_output", "call_id": "call_1", "output": "bob"}]
        with pytest.raises(openai.BadRequestError) as refused:
            oai.responses.create(model="echo", input=items)
        assert refused.value.param == "input[1].name"
        assert says in refused.value.message


def test_a_chat_tool_call_needs_a_function_name_openai_takes(oai: openai.OpenAI) -> None:
    # The model's own call sent back, named as some models write it ("functions.x").
    for function, says in (({"name": "functions.get_me", "arguments": "{}"},
                            "letters, digits, underscores and dashes"),
                           ({"arguments": "{}"}, "Missing required parameter")):
        messages: Any = [
            {"role": "user", "content": "who am i"},
            {"role": "assistant", "tool_calls": [
                {"id": "call_1", "type": "function", "function": function}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "bob"}]
        with pytest.raises(openai.BadRequestError) as refused:
            oai.chat.completions.create(model="echo", messages=messages)
        assert refused.value.param == "messages[1].tool_calls[0].function.name"
        assert says in refused.value.message


def test_names_openai_takes_are_served(oai: openai.OpenAI) -> None:
    chat = oai.chat.completions.create(model="echo", messages=[
        {"role": "user", "content": "hi", "name": "John_Doe-2"}])
    assert chat.choices[0].message.content == "echo: user: hi"
    reply = oai.responses.create(model="echo", input=[
        {"role": "user", "content": "who am i"},
        {"type": "function_call", "call_id": "call_1", "name": "get_me", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "bob"}])
    assert reply.output_text.endswith("bob")
