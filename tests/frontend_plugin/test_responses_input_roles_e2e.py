"""A Responses input message's role is checked as OpenAI checks it.

The Responses API takes ``user``, ``assistant``, ``system`` and ``developer`` messages;
a tool's result is a ``function_call_output`` item, not a ``tool`` message. A ``tool``
message carried over from chat code, or a misspelt role, was served here (``echo: usr:
…``) and refused by the real API (400), as chat roles were before they were checked.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest


@pytest.mark.parametrize("role", ["tool", "usr", "function", "model"])
def test_a_role_the_responses_api_does_not_take_is_refused(
    oai: openai.OpenAI, role: str
) -> None:
    items: Any = [{"role": "user", "content": "hi"}, {"role": role, "content": "x"}]
    with pytest.raises(openai.BadRequestError) as refused:
        oai.responses.create(model="echo", input=items)
    assert refused.value.param == "input[1].role"
    assert f"'{role}'" in refused.value.message
    assert "assistant, system, developer, user" in refused.value.message
    with pytest.raises(openai.BadRequestError):
        oai.responses.input_tokens.count(model="echo", input=items)


def test_every_role_the_responses_api_takes_is_served(oai: openai.OpenAI) -> None:
    items: Any = [
        {"role": "developer", "content": "d"}, {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"type": "message", "role": "assistant", "content": "a"}]
    reply = oai.responses.create(model="echo", input=items)
    assert reply.output_text == (
        "echo: developer: d\nsystem: s\nuser: u\ntool: r\nassistant: a")
