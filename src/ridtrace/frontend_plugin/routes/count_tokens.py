"""Anthropic's ``POST /v1/messages/count_tokens``: the prompt's tokens, nothing generated.

The Anthropic SDK's ``messages.count_tokens`` (which agents call before sending a long
conversation) got 404 ``not_found_error``. The count is the one a ``/v1/messages`` reply
reports as ``usage.input_tokens`` for the same body; nothing is registered or dispatched.
"""

from __future__ import annotations

import orjson
from starlette.requests import ClientDisconnect
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ridtrace.frontend_plugin.asgi_io import early_refusal, receive_body
from ridtrace.frontend_plugin.bodies import (
    InvalidRequest,
    chat_prompt,
    content_text,
    json_error,
    model_name,
    require_object,
)
from ridtrace.frontend_plugin.routes.anthropic import MESSAGES, input_tokens
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.tracing import annotate_request

__all__ = ["COUNT_TOKENS_PATH", "CountTokensEndpoint"]

COUNT_TOKENS_PATH = MESSAGES.path + "/count_tokens"


class CountTokensEndpoint:
    """The route as a plain ASGI app, naming itself in ``scope["route"]`` as the
    inference endpoints do (``http.route`` and the ``route`` log field)."""

    def __init__(self, settings: FrontendSettings) -> None:
        self.settings = settings
        self.route = Route(COUNT_TOKENS_PATH, self, methods=["POST"], name="count_tokens")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # No `endpoint` on its request.end: that field marks inference requests, whose
        # work forensics looks for on the workers (docs/log-schema.md).
        scope["route"] = self.route
        settings = self.settings
        early = early_refusal(scope, settings.max_body_bytes)
        if early is not None:
            await _answer(send, early.status,
                          _error(early.status, early.message, "invalid_request_error"),
                          close=early.close)
            return
        try:
            with Deadline(settings.body_timeout):
                body = await receive_body(scope, receive, settings.max_body_bytes)
        except TimeoutError:
            await _answer(send, 408, _error(408, "request body not received in full"),
                          close=True)
            return
        except ClientDisconnect:
            return
        if body is None:
            await _answer(send, 413, _error(
                413, f"request body exceeds {settings.max_body_bytes} bytes"))
            return
        try:
            request = require_object(orjson.loads(body))
            model_name(request, settings.model)  # checked as on /v1/messages
            system = request.get("system")
            prompt = chat_prompt(request.get("messages"), "messages",
                                 content_text(system, "system") if system is not None else None)
        except orjson.JSONDecodeError as exc:
            await _answer(send, 400, _error(400, json_error(body, exc)))
            return
        except InvalidRequest as exc:
            await _answer(send, exc.status, _error(exc.status, exc.message))
            return
        await _answer(send, 200, {"input_tokens": input_tokens(prompt)})


def _error(status: int, message: str, kind: str | None = None) -> dict[str, object]:
    annotate_request(error=message)
    return MESSAGES.error_payload(status, message, kind)


async def _answer(send: Send, status: int, payload: dict[str, object],
                  close: bool = False) -> None:
    body = orjson.dumps(payload)
    headers = [(b"content-length", str(len(body)).encode("latin-1")),
               (b"content-type", b"application/json")]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
