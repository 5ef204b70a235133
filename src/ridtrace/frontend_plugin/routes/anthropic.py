"""Anthropic-style ``/v1/messages``: the Messages API body, events and error shape."""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.anthropic_blocks import check_block, check_message_fields
from ridtrace.frontend_plugin.anthropic_cache_control import check_cache_control
from ridtrace.frontend_plugin.anthropic_media import check_media_types
from ridtrace.frontend_plugin.anthropic_service_tier import anthropic_service_tier
from ridtrace.frontend_plugin.anthropic_thinking import check_thinking_turns
from ridtrace.frontend_plugin.auth import sent_by_anthropic_sdk as sent_by_anthropic_sdk
from ridtrace.frontend_plugin.bodies import (
    InvalidRequest,
    Parsed,
    model_name,
    opt_bool,
    token_limit,
)
from ridtrace.frontend_plugin.prompts import chat_prompt, content_text
from ridtrace.frontend_plugin.pump import Failed, Finished
from ridtrace.frontend_plugin.request_options import anthropic_options
from ridtrace.frontend_plugin.routes.base import ApiSpec, Ids, Renderer, SseTemplate, sse
from ridtrace.frontend_plugin.sampling import anthropic_sampling
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.tool_turns import check_tool_uses
from ridtrace.tracing import current_request_id

__all__ = [
    "MESSAGES",
    "MESSAGES_ROLES",
    "anthropic_error_body",
    "input_tokens",
    "messages_prompt",
    "sent_by_anthropic_sdk",
    "system_text",
]

_STOP = {"stop": "end_turn", "length": "max_tokens"}

MESSAGES_ROLES = ("user", "assistant")
"""The roles the Messages API takes (the system prompt is the top-level ``system``)."""


def _stop_reason(finished: Finished) -> str:
    if finished.stop_sequence is not None:
        return "stop_sequence"
    return _STOP.get(finished.finish_reason, "end_turn")


def anthropic_error_body(kind: str, message: str, request_id: str | None) -> dict[str, Any]:
    """Anthropic's error body, for an answer and for an ``error`` event mid-stream.

    Anthropic's API puts the answer's ``request-id`` in the body too, as
    ``request_id`` (``None`` here only outside a traced request), the field its docs
    give for quoting an error; the body without it left code that reads it nothing.
    """
    return {"type": "error", "error": {"type": kind, "message": message},
            "request_id": request_id}


def system_text(body: dict[str, Any]) -> str | None:
    """The ``system`` prompt: a string or a list of ``text`` blocks, the only blocks
    Anthropic's API takes there (another, say an image, is a 400 there: it was left out
    here without a word), none of them empty or only whitespace, as in a message (a
    template whose system variable came out empty was served here, refused there)."""
    system = body.get("system")
    if isinstance(system, list):
        for index, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise InvalidRequest(f"'system[{index}]' must be a text block",
                                     param=f"system[{index}]")
            _check_text_block(block.get("text"), f"system[{index}]")
    return content_text(system, "system") if system is not None else None


def _check_contents(messages: Any) -> None:
    """Each message has content, as Anthropic's API requires: a string or a list of
    blocks, empty only in a final assistant message (a prefill to continue), no
    ``text`` empty or only whitespace, and a prefill not ending in whitespace. They were
    answered (``echo: user: ``) where the API refuses them."""
    if not isinstance(messages, list):
        return  # chat_prompt says what is wrong
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return
        check_message_fields(message, index)
        where = f"messages[{index}].content"
        content = message.get("content")
        if content is None:
            raise InvalidRequest(f"'{where}' is required", param=where)
        prefill = index == last and message.get("role") == "assistant"
        empty = content in ("", [])  # another type: chat_prompt names it
        if empty and not prefill:
            raise InvalidRequest(f"'{where}' must not be empty: every message needs "
                                 "content but a final assistant message", param=where)
        if prefill:
            _check_prefill_end(content, where)
        if isinstance(content, str):
            _check_text(content, where)
        for number, block in enumerate(content if isinstance(content, list) else ()):
            check_block(block, f"{where}[{number}]", message.get("role"))
            if block.get("type") == "text":
                _check_text_block(block.get("text"), f"{where}[{number}]")
            check_media_types(block, f"{where}[{number}]")
            inner = block.get("content") if isinstance(block, dict) else None
            if isinstance(inner, list):  # a tool_result's blocks: a screenshot tool's image
                for at, item in enumerate(inner):
                    check_media_types(item, f"{where}[{number}].content[{at}]")
                    # A tool whose output came out empty: refused there as in a message.
                    if isinstance(item, dict) and item.get("type") == "text":
                        _check_text_block(item.get("text"),
                                          f"{where}[{number}].content[{at}]")


def _check_text_block(text: Any, where: str) -> None:
    if text == "":
        raise InvalidRequest(f"'{where}': text content blocks must be non-empty", param=where)
    _check_text(text, where)


def _check_text(text: Any, where: str) -> None:
    # A padding turn of " ", or a template whose words were left out: refused there.
    if isinstance(text, str) and text and not text.strip():
        raise InvalidRequest(f"'{where}': text content blocks must contain non-whitespace "
                             "text", param=where)


