"""The request flow every inference route shares.

read (size-capped) → parse → resolve ids → register → dispatch → deliver → release.
Nothing is registered for a body that fails validation; whatever happens after
registration (completion, error, timeout, client disconnect, cancellation), the call is
closed in ``finally`` so the key is freed.
"""

from __future__ import annotations

import asyncio

import orjson
from loguru import logger
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from ridtrace.contract import SHUTTING_DOWN
from ridtrace.fingerprint import fingerprint
from ridtrace.frontend_plugin import json_codec
from ridtrace.frontend_plugin.asgi_io import wait_for_disconnect
from ridtrace.frontend_plugin.bodies import (
    InvalidRequest,
    Parsed,
    check_nesting,
    json_error,
    require_object,
    vetted_body_client_id,
)
from ridtrace.frontend_plugin.connection_reset import connection_reset
from ridtrace.frontend_plugin.direct import Call, new_call
from ridtrace.frontend_plugin.early_refusals import early_refusal
from ridtrace.frontend_plugin.failures import retry_advice
from ridtrace.frontend_plugin.frontend import CallerLeft, Frontend
from ridtrace.frontend_plugin.hop import worker_hop_headers
from ridtrace.frontend_plugin.pump import Delta, Failed, Finished
from ridtrace.frontend_plugin.redaction import redacted_url
from ridtrace.frontend_plugin.registry import Dropped, DuplicateRequestId
from ridtrace.frontend_plugin.request_body import (
    BODY_TIMED_OUT,
    GO_ELSEWHERE,
    Stopped,
    body_timed_out,
    read_request_body,
)
from ridtrace.frontend_plugin.routes.base import INTERNAL_ERROR, ApiSpec, Ids
from ridtrace.frontend_plugin.routes.sse import as_failed, stream_to_reader
from ridtrace.frontend_plugin.wire import WorkRequest
from ridtrace.tracing import (
    RequestContext,
    annotate_request,
    current_context,
    uuid4_id,
    validate_client_id,
)
from ridtrace.tracing.context import relabel_span
from ridtrace.tracing.eventlog import EventLog

__all__ = ["serve"]

events = EventLog(__name__)

