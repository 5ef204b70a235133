"""``ridtrace serve frontend|worker``: run the frontend plugin or an echo worker."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import click

from ridtrace.cli.path_options import NonEmptyPath
from ridtrace.cli.propagators import require_propagators, require_sdk
from ridtrace.cli.serve_options import (
    _LOG_FILE_HELP,
    _LOG_LEVEL_HELP,
    _NON_NEGATIVE_COUNT,
    _NON_NEGATIVE_SECONDS,
    _POLICY,
    _PORT,
    _POSITIVE_COUNT,
    _POSITIVE_SECONDS,
    BadConfiguration,
    _allowed_host_option,
    _debug_option,
    _graceful_option,
    _header_timeout_option,
    _host_option,
    _worker_token_option,
    finite_seconds,
    say,
    settings_from,
)
from ridtrace.cli.serve_run import check_open_file_limit, run_server, setup_telemetry

__all__ = ["serve"]


@click.group()
def serve() -> None:
    """Run an inference frontend or an echo worker (JSON-lines logs to --log-file).

    Both bind to 127.0.0.1 unless --host says otherwise. Without --api-key (frontend) or
    --worker-token (worker) anyone who reaches the port is served; /health and /metrics
    stay open with them (--metrics-require-key closes /metrics). Spans and metrics are
    exported when OTEL_EXPORTER_OTLP_ENDPOINT is set. Before putting either on a network,
    read docs/cli.md ("Before putting it on a network")."""
    # gRPC's core writes its own INFO lines to stderr (an OTLP/gRPC exporter's failed
    # TLS handshake, once a retry): everything but the listening line goes to the log
    # file, where the exporter's own WARN and ERROR say it. Read when gRPC starts.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


@serve.command("frontend")
@click.option("--port", type=_PORT, required=True, help="Port to listen on (0: any free one).")
@_host_option
@click.option("--worker", "workers", multiple=True, metavar="URL",
              help="Worker base URL (repeat; or RIDTRACE_FRONTEND_WORKERS, comma list).")
@click.option("--log-file", type=NonEmptyPath(dir_okay=False, path_type=Path), required=True,
              help=_LOG_FILE_HELP)
@click.option("--id-policy", type=_POLICY, default=None,
              help="'legacy' reproduces the pre-fix collisions: unsafe, for demos and tests "
                   "(default safe).")
@click.option("--first-byte-timeout", type=_POSITIVE_SECONDS, callback=finite_seconds,
              default=None,
              help="Seconds a worker may take to send its first chunk (default 30); then "
                   "the next worker is tried (504 when none is left).")
@click.option("--chunk-timeout", type=_POSITIVE_SECONDS, callback=finite_seconds,
              default=None,
              help="Seconds a worker may go silent mid-reply (default 30); then the "
                   "caller's reply ends with an error.")
@click.option("--total-timeout", type=_POSITIVE_SECONDS, callback=finite_seconds,
              default=None,
              help="Seconds a whole request may take (default 300); then 504 or the "
                   "stream's error event.")
@click.option("--body-timeout", type=_POSITIVE_SECONDS, callback=finite_seconds,
              default=None,
              help="Seconds a request body may take to arrive (default 30); then 408.")
@click.option("--max-body-bytes", type=_POSITIVE_COUNT, default=None,
              help="Bodies above get 413 (default 1048576, 1 MiB).")
@click.option("--log-level", default="INFO", show_default=True, help=_LOG_LEVEL_HELP)
@click.option("--api-key", "api_keys", multiple=True, metavar="KEY",
              help="Require this key (repeat for several; or RIDTRACE_API_KEYS, comma list, "
                   "which ps does not show as it shows a command line) as "
                   "'Authorization: Bearer KEY' or 'x-api-key: KEY'.")
@click.option("--metrics-require-key/--no-metrics-require-key", default=None,
              help="/metrics needs an API key too (open by default).")
@_worker_token_option
@_debug_option
@_graceful_option
@_header_timeout_option
@_allowed_host_option
def frontend_command(
    port: int, host: str, workers: tuple[str, ...], log_file: Path, id_policy: str | None,
    first_byte_timeout: float | None, chunk_timeout: float | None,
    total_timeout: float | None, body_timeout: float | None, max_body_bytes: int | None,
    log_level: str,
    api_keys: tuple[str, ...], metrics_require_key: bool | None, worker_token: str | None,
    debug_endpoints: bool | None, graceful_timeout: float, header_timeout: float,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve the inference routes and dispatch to --worker URLs.

    Routes: OpenAI's /v1/chat/completions, /v1/completions, /v1/responses,
    /v1/responses/input_tokens, /v1/models, Anthropic's /v1/messages,
    /v1/messages/count_tokens, /inference/v1/generate, /generate; /health and /metrics.
    Without --api-key every route is open to anyone who reaches the port.

    Exit status: 2 a configuration it will not start with (a bad option or variable,
    named on stderr), 3 it could not start (the reason is in --log-file)."""
    require_propagators()  # before FastAPI's import loads them
    require_sdk()  # the SDK reads OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT on import
    from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app
    from ridtrace.frontend_plugin.drain import Drain

    # An option given wins; one not given leaves its RIDTRACE_FRONTEND_* variable in force.
    overrides: dict[str, object] = {}
    for name, given in (("workers", workers), ("api_keys", api_keys)):
        if given:
            overrides[name] = given
    for name, value in (("id_policy", id_policy), ("first_byte_timeout", first_byte_timeout),
                        ("chunk_timeout", chunk_timeout), ("total_timeout", total_timeout),
                        ("body_timeout", body_timeout),
                        ("max_body_bytes", max_body_bytes),
                        ("metrics_require_key", metrics_require_key),
                        ("worker_token", worker_token), ("debug_endpoints", debug_endpoints)):
        if value is not None:
            overrides[name] = value
    from ridtrace.tracing import TracingSettings

    settings = settings_from(FrontendSettings, "RIDTRACE_FRONTEND_", overrides)
    try:
        tracing = TracingSettings.from_env()  # RIDTRACE_ID_GENERATOR, deprecation dates, …
    except ValueError as exc:
        raise BadConfiguration(str(exc)) from None
    if not settings.workers:  # a frontend with nowhere to send work answers only 503s
        if os.environ.get("RIDTRACE_FRONTEND_WORKERS", ""):  # ",," or " ": set, yet no URL
            raise click.UsageError("RIDTRACE_FRONTEND_WORKERS is set but holds no worker "
                                   "URL (a comma list)")
        raise click.UsageError("Missing option '--worker' (or RIDTRACE_FRONTEND_WORKERS).")
    if settings.metrics_require_key and not settings.api_keys:  # /metrics would stay open
        raise click.UsageError("--metrics-require-key (or RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY)"
                               " needs an API key: --api-key or RIDTRACE_API_KEYS")
    if not settings.api_keys:
        _say_if_empty("frontend", "RIDTRACE_API_KEYS", "no API key is required on any route",
                      log_file)
    if not settings.worker_token:
        _say_if_empty("frontend", "RIDTRACE_WORKER_TOKEN", "work is sent to the workers "
                      "without a token", log_file)
    setup_telemetry(log_file, "frontend", log_level)
    drain = Drain()
    check_open_file_limit(settings.max_connections)
    run_server(create_frontend_app(settings, tracing=tracing, drain=drain), host, port, drain=drain,
         graceful_timeout=graceful_timeout, name="frontend", log_file=log_file,
         service="frontend", header_timeout=header_timeout, allowed_hosts=allowed_hosts)


