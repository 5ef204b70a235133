"""``POST /v1/work`` as plain ASGI: the worker's hot path, below the tracing middleware.

FastAPI's and Starlette's per-request machinery (exception middleware, exit stack,
router, ``Request``, a streaming response with a generator and a disconnect watcher)
was most of a worker's CPU per request once its own work was cheap (issue 15). This
endpoint reads the envelope straight from ``receive`` and, when the engine has the
whole reply ready at once (no pacing, gate or fault), writes it as one body with its
length: two ``send`` calls, no task, no generator. A paced reply streams one write per
ready batch, with a disconnect watcher, as before. Everything else a worker serves
(``/health``, ``/metrics``, debug routes, the lifespan) stays on the Starlette app
behind it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace.contract import (
    OUTCOME_CANCELLED,
    OUTCOME_CONFLICT,
    OUTCOME_ERROR,
    OUTCOME_INVALID,
    OUTCOME_OK,
    WORKER_REFUSED,
    WORKER_START,
)
from ridtrace.fingerprint import fingerprint
from ridtrace.frontend_plugin import json_codec
from ridtrace.frontend_plugin.asgi_io import GuardedStreamingResponse, receive_body
from ridtrace.frontend_plugin.drain import Drain, StopOnDrain, Stopped
from ridtrace.frontend_plugin.early_refusals import (
    refused_before_continue,
    transfer_coding_refusal,
    web_page_refusal,
)
from ridtrace.frontend_plugin.engine import EchoEngine, echo_tokens
from ridtrace.frontend_plugin.failures import GO_ELSEWHERE
from ridtrace.frontend_plugin.registry import DuplicateRequestId, InflightRegistry
from ridtrace.frontend_plugin.settings import WorkerSettings
from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.frontend_plugin.wire import WORK_PATH, WorkRequest
from ridtrace.frontend_plugin.work_reply import log_end, paced_reply, whole_reply
from ridtrace.frontend_plugin.worker_errors import not_served
from ridtrace.frontend_plugin.worker_identity import adopt_identity
from ridtrace.tracing import annotate_request
from ridtrace.tracing.context import current_context
from ridtrace.tracing.eventlog import EventLog
from ridtrace.tracing.identity import DEFAULT_MAX_CLIENT_ID_LENGTH
from ridtrace.tracing.observed import server_answered

__all__ = ["RouteName", "WorkEndpoint", "WorkRoute"]

# The worker's lines keep the logger name they had when this code lived in worker.py.
events = EventLog("ridtrace.frontend_plugin.worker")

_NDJSON = "application/x-ndjson"
_NDJSON_HEADER = (b"content-type", _NDJSON.encode("latin-1"))
_JSON_HEADER = (b"content-type", b"application/json")
_TOO_LARGE = "work envelope too large"


@dataclass(frozen=True, slots=True)
class RouteName:
    """What ``scope["route"]`` holds for a route served outside a router: its template,
    read by the tracing middleware for ``http.route`` and the ``route`` log field."""

    path: str


_WORK_ROUTE = RouteName(WORK_PATH)


def work_route_of(others: Callable[[Scope], Any]) -> Callable[[Scope], Any]:
    """The route a request was meant for: the work route, else what `others` finds
    (a refusal's label, `SharedSecretMiddleware`'s ``route_of``)."""

    def route_of(scope: Scope) -> Any:
        return _WORK_ROUTE if scope["path"] == WORK_PATH else others(scope)

    return route_of


class WorkRoute:
    """Serves ``POST /v1/work`` with ``endpoint``; every other request goes to ``app``."""

    def __init__(self, app: ASGIApp, *, endpoint: WorkEndpoint) -> None:
        self.app = app
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == WORK_PATH:
            scope["route"] = _WORK_ROUTE
            if scope["method"] == "POST":
                await self.endpoint(scope, receive, send)
            else:
                await _send_json(send, 405, not_served("Method Not Allowed", scope),
                                 extra=((b"allow", b"POST"),))
            return
        await self.app(scope, receive, send)


class WorkEndpoint:
    """Runs one work envelope: checks, Conflict refusal of a held id, the reply.

    Args:
        config: the worker's settings (limits, faults, baggage names).
        registry: the worker's in-flight table; a held ``request_id`` gets a 409.
        engine: produces the tokens.
        drain: where paced replies are held so a shutdown can end them with an error
            line; a new one by default.
        max_id_length: the longest request_id / session_id taken (the tracing
            settings' ``max_client_id_length``, never below its default).
    """

    def __init__(
        self, config: WorkerSettings, registry: InflightRegistry, engine: EchoEngine,
        drain: Drain | None = None, *, max_id_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH,
    ) -> None:
        self.config = config
        self.max_id_length = max_id_length
        self.registry = registry
        self.engine = engine
        self.drain = drain if drain is not None else Drain()  # an empty one is falsy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        config = self.config
        refusal = transfer_coding_refusal(scope)
        if refusal is not None:  # RFC 9112: 501; the body is left unread
            await _refuse_invalid(scope, send, 501, refusal, extra=((b"connection", b"close"),))
            return
        from_a_page = web_page_refusal(scope)
        if from_a_page is not None:  # the body stays unread
            await _refuse_invalid(scope, send, *from_a_page, extra=((b"connection", b"close"),))
            return
        if refused_before_continue(scope, config.max_body_bytes):
            # Said before uvicorn's 100 Continue (at the first body read), which invited
            # a client to upload 100 MB it would only be refused for.
            await _refuse_invalid(scope, send, 413, _TOO_LARGE,
                                  extra=((b"connection", b"close"),))
            return
        # An envelope still arriving when the server stops is a request in flight: left
        # to uvicorn's cancellation at the grace period's end, its caller got a plain-text
        # 500 without ids and uvicorn logged a traceback. Held in the drain, it is
        # refused with a 503 (go elsewhere) shortly before, as the frontend's are.
        stop = StopOnDrain()
        self.drain.hold(stop)
        try:
            # An envelope that never ends (a content-length larger than what is sent, a
            # chunked body left open) held its connection and task forever: the header
            # timeout ends with the headers.
            with Deadline(config.body_timeout):
                body = await stop.wait(receive_body(scope, receive, config.max_body_bytes))
        except ClientDisconnect:
            # Nobody to answer. Counted as a cancelled request by the requests metric; a
            # worker writes no line for work it never received.
            return
        except TimeoutError:
            # The rest may still come: the connection cannot carry another request.
            await _refuse_invalid(
                scope, send, 408,
                f"work envelope not received in full within {config.body_timeout:g}s",
                extra=((b"connection", b"close"),),
            )
            return
        except Stopped as stopped:
            await _refuse_invalid(scope, send, 503, str(stopped), outcome=OUTCOME_ERROR,
                                  kind="server_error", extra=GO_ELSEWHERE)
            return
        finally:
            self.drain.release(stop)
        if body is None:
            await _refuse_invalid(scope, send, 413, _TOO_LARGE)
            return
        try:
            job = WorkRequest.from_json(body, max_id_length=self.max_id_length)
        except ValueError as exc:
            await _refuse_invalid(scope, send, 400, str(exc))
            return
        if job.max_tokens > config.max_tokens_limit:
            await _refuse_invalid(
                scope, send, 400, f"max_tokens must be at most {config.max_tokens_limit}"
            )
            return
        # A bad client id in the envelope (only a direct caller of /v1/work sends one:
        # the frontend sends the id it checked) is dropped and said so, as the
        # middleware says so of a bad header: the work is still the caller's.
        id_refused = adopt_identity(job, config.baggage_attributes, self.max_id_length)
        # The channel is this request's identity in the table: release() frees the id
        # only while it is still ours.
        channel: asyncio.Queue[object] = asyncio.Queue()
        registry = self.registry
        try:
            registry.register(job.request_id, channel)
        except DuplicateRequestId as exc:
            events.warning(
                WORKER_REFUSED, event=WORKER_REFUSED, outcome=OUTCOME_CONFLICT, status=409,
                endpoint=job.endpoint, deprecated_headers=deprecated_sent(),
            )
            annotate_request(outcome_override=OUTCOME_CONFLICT)  # the requests metric too
            await _send_error(send, 409, str(exc), kind="conflict")
            return
        events.info(
            WORKER_START, event=WORKER_START, endpoint=job.endpoint, model=job.model,
            fp_in=fingerprint(job.prompt), session_id=job.session_id,
            deprecated_headers=deprecated_sent(), x_request_id_rejected=id_refused or None,
        )
        if not self.engine.ready_now():

            def release() -> None:
                registry.release(job.request_id, channel)

            await GuardedStreamingResponse(
                paced_reply(job, self.engine, config, self.drain), cleanup=release,
                media_type=_NDJSON,
            )(scope, receive, send)
            return
        started = time.perf_counter()
        outcome = OUTCOME_ERROR
        tokens: list[str] = []
        try:  # from here on the id is freed whatever happens, the reply's making included
            tokens, finish_reason = echo_tokens(job.prompt, job.max_tokens, job.stop,
                                                job.json_schema)
            reply = whole_reply(job, tokens, finish_reason, config.foreign_chunk_after)
            await send({
                "type": "http.response.start", "status": 200,
                "headers": [_NDJSON_HEADER, (b"content-length", b"%d" % len(reply))],
            })
            await send({"type": "http.response.body", "body": reply})
            outcome = OUTCOME_OK
        except asyncio.CancelledError:
            outcome = OUTCOME_CANCELLED
            raise
        finally:
            registry.release(job.request_id, channel)
            log_end(job, outcome, started, "".join(tokens), len(tokens))


def deprecated_sent() -> str | None:
    """The deprecated id headers the call sent, for its worker.start or worker.refused:
    a worker writes no request.start of its own, the line that lists them elsewhere."""
    ctx = current_context()
    return None if ctx is None else ctx.deprecated_headers


async def _refuse_invalid(
    scope: Scope, send: Send, status: int, message: str, *,
    extra: tuple[tuple[bytes, bytes], ...] = (), outcome: str = OUTCOME_INVALID,
    kind: str = "invalid_request_error",
) -> None:
    """Log and answer a malformed envelope (the message is ours: it names a field, never
    quotes the caller's value), or with `outcome` ``error`` one the server stopped."""
    # The worker writes no request.start / request.end lines: without this, an envelope
    # refused as malformed left no trace at all, however often it came. Not when the
    # server's parser answered first (bad chunk framing in the read that ended the
    # headers): this answer reaches nobody, and its status was logged as sent.
    if not server_answered(scope):
        events.warning(WORKER_REFUSED, event=WORKER_REFUSED, outcome=outcome,
                       status=status, error=message, deprecated_headers=deprecated_sent())
    await _send_json(send, status, _refusal(message, kind), extra=extra)


async def _send_error(
    send: Send, status: int, message: str, *, kind: str = "invalid_request_error"
) -> None:
    await _send_json(send, status, _refusal(message, kind))


def _refusal(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """A refusal in OpenAI's error shape, as the worker's 404 and 405 are; a duplicate
    id's 409 is typed ``conflict`` (the PR's Conflict)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


async def _send_json(
    send: Send, status: int, content: Any, *, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = json_codec.dumps(content)
    await send({
        "type": "http.response.start", "status": status,
        "headers": [_JSON_HEADER, (b"content-length", b"%d" % len(body)), *extra],
    })
    await send({"type": "http.response.body", "body": body})

