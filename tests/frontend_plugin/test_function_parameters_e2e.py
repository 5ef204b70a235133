"""A function tool's ``parameters`` is a JSON schema object, as OpenAI checks it.

A schema sent as its JSON text (``json.dumps(schema)``, a common slip when a tool's
definition is read from a file) or as a list was served here and refused by the real
API (400 ``Invalid type for 'tools[0].function.parameters': expected an object``), so
tool definitions tested against the frontend broke at the first real call.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

CHAT: Any = [{"role": "user", "content": "weather?"}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


@pytest.mark.parametrize("parameters", [json.dumps(SCHEMA), [SCHEMA], 7])
def test_parameters_that_are_no_object_are_refused(oai: openai.OpenAI, parameters: Any) -> None:
    with pytest.raises(openai.BadRequestError) as chat:
        oai.chat.completions.create(model="echo", messages=CHAT, tools=[{
            "type": "function", "function": {"name": "weather", "parameters": parameters}}])
    assert chat.value.param == "tools[0].function.parameters"
    assert "expected an object" in chat.value.message
    with pytest.raises(openai.BadRequestError) as legacy:
        oai.chat.completions.create(model="echo", messages=CHAT, functions=[
            {"name": "weather", "parameters": parameters}])
    assert legacy.value.param == "functions[0].parameters"
    with pytest.raises(openai.BadRequestError) as responses:
        oai.responses.create(model="echo", input="weather?", tools=[{
            "type": "function", "name": "weather", "parameters": parameters,
            "strict": False}])
    assert responses.value.param == "tools[0].parameters"


def test_function_tools_with_a_schema_or_none_are_served(oai: openai.OpenAI) -> None:
    for function in ({"name": "weather", "parameters": SCHEMA}, {"name": "weather"}):
        reply = oai.chat.completions.create(model="echo", messages=CHAT, tools=[
            {"type": "function", "function": function}])  # type: ignore[list-item, misc]
        assert reply.choices[0].message.content == "echo: user: weather?"
    for parameters in (SCHEMA, None):
        response = oai.responses.create(model="echo", input="weather?", tools=[{
            "type": "function", "name": "weather", "parameters": parameters, "strict": False}])
        assert response.output_text == "echo: user: weather?"


@pytest.mark.parametrize(("parameters", "got"), [
    ({"type": "string"}, "string"),
    # An MCP tool's schema without its type (a Zod schema converted by hand, say).
    ({"properties": {"city": {"type": "string"}}}, "None"),
])
def test_parameters_that_are_no_object_schema_are_refused(
    oai: openai.OpenAI, parameters: Any, got: str
) -> None:
    # A function's arguments are an object: OpenAI refuses any other schema for them.
    says = (f"Invalid schema for function 'weather': schema must be a JSON Schema of "
            f"'type: \"object\"', got 'type: \"{got}\"'.")
    for param, call in (
        ("tools[0].function.parameters", lambda: oai.chat.completions.create(
            model="echo", messages=CHAT, tools=[{"type": "function", "function": {
                "name": "weather", "parameters": parameters}}])),
        ("tools[0].parameters", lambda: oai.responses.create(
            model="echo", input="weather?", tools=[{
                "type": "function", "name": "weather", "parameters": parameters,
                "strict": False}])),
    ):
        with pytest.raises(openai.BadRequestError) as info:
            call()
        assert (info.value.param, info.value.code) == (param, "invalid_function_parameters")
        assert says in info.value.message, info.value.body