def _check_prefill_end(content: Any, where: str) -> None:
    """A prefill (``"The answer is "``) must not end in whitespace, as the API says."""
    if isinstance(content, list) and content and isinstance(content[-1], dict) and (
            content[-1].get("type") == "text"):
        text, where = content[-1].get("text"), f"{where}[{len(content) - 1}]"
    else:
        text = content
    if isinstance(text, str) and text != text.rstrip():
        raise InvalidRequest(f"'{where}': final assistant content cannot end with trailing "
                             "whitespace", param=where)


def messages_prompt(body: dict[str, Any]) -> str:
    """The normalised prompt of a Messages body (system text, then the messages),
    checked as Anthropic's API checks them (tool turns included)."""
    system = system_text(body)
    _check_contents(body.get("messages"))
    prompt = chat_prompt(body.get("messages"), "messages", system, MESSAGES_ROLES)
    check_tool_uses(body["messages"])
    check_thinking_turns(body)
    check_cache_control(body)
    return prompt


def input_tokens(prompt: str) -> int:
    """``usage.input_tokens`` for a normalised prompt (and what count_tokens answers)."""
    return len(prompt.split())


_BLOCK_START = sse({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}, "content_block_start")
_BLOCK_STOP = sse({"type": "content_block_stop", "index": 0}, "content_block_stop")


class _MessagesRenderer(Renderer):
    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self.msg_id = "msg_" + ids.hex
        self.prompt_tokens = input_tokens(parsed.prompt)
        self._delta = SseTemplate({"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": SseTemplate.HOLE}},
                                  "content_block_delta")
        self._block_open = False

    def _message(self, content: list[dict[str, Any]], stop: str | None, out: int,
                 stop_sequence: str | None = None) -> dict[str, Any]:
        return {
            "id": self.msg_id, "type": "message", "role": "assistant",
            "model": self.parsed.model, "content": content, "stop_reason": stop,
            "stop_sequence": stop_sequence,
            # The echo engine caches no prompt: zero read from or written to a cache, as
            # Anthropic's API says of an uncached request (left out, the SDKs read None).
            "usage": {"input_tokens": self.prompt_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": out,
                      **self.parsed.echoed},
        }

    def start(self) -> bytes:
        return sse({"type": "message_start", "message": self._message([], None, 0)},
                   "message_start")

    def text_start(self) -> bytes:
        # The text block opens with the first text: a reply a stop sequence empties has
        # none, as Anthropic's API streams it (an empty text block is one its API refuses).
        self._block_open = True
        return _BLOCK_START

    def delta(self, text: str) -> bytes:
        return self._delta.render(text)

    def finish(self, finished: Finished, text: str) -> bytes:
        return (
            (_BLOCK_STOP if self._block_open else b"")
            + sse({"type": "message_delta",
                   "delta": {"stop_reason": _stop_reason(finished),
                             "stop_sequence": finished.stop_sequence},
                   "usage": {"output_tokens": finished.tokens}}, "message_delta")
            + sse({"type": "message_stop"}, "message_stop")
        )

    def fail(self, failed: Failed) -> bytes:
        # The type a non-streamed reply of the same failure has (a timeout is
        # timeout_error, not api_error, which reads as a server bug).
        kind = _TYPE_OF_STATUS.get(failed.status, "api_error")
        return sse(anthropic_error_body(kind, failed.message, self.ids.request_id), "error")

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        # No text, no block: Anthropic's API answers such a reply with ``content: []``.
        content = [{"type": "text", "text": text}] if text else []
        return self._message(content, _stop_reason(finished), finished.tokens,
                             finished.stop_sequence)


class _MessagesSpec(ApiSpec):
    path = "/v1/messages"
    endpoint = "messages"
    legacy_id_headers = ("x-dynamo-request-id", "request-id", "x-request-id")

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        # Required by the Messages API, so required here too.
        max_tokens = token_limit(body.get("max_tokens"), param="max_tokens",
                                 limit=settings.max_tokens_limit,
                                 default=settings.default_max_tokens, required=True)
        json_schema = anthropic_options(body, max_tokens)
        return Parsed(
            model=model_name(body, settings.model),
            prompt=messages_prompt(body),
            max_tokens=max_tokens,
            stream=opt_bool(body, "stream"),
            stop=anthropic_sampling(body),
            json_schema=json_schema,
            echoed=anthropic_service_tier(body),
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _MessagesRenderer(parsed, ids)

    def error_body(self, status: int, message: str, kind: str, param: str | None,
                   code: str | None = None) -> dict[str, Any]:
        kinds = {"invalid_request_error": "invalid_request_error", "conflict": "conflict_error",
                 "not_found_error": "not_found_error"}
        name = _TYPE_OF_STATUS.get(status) or kinds.get(kind, "api_error")
        # Read when the answer is built: the legacy policy re-keys the request.
        return anthropic_error_body(name, message, current_request_id())


# The error types Anthropic's API documents for these statuses (its SDK picks the error
# class by status; the type is what a caller's code and logs read).
_TYPE_OF_STATUS = {
    401: "authentication_error", 403: "permission_error", 404: "not_found_error",
    413: "request_too_large", 429: "rate_limit_error", 504: "timeout_error",
    529: "overloaded_error",
}


MESSAGES = _MessagesSpec()
