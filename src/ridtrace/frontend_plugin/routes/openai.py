"""OpenAI-style routes: chat completions and completions (the Responses API: `responses`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ridtrace.frontend_plugin.bodies import (
    InvalidRequest,
    Parsed,
    model_name,
    opt_bool,
    single_choice,
    stream_usage,
    token_limit,
)
from ridtrace.frontend_plugin.chat_parts import check_chat_content
from ridtrace.frontend_plugin.logprobs import (
    chat_logprobs,
    chat_token_logprobs,
    completion_logprobs,
    completion_token_logprobs,
)
from ridtrace.frontend_plugin.openai_choices import chat_choices_echoed, check_chat_choices
from ridtrace.frontend_plugin.openai_names import check_message_names
from ridtrace.frontend_plugin.prompts import (
    chat_prompt,
    require_content,
    token_count,
    token_prompt,
)
from ridtrace.frontend_plugin.pump import Failed, Finished
from ridtrace.frontend_plugin.reply_formats import check_json_mode_asked
from ridtrace.frontend_plugin.request_options import chat_options, completion_options
from ridtrace.frontend_plugin.routes.base import ApiSpec, Ids, Renderer, SseTemplate, sse
from ridtrace.frontend_plugin.sampling import openai_sampling, stream_options_need_stream
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.tool_turns import check_tool_turns

__all__ = ["CHAT", "COMPLETIONS", "LEGACY_ID_HEADERS", "max_tokens_of"]

# Before the fix these headers became the in-flight key on the OpenAI-style routes.
LEGACY_ID_HEADERS = ("x-dynamo-request-id", "request-id", "x-request-id")
_DONE = b"data: [DONE]\n\n"
_JSON_WORD = ("'messages' must contain the word 'json' in some form, to use "
              "'response_format' of type 'json_object'.")
CHAT_ROLES = ("developer", "system", "user", "assistant", "tool", "function")
"""The roles Chat Completions takes."""
# The roles whose messages OpenAI refuses without content (an assistant turn may hold
# only tool calls, a refusal or an audio reference; a legacy function result may be null).
_CONTENT_REQUIRED = frozenset({"developer", "system", "user", "tool"})


def max_tokens_of(body: dict[str, Any], settings: FrontendSettings, *names: str) -> int:
    """The first of `names` the body sets, as a token limit (the settings' default else).

    Every one set is checked, not only the first: chat's ``max_tokens`` beside
    ``max_completion_tokens`` was taken whatever it held (``"lots"``, ``0``), where the
    real API (and vLLM) refuse it."""
    limits = [
        token_limit(body[name], param=name, limit=settings.max_tokens_limit,
                    default=settings.default_max_tokens)
        for name in names if body.get(name) is not None
    ]
    return limits[0] if limits else settings.default_max_tokens


def _chat_max_tokens(body: dict[str, Any], settings: FrontendSettings) -> int:
    """Chat's token limit: ``max_completion_tokens`` or the older ``max_tokens``, not both.

    OpenAI refuses the two together (``invalid_parameter_combination``); taking the first
    let code that sends both pass here and fail there. Each is checked on its own first,
    so a wrong value is named as itself."""
    limit = max_tokens_of(body, settings, "max_completion_tokens", "max_tokens")
    if body.get("max_tokens") is not None and body.get("max_completion_tokens") is not None:
        raise InvalidRequest(
            "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not "
            "supported.", param="max_tokens", code="invalid_parameter_combination")
    return limit


def _usage(prompt_tokens: int, tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": tokens,
        "total_tokens": prompt_tokens + tokens,
    }


def _with_usage_field(event: dict[str, Any], parsed: Parsed) -> dict[str, Any]:
    """``event`` with ``"usage": null`` when ``stream_options.include_usage`` is set: as
    OpenAI documents it, every chunk but the usage chunk then has the field, null."""
    if parsed.include_usage:
        event["usage"] = None
    return event


def _usage_chunk(event: dict[str, Any], usage: dict[str, int]) -> bytes:
    """The last chunk ``stream_options.include_usage`` asks for: no choices, the usage."""
    return sse({**event, "choices": [], "usage": usage})


def _stream_error(failed: Failed) -> bytes:
    # The SDKs raise on a data object with an "error" key.
    error = {"message": failed.message, "type": "server_error", "code": failed.reason}
    return sse({"error": error})


class _ChatRenderer(Renderer):
    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self._delta = SseTemplate(self._event({"content": SseTemplate.HOLE}, None))

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None) -> bytes:
        return sse(self._event(delta, finish_reason))

    def _event(self, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        return _with_usage_field({
            "id": "chatcmpl-" + self.ids.request_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.parsed.model, **self.parsed.echoed,
            "choices": [{"index": 0, "delta": delta, "logprobs": None,
                         "finish_reason": finish_reason}],
        }, self.parsed)

    def start(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""}, None)

    def delta(self, text: str) -> bytes:
        top = self.parsed.logprobs
        if top is None:
            return self._delta.render(text)
        event = self._event({"content": text}, None)
        event["choices"][0]["logprobs"] = chat_token_logprobs([text], top)
        return sse(event)

    def finish(self, finished: Finished, text: str) -> bytes:
        last = self._chunk({}, finished.finish_reason)
        if self.parsed.include_usage:
            last += _usage_chunk(self._event({}, None),
                                 _usage(self.prompt_token_count(finished), finished.tokens))
        return last + _DONE

    def fail(self, failed: Failed) -> bytes:
        return _stream_error(failed)

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "id": "chatcmpl-" + self.ids.request_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.parsed.model, **self.parsed.echoed,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None if self.parsed.logprobs is None
                else chat_token_logprobs(self.pieces, self.parsed.logprobs),
                "finish_reason": finished.finish_reason,
            }],
            "usage": _usage(self.prompt_token_count(finished), finished.tokens),
        }


class _ChatSpec(ApiSpec):
    path = "/v1/chat/completions"
    endpoint = "chat_completions"
    legacy_id_headers = LEGACY_ID_HEADERS

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        single_choice(body)
        stream = opt_bool(body, "stream")
        stream_options_need_stream(body, stream)
        json_schema = chat_options(body)
        check_chat_choices(body)
        prompt = chat_prompt(body.get("messages"), roles=CHAT_ROLES)
        check_json_mode_asked(body.get("response_format"), prompt, _JSON_WORD, "messages")
        require_content(body["messages"], "messages", _CONTENT_REQUIRED)
        check_tool_turns(body["messages"])
        check_message_names(body["messages"])
        check_chat_content(body["messages"])
        return Parsed(
            model=model_name(body, settings.model),
            prompt=prompt,
            max_tokens=_chat_max_tokens(body, settings),
            stream=stream,
            include_usage=stream_usage(body),
            stop=openai_sampling(body),
            logprobs=chat_logprobs(body),
            json_schema=json_schema,
            echoed=chat_choices_echoed(body),
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _ChatRenderer(parsed, ids)


@dataclass(slots=True, kw_only=True)
class _CompletionParsed(Parsed):
    # ``echo``: the text begins with the prompt, as OpenAI answers it.
    echo: bool = False


class _CompletionRenderer(Renderer):
    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self._delta = SseTemplate(self._event(SseTemplate.HOLE, None))
        self._offset = 0  # where the next streamed token starts in the text
        echo = isinstance(parsed, _CompletionParsed) and parsed.echo
        self._prompt_echo = parsed.prompt if echo else ""

    def start(self) -> bytes:
        # The echoed prompt comes first, as its own chunk (as OpenAI streams it).
        self._offset = len(self._prompt_echo)
        return self._chunk(self._prompt_echo, None) if self._prompt_echo else b""

    def _chunk(self, text: str, finish_reason: str | None) -> bytes:
        return sse(self._event(text, finish_reason))

    def _event(self, text: str, finish_reason: str | None) -> dict[str, Any]:
        return _with_usage_field({
            "id": "cmpl-" + self.ids.request_id,
            "object": "text_completion",
            "created": self.created,
            "model": self.parsed.model,
            "choices": [{"index": 0, "text": text, "logprobs": None,
                         "finish_reason": finish_reason}],
        }, self.parsed)

    def delta(self, text: str) -> bytes:
        top = self.parsed.logprobs
        if top is None:
            return self._delta.render(text)
        event = self._event(text, None)
        event["choices"][0]["logprobs"] = completion_token_logprobs([text], top, self._offset)
        self._offset += len(text)
        return sse(event)

    def finish(self, finished: Finished, text: str) -> bytes:
        last = self._chunk("", finished.finish_reason)
        if self.parsed.include_usage:
            last += _usage_chunk(self._event("", None),
                                 _usage(self.prompt_token_count(finished), finished.tokens))
        return last + _DONE

    def fail(self, failed: Failed) -> bytes:
        return _stream_error(failed)

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "id": "cmpl-" + self.ids.request_id,
            "object": "text_completion",
            "created": self.created,
            "model": self.parsed.model,
            "choices": [{"index": 0, "text": self._prompt_echo + text,
                         "logprobs": None if self.parsed.logprobs is None
                         else completion_token_logprobs(self.pieces, self.parsed.logprobs),
                         "finish_reason": finished.finish_reason}],
            "usage": _usage(self.prompt_token_count(finished), finished.tokens),
        }


class _CompletionSpec(ApiSpec):
    path = "/v1/completions"
    endpoint = "completions"
    legacy_id_headers = LEGACY_ID_HEADERS

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        if "prompt" not in body:
            raise InvalidRequest("'prompt' is required", param="prompt")
        single_choice(body)
        stream = opt_bool(body, "stream")
        stream_options_need_stream(body, stream)
        logprobs = completion_logprobs(body)
        echo = opt_bool(body, "echo")
        completion_options(body, stream)
        if echo and logprobs is not None:
            # The prompt's tokens would need log probabilities the engine never computed.
            raise InvalidRequest("'echo' with 'logprobs' is not supported", param="echo")
        return _CompletionParsed(
            model=model_name(body, settings.model),
            prompt=token_prompt(body["prompt"], "prompt"),
            prompt_tokens=token_count(body["prompt"]),
            max_tokens=max_tokens_of(body, settings, "max_tokens"),
            stream=stream,
            include_usage=stream_usage(body),
            stop=openai_sampling(body),
            logprobs=logprobs,
            echo=echo,
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _CompletionRenderer(parsed, ids)


CHAT = _ChatSpec()
COMPLETIONS = _CompletionSpec()
