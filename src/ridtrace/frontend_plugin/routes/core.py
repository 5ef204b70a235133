"""The request flow every inference route shares.

read (size-capped) → parse → resolve ids → register → dispatch → deliver → release.
Nothing is registered for a body that fails validation; whatever happens after
registration (completion, error, timeout, client disconnect, cancellation), the call is
closed in ``finally`` so the key is freed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive

from ridtrace.contract import RESPONSE_UNLINKED
from ridtrace.fingerprint import fingerprint
from ridtrace.frontend_plugin.asgi_io import (
    GuardedStreamingResponse,
    read_body,
    wait_for_disconnect,
)
from ridtrace.frontend_plugin.bodies import InvalidRequest, Parsed, require_object
from ridtrace.frontend_plugin.frontend import CallerLeft, Frontend, InferenceCall, Item
from ridtrace.frontend_plugin.hop import worker_hop_headers
from ridtrace.frontend_plugin.pump import UNLINKED_REQUEST, Delta, Failed, Finished
from ridtrace.frontend_plugin.registry import Dropped, DuplicateRequestId
from ridtrace.frontend_plugin.routes.base import ApiSpec, Ids, Renderer
from ridtrace.frontend_plugin.wire import WorkRequest
from ridtrace.tracing import (
    RequestContext,
    annotate_request,
    annotate_span,
    current_context,
    uuid4_id,
    validate_client_id,
)
from ridtrace.tracing.eventlog import EventLog

__all__ = ["serve"]

events = EventLog(__name__)

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def serve(request: Request, fe: Frontend, api: ApiSpec) -> Response:
    """Handle one inference request for ``api``."""
    settings = fe.settings
    annotate_request(endpoint=api.endpoint, id_policy=fe.registry.policy)
    body = await read_body(request, settings.max_body_bytes)
    if body is None:
        return _reject(api, 413, f"request body exceeds {settings.max_body_bytes} bytes", None)
    try:
        parsed = api.parse(require_object(orjson.loads(body)), settings)
    except orjson.JSONDecodeError as exc:
        return _reject(api, 400, f"invalid JSON body: {exc}", None)
    except InvalidRequest as exc:
        return _reject(api, exc.status, exc.message, exc.param)

    ctx = current_context()
    client_id = _client_id(ctx, api, parsed)
    request_id = ctx.request_id if ctx is not None else uuid4_id()
    key = request_id
    if fe.registry.policy == "legacy":
        # Pre-fix behaviour, on purpose: the client's id becomes the in-flight key and
        # the request's id, so two callers sharing it collide.
        key = _legacy_key(request, api, client_id) or request_id
        request_id = key
        if ctx is not None:
            ctx.request_id = key
            annotate_span(request_id=key)
    annotate_request(model=parsed.model, stream=parsed.stream, fp_in=fingerprint(parsed.prompt))
    work = WorkRequest(
        request_id=request_id, x_request_id=client_id, endpoint=api.endpoint,
        model=parsed.model, prompt=parsed.prompt, max_tokens=parsed.max_tokens,
        session_id=parsed.session_id,
    )
    call = InferenceCall(fe, key=key, work=work, trace_headers=worker_hop_headers(ctx))
    try:
        call.start()
    except DuplicateRequestId as exc:
        annotate_request(outcome_override="conflict", error=str(exc))
        return api.error(409, str(exc), kind="conflict")
    renderer = api.renderer(parsed, Ids(request_id, client_id or request_id))
    streaming = False
    # Until the response starts, only this task notices a client leaving; once it
    # streams, Starlette's response listens for the disconnect itself.
    watcher = asyncio.ensure_future(_interrupt_on_disconnect(call, request.receive))
    try:
        if parsed.stream:
            first = await call.next()
            watcher.cancel()
            if isinstance(first, CallerLeft):
                return _client_gone()
            if isinstance(first, (Failed, Dropped)):
                return _failure(api, first)
            streaming = True
            return GuardedStreamingResponse(
                _events(call, renderer, first), cleanup=call.close,
                media_type="text/event-stream", headers=_SSE_HEADERS,
            )
        text, end = await _collect(call)
        if isinstance(end, CallerLeft):
            return _client_gone()
        if isinstance(end, Finished):
            annotate_request(fp_out=fingerprint(text))
            return _json(renderer.body(text, end))
        return _failure(api, end)
    finally:
        watcher.cancel()
        annotate_request(worker=call.worker, attempts=call.attempts)
        if not streaming:
            call.close()


def _client_id(ctx: RequestContext | None, api: ApiSpec, parsed: Parsed) -> str | None:
    """The client's correlation id under this route's precedence rules."""
    header = ctx.x_request_id if ctx is not None else None
    body = parsed.body_client_id
    if body is None or (header is not None and not api.body_id_first):
        return header
    if ctx is not None and body != header:
        ctx.x_request_id = body
        annotate_span(x_request_id=body)
    return body


def _legacy_key(request: Request, api: ApiSpec, client_id: str | None) -> str | None:
    if api.body_id_field is not None:
        return client_id  # generate routes: header/body precedence as above
    for name in api.legacy_id_headers:
        raw = request.headers.get(name)
        value = validate_client_id(raw) if raw else None
        if value is not None:
            return value
    return None


async def _collect(call: InferenceCall) -> tuple[str, Finished | Failed | Dropped | CallerLeft]:
    parts: list[str] = []
    while True:
        item = await call.next()
        if isinstance(item, Delta):
            parts.append(item.text)
        else:
            return "".join(parts), item


async def _interrupt_on_disconnect(call: InferenceCall, receive: Receive) -> None:
    await wait_for_disconnect(receive)
    call.interrupt()


def _json(body: dict[str, Any]) -> Response:
    # orjson: Starlette's JSONResponse renders with the stdlib encoder.
    return Response(orjson.dumps(body), media_type="application/json")


async def _events(call: InferenceCall, renderer: Renderer, first: Item) -> AsyncIterator[bytes]:
    sent: list[str] = []
    item: Item | None = first
    out = [renderer.start()]
    try:
        while True:
            # Everything already waiting goes out in one write, not one per token.
            while item is not None:
                if isinstance(item, Delta):
                    sent.append(item.text)
                    out.append(renderer.delta(item.text))
                elif isinstance(item, Finished):
                    out.append(renderer.finish(item, "".join(sent)))
                    yield b"".join(out)
                    return
                elif isinstance(item, CallerLeft):
                    return  # nobody is reading any more
                else:
                    failed = _as_failed(item)
                    # The status line already said 200; the stream says otherwise.
                    annotate_request(outcome_override="error", error=failed.message)
                    out.append(renderer.fail(failed))
                    yield b"".join(out)
                    return
                item = call.next_nowait()
            yield b"".join(out)
            out = []
            item = await call.next()
    finally:
        if sent:
            annotate_request(fp_out=fingerprint("".join(sent)))
        annotate_request(worker=call.worker, attempts=call.attempts)
        call.close()


def _as_failed(item: Failed | Dropped) -> Failed:
    if isinstance(item, Dropped):
        events.error(UNLINKED_REQUEST, event=RESPONSE_UNLINKED)
        return Failed(UNLINKED_REQUEST, 500, "unlinked")
    return item


def _failure(api: ApiSpec, item: Failed | Dropped) -> JSONResponse:
    failed = _as_failed(item)
    annotate_request(error=failed.message)
    kind = "timeout" if failed.reason == "timeout" else None
    return api.error(failed.status, failed.message, kind=kind)


def _reject(api: ApiSpec, status: int, message: str, param: str | None) -> JSONResponse:
    annotate_request(error=message)
    return api.error(status, message, param=param)


def _client_gone() -> Response:
    # Nobody will read this; the override makes request.end say what happened.
    annotate_request(outcome_override="cancelled")
    return Response(status_code=499)