async def serve(scope: Scope, receive: Receive, send: Send, fe: Frontend, api: ApiSpec) -> None:
    """Handle one inference request for ``api`` as a plain ASGI exchange.

    No Starlette request or response objects: the body is read from ``receive`` and the
    answer written to ``send`` directly, and ``/v1/*`` requests reach this from the
    frontend app's fast path without FastAPI's middleware stack and router (issue 15).
    """
    settings = fe.settings
    annotate_request(endpoint=api.endpoint, id_policy=fe.registry.policy)
    if await _refused_while_stopping(fe, send, api):
        return
    early = early_refusal(scope, settings.max_body_bytes)
    if early is not None:
        annotate_request(error=early.message)
        await _send_error(send, api, early.status, early.message, kind="invalid_request_error",
                          headers=early.answer_headers)
        return
    try:
        # A body that never ends (a stalled chunked upload, a content-length larger than
        # what is sent, a slow-POST attack) held its connection and task forever.
        body = await read_request_body(scope, receive, settings, fe.drain)
    except Stopped:
        await _refuse_stopping(send, api)
        return
    except TimeoutError:
        # The rest of the body may still come: the connection cannot carry another request.
        annotate_request(error=BODY_TIMED_OUT)
        await _send_error(send, api, 408, body_timed_out(settings),
                          headers=((b"connection", b"close"),))
        return
    except ClientDisconnect:
        # The client left mid-upload: nothing was registered and nobody is there to
        # answer. Returning (not raising) makes request.end say status 0, cancelled;
        # the exception became a 500, an 'error' outcome and a traceback per upload.
        return
    # A slow body may finish arriving after in-flight calls were ended: refuse it too.
    if await _refused_while_stopping(fe, send, api):
        return
    if body is None:
        await _reject(send, api, 413, f"request body exceeds {settings.max_body_bytes} bytes",
                      None)
        return
    raw = None
    try:
        raw = require_object(json_codec.loads(body))
        check_nesting(raw, body)
        parsed = api.parse(raw, settings)
        if parsed.body_client_id is not None and api.body_id_field is not None:
            parsed.body_client_id = vetted_body_client_id(
                parsed.body_client_id, api.body_id_field, fe.max_client_id_length)
    except orjson.JSONDecodeError as exc:
        await _reject(send, api, 400, json_error(body, exc), None)
        return
    except InvalidRequest as exc:
        if raw is not None and exc.param != api.body_id_field:
            _correlate_refused_body(current_context(), api, raw, fe.max_client_id_length)
        await _reject(send, api, exc.status, exc.message, exc.param, exc.code)
        return
    except Exception as exc:
        # A body check that crashed on a value it did not foresee (a content block's
        # type given as a list raised on its set lookup): the caller still gets the
        # API's JSON error, with the ids and its connection kept, not a plain-text 500
        # and a dropped keep-alive connection; the traceback is the log's.
        logger.opt(exception=exc).error("checking the request body failed")
        annotate_request(error=f"{type(exc).__name__} while checking the request body")
        await _send_error(send, api, 500, INTERNAL_ERROR)
        return

    ctx = current_context()
    client_id = _client_id(ctx, api, parsed)
    request_id = ctx.request_id if ctx is not None else uuid4_id()
    key = request_id
    if fe.registry.policy == "legacy":
        # Pre-fix behaviour, on purpose: the client's id becomes the in-flight key and
        # the request's id, so two callers sharing it collide.
        key = _legacy_key(scope, api, client_id, fe.max_client_id_length) or request_id
        request_id = key
        if ctx is not None:
            ctx.request_id = key
            relabel_span(ctx, request_id=key)
    annotate_request(model=parsed.model, stream=parsed.stream, fp_in=fingerprint(parsed.prompt))
    work = WorkRequest(
        request_id=request_id, x_request_id=ctx.x_request_id if ctx is not None else client_id,
        endpoint=api.endpoint,
        model=parsed.model, prompt=parsed.prompt, max_tokens=parsed.max_tokens,
        session_id=parsed.session_id, stop=parsed.stop, json_schema=parsed.json_schema,
    )
    call = new_call(fe, key=key, work=work, trace_headers=worker_hop_headers(ctx))
    try:
        call.start()
    except DuplicateRequestId as exc:
        annotate_request(outcome_override="conflict", error=str(exc))
        await _send_error(send, api, 409, str(exc), kind="conflict")
        return
    renderer = api.renderer(parsed, Ids(request_id, client_id or request_id))
    # The one task that notices the client leaving, for the whole exchange.
    watcher = asyncio.ensure_future(_interrupt_on_disconnect(call, receive))
    fe.drain.hold(call)  # a shutdown ends the call through the error paths below
    try:
        if parsed.stream:
            first = await call.next()
            if isinstance(first, CallerLeft):
                await _client_gone(send)
            elif isinstance(first, (Failed, Dropped)):
                await _failure(send, api, first)
            else:
                await stream_to_reader(send, call, renderer, first, settings.total_timeout,
                                       fe.drain, connection_reset(scope))
            return
        pieces, end = await _collect(call)
        text = "".join(pieces)
        if isinstance(end, CallerLeft):
            await _client_gone(send)
        elif isinstance(end, Finished):
            annotate_request(fp_out=fingerprint(text))
            renderer.pieces = pieces
            await _send_json(send, 200, json_codec.dumps(renderer.body(text, end)))
        else:
            await _failure(send, api, end)
    finally:
        watcher.cancel()
        fe.drain.release(call)
        worker = call.worker
        annotate_request(worker=redacted_url(worker) if worker else None, attempts=call.attempts)
        call.close()


async def _refused_while_stopping(fe: Frontend, send: Send, api: ApiSpec) -> bool:
    """Answer 503 (go elsewhere) when in-flight calls are being ended: a call starting
    now could not finish. Only a request already on an open connection gets here (the
    listener is closed)."""
    if not fe.drain.stopping:
        return False
    await _refuse_stopping(send, api)
    return True


async def _refuse_stopping(send: Send, api: ApiSpec) -> None:
    annotate_request(error=SHUTTING_DOWN)
    await _send_error(send, api, 503, SHUTTING_DOWN, headers=GO_ELSEWHERE)


