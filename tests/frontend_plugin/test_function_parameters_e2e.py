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
