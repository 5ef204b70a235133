"""Chat content parts the engine leaves out, checked as OpenAI checks them.

The echo engine reads only text, so an image part's ``image_url`` went unread: sent as
the URL string itself (as some older clients wrote it) or without its ``url``, the
part was served here and refused by the real API (400), so a vision request tested
against the frontend broke at its first real call. So did a part's ``type``: the
engine reads any part's ``text``, so the Responses API's ``input_text`` (the usual slip
when moving code between the two APIs), a misspelt type or an image in a system
message was served here and refused there.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of, not_an_object
from ridtrace.tracing.identity import shown_text

__all__ = ["check_chat_content", "check_image_parts"]

# The part types each role's content list takes, in the order OpenAI names them (the
# legacy ``function`` role takes a string alone and is not looked at).
_TEXT_ONLY = ("text",)
_PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
    "system": _TEXT_ONLY,
    "developer": _TEXT_ONLY,
    "tool": _TEXT_ONLY,
}


def check_chat_content(messages: list[Any]) -> None:
    """The checks below, in order: assistant turns, function results, part types,
    image parts."""
    check_assistant_content(messages)
    check_function_results(messages)
    check_part_types(messages)
    check_image_parts(messages)


# What an assistant turn without content holds instead (OpenAI takes it then).
_INSTEAD_OF_CONTENT = ("tool_calls", "function_call", "refusal", "audio")


def check_assistant_content(messages: list[Any]) -> None:
    """Refuse an assistant message whose content is missing or null and that holds none
    of :data:`_INSTEAD_OF_CONTENT`, as OpenAI's chat does: an agent loop that kept a turn
    whose text came back empty as ``None`` was served here and refused there."""
    for index, message in enumerate(messages):
        if (message.get("role") == "assistant" and message.get("content") is None
                and all(message.get(name) is None for name in _INSTEAD_OF_CONTENT)):
            raise InvalidRequest("Invalid value for 'content': expected a string, got null.",
                                 param=f"messages[{index}].content")


def check_function_results(messages: list[Any]) -> None:
    """Refuse a legacy ``function`` message without the ``name`` of its function or with
    content other than a string or null, as OpenAI's chat does: legacy function-calling
    code that sent its result back without the name was served here."""
    for index, message in enumerate(messages):
        if message.get("role") != "function":
            continue
        where = f"messages[{index}]"
        if message.get("name") is None:
            raise InvalidRequest(f"Missing required parameter: '{where}.name'.",
                                 param=f"{where}.name")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            sent = kind_of(content)
            article = "an" if sent[0] in "aeiou" else "a"  # OpenAI's wording
            raise InvalidRequest(f"Invalid type for '{where}.content': expected a string, "
                                 f"but got {article} {sent} instead.", param=f"{where}.content")


def _supported(kinds: tuple[str, ...]) -> str:
    quoted = [f"'{kind}'" for kind in kinds]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def check_part_types(messages: list[Any]) -> None:
    """Refuse a content part that is no object, or whose ``type`` is missing or one its
    message's role does not take, with OpenAI's words. ``messages`` has been read by
    ``chat_prompt`` (objects with a known role)."""
    for index, message in enumerate(messages):
        content = message.get("content")
        kinds = _PART_TYPES.get(message.get("role"))
        if kinds is None or not isinstance(content, list):
            continue
        for number, part in enumerate(content):
            where = f"messages[{index}].content[{number}]"
            if not isinstance(part, dict):
                raise not_an_object(where, part)
            kind = part.get("type")
            if kind is None:
                raise InvalidRequest(f"Missing required parameter: '{where}.type'.",
                                     param=f"{where}.type")
            if kind not in kinds:
                # The type is the client's: capped and escaped before it is logged.
                shown = shown_text(kind, 64) if isinstance(kind, str) else kind_of(kind)
                raise InvalidRequest(f"Invalid value: '{shown}'. Supported values are: "
                                     f"{_supported(kinds)}.", param=f"{where}.type",
                                     code="invalid_value")


def check_image_parts(messages: list[Any]) -> None:
    """Refuse an ``image_url`` part whose ``image_url`` is not an object with a string
    ``url``. ``messages`` has been read by ``chat_prompt`` (objects whose list
    contents hold typed objects)."""
    for index, message in enumerate(messages):
        content = message.get("content")
        for number, part in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            where = f"messages[{index}].content[{number}].image_url"
            image = part.get("image_url")
            if image is None:
                raise InvalidRequest(f"Missing required parameter: '{where}'.", param=where)
            if not isinstance(image, dict):
                kind = kind_of(image)
                article = "an" if kind[0] in "aeiou" else "a"  # OpenAI's wording
                raise InvalidRequest(f"Invalid type for '{where}': expected an object, but "
                                     f"got {article} {kind} instead.", param=where)
            if not isinstance(image.get("url"), str):
                raise InvalidRequest(f"Missing required parameter: '{where}.url'.",
                                     param=f"{where}.url")
