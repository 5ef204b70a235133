"""JSON mode (``json_object``) needs the word "json" in the messages, as OpenAI requires.

OpenAI answers a chat ``response_format`` or a Responses ``text.format`` of type
``json_object`` whose messages never mention JSON with a 400 ("'messages' must contain the
word 'json' in some form, to use 'response_format' of type 'json_object'."; on the
Responses API "Response input messages must contain ..."; its instructions alone are not
enough). The frontend served such requests, so JSON mode tested against it failed at its
first real call, one of the most common errors JSON mode meets.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

JSON_OBJECT: Any = {"type": "json_object"}


def test_chat_json_mode_needs_the_word_json_in_its_messages(oai: openai.OpenAI) -> None:
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(
                model="echo", messages=[{"role": "user", "content": "structured please"}],
                response_format=JSON_OBJECT, stream=stream)
        assert info.value.param == "messages"
        assert info.value.body["message"] == (  # type: ignore[index]
            "'messages' must contain the word 'json' in some form, to use "
            "'response_format' of type 'json_object'.")
    for messages in ([{"role": "user", "content": "Reply in JSON please"}],
                     [{"role": "system", "content": "You answer with a json object."},
                      {"role": "user", "content": "structured please"}]):
        reply = oai.chat.completions.create(model="echo", messages=messages,  # type: ignore[arg-type]
                                            response_format=JSON_OBJECT)
        assert reply.choices[0].message.content
    # A schema says what to write: it needs no word.
    assert oai.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "structured please"}],
        response_format={"type": "json_schema", "json_schema": {"name": "answer"}})


def test_responses_json_mode_needs_the_word_json_in_its_input(oai: openai.OpenAI) -> None:
    said = ("Response input messages must contain the word 'json' in some form to use "
            "'text.format' of type 'json_object'.")
    for instructions in (None, "Answer with a JSON object."):  # instructions do not count
        with pytest.raises(openai.BadRequestError) as info:
            oai.responses.create(model="echo", input="structured please",
                                 instructions=instructions, text={"format": JSON_OBJECT})
        assert info.value.param == "text.format"
        assert info.value.body["message"] == said  # type: ignore[index]
    items: Any = [{"role": "user", "content": [{"type": "input_text", "text": "as JSON"}]}]
    for given in ("structured json please", items):
        assert oai.responses.create(model="echo", input=given, text={"format": JSON_OBJECT})
