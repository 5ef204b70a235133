"""A /v1/messages message's content blocks, checked as Anthropic's API checks them.

Each was served here and refused by the real API (400), so code tested against the
frontend broke at its first real call: a plain string in a content list, a block of a
type the API does not know, a ``tool_use`` in a user message (or a ``tool_result`` in
an assistant one), an empty text block in a ``tool_result``, base64 image or document data that is
not base64.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest


def _refused(claude: anthropic.Anthropic, messages: Any, says: str, max_tokens: int = 16,
             **options: Any) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=max_tokens, messages=messages,
                               **options)
    assert says in (refused.value.api_message or ""), refused.value.body
    with pytest.raises(anthropic.BadRequestError) as counted:
        claude.messages.count_tokens(model="echo", messages=messages, **options)
    assert says in (counted.value.api_message or ""), counted.value.body


@pytest.mark.parametrize(("content", "says"), [
    (["hello"], "'messages[0].content[0]' must be a content block object"),
    ([{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}],
     "'messages[0].content[1].type': 'input_text' is not a content block type"),
    ([{"text": "no type"}], "'messages[0].content[0].type': null is not a content block"),
    # Unhashable: the lookup of the type raised, a plain-text 500 and a dropped connection.
    ([{"type": [None], "text": "a"}], "'messages[0].content[0].type': array is not a content"),
    ([{"type": {}, "text": "a"}], "'messages[0].content[0].type': object is not a content"),
])
def test_a_content_item_anthropic_refuses_is_refused(
    claude: anthropic.Anthropic, content: Any, says: str
) -> None:
    _refused(claude, [{"role": "user", "content": content}], says)


def test_the_block_types_anthropic_takes_are_served(claude: anthropic.Anthropic) -> None:
    content: Any = [{"type": "text", "text": "look"}, {"type": "search_result",
                    "source": "https://example.com", "title": "t",
                    "content": [{"type": "text", "text": "found"}]}]
    reply = claude.messages.create(model="echo", max_tokens=16,
                                   messages=[{"role": "user", "content": content}])
    assert reply.content[0].text == "echo: user: look"  # type: ignore[union-attr]


CALL: Any = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
RESULT: Any = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
TOOLS: Any = [{"name": "weather", "input_schema": {"type": "object"}}]


@pytest.mark.parametrize(("messages", "says"), [
    # A loop that put the call and its result in one user message.
    ([{"role": "user", "content": [{"type": "text", "text": "weather?"}, CALL]}],
     "'messages[0].content[1]': `tool_use` blocks can only be in `assistant` messages"),
    ([{"role": "user", "content": "weather?"},
      {"role": "assistant", "content": [CALL, RESULT]}],
     "'messages[1].content[1]': `tool_result` blocks can only be in `user` messages"),
])
def test_a_tool_block_in_the_other_role_is_refused(
    claude: anthropic.Anthropic, messages: Any, says: str
) -> None:
    _refused(claude, messages, says, tools=TOOLS)


@pytest.mark.parametrize("text", ["", "  \n"])
def test_an_empty_text_in_a_tool_result_is_refused(claude: anthropic.Anthropic,
                                                   text: str) -> None:
    # A tool whose output came out empty, wrapped in a text block by the loop.
    result: Any = {"type": "tool_result", "tool_use_id": "toolu_1",
                   "content": [{"type": "text", "text": text}]}
    messages: Any = [{"role": "user", "content": "weather?"},
                     {"role": "assistant", "content": [CALL]},
                     {"role": "user", "content": [result]}]
    _refused(claude, messages, "'messages[2].content[0].content[0]': text content blocks "
             "must", tools=TOOLS)


@pytest.mark.parametrize("data", ["data:image/png;base64,iVBORw0KGgo=", "/tmp/cat.png", ""])
def test_base64_data_that_is_not_base64_is_refused(claude: anthropic.Anthropic,
                                                   data: str) -> None:
    image: Any = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                              "data": data}}
    pdf: Any = {"type": "document", "source": {"type": "base64",
                                               "media_type": "application/pdf", "data": data}}
    for block in (image, pdf):
        _refused(claude, [{"role": "user", "content": [block, {"type": "text", "text": "?"}]}],
                 "'messages[0].content[0].source.data'")


def test_base64_data_wrapped_in_lines_is_served(claude: anthropic.Anthropic) -> None:
    # What the `base64` command writes (lines of 76): taken, not refused.
    image: Any = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                              "data": "iVBORw0K\nGgo=\n"}}
    assert claude.messages.count_tokens(model="echo", messages=[
        {"role": "user", "content": [image, {"type": "text", "text": "what is it"}]}],
    ).input_tokens == 4


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "weather"}])
def test_thinking_with_a_forced_tool_choice_is_refused(claude: anthropic.Anthropic,
                                                       choice: Any) -> None:
    # Anthropic's documented rule: with thinking, tool_choice is auto or none only.
    # count_tokens counted such a body (it counts a forced choice without thinking).
    _refused(claude, [{"role": "user", "content": "weather?"}],
             "Thinking may not be enabled when tool_choice forces tool use", 2048, tools=TOOLS,
             tool_choice=choice, thinking={"type": "enabled", "budget_tokens": 1024})


def test_a_message_field_other_than_role_and_content_is_refused(
    claude: anthropic.Anthropic
) -> None:
    # Anthropic's API answers 400 "messages.1.id: Extra inputs are not permitted" for an
    # app's own field left on its history; it was served here.
    messages: Any = [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": "hello", "id": "m-2"},
                     {"role": "user", "content": "again"}]
    _refused(claude, messages, "messages.1.id: Extra inputs are not permitted")
    del messages[1]["id"]
    assert claude.messages.create(model="echo", max_tokens=16, messages=messages).content


def test_a_block_field_its_type_does_not_have_is_refused(claude: anthropic.Anthropic) -> None:
    # Anthropic answers 400 "messages.1.content.0.tool_use.index: Extra inputs are not
    # permitted" (a streamed block's index kept on the block sent back); it was served here.
    call = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}, "index": 0}
    messages: Any = [{"role": "user", "content": "w"},
                     {"role": "assistant", "content": [call]},
                     {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]}]
    tools: Any = [{"name": "lookup", "input_schema": {"type": "object"}}]
    _refused(claude, messages, "messages.1.content.0.tool_use.index: Extra inputs are not "
             "permitted", tools=tools)
    del call["index"]
    assert claude.messages.create(model="echo", max_tokens=16, messages=messages,
                                  tools=tools).content
    # A reply's blocks sent back as the SDK gives them are served.
    reply = claude.messages.create(model="echo", max_tokens=16, messages=messages[:1])
    again = [*messages[:1], {"role": "assistant", "content": reply.content},
             {"role": "user", "content": [{"type": "text", "text": "more",
                                           "cache_control": {"type": "ephemeral"}}]}]
    assert claude.messages.create(model="echo", max_tokens=32, messages=again).content
