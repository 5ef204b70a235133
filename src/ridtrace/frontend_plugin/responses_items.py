"""Responses ``input`` items checked as OpenAI checks what the engine does not read.

The echo engine reads a message's text alone, so a content part's ``type`` went
unchecked: chat's ``{"type": "text"}`` (the usual slip when moving from chat
completions, where OpenAI's Responses API answers 400) was served here as if it were
``input_text``, and the request broke at its first real call. Likewise an item of a
type OpenAI does not have (a misspelt ``function_call_result``, say) was left out as
if it were a tool call the engine need not read.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.tracing.identity import shown_text

__all__ = ["check_input_items"]

# The part types OpenAI names when it refuses one, in its order.
_PART_TYPES = ("input_text", "input_image", "output_text", "refusal", "input_file",
               "computer_screenshot", "summary_text")
# The item types OpenAI's input takes (the SDK's ``ResponseInputItemParam``).
_ITEM_TYPES = (
    "additional_tools", "apply_patch_call", "apply_patch_call_output",
    "code_interpreter_call", "compaction", "compaction_trigger", "computer_call",
    "computer_call_output", "configuration_update", "custom_tool_call",
    "custom_tool_call_output", "file_search_call", "function_call", "function_call_output",
    "image_generation_call", "item_reference", "local_shell_call", "local_shell_call_output",
    "mcp_approval_request", "mcp_approval_response", "mcp_call", "mcp_list_tools", "message",
    "program", "program_output", "reasoning", "shell_call", "shell_call_output",
    "tool_search_call", "tool_search_output", "web_search_call",
)
# The fields of a message item (the SDK's ``EasyInputMessageParam``, input ``Message``
# and ``ResponseOutputMessageParam``): OpenAI refuses any other as an unknown parameter.
_MESSAGE_FIELDS = frozenset({"type", "role", "content", "status", "id", "phase"})
# Likewise a function call and its output (``ResponseFunctionToolCallParam``,
# ``FunctionCallOutput``): ``responses.parse``'s ``parsed_arguments`` sent back is one.
_CALL_FIELDS = {
    "function_call": frozenset({"type", "call_id", "name", "arguments", "id", "status",
                                "namespace", "caller", "async"}),
    "function_call_output": frozenset({"type", "call_id", "output", "id", "status",
                                       "namespace", "caller", "name"}),
}
_SUPPORTED_PARTS = (", ".join(f"'{kind}'" for kind in _PART_TYPES[:-1])
                    + f", and '{_PART_TYPES[-1]}'")


def check_input_items(items: list[Any]) -> None:
    """Refuse an item, or a message item's content part, whose ``type`` is a string
    OpenAI does not take. ``items`` has been read by ``chat_prompt``, which refuses
    parts that are no typed objects."""
    for index, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) else None
        if isinstance(item, dict) and "type" in item and not isinstance(kind, str):
            # `"type": 1` was served as a message (OpenAI refuses the type).
            raise InvalidRequest(f"Invalid type for 'input[{index}].type': expected a "
                                 f"string, but got {kind_of(kind)} instead.",
                                 param=f"input[{index}].type")
        if isinstance(kind, str) and kind not in _ITEM_TYPES:
            raise InvalidRequest(f"Invalid value: '{shown_text(kind, 64)}'. Supported values "
                                 f"are: {', '.join(repr(t) for t in _ITEM_TYPES)}.",
                                 param=f"input[{index}].type")
        if isinstance(item, dict) and "role" in item:
            _refuse_unknown_fields(item, index, _MESSAGE_FIELDS)
        elif isinstance(item, dict) and kind in _CALL_FIELDS:
            _refuse_unknown_fields(item, index, _CALL_FIELDS[kind])
        content = item.get("content") if isinstance(item, dict) and "role" in item else None
        for number, part in enumerate(content if isinstance(content, list) else ()):
            part_kind = part.get("type") if isinstance(part, dict) else None
            if isinstance(part_kind, str) and part_kind not in _PART_TYPES:
                raise InvalidRequest(
                    f"Invalid value: '{shown_text(part_kind, 64)}'. Supported values are: "
                    f"{_SUPPORTED_PARTS}.", param=f"input[{index}].content[{number}].type")


def _refuse_unknown_fields(item: dict[str, Any], index: int, fields: frozenset[str]) -> None:
    """Refuse a field an item does not have (a ``timestamp`` or ``metadata`` an app
    keeps on its history), as OpenAI does: it was served here and answered 400
    ``unknown_parameter`` there. (Chat's messages keep taking them: OpenAI's chat
    ignores them.)"""
    for name in item:
        if name not in fields:
            param = f"input[{index}].{shown_text(name, 64)}"
            raise InvalidRequest(f"Unknown parameter: '{param}'.", param=param,
                                 code="unknown_parameter")
