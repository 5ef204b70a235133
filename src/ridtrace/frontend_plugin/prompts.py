"""Prompt text from a request body: message content, chat messages, token-id prompts.

Each shape the inference routes take is flattened to one prompt string, normalised as
docs/log-schema.md (Fingerprints) specifies, so the frontend's ``fp_in`` and the
worker's compare. A malformed part raises `bodies.InvalidRequest` naming the offending
field.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, not_an_object
from ridtrace.tracing.identity import shown_text

__all__ = [
    "NO_TEXT",
    "chat_prompt",
    "check_roles",
    "content_text",
    "require_content",
    "token_count",
    "token_prompt",
]


# Parts whose words are text without a "text" field: a tool's result (Anthropic) counts
# as its content's text.
_TEXT_IN_CONTENT = frozenset({"tool_result"})


def content_text(content: Any, param: str) -> str:
    """Message content: a string, or a list of parts whose texts are joined with newlines.

    Parts with a string ``text`` count (``text``, ``input_text``, ``output_text``), and a
    ``tool_result`` counts as its ``content``'s text. Other typed parts (images, audio,
    files, tool calls, thinking) carry no text for the engine and are left out: the
    APIs accept them in any conversation, and refusing them failed every tool round
    trip. A part that is no typed object, or a ``text`` part without string text, is a
    400.
    """
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts: list[str] = []
        for index, part in enumerate(content):
            where = f"{param}[{index}]"
            if not isinstance(part, dict):
                # A bare string is no part (each API types its parts); taken as text, a
                # Responses input OpenAI refuses was answered.
                raise not_an_object(where, part)
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                texts.append(text)
                continue
            kind = part.get("type") if isinstance(part, dict) else None
            if not isinstance(kind, str) or not kind or kind == "text":
                raise InvalidRequest(f"'{where}' must be a text part with a string 'text'",
                                     param=where)
            if kind in _TEXT_IN_CONTENT:
                inner = content_text(part.get("content"), where + ".content")
                if inner:
                    texts.append(inner)
        return "\n".join(texts)
    raise InvalidRequest(f"'{param}' must be a string or a list of parts", param=param)


NO_TEXT: Any = object()
"""Stands in a message list for an item with no text for the engine (a Responses
``function_call``): :func:`chat_prompt` passes over it, later items keep their index."""


def chat_prompt(messages: Any, param: str = "messages", system: str | None = None,
                roles: tuple[str, ...] | None = None) -> str:
    """``role: content`` per message, joined with ``\\n`` (a system text first);
    ``roles``, when given, are the only roles the API takes (another is a 400)."""
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest(f"'{param}' must be a non-empty list of messages", param=param)
    lines = [f"system: {system}"] if system else []
    for index, message in enumerate(messages):
        if message is NO_TEXT:
            continue
        where = f"{param}[{index}]"
        if not isinstance(message, dict):
            raise InvalidRequest(f"'{where}' must be an object", param=where)
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise InvalidRequest(f"'{where}.role' must be a non-empty string", param=where)
        if roles is not None and role not in roles:
            raise InvalidRequest(_role_refused(where, role, roles), param=where + ".role")
        lines.append(f"{role}: {content_text(message.get('content'), where + '.content')}")
    return "\n".join(lines)


def require_content(messages: list[Any], param: str, roles: frozenset[str]) -> None:
    """Each message of one of ``roles`` has content, as OpenAI requires: a string (empty
    or not) or a non-empty list of parts. ``None``, a missing field or ``[]`` is a 400
    naming the message: taken as empty text, a turn whose text the caller's code dropped
    was answered here (``echo: user: ``) where OpenAI refuses it. Run after
    :func:`chat_prompt`, which has checked the list and the roles."""
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in roles:
            continue
        content = message.get("content")
        if content is None or content == []:
            where = f"{param}[{index}].content"
            said = "an empty list" if content == [] else "missing"
            raise InvalidRequest(f"'{where}' is required: a string or a non-empty list of "
                                 f"parts, not {said}", param=where)


def check_roles(items: list[Any], param: str, roles: tuple[str, ...]) -> None:
    """Refuse an item of ``items`` whose ``role`` is none of ``roles``; items without a
    role (Responses' ``function_call``, ``function_call_output``…) are not messages and
    are passed over. Run after :func:`chat_prompt`, which has checked the roles' type."""
    for index, item in enumerate(items):
        role = item.get("role") if isinstance(item, dict) else None
        if isinstance(role, str) and role not in roles:
            where = f"{param}[{index}]"
            raise InvalidRequest(_role_refused(where, role, roles), param=where + ".role")


def _role_refused(where: str, role: str, roles: tuple[str, ...]) -> str:
    # The role is the client's: capped and escaped before it reaches a log line.
    message = f"'{where}.role' must be one of {', '.join(roles)}, not '{shown_text(role, 32)}'"
    if role == "system":
        message += " (a system prompt goes in the top-level 'system' field)"
    return message


def token_prompt(value: Any, param: str, *, text_allowed: bool = True) -> str:
    """A prompt given as a string or as token ids (ids joined with ``,``), alone or as
    the one prompt of OpenAI's batch form (``["text"]``, ``[[1, 2, 3]]``).

    `text_allowed` False: the field takes token ids only (the caller refused text), and
    its refusal does not offer a string."""
    prompt = _one_prompt(value)
    if prompt is not None:
        return prompt
    if isinstance(value, list) and len(value) == 1:
        prompt = _one_prompt(value[0])
        if prompt is not None:
            return prompt
    if isinstance(value, list) and len(value) > 1 and _one_prompt(value[0]) is not None:
        # The batch form (a choice per prompt): said so, not "must be ... token ids".
        raise InvalidRequest(
            f"'{param}' holds {len(value)} prompts: one prompt per request is supported",
            param=param,
        )
    raise InvalidRequest(token_ids_refused(param, text_allowed=text_allowed), param=param)


def token_ids_refused(param: str, *, text_allowed: bool = True) -> str:
    """What a caller is told of a prompt field that holds no usable prompt."""
    text = "a string or " if text_allowed else ""
    return f"'{param}' must be {text}a non-empty list of token ids (integers from 0)"


def token_count(value: Any) -> int | None:
    """How many token ids a prompt :func:`token_prompt` took holds; ``None`` for text.

    The normalised prompt joins the ids with commas, which the worker counts as one
    word: a prompt of 4 ids was reported as ``prompt_tokens`` 1.
    """
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if isinstance(value, list) and value and all(isinstance(t, int) for t in value):
        return len(value)
    return None


def _one_prompt(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    # A token id indexes the vocabulary: a negative one (-100, the label padding of ML
    # pipelines) is the caller's bug, which the real servers refuse as out of vocabulary.
    if (
        isinstance(value, list)
        and value
        and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)
    ):
        return ",".join(str(t) for t in value)
    return None
