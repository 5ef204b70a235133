"""An image block's media type is one Anthropic's API takes.

A base64 image on /v1/messages must say ``image/jpeg``, ``image/png``, ``image/gif`` or
``image/webp``. ``image/jpg`` (the usual slip, from a file's extension) or a BMP was
served here and refused there (400), so code tested against the frontend broke at its
first real call with a picture.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

PNG = "iVBORw0KGgo="


def _with_image(media_type: str) -> Any:
    return [{"role": "user", "content": [
        {"type": "text", "text": "describe"},
        {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": PNG}}]}]


@pytest.mark.parametrize("media_type", ["image/jpg", "image/bmp", "png", ""])
def test_a_media_type_anthropic_refuses_is_refused(
    claude: anthropic.Anthropic, media_type: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=16, messages=_with_image(media_type))
    message = refused.value.api_message or ""
    assert "'messages[0].content[1].source.media_type'" in message, refused.value.body
    assert "image/jpeg, image/png, image/gif or image/webp" in message
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=_with_image(media_type))


@pytest.mark.parametrize("media_type", ["image/jpeg", "image/png", "image/gif", "image/webp"])
def test_the_media_types_anthropic_takes_are_served(
    claude: anthropic.Anthropic, media_type: str
) -> None:
    reply = claude.messages.create(model="echo", max_tokens=16, messages=_with_image(media_type))
    assert reply.content[0].text == "echo: user: describe"  # type: ignore[union-attr]
    url: Any = [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
        {"type": "text", "text": "describe"}]}]
    assert claude.messages.count_tokens(model="echo", messages=url).input_tokens == 2


def _in_tool_result(media_type: str) -> Any:
    return [{"role": "user", "content": "take a screenshot"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": [{"type": "image", "source": {
                                              "type": "base64", "media_type": media_type,
                                              "data": PNG}}]}]}]


def test_an_image_in_a_tool_result_is_held_to_the_same_types(
    claude: anthropic.Anthropic,
) -> None:
    # A screenshot tool's result is where "image/jpg" turns up most: it was served.
    tools: Any = [{"name": "screenshot", "input_schema": {"type": "object"}}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=16, tools=tools,
                               messages=_in_tool_result("image/jpg"))
    assert "'messages[2].content[0].content[0].source.media_type'" in (
        refused.value.api_message or ""), refused.value.body
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", tools=tools,
                                     messages=_in_tool_result("image/jpg"))
    assert claude.messages.create(model="echo", max_tokens=16, tools=tools,
                                  messages=_in_tool_result("image/png"))
