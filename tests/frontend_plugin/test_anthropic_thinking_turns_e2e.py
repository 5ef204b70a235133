"""With thinking enabled, the last assistant turn starts with a thinking block, as
Anthropic's API requires.

Anthropic refuses, when ``thinking`` is ``enabled``, a prefill that is not a thinking block
(``"{"`` to start a JSON reply) and a tool loop's last assistant turn sent back without
the thinking block it began with (the usual bug of an agent loop keeping only the text
and tool calls): "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`,
but found `text`. When `thinking` is enabled, a final `assistant` message must start with
a thinking block ...". Both were served here, so such code passed against the frontend
and failed at its first real call.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

THINKING: Any = {"type": "enabled", "budget_tokens": 1024}
TOOLS: Any = [{"name": "weather", "input_schema": {"type": "object"}}]
ASK: Any = {"role": "user", "content": "weather in Paris?"}
THOUGHT: Any = {"type": "thinking", "thinking": "I should look it up.", "signature": "c2ln"}
CALL: Any = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
RESULT: Any = {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}


@pytest.mark.parametrize(("messages", "found"), [
    ([ASK, {"role": "assistant", "content": "{"}], "text"),  # a JSON prefill
    ([ASK, {"role": "assistant", "content": [{"type": "text", "text": "{"}]}], "text"),
    ([ASK, {"role": "assistant", "content": [CALL]}, RESULT], "tool_use"),
    ([ASK, {"role": "assistant", "content": [{"type": "text", "text": "Let me see."}, CALL]},
      RESULT], "text"),
])
def test_a_last_assistant_turn_without_its_thinking_is_refused(
    claude: anthropic.Anthropic, messages: Any, found: str
) -> None:
    said = (f"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{found}`. When `thinking` is enabled, a final `assistant` message must "
            "start with a thinking block")
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model="echo", max_tokens=2048, messages=messages,
                               thinking=THINKING, tools=TOOLS)
    assert (info.value.api_message or "").startswith(said), info.value.body
    with pytest.raises(anthropic.BadRequestError) as counted:
        claude.messages.count_tokens(model="echo", messages=messages, thinking=THINKING,
                                     tools=TOOLS)
    assert (counted.value.api_message or "").startswith(said), counted.value.body


def test_turns_that_keep_their_thinking_or_think_otherwise_are_served(
    claude: anthropic.Anthropic
) -> None:
    kept = [ASK, {"role": "assistant", "content": [THOUGHT, CALL]}, RESULT]
    redacted = [ASK, {"role": "assistant", "content": [
        {"type": "redacted_thinking", "data": "ZGF0YQ=="}, CALL]}, RESULT]
    # An earlier turn's thinking may be left out: only the last assistant turn's counts.
    earlier = [ASK, {"role": "assistant", "content": "It is sunny."},
               {"role": "user", "content": "and in Rome?"}]
    for messages in (kept, redacted, earlier):
        assert claude.messages.create(model="echo", max_tokens=2048, messages=messages,
                                      thinking=THINKING, tools=TOOLS).content
    unthought = [ASK, {"role": "assistant", "content": [CALL]}, RESULT]
    prefill = [ASK, {"role": "assistant", "content": "{"}]
    # Without thinking enabled (adaptive thinking may not think at all) both are served.
    for thinking in (None, {"type": "disabled"}, {"type": "adaptive"}):
        extra: Any = {} if thinking is None else {"thinking": thinking}
        for messages in (unthought, prefill):
            assert claude.messages.create(model="echo", max_tokens=2048, messages=messages,
                                          tools=TOOLS, **extra).content
