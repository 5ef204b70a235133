"""Chat content parts the engine leaves out, checked as OpenAI checks them.

The echo engine reads only text, so an image part's ``image_url`` went unread: sent as
the URL string itself (as some older clients wrote it) or without its ``url``, the
part was served here and refused by the real API (400), so a vision request tested
against the frontend broke at its first real call.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of

__all__ = ["check_image_parts"]


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
