"""The worker: runs the echo engine for work envelopes and streams NDJSON back.

A worker refuses a ``request_id`` it already has in flight with a typed Conflict (HTTP
409), so a migrated or retried request can never be attached to another's stream;
the frontend then retries elsewhere without marking this worker down. Worker log lines
carry the frontend request's ids (``request_id``, ``x_request_id``, ``trace_id``) and
``parent_span_id`` = the frontend span, taken from the envelope and ``traceparent``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from ridtrace.contract import OUTCOME_INVALID, WORKER_REFUSED
from ridtrace.frontend_plugin.auth import UNAUTHORIZED, SharedSecretMiddleware, matching_route
from ridtrace.frontend_plugin.drain import Drain
from ridtrace.frontend_plugin.engine import EchoEngine
from ridtrace.frontend_plugin.registry import InflightRegistry
from ridtrace.frontend_plugin.settings import WorkerSettings
from ridtrace.frontend_plugin.work_endpoint import (
    WorkEndpoint,
    WorkRoute,
    deprecated_sent,
    work_route_of,
)
from ridtrace.frontend_plugin.worker_errors import worker_http_error
from ridtrace.tracing import RequestTracingMiddleware, TracingSettings
from ridtrace.tracing.eventlog import EventLog
from ridtrace.tracing.exchange import MAX_SHOWN_PATH
from ridtrace.tracing.identity import shown_text
from ridtrace.tracing.lifecycle import telemetry_lifespan
from ridtrace.tracing.meters import METRICS_PATH, metrics_endpoint

__all__ = ["create_worker_app", "log_host_refused"]

events = EventLog(__name__)


def create_worker_app(
    settings: WorkerSettings | None = None, *, tracing: TracingSettings | None = None,
    drain: Drain | None = None,
) -> ASGIApp:
    """A ready worker (an ASGI app): ``POST /v1/work`` and ``/health``;
    ``/debug/inflight`` with ``debug_endpoints``; ``POST /debug/gate/open`` with ``gate``.

    ``GET /metrics`` serves the Prometheus text; the tracer and meter providers ridtrace
    configured are flushed and shut down when the app stops. With ``worker_token`` set,
    everything but ``/health`` and ``/metrics`` needs ``Authorization: Bearer <token>``
    (401 otherwise, logged as ``worker.refused`` with outcome ``unauthorized``). The
    tracing middleware is outermost, with lifecycle lines off: a worker's lifecycle is
    ``worker.start`` / ``worker.end`` / ``worker.refused``, written under the frontend's
    ``request_id`` rather than the one the middleware mints for the hop; it reads the
    frontend's ``traceparent`` whatever ``OTEL_PROPAGATORS`` says (``read_traceparent``
    is set on ``tracing``).

    ``POST /v1/work`` is served as plain ASGI right below the tracing middleware (and
    the token check); the other routes and the lifespan by a Starlette app behind it.
    ``drain.stop_all()`` ends the replies still streaming with an in-band error line
    (``ridtrace serve`` calls it shortly before its graceful-shutdown timeout).
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

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "inflight": len(registry)})

    async def inflight(request: Request) -> Response:
        return JSONResponse({"policy": registry.policy, **registry.counters()})

    async def open_gate(request: Request) -> Response:
        assert gate is not None
        gate.set()
        return JSONResponse({"gate": "open"})

    routes: list[BaseRoute] = [
        Route(METRICS_PATH, metrics_endpoint, methods=["GET", "HEAD"]),
        Route("/health", health, methods=["GET", "HEAD"]),
    ]
    if config.debug_endpoints:
        routes.append(Route("/debug/inflight", inflight, methods=["GET"]))
    if gate is not None:  # a test hook: absent unless the worker was started with --gate
        routes.append(Route("/debug/gate/open", open_gate, methods=["POST"]))
    # Starlette, not FastAPI: none of FastAPI's features serve these few JSON routes,
    # and its import (pydantic's models included) was about 0.4 of the ~1 CPU-second a
    # worker took to start.
    api = Starlette(routes=routes, lifespan=telemetry_lifespan,
                    exception_handlers={HTTPException: worker_http_error})
    # A path with a trailing slash is a 404, not a redirect built from the caller's Host.
    api.router.redirect_slashes = False
    api.state.registry = registry

    # The frontend's hop always names its span in a traceparent (frontend_plugin.hop),
    # read whatever OTEL_PROPAGATORS says: it is how a worker's lines name their request.
    tracing = replace(tracing or TracingSettings(log_lifecycle=False), read_traceparent=True)
    # A legacy-policy frontend sends the client's id as request_id, up to its own limit.
    endpoint = WorkEndpoint(config, registry, engine, drain,
                            max_id_length=tracing.max_client_id_length)
    app: ASGIApp = WorkRoute(api, endpoint=endpoint)
    if config.worker_token:
        app = SharedSecretMiddleware(
            app,
            secrets=(config.worker_token,),
            open_paths=("/health", "/metrics"),
            accept_x_api_key=False,
            hint=": this worker needs the frontend's --worker-token",
            secret_name="worker token",
            on_refused=_log_unauthorized,
            route_of=work_route_of(matching_route(api.router.routes)),
        )
    return RequestTracingMiddleware(app, settings=tracing)


def _log_unauthorized(path: str) -> None:
    events.warning(
        WORKER_REFUSED, event=WORKER_REFUSED, outcome=UNAUTHORIZED, status=401,
        path=shown_text(path, MAX_SHOWN_PATH),  # whoever calls without the token chose it
        deprecated_headers=deprecated_sent(),  # its only line: audit counts the use
    )


def log_host_refused(status: int, reason: str) -> None:
    """The worker's line for a request refused for its ``Host`` (421: not this worker's;
    400: not a host at all; ``reason`` names it, already made safe to show): a worker
    writes no ``request.end``."""
    events.warning(
        WORKER_REFUSED, event=WORKER_REFUSED, outcome=OUTCOME_INVALID, status=status,
        error=reason, deprecated_headers=deprecated_sent(),
    )
