"""Anthropic's ``thinking`` option, and what its API requires of a conversation when
thinking is enabled.

With ``thinking: {"type": "enabled"}`` the model's turn in progress starts with its
thinking, so the assistant message that turn began with must be sent back starting with
that ``thinking`` (or ``redacted_thinking``) block: a tool loop's history that kept only
the text and the ``tool_use`` blocks, and a prefill (a final assistant message) that is
not a thinking block, are refused. Adaptive thinking may not think at all, so it is not
held to this.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.tracing.identity import shown_text

__all__ = ["MIN_THINKING_BUDGET", "THINKING_TYPES", "check_thinking_config",
           "check_thinking_turns"]

_THINKING_BLOCKS = ("thinking", "redacted_thinking")
MIN_THINKING_BUDGET = 1024
"""Anthropic's least ``thinking.budget_tokens``."""
THINKING_TYPES = ("enabled", "disabled", "adaptive", "between_tools")
"""The ``thinking.type`` values Anthropic's API (and its SDK's types) know of."""
_DISPLAYS = ("summarized", "omitted")


def check_thinking_config(body: dict[str, Any], max_tokens: int | None) -> None:
    """``thinking``: an object whose ``type`` is one of :data:`THINKING_TYPES` and whose
    ``display``, if any, ``summarized`` or ``omitted``; ``enabled`` takes a
    ``budget_tokens`` from 1024 to below ``max_tokens`` (when there is one), as
    Anthropic's API checks it.

    Which of the types a model serves depends on the model, but a type none has (a typo,
    ``"enable"``; another API's word, ``"on"``) is refused by every one: served here, a
    request that "worked" asked for no thinking at all and failed at the real API.
    """
    thinking = body.get("thinking")
    if thinking is None:
        return
    if not isinstance(thinking, dict) or not isinstance(thinking.get("type"), str):
        sent = "" if isinstance(thinking, dict) else f", not {kind_of(thinking)}"
        raise InvalidRequest(f"'thinking' must be an object with a string 'type'{sent}",
                             param="thinking")
    if thinking["type"] not in THINKING_TYPES:
        # The type is the client's text: capped and escaped before it is logged.
        raise InvalidRequest(
            f"'thinking.type' must be one of {', '.join(THINKING_TYPES)}, not "
            f"'{shown_text(thinking['type'], 32)}'", param="thinking.type")
    display = thinking.get("display")
    if display is not None and display not in _DISPLAYS:
        raise InvalidRequest(f"'thinking.display' must be {' or '.join(_DISPLAYS)}",
                             param="thinking.display")
    if thinking["type"] == "enabled":
        budget = thinking.get("budget_tokens")
        below = f" and less than 'max_tokens' ({max_tokens})" if max_tokens else ""
        if (not isinstance(budget, int) or isinstance(budget, bool)
                or not MIN_THINKING_BUDGET <= budget < (max_tokens or budget + 1)):
            raise InvalidRequest(f"'thinking.budget_tokens' must be an integer of at least "
                                 f"{MIN_THINKING_BUDGET}{below}", param="thinking")


def check_thinking_turns(body: dict[str, Any]) -> None:
    """Refuse a Messages body whose turn in progress lost its thinking block, as
    Anthropic's API does when ``thinking`` is enabled. ``body["messages"]`` has been
    read by ``chat_prompt`` (a non-empty list of objects with a role)."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return
    turn = _turn_in_progress(body["messages"])
    if not turn or any(_first_block_type(body["messages"][i]) in _THINKING_BLOCKS
                       for i in turn):
        return
    index = turn[0]
    found = _first_block_type(body["messages"][index])
    if found is None:
        return  # an empty prefill: nothing was written in the model's place
    raise InvalidRequest(
        f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
        f"found `{found}`. When `thinking` is enabled, a final `assistant` message must "
        "start with a thinking block (preceeding the lastmost set of `tool_use` and "
        "`tool_result` blocks). We recommend you include thinking blocks from previous "
        "turns. To avoid this requirement, disable `thinking`.",
        param=f"messages[{index}].content[0]")


def _turn_in_progress(messages: list[Any]) -> list[int]:
    """The indexes of the assistant messages of the model's turn still in progress: a
    final assistant message (a prefill) and, going back, each assistant message whose
    tool calls the next user message answers with results. Empty when the last message
    begins a new turn (a user message without tool results)."""
    index = len(messages) - 1
    if messages[index].get("role") != "assistant":
        if not _holds_tool_results(messages[index]):
            return []
        index -= 1
    turn: list[int] = []
    while index >= 0 and messages[index].get("role") == "assistant":
        turn.insert(0, index)
        if index < 2 or not _holds_tool_results(messages[index - 1]):
            break
        index -= 2
    return turn


def _holds_tool_results(message: Any) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content)


def _first_block_type(message: Any) -> str | None:
    """The type of a message's first content block (a string content is ``text``);
    None when it has none."""
    content = message.get("content")
    if isinstance(content, str):
        return "text" if content else None
    if not isinstance(content, list) or not content:
        return None
    first = content[0]
    if isinstance(first, dict) and isinstance(first.get("type"), str):
        return str(first["type"])
    return kind_of(first)
