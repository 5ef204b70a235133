"""OpenAI-style routes: chat completions, completions and the Responses API."""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import (
    NO_TEXT,
    InvalidRequest,
    Parsed,
    chat_prompt,
    model_name,
    opt_bool,
    opt_str,
    single_choice,
    stream_usage,
    token_limit,
    token_prompt,
)
from ridtrace.frontend_plugin.logprobs import (
    chat_logprobs,
    chat_token_logprobs,
    completion_logprobs,
    completion_token_logprobs,
)
from ridtrace.frontend_plugin.pump import Failed, Finished
from ridtrace.frontend_plugin.routes.base import ApiSpec, Ids, Renderer, SseTemplate, sse
from ridtrace.frontend_plugin.sampling import openai_sampling, stream_options_need_stream
from ridtrace.frontend_plugin.settings import FrontendSettings

__all__ = ["CHAT", "COMPLETIONS", "RESPONSES"]

# Before the fix these headers became the in-flight key on the OpenAI-style routes.
_LEGACY_HEADERS = ("x-dynamo-request-id", "request-id", "x-request-id")
_DONE = b"data: [DONE]\n\n"


def _limit(body: dict[str, Any], settings: FrontendSettings, *names: str) -> int:
    for name in names:
        if body.get(name) is not None:
            return token_limit(
                body[name], param=name, limit=settings.max_tokens_limit,
                default=settings.default_max_tokens,
            )
    return settings.default_max_tokens


def _usage(finished: Finished, tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": finished.prompt_tokens,
        "completion_tokens": tokens,
        "total_tokens": finished.prompt_tokens + tokens,
    }


def _usage_chunk(event: dict[str, Any], finished: Finished) -> bytes:
    """The last chunk ``stream_options.include_usage`` asks for: no choices, the usage."""
    return sse({**event, "choices": [], "usage": _usage(finished, finished.tokens)})


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
        return {
            "id": "chatcmpl-" + self.ids.request_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.parsed.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None,
                         "finish_reason": finish_reason}],
        }

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
            last += _usage_chunk(self._event({}, None), finished)
        return last + _DONE

    def fail(self, failed: Failed) -> bytes:
        return _stream_error(failed)

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "id": "chatcmpl-" + self.ids.request_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.parsed.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None if self.parsed.logprobs is None
                else chat_token_logprobs(self.pieces, self.parsed.logprobs),
                "finish_reason": finished.finish_reason,
            }],
            "usage": _usage(finished, finished.tokens),
        }


class _ChatSpec(ApiSpec):
    path = "/v1/chat/completions"
    endpoint = "chat_completions"
    legacy_id_headers = _LEGACY_HEADERS

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        single_choice(body)
        stream = opt_bool(body, "stream")
        stream_options_need_stream(body, stream)
        return Parsed(
            model=model_name(body, settings.model),
            prompt=chat_prompt(body.get("messages")),
            max_tokens=_limit(body, settings, "max_completion_tokens", "max_tokens"),
            stream=stream,
            include_usage=stream_usage(body),
            stop=openai_sampling(body),
            logprobs=chat_logprobs(body),
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _ChatRenderer(parsed, ids)


class _CompletionRenderer(Renderer):
    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self._delta = SseTemplate(self._event(SseTemplate.HOLE, None))
        self._offset = 0  # where the next streamed token starts in the text

    def _chunk(self, text: str, finish_reason: str | None) -> bytes:
        return sse(self._event(text, finish_reason))

    def _event(self, text: str, finish_reason: str | None) -> dict[str, Any]:
        return {
            "id": "cmpl-" + self.ids.request_id,
            "object": "text_completion",
            "created": self.created,
            "model": self.parsed.model,
            "choices": [{"index": 0, "text": text, "logprobs": None,
                         "finish_reason": finish_reason}],
        }

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
            last += _usage_chunk(self._event("", None), finished)
        return last + _DONE

    def fail(self, failed: Failed) -> bytes:
        return _stream_error(failed)

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "id": "cmpl-" + self.ids.request_id,
            "object": "text_completion",
            "created": self.created,
            "model": self.parsed.model,
            "choices": [{"index": 0, "text": text,
                         "logprobs": None if self.parsed.logprobs is None
                         else completion_token_logprobs(self.pieces, self.parsed.logprobs),
                         "finish_reason": finished.finish_reason}],
            "usage": _usage(finished, finished.tokens),
        }


