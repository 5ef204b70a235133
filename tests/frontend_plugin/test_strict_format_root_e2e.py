"""A ``strict`` JSON schema format's root is an object, as OpenAI's strict mode takes it.

OpenAI's Structured Outputs take a root of ``type: object`` only (not an array, a
string or an ``anyOf``): a strict schema for a list of items (what zod's or a
hand-written ``{"type": "array"}`` gives) got ``[]`` here and a 400 from the real API
(``schema must be a JSON Schema of 'type: "object"', got 'type: "array"'``).
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

CHAT: Any = [{"role": "user", "content": "a list"}]
ITEM: Any = {"type": "object", "properties": {"name": {"type": "string"}},
             "required": ["name"], "additionalProperties": False}


@pytest.mark.parametrize(("schema", "got"), [
    ({"type": "array", "items": ITEM}, "array"),
    ({"type": "string"}, "string"),
    ({"anyOf": [ITEM]}, "None"),
])
def test_a_strict_format_whose_root_is_no_object_is_refused(
    oai: openai.OpenAI, schema: Any, got: str
) -> None:
    said = ("Invalid schema for response_format 'items': schema must be a JSON Schema of "
            f"""'type: "object"', got 'type: "{got}"'.""")
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(model="echo", messages=CHAT, stream=stream,
                                        response_format={"type": "json_schema", "json_schema": {
                                            "name": "items", "schema": schema, "strict": True}})
        assert info.value.param == "response_format", info.value.body
        assert info.value.message.endswith(said)
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="a list", text={"format": {
            "type": "json_schema", "name": "items", "schema": schema, "strict": True}})
    assert info.value.param == "text.format.schema", info.value.body
    assert info.value.message.endswith(said)


def test_the_same_root_is_served_when_not_strict(oai: openai.OpenAI) -> None:
    reply = oai.chat.completions.create(model="echo", messages=CHAT, response_format={
        "type": "json_schema", "json_schema": {"name": "items", "strict": False,
                                               "schema": {"type": "array", "items": ITEM}}})
    assert reply.choices[0].message.content == "[]"
    wrapped = {"type": "object", "properties": {"items": {"type": "array", "items": ITEM}},
               "required": ["items"], "additionalProperties": False}
    reply = oai.chat.completions.create(model="echo", messages=CHAT, response_format={
        "type": "json_schema", "json_schema": {"name": "items", "strict": True,
                                               "schema": wrapped}})
    assert reply.choices[0].message.content == '{"items": []}'
