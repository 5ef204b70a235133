"""A Messages API message's content blocks, checked as Anthropic's API checks them.

A content list holds typed block objects (``text``, ``image``, ``tool_use``…). A plain
string among them (``["hello"]``, OpenAI habits) or a block of a type the API does not
know (a typo, ``input_text`` from the Responses API) was served here, its text read or
left out without a word, and refused by the real API (400), so code tested against the
frontend broke at its first real call.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.tracing.identity import shown_text

__all__ = ["BLOCK_TYPES", "check_block", "check_message_fields"]

BLOCK_TYPES = frozenset({
    # The anthropic SDK's MessageContentParam (and the reply blocks sent back).
    "text", "image", "document", "search_result", "thinking", "redacted_thinking",
    "tool_use", "tool_result", "server_tool_use", "web_search_tool_result",
    "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
    "tool_search_tool_result", "container_upload",
    # Its beta messages' (client.beta.messages, the same path): taken, not refused,
    # as the real API takes them beside the beta header that client sends.
    "mcp_tool_use", "mcp_tool_result", "mcp_tool_listing", "advisor_tool_result",
    "compaction", "fallback", "tool_addition", "tool_removal",
})
"""The content block types a message may hold (anthropic SDK 2.16)."""

# The fields of the blocks an app most often builds or sends back (the anthropic SDK's
# block params): Anthropic refuses any other ("Extra inputs are not permitted"), such as
# a streamed block's ``index`` kept on a tool_use, or a reply's ``parsed_output``.
_BLOCK_FIELDS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "image": frozenset({"type", "source", "cache_control", "transformations"}),
    "document": frozenset({"type", "source", "cache_control", "citations", "context",
                           "title"}),
    "search_result": frozenset({"type", "source", "cache_control", "citations", "content",
                                "title"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control", "caller",
                           "toolset_name"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control",
                              "toolset_name"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}

# The model calls a tool and the caller answers: a tool_use in a user turn (a loop that
# put the call and its result in one message) or a result in an assistant turn is
# refused by Anthropic's API (400); it was served here.
_ROLE_OF = {"tool_use": "assistant", "server_tool_use": "assistant", "tool_result": "user"}


def check_block(block: Any, where: str, role: Any) -> None:
    """Refuse a content list item (``where`` names it) of a message from ``role`` that
    is not an object of a block type the Messages API knows, or that the other role
    sends (``tool_use`` is the assistant's, ``tool_result`` the user's), or that holds a
    field its type does not have (checked for the types in :data:`_BLOCK_FIELDS`)."""
    if not isinstance(block, dict):
        raise InvalidRequest(f"'{where}' must be a content block object (such as "
                             f"{{\"type\": \"text\", \"text\": ...}}), not {kind_of(block)}",
                             param=where)
    kind = block.get("type")
    # A str first: a list or an object is unhashable, and the set lookup raised (500).
    if not isinstance(kind, str) or kind not in BLOCK_TYPES:
        # The type is the client's text: capped and escaped before it is logged.
        sent = f"'{shown_text(kind, 64)}'" if isinstance(kind, str) else kind_of(kind)
        raise InvalidRequest(f"'{where}.type': {sent} is not a content block type the "
                             "Messages API takes (text, image, document, tool_use, "
                             "tool_result, thinking…)", param=f"{where}.type")
    for name in block:
        if name not in _BLOCK_FIELDS.get(kind, block):
            # Anthropic's path: messages.1.content.0.tool_use.index
            path = where.replace("[", ".").replace("]", "")
            raise InvalidRequest(f"{path}.{kind}.{shown_text(name, 64)}: Extra inputs are "
                                 "not permitted", param=f"{where}.{shown_text(name, 64)}")
    wanted = _ROLE_OF.get(kind)
    if wanted is not None and role in ("user", "assistant") and role != wanted:
        raise InvalidRequest(f"'{where}': `{kind}` blocks can only be in `{wanted}` "
                             f"messages, not `{role}` messages", param=where)


def check_message_fields(message: dict[str, Any], index: int) -> None:
    """Refuse a message field other than ``role`` and ``content`` (an app's ``id`` or
    ``timestamp`` left on its history), in Anthropic's words: it was served here and
    refused by the real API (400 ``messages.N.name: Extra inputs are not permitted``)."""
    for name in message:
        if name not in ("role", "content"):
            shown = shown_text(name, 64)
            raise InvalidRequest(f"messages.{index}.{shown}: Extra inputs are not permitted",
                                 param=f"messages[{index}].{shown}")
