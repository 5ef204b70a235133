"""A ``strict`` JSON schema response format through the openai SDK, checked as OpenAI
checks it: every object lists all its properties in ``required`` and sets
``additionalProperties: false``. A hand-written schema missing either got a JSON reply
here and a 400 from the real API, its most common structured-output error.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from pydantic import BaseModel

CHAT: Any = [{"role": "user", "content": "structured"}]
CLOSED: Any = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
               "additionalProperties": False}


def _both(oai: openai.OpenAI, schema: Any, *, strict: bool) -> tuple[Any, Any]:
    chat = oai.chat.completions.create(model="echo", messages=CHAT, response_format={
        "type": "json_schema", "json_schema": {"name": "answer", "schema": schema,
                                               "strict": strict}})
    responses = oai.responses.create(model="echo", input="structured", text={"format": {
        "type": "json_schema", "name": "answer", "schema": schema, "strict": strict}})
    return chat, responses


@pytest.mark.parametrize(("schema", "says"), [
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
     "'additionalProperties' is required to be supplied and to be false"),
    ({**CLOSED, "required": []}, "Missing 'a'"),
    ({**CLOSED, "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {
        "type": "object", "properties": {"c": {"type": "integer"}}, "required": ["c"]}}},
      "required": ["a", "b"]}, "'additionalProperties'"),
    ({**CLOSED, "properties": {"a": {"$ref": "#/$defs/inner"}}, "$defs": {"inner": {
        "type": "object", "properties": {"d": {"type": "string"}},
        "additionalProperties": False}}}, "Missing 'd'"),
])
def test_a_strict_schema_openai_refuses_is_refused(
    oai: openai.OpenAI, schema: Any, says: str
) -> None:
    for param, call in (
        ("response_format", lambda: _both(oai, schema, strict=True)[0]),
        ("text.format.schema", lambda: oai.responses.create(
            model="echo", input="x", text={"format": {
                "type": "json_schema", "name": "answer", "schema": schema, "strict": True}})),
    ):
        with pytest.raises(openai.BadRequestError) as info:
            call()
        assert info.value.param == param, info.value.body
        assert says in info.value.message and "'answer'" in info.value.message


def test_the_same_schemas_are_served_when_not_strict_and_closed_ones_when_strict(
    oai: openai.OpenAI,
) -> None:
    loose: Any = {"type": "object", "properties": {"a": {"type": "string"}}}
    chat, responses = _both(oai, loose, strict=False)
    assert chat.choices[0].message.content == '{"a": "echo: user: structured"}'
    assert responses.output_text == '{"a": "echo: user: structured"}'
    chat, responses = _both(oai, CLOSED, strict=True)
    assert chat.choices[0].message.content == '{"a": "echo: user: structured"}'

    class Inner(BaseModel):
        d: str

    class Outer(BaseModel):
        a: str
        inner: Inner
        many: list[Inner]
        maybe: Inner | None

    # The SDKs' parse helpers send strict schemas that pass.
    parsed = oai.chat.completions.parse(model="echo", messages=CHAT, response_format=Outer)
    assert parsed.choices[0].message.parsed is not None
    assert oai.responses.parse(model="echo", input="x", text_format=Outer).output_parsed


OPEN: Any = {"type": "object", "properties": {"city": {"type": "string"}}}


def _tool_calls(oai: openai.OpenAI, parameters: Any, *, strict: bool) -> list[Any]:
    """A chat call and a Responses call, each with one function tool ``lookup``."""
    return [
        lambda: oai.chat.completions.create(model="echo", messages=CHAT, tools=[{
            "type": "function", "function": {"name": "lookup", "parameters": parameters,
                                             "strict": strict}}]),
        lambda: oai.responses.create(model="echo", input="structured", tools=[{
            "type": "function", "name": "lookup", "parameters": parameters,
            "strict": strict}]),
    ]


def test_a_strict_function_tool_openai_refuses_is_refused(oai: openai.OpenAI) -> None:
    # Strict mode holds a function's parameters to the rules of a strict format: served
    # here, such a tool list failed every call at the real API.
    for param, call in zip(("tools[0].function.parameters", "tools[0].parameters"),
                           _tool_calls(oai, OPEN, strict=True), strict=True):
        with pytest.raises(openai.BadRequestError) as info:
            call()
        assert info.value.param == param, info.value.body
        assert info.value.code == "invalid_function_parameters", info.value.body
        assert "Invalid schema for function 'lookup': In context=(), 'additionalProperties'" in (
            info.value.message)
    for call in (*_tool_calls(oai, OPEN, strict=False), *_tool_calls(oai, CLOSED, strict=True)):
        assert call().id

    class Place(BaseModel):
        name: str

    class Lookup(BaseModel):
        city: str
        nearby: list[Place]

    # The SDK's own strict tools pass.
    assert oai.chat.completions.parse(
        model="echo", messages=CHAT, tools=[openai.pydantic_function_tool(Lookup)]).id