@serve.command("worker")
@click.option("--port", type=_PORT, required=True, help="Port to listen on (0: any free one).")
@_host_option
@click.option("--log-file", type=NonEmptyPath(dir_okay=False, path_type=Path), required=True,
              help=_LOG_FILE_HELP)
@click.option("--id-policy", type=_POLICY, default=None,
              help="'legacy' accepts duplicate in-flight ids (pre-fix; default safe).")
@click.option("--token-delay", type=_NON_NEGATIVE_SECONDS, callback=finite_seconds,
              default=None, help="Seconds between tokens (default 0).")
@click.option("--first-token-delay", type=_NON_NEGATIVE_SECONDS, callback=finite_seconds,
              default=None,
              help="Seconds before the first token (default 0); --token-delay paces the rest.")
@click.option("--gate", is_flag=True, default=None,
              help="Test hook: hold first tokens until POST /debug/gate/open.")
@click.option("--hang-after-tokens", type=_NON_NEGATIVE_COUNT, default=None,
              help="Test fault: stop producing after N tokens, keep the stream open.")
@click.option("--foreign-chunk-after", type=_NON_NEGATIVE_COUNT, default=None,
              help="Test fault: label the chunk after N tokens with another request id.")
@click.option("--body-timeout", type=_POSITIVE_SECONDS, callback=finite_seconds,
              default=None,
              help="Seconds a work envelope may take to arrive (default 30); then 408.")
