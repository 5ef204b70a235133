"""A chat assistant turn with neither content nor a call is refused, as OpenAI does.

OpenAI's chat takes an assistant message without content only when it holds what the
turn was instead (``tool_calls``, a legacy ``function_call``, a ``refusal`` or an
``audio`` reference). An agent loop that kept a turn whose text came back empty as
``"content": None`` (the bug agent frameworks keep meeting) was served here and
answered 400 ``Invalid value for 'content': expected a string, got null.`` by the real
API, so the conversation broke at its first real call.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

CALL: Any = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize("turn", [
    {"role": "assistant", "content": None},
    {"role": "assistant"},
    {"role": "assistant", "content": None, "tool_calls": None},
])
def test_an_assistant_turn_without_content_or_call_is_refused(
    oai: openai.OpenAI, turn: dict[str, Any]
) -> None:
    messages: Any = [{"role": "user", "content": "hi"}, turn, {"role": "user", "content": "and?"}]
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as refused:
            oai.chat.completions.create(model="echo", messages=messages, stream=stream)
        assert refused.value.param == "messages[1].content", refused.value.body
        assert refused.value.message.endswith(
            "Invalid value for 'content': expected a string, got null.")


def test_an_assistant_turn_holding_what_it_was_instead_is_served(oai: openai.OpenAI) -> None:
    reply = oai.chat.completions.create(model="echo", messages=[
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "r"},
        {"role": "assistant", "content": None, "refusal": "no"},
        {"role": "assistant", "content": None, "audio": {"id": "audio_1"}},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "and?"}])
    assert reply.choices[0].message.content == (
        "echo: user: hi\nassistant: \ntool: r\nassistant: \nassistant: \nassistant: \n"
        "user: and?")


def test_a_legacy_function_result_without_its_name_is_refused(oai: openai.OpenAI) -> None:
    # Legacy function calling sends a result back as a 'function' message naming the
    # function: OpenAI requires the name (and a string or null content); without it the
    # result was served here.
    call: Any = {"role": "assistant", "content": None,
                 "function_call": {"name": "f", "arguments": "{}"}}
    for result, param in (({"role": "function", "content": "r"}, "messages[2].name"),
                          ({"role": "function", "name": "f",
                            "content": [{"type": "text", "text": "r"}]}, "messages[2].content")):
        with pytest.raises(openai.BadRequestError) as refused:
            oai.chat.completions.create(model="echo", messages=[
                {"role": "user", "content": "hi"}, call, result])
        assert refused.value.param == param, refused.value.body
    reply = oai.chat.completions.create(model="echo", messages=[
        {"role": "user", "content": "hi"}, call, {"role": "function", "name": "f", "content": "r"}])
    assert reply.choices[0].message.content == "echo: user: hi\nassistant: \nfunction: r"