def _client_id(ctx: RequestContext | None, api: ApiSpec, parsed: Parsed) -> str | None:
    """The client's id under this route's precedence rules: returned in the body, and
    the in-flight key under the legacy policy.

    The correlation id (``x_request_id`` on every line, the span, the echoed header) is
    the header as sent: `request.start` logged it before the body was read, so a body id
    that differs must not replace it part-way through the request. Without a header, the
    body id fills it in, as a header would carry it (without surrounding spaces).
    """
    header = ctx.x_request_id if ctx is not None else None
    body = parsed.body_client_id
    if body is None:
        return header
    if header is None:
        _correlate(ctx, body)
        return body
    return body if api.body_id_first else header


def _correlate(ctx: RequestContext | None, body_id: str) -> None:
    """Without a header id, the body's is the correlation id, as a header would carry it."""
    # Without the spaces around it: HTTP clients trim them from the echoed header, so
    # the id they read matched no log line or span. A header id never has them.
    correlation = body_id.strip(" ") or None
    if ctx is not None and ctx.x_request_id is None and correlation is not None:
        ctx.x_request_id = correlation
        relabel_span(ctx, x_request_id=correlation)


def _correlate_refused_body(ctx: RequestContext | None, api: ApiSpec, raw: dict[str, object],
                            max_length: int) -> None:
    """A body refused for another field still names its caller by its valid body id.

    The id is how a native route's caller finds its request: refused for its
    ``max_tokens``, the 400 echoed no id and no line carried it, while the same body
    with the id in a header had both. Not counted as used: the request never ran.
    """
    if api.body_id_field is None:
        return
    sent = raw.get(api.body_id_field)
    valid = validate_client_id(sent, max_length) if isinstance(sent, str) else None
    if valid is not None:
        _correlate(ctx, valid)


def _legacy_key(scope: Scope, api: ApiSpec, client_id: str | None,
                max_length: int) -> str | None:
    if api.body_id_field is not None:
        return client_id  # generate routes: header/body precedence as above
    # A header sent twice: its first valid value, the one the middleware echoes and logs
    # as the client's id (`tracing.inbound.read_inbound`; the last made the key and
    # request_id another id than it, and so did a first value that is no id).
    wanted = {name.encode("latin-1") for name in api.legacy_id_headers}
    valid: dict[bytes, str] = {}
    for name, raw in scope["headers"]:
        if name in wanted and name not in valid:
            value = validate_client_id(raw.strip(b" \t").decode("latin-1"), max_length)
            if value is not None:
                valid[name] = value
    for name in api.legacy_id_headers:
        value = valid.get(name.encode("latin-1"))
        if value is not None:
            return value
    return None


async def _collect(call: Call) -> tuple[list[str], Finished | Failed | Dropped | CallerLeft]:
    parts: list[str] = []
    while True:
        item = call.next_nowait() or await call.next()
        if isinstance(item, Delta):
            parts.append(item.text)
        else:
            return parts, item


async def _interrupt_on_disconnect(call: Call, receive: Receive) -> None:
    await wait_for_disconnect(receive)
    call.interrupt()


async def _send_json(
    send: Send, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    # orjson-encoded, as Starlette's Response would frame it, without building one.
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-length", str(len(body)).encode("latin-1")),
        (b"content-type", b"application/json"),
        *headers,
    ]})
    await send({"type": "http.response.body", "body": body})


async def _send_error(
    send: Send, api: ApiSpec, status: int, message: str, *, kind: str | None = None,
    param: str | None = None, code: str | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    payload = json_codec.dumps(api.error_payload(status, message, kind, param, code))
    await _send_json(send, status, payload, headers)


async def _failure(send: Send, api: ApiSpec, item: Failed | Dropped) -> None:
    failed = as_failed(item)
    annotate_request(error=failed.logged)
    kind = "timeout" if failed.reason == "timeout" else None
    await _send_error(send, api, failed.status, failed.message, kind=kind,
                      headers=retry_advice(failed))


async def _reject(send: Send, api: ApiSpec, status: int, message: str, param: str | None,
                  code: str | None = None) -> None:
    annotate_request(error=message)
    await _send_error(send, api, status, message, param=param, code=code)


async def _client_gone(send: Send) -> None:
    # Nobody will read this; the override makes request.end say what happened.
    annotate_request(outcome_override="cancelled")
    await send({"type": "http.response.start", "status": 499, "headers": [
        (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
