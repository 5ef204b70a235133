"""What Anthropic's API requires of a conversation when ``thinking`` is enabled.

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

__all__ = ["check_thinking_turns"]

_THINKING_BLOCKS = ("thinking", "redacted_thinking")


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
