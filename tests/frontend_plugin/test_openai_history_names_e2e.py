"""Names in a conversation's history, checked as OpenAI checks them.

A chat message's ``name`` (a participant: a person's "John Doe", an agent's
"planner.v2") must match OpenAI's pattern ``^[a-zA-Z0-9_-]+$``; the API answers 400
"string does not match pattern". It was served here, so a multi-agent chat broke at its
first real call.
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


def test_names_openai_takes_are_served(oai: openai.OpenAI) -> None:
    chat = oai.chat.completions.create(model="echo", messages=[
        {"role": "user", "content": "hi", "name": "John_Doe-2"}])
    assert chat.choices[0].message.content == "echo: user: hi"
