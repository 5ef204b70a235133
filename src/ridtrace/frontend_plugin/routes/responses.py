"""OpenAI's Responses API route: its input items, events and response objects."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ridtrace.frontend_plugin.bodies import (
    MAX_MODEL_LENGTH,
    InvalidRequest,
    Parsed,
    kind_of,
    model_name,
    opt_bool,
    opt_str,
)
from ridtrace.frontend_plugin.logprobs import chat_token_logprobs
from ridtrace.frontend_plugin.openai_choices import (
    check_responses_choices,
    responses_choices_echoed,
)
from ridtrace.frontend_plugin.prompts import NO_TEXT, chat_prompt, check_roles, require_content
from ridtrace.frontend_plugin.pump import Failed, Finished
from ridtrace.frontend_plugin.reply_formats import check_json_mode_asked
from ridtrace.frontend_plugin.request_options import openai_metadata, responses_options
from ridtrace.frontend_plugin.responses_checks import (
    check_output_token_floor,
    check_stream_options,
    refuse_background,
    refuse_stored_responses,
    responses_logprobs,
    responses_truncation,
)
from ridtrace.frontend_plugin.responses_items import check_input_items
from ridtrace.frontend_plugin.routes.base import ApiSpec, Ids, Renderer, sse
from ridtrace.frontend_plugin.routes.openai import LEGACY_ID_HEADERS, max_tokens_of
from ridtrace.frontend_plugin.sampling import openai_sampling
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.tool_turns import check_function_call_items
from ridtrace.tracing.identity import shown_text

__all__ = ["RESPONSES"]

# The roles of Responses input messages (a tool's result is a function_call_output
# item, not a "tool" message); each needs its content, as OpenAI's input items do.
RESPONSES_ROLES = ("assistant", "system", "developer", "user")
_MESSAGE_ROLES = frozenset(RESPONSES_ROLES)
_JSON_WORD = ("Response input messages must contain the word 'json' in some form to use "
              "'text.format' of type 'json_object'.")


class _ResponsesRenderer(Renderer):
    """Responses API events, each with ``type`` and a running ``sequence_number``."""

    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self.seq = 0
        self.resp_id = "resp_" + ids.hex
        self.item_id = "msg_" + ids.hex
        self._streamed: list[str] = []  # the tokens sent, when their logprobs are asked

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return sse(data, kind)

    def _logprobs(self, tokens: Sequence[str]) -> list[dict[str, Any]]:
        top = self.parsed.logprobs
        return [] if top is None else chat_token_logprobs(list(tokens), top)["content"]

    def _part(self, text: str, tokens: Sequence[str] = ()) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [],
                "logprobs": self._logprobs(tokens)}

    def _item(self, text: str | None, status: str, tokens: Sequence[str] = ()
              ) -> dict[str, Any]:
        content = [] if text is None else [self._part(text, tokens)]
        return {"type": "message", "id": self.item_id, "status": status, "role": "assistant",
                "content": content}

    def _response(self, status: str, output: list[dict[str, Any]],
                  finished: Finished | None = None, error: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
        usage = None
        if finished is not None:
            usage = {
                "input_tokens": finished.prompt_tokens,
                # Both required by OpenAI's typed model: left out, the SDK read None.
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": finished.tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": finished.prompt_tokens + finished.tokens,
            }
        incomplete = None
        if finished is not None and finished.finish_reason == "length":
            incomplete = {"reason": "max_output_tokens"}
        return {
            "id": self.resp_id, "object": "response", "created_at": self.created,
            "status": status, "model": self.parsed.model, "output": output,
            "error": error, "incomplete_details": incomplete,
            "completed_at": int(time.time()) if status == "completed" else None,
            **self.parsed.echoed, "usage": usage,
        }

    def start(self) -> bytes:
        return (
            self._event("response.created", response=self._response("in_progress", []))
            + self._event("response.in_progress", response=self._response("in_progress", []))
            + self._event("response.output_item.added", output_index=0,
                          item=self._item(None, "in_progress"))
            + self._event("response.content_part.added", item_id=self.item_id, output_index=0,
                          content_index=0, part=self._part(""))
        )

    def delta(self, text: str) -> bytes:
        if self.parsed.logprobs is not None:
            self._streamed.append(text)
        return self._event("response.output_text.delta", item_id=self.item_id, output_index=0,
                           content_index=0, delta=text, logprobs=self._logprobs([text]))

    def finish(self, finished: Finished, text: str) -> bytes:
        status, tokens = _status(finished), self._streamed
        return (
            self._event("response.output_text.done", item_id=self.item_id, output_index=0,
                        content_index=0, text=text, logprobs=self._logprobs(tokens))
            + self._event("response.content_part.done", item_id=self.item_id, output_index=0,
                          content_index=0, part=self._part(text, tokens))
            + self._event("response.output_item.done", output_index=0,
                          item=self._item(text, status, tokens))
            + self._event(f"response.{status}", response=self._response(
                status, [self._item(text, status, tokens)], finished))
        )

    def fail(self, failed: Failed) -> bytes:
        error = {"code": "server_error", "message": failed.message}
        return self._event("error", code="server_error", message=failed.message, param=None) + \
            self._event("response.failed", response=self._response("failed", [], error=error))

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        status = _status(finished)
        return self._response(status, [self._item(text, status, self.pieces)], finished)


def _status(finished: Finished) -> str:
    """The response's status, and its message item's: cut by the token limit, both are
    ``incomplete``."""
    return "completed" if finished.finish_reason == "stop" else "incomplete"


def _echoed(body: dict[str, Any], instructions: str | None) -> dict[str, Any]:
    """What a Response object repeats from its request, as OpenAI's does: the object
    said temperature 1.0, top_p 1.0, no instructions and no metadata whatever the caller
    sent, and a max_output_tokens the caller never set; likewise no tools, tool_choice
    auto and parallel_tool_calls true. (``parse`` has checked the sampling fields, the
    token limit and the tool options by the time this runs.)"""
    def sent(name: str, default: Any) -> Any:
        value = body.get(name)
        return default if value is None else value

    text = body.get("text")  # a plain string is left alone (see responses_options)
    if isinstance(text, dict):  # a verbosity alone still has OpenAI's default format
        text = {**text, "format": text.get("format") or {"type": "text"}}
    return {
        "instructions": instructions, "metadata": openai_metadata(body),
        "max_output_tokens": body.get("max_output_tokens"),
        "temperature": sent("temperature", 1.0), "top_p": sent("top_p", 1.0),
        "tools": sent("tools", []), "tool_choice": sent("tool_choice", "auto"),
        "parallel_tool_calls": sent("parallel_tool_calls", True),
        "text": text if isinstance(text, dict) else {"format": {"type": "text"}},
        "user": body.get("user"), "truncation": responses_truncation(body),
        **responses_choices_echoed(body),
    }


def _conversation_items(items: list[Any]) -> list[Any]:
    """Responses ``input`` items as messages: a ``function_call_output`` (or a custom
    tool's ``custom_tool_call_output``) is the tool's
    ``tool`` message (as on chat); other items without a role (the model's
    ``function_call``, ``reasoning``) hold no text for the engine and are left out
    (:data:`NO_TEXT`, so later items keep their index in error messages). Refusing them
    failed every tool round trip. An ``item_reference`` names a stored item, and nothing
    is stored here: it is not found (404), as a ``conversation`` is. Left out, the reply
    answered the rest as if the referenced turn had never been."""
    kept: list[Any] = []
    for index, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) and "role" not in item else None
        if kind in ("function_call_output", "custom_tool_call_output"):
            kept.append({"role": "tool", "content": item.get("output")})
        elif kind == "item_reference":
            named = item.get("id")
            shown = shown_text(named, MAX_MODEL_LENGTH) if isinstance(named, str) else (
                kind_of(named))
            raise InvalidRequest(f"Item with id '{shown}' not found.",
                                 param=f"input[{index}]", status=404)
        elif isinstance(kind, str) and kind:
            kept.append(NO_TEXT)
        else:
            kept.append(item)
    return kept


class _ResponsesSpec(ApiSpec):
    path = "/v1/responses"
    endpoint = "responses"
    legacy_id_headers = LEGACY_ID_HEADERS

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        check_stream_options(body, opt_bool(body, "stream"))
        parsed = self.checked(body, settings, replying=True)
        refuse_background(body)
        return parsed

    def checked(self, body: dict[str, Any], settings: FrontendSettings, *,
                replying: bool) -> Parsed:
        """The body checked as :meth:`parse` does; not ``replying`` (token counting,
        nothing generated), a ``tool_choice`` that forces a call is counted, not refused."""
        refuse_stored_responses(body)
        json_schema = responses_options(body, replying=replying)
        check_responses_choices(body)
        instructions = opt_str(body, "instructions")
        value = body.get("input")
        if isinstance(value, str):
            prompt = chat_prompt([{"role": "user", "content": value}], "input", instructions)
        elif isinstance(value, list):
            prompt = chat_prompt(_conversation_items(value), "input", instructions)
            check_roles(value, "input", RESPONSES_ROLES)
            require_content(value, "input", _MESSAGE_ROLES)
            check_function_call_items(value)
            check_input_items(value)
        else:
            raise InvalidRequest("'input' must be a string or a list of messages", param="input")
        text = body.get("text")
        if isinstance(text, dict) and isinstance(text.get("format"), dict):
            # The input alone: OpenAI does not count the instructions.
            said = value if isinstance(value, str) else chat_prompt(
                _conversation_items(value), "input")
            check_json_mode_asked(text["format"], said, _JSON_WORD, "text.format")
        check_output_token_floor(body)
        return Parsed(
            model=model_name(body, settings.model),
            prompt=prompt,
            max_tokens=max_tokens_of(body, settings, "max_output_tokens"),
            stream=opt_bool(body, "stream"),
            stop=openai_sampling(body, penalties_and_stop=False),
            logprobs=responses_logprobs(body),
            echoed=_echoed(body, instructions),
            json_schema=json_schema,
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _ResponsesRenderer(parsed, ids)


RESPONSES = _ResponsesSpec()
