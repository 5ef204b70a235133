"""Token counting: the prompt's tokens, nothing generated.

Anthropic's ``POST /v1/messages/count_tokens`` and OpenAI's ``POST
/v1/responses/input_tokens``. The SDKs' ``messages.count_tokens`` (which agents call
before sending a long conversation) and ``responses.input_tokens.count`` got 404. The
count is the one a reply to the same body reports as ``usage.input_tokens``; nothing is
registered or dispatched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import ClientDisconnect
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ridtrace.contract import SHUTTING_DOWN
from ridtrace.frontend_plugin import json_codec
from ridtrace.frontend_plugin.bodies import (
    InvalidRequest,
    check_nesting,
    json_error,
    model_name,
    require_object,
)
from ridtrace.frontend_plugin.drain import Drain
from ridtrace.frontend_plugin.early_refusals import early_refusal
from ridtrace.frontend_plugin.request_body import (
    BODY_TIMED_OUT,
    GO_ELSEWHERE,
    Stopped,
    body_timed_out,
    read_request_body,
)
from ridtrace.frontend_plugin.request_options import anthropic_options
from ridtrace.frontend_plugin.routes.anthropic import MESSAGES, input_tokens, messages_prompt
from ridtrace.frontend_plugin.routes.base import ApiSpec
from ridtrace.frontend_plugin.routes.responses import RESPONSES
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.tracing import annotate_request

__all__ = ["COUNTERS", "COUNT_TOKENS_PATH", "CountTokensEndpoint", "TokenCounter"]

COUNT_TOKENS_PATH = MESSAGES.path + "/count_tokens"


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """One counting route: its path and name, the API whose error shape it answers in,
    the normalised prompt of a body (raises ``InvalidRequest``), and the answer."""

    path: str
    name: str
    api: ApiSpec
    prompt: Callable[[dict[str, Any], FrontendSettings], str]
    answer: Callable[[int], dict[str, object]]


def _messages_prompt(request: dict[str, Any], settings: FrontendSettings) -> str:
    model_name(request, settings.model)  # checked as on /v1/messages, and so are
    anthropic_options(request, None)  # the options (tools, thinking...): see there
    return messages_prompt(request)


COUNTERS = (
    TokenCounter(COUNT_TOKENS_PATH, "count_tokens", MESSAGES, _messages_prompt,
                 lambda n: {"input_tokens": n}),
    # The body of a /v1/responses request, checked as there (the worker counts the
    # normalised prompt's words, as input_tokens does).
    TokenCounter(RESPONSES.path + "/input_tokens", "input_tokens", RESPONSES,
                 lambda request, settings: RESPONSES.checked(
                     request, settings, replying=False).prompt,
                 lambda n: {"object": "response.input_tokens", "input_tokens": n}),
)


class CountTokensEndpoint:
    """The route as a plain ASGI app, naming itself in ``scope["route"]`` as the
    inference endpoints do (``http.route`` and the ``route`` log field)."""

    def __init__(
        self, settings: FrontendSettings, counter: TokenCounter = COUNTERS[0],
        drain: Drain | None = None,
    ) -> None:
        self.settings = settings
        self.counter = counter
        self.drain = drain  # a server stop ends a body read with a 503
        self.route = Route(counter.path, self, methods=["POST"], name=counter.name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # No `endpoint` on its request.end: that field marks inference requests, whose
        # work forensics looks for on the workers (docs/log-schema.md).
        scope["route"] = self.route
        settings, api = self.settings, self.counter.api
        early = early_refusal(scope, settings.max_body_bytes)
        if early is not None:
            await _answer(send, early.status,
                          _error(api, early.status, early.message, "invalid_request_error"),
                          extra=early.answer_headers)
            return
        try:
            body = await read_request_body(scope, receive, settings, self.drain)
        except Stopped:
            await _answer(send, 503, _error(api, 503, SHUTTING_DOWN), extra=GO_ELSEWHERE)
            return
        except TimeoutError:
            await _answer(send, 408, _error(api, 408, body_timed_out(settings),
                                            logged=BODY_TIMED_OUT), close=True)
            return
        except ClientDisconnect:
            return
        if body is None:
            await _answer(send, 413, _error(
                api, 413, f"request body exceeds {settings.max_body_bytes} bytes"))
            return
        try:
            raw = require_object(json_codec.loads(body))
            check_nesting(raw, body)  # as the route it counts for: told fine, then a 400
            prompt = self.counter.prompt(raw, settings)
        except orjson.JSONDecodeError as exc:
            await _answer(send, 400, _error(api, 400, json_error(body, exc)))
            return
        except InvalidRequest as exc:
            await _answer(send, exc.status, _error(api, exc.status, exc.message, None,
                                                   exc.param, exc.code))
            return
        await _answer(send, 200, self.counter.answer(input_tokens(prompt)))


def _error(api: ApiSpec, status: int, message: str, kind: str | None = None,
           param: str | None = None, code: str | None = None, *,
           logged: str | None = None) -> dict[str, object]:
    """The error answer's body; `request.end`'s `error` is `logged`, or the message (the
    408's as the other routes log it, without the deadline it tells the caller)."""
    annotate_request(error=logged or message)
    return api.error_payload(status, message, kind, param, code)


async def _answer(send: Send, status: int, payload: dict[str, object],
                  close: bool = False, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = json_codec.dumps(payload)
    headers = [(b"content-length", str(len(body)).encode("latin-1")),
               (b"content-type", b"application/json"), *extra]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
