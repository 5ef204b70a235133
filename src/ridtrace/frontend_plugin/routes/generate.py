"""Native ``/inference/v1/generate`` and SGLang-style ``/generate``.

Both return the client's id in the body: ``/inference/v1/generate`` takes
``x-request-id`` before the body's ``request_id``; ``/generate`` takes the body's
``rid`` before the header and passes it to the worker as the SGLang session key.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import (
    InvalidRequest,
    Parsed,
    body_client_id,
    model_name,
    opt_bool,
    token_limit,
)
from ridtrace.frontend_plugin.prompts import token_count, token_ids_refused, token_prompt
from ridtrace.frontend_plugin.pump import Failed, Finished
from ridtrace.frontend_plugin.reply_formats import sglang_format
from ridtrace.frontend_plugin.routes.base import ApiSpec, Ids, Renderer, SseTemplate, sse
from ridtrace.frontend_plugin.sampling import generate_sampling
from ridtrace.frontend_plugin.settings import FrontendSettings

__all__ = ["GENERATE", "SGLANG_GENERATE"]

_DONE = b"data: [DONE]\n\n"


def _token_ids(value: Any, param: str) -> str:
    """Token ids only: text in ``token_ids`` / ``input_ids`` was served as the prompt."""
    if isinstance(value, str) or (isinstance(value, list) and value and isinstance(value[0], str)):
        raise InvalidRequest(token_ids_refused(param, text_allowed=False), param=param)
    return token_prompt(value, param, text_allowed=False)


def _prompt_field(body: dict[str, Any], text: str, ids: str) -> str:
    """Which of the two prompt fields ``body`` sets. ``null`` is not set, as in SGLang's
    and vLLM's request models (a client writing its request object whole sends the
    other one as ``null``: that was a 400); both set is refused, as SGLang refuses it,
    instead of answering the token ids and dropping the text."""
    given = [name for name in (ids, text) if body.get(name) is not None]
    if len(given) == 2:
        raise InvalidRequest(f"give '{text}' or '{ids}', not both", param=ids)
    if not given:
        raise InvalidRequest(f"'{text}' or '{ids}' is required", param=text)
    return given[0]


def _params(body: dict[str, Any]) -> dict[str, Any]:
    params = body.get("sampling_params")
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidRequest("'sampling_params' must be an object", param="sampling_params")
    return params


class _GenerateRenderer(Renderer):
    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self._delta: SseTemplate | None = None

    def _chunk(self, text: str, finish_reason: str | None, **extra: Any) -> bytes:
        return sse({"request_id": self.ids.public_id, "model": self.parsed.model, "text": text,
                    "finish_reason": finish_reason, **extra})

    def _usage(self, finished: Finished) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_token_count(finished),
                "completion_tokens": finished.tokens}

    def delta(self, text: str) -> bytes:
        if self._delta is None:
            self._delta = SseTemplate({"request_id": self.ids.public_id,
                                       "model": self.parsed.model, "text": SseTemplate.HOLE,
                                       "finish_reason": None})
        return self._delta.render(text)

    def finish(self, finished: Finished, text: str) -> bytes:
        return self._chunk("", finished.finish_reason, usage=self._usage(finished)) + _DONE

    def fail(self, failed: Failed) -> bytes:
        return sse({"request_id": self.ids.public_id,
                    "error": {"message": failed.message, "type": "server_error",
                              "code": failed.reason}})

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        return {"request_id": self.ids.public_id, "model": self.parsed.model, "text": text,
                "finish_reason": finished.finish_reason, "usage": self._usage(finished)}


class _GenerateSpec(ApiSpec):
    path = "/inference/v1/generate"
    endpoint = "generate"
    body_id_field = "request_id"
    body_id_first = False

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        name = _prompt_field(body, "prompt", "token_ids")
        sent = body[name]
        prompt = _token_ids(sent, name) if name == "token_ids" else token_prompt(sent, name)
        params = _params(body)
        # sampling_params' limit wins, but both are checked: the other was taken whatever
        # it held.
        limits = [
            token_limit(value, param=name, limit=settings.max_tokens_limit,
                        default=settings.default_max_tokens)
            for name, value in (("sampling_params.max_tokens", params.get("max_tokens")),
                                ("max_tokens", body.get("max_tokens")))
            if value is not None
        ]
        return Parsed(
            model=model_name(body, settings.model),
            prompt=prompt,
            max_tokens=limits[0] if limits else settings.default_max_tokens,
            stream=opt_bool(body, "stream"),
            body_client_id=body_client_id(body, "request_id"),
            stop=generate_sampling(params, "sampling_params"),
            prompt_tokens=token_count(sent),
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _GenerateRenderer(parsed, ids)


def _sglang_finish(finished: Finished) -> dict[str, str | int]:
    """SGLang's ``finish_reason``: ``matched`` names the stop string that ended the text,
    ``length`` the token limit that cut it (the tokens produced, as many as the limit)."""
    if finished.stop_sequence is not None:
        return {"type": finished.finish_reason, "matched": finished.stop_sequence}
    if finished.finish_reason == "length":
        return {"type": "length", "length": finished.tokens}
    return {"type": finished.finish_reason}


class _SglangRenderer(Renderer):
    """SGLang streams the cumulative text so far, and the tokens so far, in every event."""

    def __init__(self, parsed: Parsed, ids: Ids) -> None:
        super().__init__(parsed, ids)
        self.text = ""
        # Each delta is one token of the worker's. SGLang's meta_info counts them in every
        # event (clients read progress and benchmarks their rate mid-stream): every
        # event but the last said 0.
        self.tokens = 0
        # Counted once: every event carries it, and splitting a 1 MB prompt per event
        # (2.6 ms each) held the frontend's event loop for 21 s over 8192 events.
        self.prompt_tokens = (len(parsed.prompt.split()) if parsed.prompt_tokens is None
                              else parsed.prompt_tokens)

    def _meta(self, finish: dict[str, str | int] | None, tokens: int) -> dict[str, Any]:
        return {"id": self.ids.public_id, "finish_reason": finish,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": tokens}

    def delta(self, text: str) -> bytes:
        self.text += text
        self.tokens += 1
        return sse({"text": self.text, "rid": self.ids.public_id,
                    "meta_info": self._meta(None, self.tokens)})

    def finish(self, finished: Finished, text: str) -> bytes:
        meta = self._meta(_sglang_finish(finished), finished.tokens)
        return sse({"text": text, "rid": self.ids.public_id, "meta_info": meta}) + _DONE

    def fail(self, failed: Failed) -> bytes:
        # SGLang ends a failed stream with [DONE] too, so a client reading to it tells a
        # failed generation from a dropped connection.
        return sse({"rid": self.ids.public_id,
                    "error": {"message": failed.message, "type": "server_error",
                              "code": failed.reason}}) + _DONE

    def body(self, text: str, finished: Finished) -> dict[str, Any]:
        return {"text": text, "rid": self.ids.public_id,
                "meta_info": self._meta(_sglang_finish(finished), finished.tokens)}


class _SglangSpec(ApiSpec):
    path = "/generate"
    endpoint = "sglang_generate"
    body_id_field = "rid"
    body_id_first = True

    def parse(self, body: dict[str, Any], settings: FrontendSettings) -> Parsed:
        if _prompt_field(body, "text", "input_ids") == "input_ids":
            ids = body["input_ids"]
            if isinstance(ids, list) and ids and isinstance(ids[0], list):
                # SGLang answers a list of lists, even of one, with a list of replies: one
                # reply object, as for a single prompt, broke the caller's [0].
                raise InvalidRequest("'input_ids' must be one list of token ids (batches are "
                                     "not supported)", param="input_ids")
            prompt = _token_ids(ids, "input_ids")
        elif isinstance(body["text"], str):
            prompt = body["text"]
        else:
            raise InvalidRequest("'text' must be a string (batches are not supported)",
                                 param="text")
        if opt_bool(body, "return_logprob"):
            # SGLang's answer is [logprob, token_id, text] per token in meta_info, and the
            # echo engine has no token ids: a 200 without them failed the caller later,
            # on a missing key.
            raise InvalidRequest("'return_logprob' is not supported: the echo engine has "
                                 "no token ids to return", param="return_logprob")
        rid = body_client_id(body, "rid")
        params = _params(body)
        return Parsed(
            model=model_name(body, settings.model),
            prompt=prompt,
            max_tokens=token_limit(params.get("max_new_tokens"),
                                   param="sampling_params.max_new_tokens",
                                   limit=settings.max_tokens_limit,
                                   default=settings.default_max_tokens),
            stream=opt_bool(body, "stream"),
            body_client_id=rid,
            # SGLang uses a session request's rid as the session key: keep it for the worker.
            session_id=rid,
            stop=generate_sampling(params, "sampling_params"),
            json_schema=sglang_format(params),
            prompt_tokens=token_count(body.get("input_ids")),
        )

    def renderer(self, parsed: Parsed, ids: Ids) -> Renderer:
        return _SglangRenderer(parsed, ids)


GENERATE = _GenerateSpec()
SGLANG_GENERATE = _SglangSpec()
