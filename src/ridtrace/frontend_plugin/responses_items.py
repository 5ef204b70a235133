"""Responses ``input`` items checked as OpenAI checks what the engine does not read.

The echo engine reads a message's text alone, so a content part's ``type`` went
unchecked: chat's ``{"type": "text"}`` (the usual slip when moving from chat
completions, where OpenAI's Responses API answers 400) was served here as if it were
``input_text``, and the request broke at its first real call.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest
from ridtrace.tracing.identity import shown_text

__all__ = ["check_message_parts"]

# The part types OpenAI names when it refuses one, in its order.
_PART_TYPES = ("input_text", "input_image", "output_text", "refusal", "input_file",
               "computer_screenshot", "summary_text")
_SUPPORTED = ", ".join(f"'{kind}'" for kind in _PART_TYPES[:-1]) + f", and '{_PART_TYPES[-1]}'"


def check_message_parts(items: list[Any]) -> None:
    """Refuse a message item's content part whose ``type`` is a string OpenAI does not
    take. ``items`` has been read by ``chat_prompt``, which refuses parts that are no
    typed objects."""
    for index, item in enumerate(items):
        content = item.get("content") if isinstance(item, dict) and "role" in item else None
        for number, part in enumerate(content if isinstance(content, list) else ()):
            kind = part.get("type") if isinstance(part, dict) else None
            if isinstance(kind, str) and kind not in _PART_TYPES:
                raise InvalidRequest(
                    f"Invalid value: '{shown_text(kind, 64)}'. Supported values are: "
                    f"{_SUPPORTED}.", param=f"input[{index}].content[{number}].type")
