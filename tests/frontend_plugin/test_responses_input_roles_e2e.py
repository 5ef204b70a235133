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


def test_a_content_part_type_openai_does_not_take_is_refused(oai: openai.OpenAI) -> None:
    # Chat's "text" part (the usual slip when moving from chat completions) was served
    # as if it were input_text; OpenAI's Responses API answers 400 naming the part.
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as bad:
            oai.responses.create(model="echo", stream=stream, input=[  # type: ignore[call-overload]
                {"role": "user", "content": [{"type": "input_text", "text": "a"},
                                             {"type": "text", "text": "b"}]}])
        assert bad.value.param == "input[0].content[1].type"
        assert "Invalid value: 'text'." in bad.value.message
    reply = oai.responses.create(model="echo", input=[
        {"role": "user", "content": [{"type": "input_text", "text": "a"},
                                     {"type": "input_image", "image_url": "https://x/y.png",
                                      "detail": "auto"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "b",
                                           "annotations": []}]},
        {"role": "user", "content": "c"}])
    assert reply.output_text == "echo: user: a\nassistant: b\nuser: c"


def test_an_item_type_openai_does_not_have_is_refused(oai: openai.OpenAI) -> None:
    # A misspelt item (here function_call_result for function_call_output) was left out
    # as if it were a call the engine need not read: the tool's result was silently lost.
    with pytest.raises(openai.BadRequestError) as bad:
        oai.responses.create(model="echo", input=[  # type: ignore[list-item]
            {"role": "user", "content": "a"},
            {"type": "function_call_result", "call_id": "c1", "output": "42"}])
    assert bad.value.param == "input[1].type"
    assert "Invalid value: 'function_call_result'." in bad.value.message
    reply = oai.responses.create(model="echo", input=[
        {"role": "user", "content": "a"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": "b"},
        {"role": "user", "content": "c"}])
    assert reply.output_text == "echo: user: a\nassistant: b\nuser: c"


def test_a_custom_tool_result_reaches_the_engine_as_a_function_result_does(
    oai: openai.OpenAI
) -> None:
    # A custom (freeform) tool's custom_tool_call_output was left out as a call the
    # engine need not read: the reply answered as if the tool had never run.
    reply = oai.responses.create(model="echo", tools=[{"type": "custom", "name": "t"}], input=[
        {"role": "user", "content": "a"},
        {"type": "custom_tool_call", "call_id": "c1", "name": "t", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "42"}])
    assert reply.output_text == "echo: user: a\ntool: 42"


def test_a_field_a_message_item_does_not_have_is_refused(oai: openai.OpenAI) -> None:
    # OpenAI's Responses API answers 400 unknown_parameter for a field a message item does
    # not have (an app's timestamp or metadata left on its history); it was served here.
    # Its chat ignores such a field, and so does /v1/chat/completions.
    items: Any = [{"role": "user", "content": "hi"},
                  {"role": "user", "content": "again", "metadata": {"at": "noon"}}]
    for count in (False, True):
        with pytest.raises(openai.BadRequestError) as refused:
            if count:
                oai.responses.input_tokens.count(model="echo", input=items)
            else:
                oai.responses.create(model="echo", input=items)
        assert (refused.value.param, refused.value.code) == ("input[1].metadata",
                                                             "unknown_parameter")
        assert refused.value.message.endswith("Unknown parameter: 'input[1].metadata'.")
    assert oai.chat.completions.create(model="echo", messages=items).choices[0].message.content
    # An output message sent back as the SDK gives it (id, status, phase) is served.
    first = oai.responses.create(model="echo", input="hi")
    again = oai.responses.create(model="echo", input=[
        {"role": "user", "content": "hi"}, *[item.model_dump() for item in first.output],
        {"role": "user", "content": "again"}])
    assert again.output_text == "echo: user: hi\nassistant: echo: user: hi\nuser: again"


def test_a_field_a_function_call_item_does_not_have_is_refused(oai: openai.OpenAI) -> None:
    # responses.parse's parsed_arguments sent back on a function call (or an app's field
    # on its output) is OpenAI's 400 unknown_parameter; it was served here.
    call: Any = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}",
                 "parsed_arguments": {}}
    result: Any = {"type": "function_call_output", "call_id": "c1", "output": "r"}
    for wrong, at in ((call, "input[1].parsed_arguments"), (result, "input[2].took_ms")):
        result["took_ms"] = 3
        with pytest.raises(openai.BadRequestError) as refused:
            oai.responses.create(model="echo", input=[
                {"role": "user", "content": "w"}, call, result])
        assert (refused.value.param, refused.value.code) == (at, "unknown_parameter")
        del wrong[at.rpartition(".")[2]]
    reply = oai.responses.create(model="echo", input=[
        {"role": "user", "content": "w"}, {**call, "id": "fc_1", "status": "completed"},
        result])
    assert reply.output_text == "echo: user: w\ntool: r"


@pytest.mark.parametrize(("items", "param"), [
    # A bare string is no content part: it was taken as text, and input_tokens counted it.
    ([{"role": "user", "content": ["s", "t"]}], "input[0].content[0]"),
    # A type that is no string: the item was served as a message.
    ([{"role": "user", "content": "hi", "type": 1}], "input[0].type"),
])
def test_an_item_or_part_of_the_wrong_shape_is_refused(
    oai: openai.OpenAI, items: Any, param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        oai.responses.create(model="echo", input=items)
    assert refused.value.param == param
    with pytest.raises(openai.BadRequestError):
        oai.responses.input_tokens.count(model="echo", input=items)


@pytest.mark.parametrize(("conversation", "param"), [
    (0, "conversation"), (["x"], "conversation"), ({"name": "c"}, "conversation.id")])
def test_a_conversation_of_the_wrong_type_is_a_400_naming_it(
    oai: openai.OpenAI, conversation: Any, param: str
) -> None:
    # It was a 404 "Conversation with id 'integer' not found".
    with pytest.raises(openai.BadRequestError) as refused:
        oai.responses.create(model="echo", input="hi", conversation=conversation)
    assert refused.value.param == param and "expected a string" in refused.value.message