@click.option("--log-level", default="INFO", show_default=True, help=_LOG_LEVEL_HELP)
@click.option("--baggage-attribute", "baggage_attributes", multiple=True, metavar="NAME",
              help="Copy this W3C baggage entry onto the worker span as baggage.NAME (repeat).")
@_worker_token_option
@_debug_option
@_graceful_option
@_header_timeout_option
@_allowed_host_option
def worker_command(
    port: int, host: str, log_file: Path, id_policy: str | None, token_delay: float | None,
    first_token_delay: float | None, gate: bool | None, hang_after_tokens: int | None,
    foreign_chunk_after: int | None, body_timeout: float | None, log_level: str,
    baggage_attributes: tuple[str, ...],
    worker_token: str | None, debug_endpoints: bool | None, graceful_timeout: float,
    header_timeout: float, allowed_hosts: tuple[str, ...],
) -> None:
    """Serve the echo engine at POST /v1/work (and /health, /metrics).

    Without --worker-token anyone who reaches the port can post work.

    Exit status: 2 a configuration it will not start with (a bad option or variable,
    named on stderr), 3 it could not start (the reason is in --log-file)."""
    require_propagators()  # before FastAPI's import loads them
    require_sdk()  # the SDK reads OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT on import
    from ridtrace.frontend_plugin import WorkerSettings, create_worker_app
    from ridtrace.frontend_plugin.drain import Drain
    from ridtrace.frontend_plugin.worker import log_host_refused
    from ridtrace.tracing import TracingSettings

    # An option given wins; one not given leaves its RIDTRACE_WORKER_* variable in force.
    overrides: dict[str, object] = {}
    for name, value in (("id_policy", id_policy), ("token_delay", token_delay),
                        ("first_token_delay", first_token_delay), ("gate", gate),
                        ("hang_after_tokens", hang_after_tokens),
                        ("foreign_chunk_after", foreign_chunk_after),
                        ("body_timeout", body_timeout),
                        ("worker_token", worker_token), ("debug_endpoints", debug_endpoints),
                        ("baggage_attributes", baggage_attributes or None)):
        if value is not None:
            overrides[name] = value
    settings = settings_from(WorkerSettings, "RIDTRACE_WORKER_", overrides)
    try:
        # The frontend writes the lifecycle lines; the worker writes worker.* events.
        tracing = replace(TracingSettings.from_env(), log_lifecycle=False)
    except ValueError as exc:
        raise BadConfiguration(str(exc)) from None
    from ridtrace.cli.graceful import bound_any_port

    bound = bound_any_port(host) if port == 0 else None
    service = f"worker-{bound.getsockname()[1] if bound else port}"
    if not settings.worker_token:
        _say_if_empty("worker", "RIDTRACE_WORKER_TOKEN", "POST /v1/work takes work from "
                      "anyone who can reach it", log_file, service)
        if os.environ.get("RIDTRACE_API_KEYS"):
            # One env file for both services: the frontend's keys lock nothing here, and
            # the worker started open without a word.
            say("ridtrace serve worker: RIDTRACE_API_KEYS is the frontend's (a worker takes "
                "no API key): without RIDTRACE_WORKER_TOKEN, POST /v1/work takes work from "
                "anyone who can reach it", log_file=log_file, service=service, level="WARNING")
    setup_telemetry(log_file, service, log_level)
    drain = Drain()
    # The worker writes no request.end: a Host refusal (421, 400) gets a worker.refused line.
    run_server(create_worker_app(settings, tracing=tracing, drain=drain), host, port, drain=drain,
         graceful_timeout=graceful_timeout, name="worker", log_file=log_file,
         service=service, header_timeout=header_timeout, allowed_hosts=allowed_hosts,
         on_host_refused=log_host_refused, sockets=[bound] if bound else None)


def _say_if_empty(side: str, variable: str, meaning: str, log_file: Path,
                  service: str | None = None) -> None:
    """Say on stderr that a secret's variable is set but empty (``VAR=$SECRET`` with the
    secret unset): meant to require it, it counts as not set, as empty ``OTEL_*``
    variables do, and the server would otherwise have started open without a word."""
    if os.environ.get(variable) == "":
        say(f"ridtrace serve {side}: {variable} is empty: {meaning}", log_file=log_file,
            service=service or side, level="WARNING")