class _CompletionSpec(ApiSpec):
    path = "/v1/completions"
    endpoint = "completions"
    legacy_id_headers = _LEGACY_HEADERS

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        if "prompt" not in body:
            raise InvalidRequest("'prompt' is required", param="prompt")
        single_choice(body)
        stream = opt_bool(body, "stream")
        stream_options_need_stream(body, stream)
        return Parsed(
            model=model_name(body, settings.model),
            prompt=token_prompt(body["prompt"], "prompt"),
            max_tokens=_limit(body, settings, "max_tokens"),
            stream=stream,
            include_usage=stream_usage(body),
            stop=openai_sampling(body),
            logprobs=completion_logprobs(body),
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _CompletionRenderer(parsed, ids)


class _ResponsesRenderer(Renderer):
    """Responses API events, each with ``type`` and a running ``sequence_number``."""

    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self.seq = 0
        self.resp_id = "resp_" + ids.hex
        self.item_id = "msg_" + ids.hex

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return sse(data, kind)

    def _part(self, text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def _item(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [self._part(text)]
        return {"type": "message", "id": self.item_id, "status": status, "role": "assistant",
                "content": content}

    def _response(self, status: str, output: list[dict[str, Any]],
                  finished: Finished | None = None, error: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
        usage = None
        if finished is not None:
            usage = {
                "input_tokens": finished.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
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
            "error": error, "incomplete_details": incomplete, "instructions": None,
            "max_output_tokens": self.parsed.max_tokens, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "temperature": 1.0, "top_p": 1.0,
            "metadata": {}, "usage": usage,
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
        return self._event("response.output_text.delta", item_id=self.item_id, output_index=0,
                           content_index=0, delta=text, logprobs=[])

    def finish(self, finished: Finished, text: str) -> bytes:
        status = "completed" if finished.finish_reason == "stop" else "incomplete"
        return (
            self._event("response.output_text.done", item_id=self.item_id, output_index=0,
                        content_index=0, text=text, logprobs=[])
            + self._event("response.content_part.done", item_id=self.item_id, output_index=0,
                          content_index=0, part=self._part(text))
            + self._event("response.output_item.done", output_index=0,
                          item=self._item(text, "completed"))
            + self._event(f"response.{status}",
                          response=self._response(status, [self._item(text, "completed")],
                                                  finished))
        )

    def fail(self, failed: Failed) -> bytes:
        error = {"code": "server_error", "message": failed.message}
        return self._event("error", code="server_error", message=failed.message, param=None) + \
            self._event("response.failed", response=self._response("failed", [], error=error))

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        status = "completed" if finished.finish_reason == "stop" else "incomplete"
        return self._response(status, [self._item(text, "completed")], finished)


def _conversation_items(items: list[Any]) -> list[Any]:
    """Responses ``input`` items as messages: a ``function_call_output`` is the tool's
    ``tool`` message (as on chat); other items without a role (the model's
    ``function_call``, ``reasoning``, references) hold no text for the engine and are
    left out (:data:`NO_TEXT`, so later items keep their index in error messages).
    Refusing them failed every tool round trip."""
    kept: list[Any] = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) and "role" not in item else None
        if kind == "function_call_output":
            kept.append({"role": "tool", "content": item.get("output")})
        elif isinstance(kind, str) and kind:
            kept.append(NO_TEXT)
        else:
            kept.append(item)
    return kept


class _ResponsesSpec(ApiSpec):
    path = "/v1/responses"
    endpoint = "responses"
    legacy_id_headers = _LEGACY_HEADERS

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        instructions = opt_str(body, "instructions")
        value = body.get("input")
        if isinstance(value, str):
            prompt = chat_prompt([{"role": "user", "content": value}], "input", instructions)
        elif isinstance(value, list):
            prompt = chat_prompt(_conversation_items(value), "input", instructions)
        else:
            raise InvalidRequest("'input' must be a string or a list of messages", param="input")
        return Parsed(
            model=model_name(body, settings.model),
            prompt=prompt,
            max_tokens=_limit(body, settings, "max_output_tokens"),
            stream=opt_bool(body, "stream"),
            stop=openai_sampling(body, penalties_and_stop=False),
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _ResponsesRenderer(parsed, ids)


CHAT = _ChatSpec()
COMPLETIONS = _CompletionSpec()
RESPONSES = _ResponsesSpec()
