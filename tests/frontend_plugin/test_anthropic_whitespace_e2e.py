"""Whitespace in /v1/messages text, checked as Anthropic's API checks it.

Anthropic's API refuses a text that is only whitespace ("text content blocks must
contain non-whitespace text": a padding turn of " ", a turn whose words a template left
out) and a prefill that ends in whitespace ("final assistant content cannot end with
trailing whitespace": ``"The answer is "``, the usual prefill slip). Both were answered
here, so code that sent them worked until it met the real API.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

ASK: Any = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(("messages", "where", "says"), [
    ([{"role": "user", "content": "  "}], "messages[0].content",
     "text content blocks must contain non-whitespace text"),
    ([{"role": "user", "content": [{"type": "text", "text": "a"},
                                   {"type": "text", "text": "\n\t"}]}],
     "messages[0].content[1]", "text content blocks must contain non-whitespace text"),
    ([ASK, {"role": "assistant", "content": [{"type": "text", "text": " "}]}, ASK],
     "messages[1].content[0]", "text content blocks must contain non-whitespace text"),
    ([ASK, {"role": "assistant", "content": "The answer is "}], "messages[1].content",
     "final assistant content cannot end with trailing whitespace"),
    ([ASK, {"role": "assistant", "content": [{"type": "text", "text": "{"},
                                             {"type": "text", "text": "\"a\":\n"}]}],
     "messages[1].content[1]", "final assistant content cannot end with trailing whitespace"),
])
def test_whitespace_anthropic_refuses_is_refused(
    claude: anthropic.Anthropic, messages: Any, where: str, says: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=8, messages=messages)
    assert refused.value.type == "invalid_request_error"
    assert f"'{where}': {says}" in (refused.value.api_message or ""), refused.value.body
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=messages)


def test_whitespace_anthropic_takes_is_served(claude: anthropic.Anthropic) -> None:
    # Whitespace around words, a user turn ending in a newline, an earlier assistant
    # turn ending in a space, and an empty prefill are all taken by the API.
    reply = claude.messages.create(model="echo", max_tokens=64, messages=[
        {"role": "user", "content": " hi\n"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello "}]},
        {"role": "user", "content": [{"type": "text", "text": "again "}]},
        {"role": "assistant", "content": "Sure,"}])
    assert reply.content[0].text == (  # type: ignore[union-attr]
        "echo: user:  hi\n\nassistant: hello \nuser: again \nassistant: Sure,")
    prefill = claude.messages.create(model="echo", max_tokens=16, messages=[
        ASK, {"role": "assistant", "content": ""}])
    assert prefill.stop_reason in ("end_turn", "max_tokens")
