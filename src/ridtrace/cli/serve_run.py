"""Running one served app: its telemetry, then uvicorn with ridtrace's guards (Host
check, header timeout, graceful drain) — what ``ridtrace serve frontend`` and
``ridtrace serve worker`` share."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ridtrace.cli.serve_options import BadConfiguration, log_place, log_sink, say

if TYPE_CHECKING:
    import socket

    from ridtrace.frontend_plugin.drain import Drain

__all__ = ["check_open_file_limit", "run_server", "setup_telemetry"]

# Descriptors a served process holds besides its connections: the log file, the event
# loop's, the listener, the standard streams, an exporter's.
_FD_RESERVE = 64

FEW_DESCRIPTORS = (
    "the open-file limit leaves room for fewer concurrent requests than max_connections; "
    "past them requests get 503 'frontend overloaded' (raise the hard limit: ulimit -Hn, "
    "LimitNOFILE)"
)


def setup_telemetry(log_file: Path, service: str, level: str) -> None:
    """The JSON-lines log sink, the tracer and meter providers of one served app."""
    # Imported here so `ridtrace analyze` and friends never pay for FastAPI/uvicorn.
    from loguru import logger

    from ridtrace.tracing import configure_logging, configure_metrics, configure_tracing
    from ridtrace.tracing.excluded_urls import excluded_urls

    logger.remove()  # loguru's default stderr handler would duplicate every line
    try:
        # The request lifecycle lines whatever the level: at WARNING a frontend wrote no
        # request.end of a 200, and `analyze` found no crossed stream in its logs.
        configure_logging(log_sink(log_file), service=service, level=level,
                          event_level="INFO")
    except OSError as exc:
        # A file where a parent directory should be: making the directories says "File
        # exists", which names neither the file nor the trouble.
        reason = ("a parent is not a directory" if isinstance(exc, FileExistsError)
                  else exc.strerror or exc)
        raise click.BadParameter(f"cannot write {log_file}: {reason}",
                                 param_hint="--log-file") from None
    except ValueError:
        raise click.BadParameter(
            f"{level!r} is not a level: TRACE, DEBUG, INFO, WARN(ING), ERROR or CRITICAL",
            param_hint="--log-level") from None
    # /metrics is open to anyone who can reach the port (scrapers need no key), and
    # prometheus_client's python_info told them the exact interpreter release, as
    # 'server: uvicorn' told the server: what to look up exploits for. The process and
    # GC series stay (an operator's); the libraries' releases stay in target_info and
    # otel_scope_version (docs/metrics.md), as OpenTelemetry's resource carries them.
    from prometheus_client import PLATFORM_COLLECTOR, REGISTRY

    with contextlib.suppress(KeyError):  # unregistered already (a second setup in-process)
        REGISTRY.unregister(PLATFORM_COLLECTOR)
    # The service name is a default: OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win.
    try:
        configure_tracing(service)
        configure_metrics(service)
        # Read again where the middleware is built, at the first request on a frontend:
        # refused there, every request was answered 500.
        excluded_urls()
    except (ValueError, ImportError) as exc:
        # An OTEL_* variable ridtrace cannot follow, or the grpc extra missing: the
        # operator's to fix, said in one line, not an internal error with a traceback.
        raise BadConfiguration(str(exc)) from None


def check_open_file_limit(max_connections: int) -> None:
    """Raise the open-file limit as far as allowed, then warn in the log when it still
    caps a frontend below ``max_connections``: each request in flight holds its caller's
    connection and one to a worker."""
    import resource

    from ridtrace.open_file_limit import raise_open_file_limit
    from ridtrace.tracing.eventlog import EventLog

    raise_open_file_limit()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    room = (soft - _FD_RESERVE) // 2
    if soft != resource.RLIM_INFINITY and room < max_connections:
        EventLog(__name__).warning(FEW_DESCRIPTORS, open_file_limit=soft,
                                   concurrent_requests=max(room, 0),
                                   max_connections=max_connections)


def run_server(
    app: object, host: str, port: int, *, drain: Drain, graceful_timeout: float, name: str,
    log_file: Path, service: str, header_timeout: float, allowed_hosts: tuple[str, ...],
    on_host_refused: Callable[[int, str], None] | None = None,
    sockets: list[socket.socket] | None = None,
) -> None:
    """Serve `app` under uvicorn until a stop signal, draining in-flight calls first."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE

    from ridtrace.cli.graceful import DrainingServer
    from ridtrace.cli.header_guard import guarded_http_protocol
    from ridtrace.frontend_plugin.host_check import allowed_hosts_for, host_checked
    from ridtrace.frontend_plugin.wire import SERVER_KEEP_ALIVE_SECONDS
    from ridtrace.open_file_limit import raise_open_file_limit

    # Every connection is a descriptor, and the soft limit is often 1024 (a login shell's)
    # under a far higher hard one: a frontend ran out at about 500 concurrent requests,
    # half its own max_connections. Raised as far as allowed, as Go programs do.
    raise_open_file_limit()
    # Also with any name allowed (None): a Host that is no host at all still gets 400.
    allowed = allowed_hosts_for(host, allowed_hosts)
    app = host_checked(app, allowed, on_refused=on_host_refused)  # type: ignore[arg-type]

    # log_config=None keeps the stdlib routing configure_logging installed; access
    # lines would only repeat request.end.
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        # uvicorn's hint says int; it is only ever a wait_for timeout.
        timeout_graceful_shutdown=graceful_timeout,  # type: ignore[arg-type]
        timeout_keep_alive=SERVER_KEEP_ALIVE_SECONDS,
        backlog=4096,
        # 'server: uvicorn' told every caller, key or not, what to look up exploits for.
        server_header=False,
        # uvicorn waits forever for headers and takes any amount of them (slowloris).
        http=guarded_http_protocol(header_timeout=header_timeout),
    )
    def started(addresses: list[tuple[str, int]]) -> None:
        # Every other line goes to the log file, so without this one a terminal shows
        # nothing at all: not whether the server is up, nor where to look.
        urls = ", ".join(
            f"http://[{h}]:{p}" if ":" in h else f"http://{h}:{p}" for h, p in addresses
        )
        say(f"ridtrace serve {name}: listening on {urls}, logging to {log_place(log_file)}",
            log_file=log_file, service=service)

    server = DrainingServer(config, drain=drain, on_started=started)
    try:
        server.run(sockets)  # uvicorn itself exits with STARTUP_FAILURE when it cannot bind
    finally:
        if not server.started:
            say(f"ridtrace serve {name}: could not start (address in use, or the app "
                f"failed at startup); the reason is in {log_place(log_file)}",
                log_file=log_file, service=service, level="ERROR")
    if not server.started:  # as uvicorn.run: the lifespan failed
        sys.exit(STARTUP_FAILURE)
