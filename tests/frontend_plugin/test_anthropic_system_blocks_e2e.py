"""A ``system`` text block is held to the rules of a message's text blocks.

Anthropic's API refuses an empty text block, or one of only whitespace, wherever it
is: in ``system`` as in a message ("text content blocks must be non-empty"). A system
prompt built from a template whose variable came out empty was served here (the
message's blocks were refused, the system's were not), and refused by the real API.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

ASK: Any = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(("system", "where", "says"), [
    ([{"type": "text", "text": ""}], "system[0]", "text content blocks must be non-empty"),
    ([{"type": "text", "text": "be brief"}, {"type": "text", "text": " \n"}], "system[1]",
     "text content blocks must contain non-whitespace text"),
])
def test_an_empty_system_block_is_refused_as_the_api_refuses_it(
    claude: anthropic.Anthropic, system: Any, where: str, says: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=8, messages=ASK, system=system)
    assert f"'{where}': {says}" in (refused.value.api_message or ""), refused.value.body
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=ASK, system=system)


def test_system_blocks_with_text_are_served(claude: anthropic.Anthropic) -> None:
    system: Any = [{"type": "text", "text": " be brief "}, {"type": "text", "text": "ok"}]
    reply = claude.messages.create(model="echo", max_tokens=16, messages=ASK, system=system)
    assert reply.content[0].text == "echo: system:  be brief \nok\nuser: hi"  # type: ignore[union-attr]
