"""An Anthropic reply with no text has no content block, as Anthropic's API sends it.

A stop sequence at the very start of the reply empties it. Anthropic's API then answers
``content: []`` and streams ``message_start``, ``message_delta`` and ``message_stop``
with no ``content_block_*`` event between them. The frontend answered an empty ``text``
block instead, a block Anthropic's API (and this frontend) refuse as input ("text content
blocks must be non-empty"), and code reading ``content[0].text`` passed here and failed
with an ``IndexError`` against the real API.
"""

from __future__ import annotations

from typing import Any

import anthropic

CHAT: Any = [{"role": "user", "content": "nothing to say"}]
EMPTIES = {"stop_sequences": ["echo"]}  # every echo reply begins with it


def test_an_empty_reply_has_no_content_block(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(model="echo", max_tokens=16, messages=CHAT, **EMPTIES)
    assert message.content == []
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "echo")
    assert message.usage.output_tokens == 0


def test_an_empty_streamed_reply_opens_no_content_block(claude: anthropic.Anthropic) -> None:
    stream = claude.messages.create(model="echo", max_tokens=16, messages=CHAT, stream=True,
                                    **EMPTIES)
    events = list(stream)
    assert [event.type for event in events] == ["message_start", "message_delta",
                                                "message_stop"]
    with claude.messages.stream(model="echo", max_tokens=16, messages=CHAT,
                                **EMPTIES) as helper:
        final = helper.get_final_message()
    assert final.content == [] and final.stop_reason == "stop_sequence"


def test_a_reply_with_text_still_has_its_one_block(claude: anthropic.Anthropic) -> None:
    events = list(claude.messages.create(model="echo", max_tokens=16, messages=CHAT,
                                         stream=True, stop_sequences=["say"]))
    kinds = [event.type for event in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta"
                   and e.delta.type == "text_delta")
    assert text == "echo: user: nothing to "
    message = claude.messages.create(model="echo", max_tokens=16, messages=CHAT,
                                     stop_sequences=["say"])
    assert [block.type for block in message.content] == ["text"]
