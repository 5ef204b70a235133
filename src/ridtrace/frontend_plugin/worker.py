"""The worker: runs the echo engine for work envelopes and streams NDJSON back.

A worker refuses a ``request_id`` it already has in flight with a typed Conflict (HTTP
409), so a migrated or retried request can never be attached to another's stream;
the frontend then retries elsewhere without marking this worker down. Worker log lines
carry the frontend request's ids (``request_id``, ``x_request_id``, ``trace_id``) and
``parent_span_id`` = the frontend span, taken from the envelope and ``traceparent``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from fastapi import FastAPI
from loguru import logger
from opentelemetry import baggage
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ridtrace.contract import WORKER_END, WORKER_ERROR, WORKER_REFUSED, WORKER_START
from ridtrace.fingerprint import fingerprint
from ridtrace.frontend_plugin.asgi_io import (
    GuardedStreamingResponse,
    fastapi_app,
    plain_route,
    read_body,
)
from ridtrace.frontend_plugin.auth import UNAUTHORIZED, SharedSecretMiddleware
from ridtrace.frontend_plugin.engine import EchoEngine, echo_tokens
from ridtrace.frontend_plugin.registry import DuplicateRequestId, InflightRegistry
from ridtrace.frontend_plugin.settings import WorkerSettings
from ridtrace.frontend_plugin.wire import (
    WORK_PATH,
    ChunkEncoder,
    WorkRequest,
    chunk_line,
    done_line,
    error_line,
)
from ridtrace.tracing import (
    RequestTracingMiddleware,
    TracingSettings,
    annotate_span,
    current_context,
    validate_client_id,
)
from ridtrace.tracing.eventlog import EventLog
from ridtrace.tracing.lifecycle import telemetry_lifespan
from ridtrace.tracing.meters import METRICS_PATH, metrics_endpoint

__all__ = ["create_worker_app"]

events = EventLog(__name__)

_NDJSON = "application/x-ndjson"


def create_worker_app(
    settings: WorkerSettings | None = None, *, tracing: TracingSettings | None = None
) -> FastAPI:
    """A ready worker app: ``POST /v1/work`` and ``/health``; ``/debug/inflight`` with
    ``debug_endpoints``; ``POST /debug/gate/open`` with ``gate``.

    ``GET /metrics`` serves the Prometheus text; the tracer and meter providers ridtrace
    configured are flushed and shut down when the app stops. With ``worker_token`` set,
    everything but ``/health`` and ``/metrics`` needs ``Authorization: Bearer <token>``
    (401 otherwise, logged as ``worker.refused`` with outcome ``unauthorized``). The
    tracing middleware is added with lifecycle lines off: a worker's lifecycle is
    ``worker.start`` / ``worker.end`` / ``worker.refused``, written under the frontend's
    ``request_id`` rather than the one the middleware mints for the hop.
    """
    config = settings or WorkerSettings()
    registry = InflightRegistry(config.id_policy, side="worker")
    gate = asyncio.Event() if config.gate else None
    engine = EchoEngine(
        token_delay=config.token_delay,
        first_token_delay=config.first_token_delay,
        gate=gate,
        gate_timeout=config.gate_timeout,
        hang_after_tokens=config.hang_after_tokens,
    )
    app = fastapi_app(
        title="ridtrace echo worker", openapi_url=None, docs_url=None, redoc_url=None,
        lifespan=telemetry_lifespan,
    )
    app.add_route(METRICS_PATH, metrics_endpoint, methods=["GET"], include_in_schema=False)
    if config.worker_token:
        app.add_middleware(
            SharedSecretMiddleware,
            secrets=(config.worker_token,),
            open_paths=("/health", "/metrics"),
            accept_x_api_key=False,
            hint=": this worker needs the frontend's --worker-token",
            on_refused=_log_unauthorized,
        )
    app.add_middleware(
        RequestTracingMiddleware,  # type: ignore[arg-type]  # Starlette's factory typing
        settings=tracing or TracingSettings(log_lifecycle=False),
    )
    app.state.registry = registry

    async def work(request: Request) -> Response:
        body = await read_body(request, config.max_body_bytes)
        if body is None:
            return _error(413, "work envelope too large")
        try:
            job = WorkRequest.from_json(body)
        except ValueError as exc:
            return _error(400, str(exc))
        if job.max_tokens > config.max_tokens_limit:
            return _error(400, f"max_tokens must be at most {config.max_tokens_limit}")
        _adopt_identity(job, config.baggage_attributes)
        channel: asyncio.Queue[object] = asyncio.Queue()
        try:
            registry.register(job.request_id, channel)
        except DuplicateRequestId as exc:
            events.warning(
                WORKER_REFUSED, event=WORKER_REFUSED, outcome="conflict", status=409,
                endpoint=job.endpoint,
            )
            return _error(409, str(exc), kind="conflict")
        events.info(
            WORKER_START, event=WORKER_START, endpoint=job.endpoint, model=job.model,
            fp_in=fingerprint(job.prompt), session_id=job.session_id,
        )
        return GuardedStreamingResponse(
            _produce(job, engine, config),
            cleanup=lambda: _release(registry, job.request_id, channel),
            media_type=_NDJSON,
        )

    # A plain Starlette route: no FastAPI dependency solving per request (issue 15).
    app.router.routes.append(plain_route(WORK_PATH, work))

    @app.get("/health")
    async def health() -> dict[str, object]:
        return {"status": "ok", "inflight": len(registry)}

    if config.debug_endpoints:

        @app.get("/debug/inflight")
        async def inflight() -> dict[str, object]:
            return {"policy": registry.policy, **registry.counters()}

    if gate is not None:  # a test hook: absent unless the worker was started with --gate

        @app.post("/debug/gate/open")
        async def open_gate() -> dict[str, object]:
            gate.set()
            return {"gate": "open"}

    return app


def _log_unauthorized(path: str) -> None:
    events.warning(
        WORKER_REFUSED, event=WORKER_REFUSED, outcome=UNAUTHORIZED, status=401, path=path
    )


def _release(registry: InflightRegistry, key: str, channel: asyncio.Queue[object]) -> None:
    registry.release(key, channel)


def _adopt_identity(job: WorkRequest, baggage_names: tuple[str, ...]) -> None:
    """Write this hop's lines under the frontend request's ids."""
    ctx = current_context()
    if ctx is None:
        return
    ctx.request_id = job.request_id
    ctx.x_request_id = validate_client_id(job.x_request_id) if job.x_request_id else None
    annotate_span(request_id=job.request_id)
    if ctx.x_request_id is not None:
        annotate_span(x_request_id=ctx.x_request_id)
    for name in baggage_names:
        # Baggage is the caller's text: vetted like a client id before it goes on a span.
        value = baggage.get_baggage(name)
        checked = validate_client_id(value) if isinstance(value, str) else None
        if checked is not None:
            annotate_span(**{"baggage." + name: checked})


async def _produce(
    job: WorkRequest, engine: EchoEngine, config: WorkerSettings
) -> AsyncIterator[bytes]:
    started = time.perf_counter()
    produced: list[str] = []
    outcome = "error"
    _, finish_reason = echo_tokens(job.prompt, job.max_tokens)
    foreign_after = config.foreign_chunk_after
    encode = ChunkEncoder(job.request_id)
    # Each batch is held until the next one exists, so the last goes out in the same
    # write as the done line.
    held = b""
    try:
        async for batch in engine.batches(job.prompt, job.max_tokens):
            if held:
                yield held
            lines: list[bytes] = []
            for token in batch:
                if foreign_after is not None and len(produced) == foreign_after:
                    # The injected fault: crossed wires.
                    lines.append(chunk_line("foreign-" + job.request_id, token))
                else:
                    lines.append(encode(token))
                produced.append(token)
            held = b"".join(lines)
        yield held + done_line(
            job.request_id,
            finish_reason=finish_reason,
            tokens=len(produced),
            prompt_tokens=len(job.prompt.split()),
        )
        outcome = "ok"
    except (asyncio.CancelledError, GeneratorExit):
        outcome = "cancelled"
        raise
    except Exception as exc:  # the engine failed: tell the frontend in-band
        logger.exception("worker engine failed", event=WORKER_ERROR)
        yield error_line(job.request_id, f"engine error: {exc}")
    finally:
        text = "".join(produced)
        events.info(
            WORKER_END, event=WORKER_END, outcome=outcome,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            fp_out=fingerprint(text), tokens=len(produced), endpoint=job.endpoint,
        )


def _error(status: int, message: str, *, kind: str = "invalid_request") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)
