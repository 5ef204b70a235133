"""Prompt-caching breakpoints (``cache_control``) are checked as Anthropic checks them.

Anthropic's API takes at most 4 blocks with ``cache_control`` in a request (tools,
system blocks and message blocks together: "A maximum of 4 blocks with cache_control
may be provided"), each an ``ephemeral`` one with a ``ttl`` of ``5m`` or ``1h``. Code
that marks every turn of a growing conversation passes 4 on its fifth turn: it was
served here and refused by the real API, as were a ``ttl`` of ``10m`` or another type.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

CACHED: Any = {"type": "ephemeral"}


def _turns(count: int, cache_control: Any = CACHED) -> Any:
    """``count`` user turns (with assistant turns between), each block marked."""
    messages: list[Any] = []
    for number in range(count):
        if messages:
            messages.append({"role": "assistant", "content": f"reply {number}"})
        messages.append({"role": "user", "content": [
            {"type": "text", "text": f"turn {number}", "cache_control": cache_control}]})
    return messages


@pytest.mark.parametrize(("extra", "says"), [
    ({"messages": _turns(5)}, "A maximum of 4 blocks with cache_control may be provided. "
     "Found 5."),
    ({"messages": _turns(3), "system": [{"type": "text", "text": "be brief",
                                         "cache_control": CACHED}],
      "tools": [{"name": "lookup", "input_schema": {"type": "object"},
                 "cache_control": CACHED}]},
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    ({"messages": _turns(1, {"type": "ephemeral", "ttl": "10m"})},
     "'messages[0].content[0].cache_control'"),
    ({"messages": _turns(1, {"type": "persistent"})}, "'messages[0].content[0].cache_control'"),
    ({"messages": _turns(1), "system": [{"type": "text", "text": "s", "cache_control": "on"}]},
     "'system[0].cache_control'"),
])
def test_cache_control_anthropic_refuses_is_refused(
    claude: anthropic.Anthropic, extra: dict[str, Any], says: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=8, **extra)
    assert says in (refused.value.api_message or ""), refused.value.body
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", **extra)


def test_four_breakpoints_with_the_ttls_anthropic_takes_are_served(
    claude: anthropic.Anthropic,
) -> None:
    messages = _turns(3, {"type": "ephemeral", "ttl": "1h"})
    system: Any = [{"type": "text", "text": "be brief",
                    "cache_control": {"type": "ephemeral", "ttl": "5m"}}]
    reply = claude.messages.create(model="echo", max_tokens=64, messages=messages,
                                   system=system)
    assert reply.content[0].text.startswith("echo: system: be brief")  # type: ignore[union-attr]
