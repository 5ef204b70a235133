"""A chat or Responses message without content is refused, as OpenAI refuses it.

The usual client bug this catches: a conversation built by code that dropped a turn's
text (``{"role": "user", "content": None}``). OpenAI answers 400 naming the message;
the frontend answered ``echo: user: `` as if the turn had been sent empty, so such code
"worked" here until it met the real API.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

MISSING: list[tuple[list[dict[str, Any]], str]] = [
    ([{"role": "user"}], "messages[0].content"),
    ([{"role": "user", "content": None}], "messages[0].content"),
    ([{"role": "user", "content": []}], "messages[0].content"),
    ([{"role": "system", "content": None}, {"role": "user", "content": "hi"}],
     "messages[0].content"),
    ([{"role": "developer"}, {"role": "user", "content": "hi"}], "messages[0].content"),
    ([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": None, "tool_calls": [{
          "id": "call_1", "type": "function",
          "function": {"name": "lookup", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_1"}], "messages[2].content"),
]


@pytest.mark.parametrize(("messages", "where"), MISSING)
def test_a_chat_message_without_content_is_refused(
    oai: openai.OpenAI, messages: list[dict[str, Any]], where: str
) -> None:
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as refused:
            oai.chat.completions.create(model="echo", messages=messages,  # type: ignore[arg-type]
                                        stream=stream)
        assert refused.value.param == where, messages
        assert f"'{where}'" in refused.value.message


@pytest.mark.parametrize("item", [
    {"role": "user"}, {"role": "user", "content": None}, {"role": "user", "content": []},
    {"type": "message", "role": "developer", "content": None},
])
def test_a_responses_message_without_content_is_refused(
    oai: openai.OpenAI, item: dict[str, Any]
) -> None:
    items: Any = [{"role": "user", "content": "hi"}, item]
    with pytest.raises(openai.BadRequestError) as refused:
        oai.responses.create(model="echo", input=items)
    assert refused.value.param == "input[1].content"
    with pytest.raises(openai.BadRequestError):
        oai.responses.input_tokens.count(model="echo", input=items)


def test_messages_the_api_takes_without_text_are_still_served(oai: openai.OpenAI) -> None:
    # An empty string is content; an assistant turn that only called a tool (or only
    # refused) has none, as the SDKs send it back.
    chat = oai.chat.completions.create(model="echo", messages=[
        {"role": "user", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "content": "found", "tool_call_id": "call_1"},
        {"role": "assistant", "refusal": "no"},
        {"role": "user", "content": "go on"}])
    assert chat.choices[0].message.content == (
        "echo: user: \nassistant: \ntool: found\nassistant: \nuser: go on")
    reply = oai.responses.create(model="echo", input=[
        {"role": "user", "content": ""}, {"role": "user", "content": "go on"}])
    assert reply.output_text == "echo: user: \nuser: go on"


@pytest.mark.parametrize(("image_url", "param", "says"), [
    # The URL as the part's value (as some older clients wrote it): an object there.
    ("https://example.com/cat.png", "messages[0].content[1].image_url",
     "expected an object, but got a string instead"),
    ({"detail": "low"}, "messages[0].content[1].image_url.url", "Missing required parameter"),
    (None, "messages[0].content[1].image_url", "Missing required parameter"),
])
def test_a_chat_image_part_openai_refuses_is_refused(
    oai: openai.OpenAI, image_url: Any, param: str, says: str
) -> None:
    part: Any = {"type": "image_url", "image_url": image_url}
    messages: Any = [{"role": "user", "content": [{"type": "text", "text": "what is it?"}, part]}]
    with pytest.raises(openai.BadRequestError) as refused:
        oai.chat.completions.create(model="echo", messages=messages)
    assert refused.value.param == param, refused.value.body
    assert says in refused.value.message
    part["image_url"] = {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}
    assert oai.chat.completions.create(model="echo", messages=messages).choices[
        0].message.content == "echo: user: what is it?"
