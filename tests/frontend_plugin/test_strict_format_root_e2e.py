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


def test_a_strict_that_is_no_boolean_is_refused(oai: openai.OpenAI) -> None:
    # "true" (read from a config file or an environment variable) was served here as not
    # strict, schema unchecked; OpenAI answers 400 naming the field.
    loose: Any = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, response_format={
            "type": "json_schema", "json_schema": {"name": "items", "schema": loose,
                                                   "strict": "true"}})  # type: ignore[typeddict-item]
    assert info.value.param == "response_format.json_schema.strict", info.value.body
    assert info.value.message.endswith(
        "Invalid type for 'response_format.json_schema.strict': expected a boolean, but got "
        "a string instead.")
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="a list", text={"format": {
            "type": "json_schema", "name": "items", "schema": loose, "strict": 1}})  # type: ignore[typeddict-item]
    assert info.value.param == "text.format.strict", info.value.body
    assert oai.chat.completions.create(model="echo", messages=CHAT, response_format={
        "type": "json_schema", "json_schema": {"name": "items", "schema": loose,
                                               "strict": None}}).id  # type: ignore[typeddict-item]


def test_a_function_tools_strict_that_is_no_boolean_is_refused(oai: openai.OpenAI) -> None:
    # As a format's: "true" was served as not strict, its parameters unchecked.
    function: Any = {"name": "lookup", "parameters": {"type": "object"}, "strict": "true"}
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, tools=[
            {"type": "function", "function": function}])
    assert info.value.param == "tools[0].function.strict", info.value.body
    assert info.value.message.endswith(
        "Invalid type for 'tools[0].function.strict': expected a boolean, but got a string "
        "instead.")
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="x", tools=[{"type": "function", **function}])
    assert info.value.param == "tools[0].strict", info.value.body
    function["strict"] = None
    assert oai.chat.completions.create(model="echo", messages=CHAT, tools=[
        {"type": "function", "function": function}]).id
