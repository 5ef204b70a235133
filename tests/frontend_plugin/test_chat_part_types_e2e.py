"""A chat content part of a type OpenAI's chat does not take is refused, as OpenAI does.

The echo engine reads a part's ``text`` whatever its ``type``, so the Responses API's
``input_text`` (the usual slip when moving code between the two APIs), a misspelt type,
or an image in a system message was served here, and the real API answers 400 naming
``messages[N].content[M].type``, so the request broke at its first real call.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

REFUSED: list[tuple[list[dict[str, Any]], str, str]] = [
    ([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
     "messages[0].content[0].type", "Invalid value: 'input_text'."),
    ([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "txt", "text": "b"}]}],
     "messages[0].content[1].type", "Invalid value: 'txt'."),
    ([{"role": "user", "content": [{"text": "hi"}]}],
     "messages[0].content[0].type", "Missing required parameter: 'messages[0].content[0].type'."),
    ([{"role": "user", "content": ["hi"]}],
     "messages[0].content[0]", "expected an object, but got a string instead"),
    ([{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
      {"role": "user", "content": "hi"}],
     "messages[0].content[0].type", "Invalid value: 'image_url'. Supported values are: 'text'."),
    ([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
      {"role": "user", "content": "hi"}],
     "messages[1].content[0].type", "Invalid value: 'output_text'."),
]


@pytest.mark.parametrize(("messages", "param", "said"), REFUSED)
def test_a_part_type_chat_does_not_take_is_refused(
    oai: openai.OpenAI, messages: list[dict[str, Any]], param: str, said: str
) -> None:
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as refused:
            oai.chat.completions.create(model="echo", messages=messages,  # type: ignore[arg-type]
                                        stream=stream)
        assert refused.value.param == param, refused.value.body
        assert said in refused.value.message


def test_every_part_type_chat_takes_is_served(oai: openai.OpenAI) -> None:
    reply = oai.chat.completions.create(model="echo", messages=[
        {"role": "developer", "content": [{"type": "text", "text": "d"}]},
        {"role": "system", "content": [{"type": "text", "text": "s"}]},
        {"role": "user", "content": [
            {"type": "text", "text": "u"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"file_id": "file-1"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                          {"type": "refusal", "refusal": "no"}]},
        {"role": "user", "content": "again"}])
    assert reply.choices[0].message.content == (
        "echo: developer: d\nsystem: s\nuser: u\nassistant: a\nuser: again")
