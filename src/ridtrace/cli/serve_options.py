"""Options and checks that ``ridtrace serve frontend`` and ``serve worker`` share."""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import click

_POLICY = click.Choice(["safe", "legacy"])
# A plain int let 99999 through, which the socket layer cut to 16 bits: the server
# listened on 34463 instead of refusing the typo, and -5 failed only once started.
_PORT = click.IntRange(0, 65535)

DEFAULT_GRACEFUL_TIMEOUT = 25.0
"""Seconds: a few under Kubernetes' default terminationGracePeriodSeconds (30), so the
telemetry flush after the drain still happens before the SIGKILL."""

DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a request's line and headers may take to arrive (see cli/header_guard.py)."""


# Each secret's field, as its refusal starts (`frontend_plugin.auth.check_secret`), its
# variable and its option.
_SECRETS = {
    "api_keys": ("an API key", "RIDTRACE_API_KEYS", "--api-key"),
    "worker_token": ("the worker token", "RIDTRACE_WORKER_TOKEN", "--worker-token"),
}


def settings_from(cls: Any, prefix: str, overrides: dict[str, object]) -> Any:
    """``cls.from_env()`` with each option given (`overrides`) in place of its variable.

    The variables of the options given are not read: a bad ``RIDTRACE_WORKER_TOKEN``
    stopped ``--worker-token good`` from starting, with a message on the token typed. A
    refusal names the variable or the option it came from (a secret's named neither)."""
    replaced = {_SECRETS[name][1] if name in _SECRETS else f"{prefix}{name.upper()}"
                for name in overrides}
    environ = {key: value for key, value in os.environ.items() if key not in replaced}
    try:
        base = cls.from_env(environ)
    except ValueError as exc:
        raise BadConfiguration(_named(str(exc), {what: variable for what, variable, _
                                                 in _SECRETS.values()})) from None
    try:
        return dataclasses.replace(base, **overrides)
    except ValueError as exc:
        options = {what: option for what, _, option in _SECRETS.values()}
        options.update({f"{name} ": f"--{name.replace('_', '-')}" for name in overrides})
        raise BadConfiguration(_named(str(exc), options)) from None


def _named(message: str, sources: dict[str, str]) -> str:
    """`message` led by the source whose refusal it starts as, when one does."""
    for start, source in sources.items():
        if message.startswith(start):
            return f"{source}: {message}"
    return message


class BadConfiguration(click.ClickException):
    """A setting refused at start-up, from an option or an environment variable: bad
    usage, exit 2, as click's own usage errors (a missing ``--worker``, an unknown
    ``--log-level``). It was exit 1 for some, which a script reads as the server's
    failure, and 2 for others."""

    exit_code = 2


def finite_seconds(
    ctx: click.Context, param: click.Parameter, value: float | None
) -> float | None:
    # FloatRange lets nan through, which then failed the shutdown itself.
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"not a finite number of seconds: {value}")
    return value


def _bind_host(ctx: click.Context, param: click.Parameter, value: str) -> str:
    # The socket layer reads an empty address as every interface: `--host "$BIND"` with
    # the variable unset put a worker or a keyless frontend on the network (0.0.0.0 and
    # ::, any Host answered) where the default keeps it on this machine.
    if not value.strip():
        raise click.BadParameter("an empty address; to listen on every interface say so: "
                                 "0.0.0.0 (IPv4) or :: (IPv6)")
    # `listening on http://[::1]:8000` writes an IPv6 address as URLs do; copied into
    # --host, the brackets went to the resolver as part of the name and the server did
    # not start ("address in use, or the app failed at startup").
    if any(char.isspace() or not char.isprintable() for char in value):
        # A space pasted in (`--host "127.0.0.1 "`): no resolver knows the name, and the
        # server's start failed as "address in use, or the app failed at startup".
        raise click.BadParameter(f"{value!r}: holds a space or control character")
    if not (value.startswith("[") and value.endswith("]")):
        if ":" in value:  # a URL or host:port pasted in; only an IPv6 address has colons
            try:
                return str(ipaddress.IPv6Address(value))
            except ValueError:
                raise click.BadParameter(
                    f"{value!r}: an address or host name only (a port goes in --port, "
                    "no scheme)") from None
        return _resolvable(value)
    try:
        return str(ipaddress.IPv6Address(value[1:-1]))
    except ValueError:
        raise click.BadParameter(f"{value!r}: only an IPv6 address goes in brackets") from None


def _resolvable(host: str) -> str:
    """`host`, when it names an address: a name no resolver knows failed the server's
    start as "address in use, or the app failed at startup", the reason in its log."""
    try:
        socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise click.BadParameter(f"{host!r}: no address of that name ({exc.strerror})") from None
    except UnicodeError:
        raise click.BadParameter(f"{host!r}: no host name") from None
    return host


def _host_option(func: Callable[..., None]) -> Callable[..., None]:
    return click.option("--host", default="127.0.0.1", show_default=True,
                        callback=_bind_host, help="Address to bind.")(func)


_POSITIVE_SECONDS = click.FloatRange(min=0, min_open=True)
_NON_NEGATIVE_SECONDS = click.FloatRange(min=0)
_POSITIVE_COUNT = click.IntRange(min=1)
_NON_NEGATIVE_COUNT = click.IntRange(min=0)


def _graceful_option(func: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--graceful-timeout", type=click.FloatRange(min=0, min_open=True),
        callback=finite_seconds,
        default=DEFAULT_GRACEFUL_TIMEOUT, show_default=True, metavar="SECONDS",
        help="On SIGTERM/SIGINT, how long in-flight requests may take to finish; those "
             "still running near the end are answered with an error (503 / an in-band "
             "error event). Keep it under the orchestrator's kill timeout.",
    )(func)


def _header_timeout_option(func: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--header-timeout", type=click.FloatRange(min=0, min_open=True),
        callback=finite_seconds, default=DEFAULT_HEADER_TIMEOUT, show_default=True,
        metavar="SECONDS",
        help="A request whose line and headers take longer gets 408 and its connection "
             "is closed (slowloris); idle keep-alive connections close after 15 s.",
    )(func)


def _checked_host_names(
    ctx: click.Context, param: click.Parameter, names: tuple[str, ...]
) -> tuple[str, ...]:
    # Refused here, before the log file is opened: one the check could never match
    # answered 421 to every request it was listed for.
    from ridtrace.host_names import checked_host_name

    try:
        for name in names:
            checked_host_name(name)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return names


def _allowed_host_option(func: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
        callback=_checked_host_names,
        help="Also answer requests whose Host is NAME (repeat; '*' for any). Bound to "
             "loopback, only localhost and the loopback addresses are answered (421 "
             "otherwise: DNS rebinding); on other addresses any Host unless listed.",
    )(func)


_LOG_FILE_HELP = ("JSON-lines log the process writes, appended to (docs/log-schema.md); "
                  "'-' for standard output.")


def log_sink(log_file: Path) -> Path | BinaryIO:
    """Where `--log-file` sends the lines: ``-`` is standard output, as to every ``-o``,
    and where a container's service logs (its runtime's files are made from it). It was
    a file named "-" in the working directory, and the container's log stayed empty."""
    if str(log_file) != "-":
        return log_file
    # Unbuffered, on the descriptor: a write the stream refuses (a full disk, a reader
    # gone) is lost then and said, not left in a buffer that failed again at exit (the
    # exit status was 120); a line torn by it is ended alone, as in a file.
    try:
        return open(sys.stdout.fileno(), "wb", buffering=0, closefd=False)
    except (AttributeError, OSError, ValueError):  # no descriptor (an embedding program's)
        return sys.stdout.buffer


def log_place(log_file: Path) -> str:
    """`--log-file` as the serve's own lines on stderr name it."""
    return "standard output" if str(log_file) == "-" else str(log_file)


def say(text: str, *, log_file: Path, service: str, level: str = "INFO") -> None:
    """One of the serve's own lines for its operator, on stderr.

    Under ``--log-file -`` it is a JSON line of the log's own schema (logger
    ``ridtrace.serve``): a container runtime keeps stdout and stderr in one log, where
    the plain-text line was a bad line, and one bad line in a pod log under 100 lines
    made ``analyze`` call the read incomplete (exit 3)."""
    if str(log_file) != "-":
        click.echo(text, err=True)
        return
    from ridtrace.tracing.jsonline import dumps, event_line

    line = event_line("ridtrace.serve", level, text, {}, None)
    line["service"] = service
    sys.stderr.flush()  # anything written before keeps its place
    sys.stderr.buffer.write(dumps(line))
    sys.stderr.buffer.flush()


_LOG_LEVEL_HELP = ("Lowest level logged: TRACE, DEBUG, INFO, WARN(ING), ERROR or CRITICAL. "
                   "Request lifecycle lines (INFO) are written whatever the level: "
                   "they are what ridtrace analyze reads.")


def _debug_option(func: Callable[..., None]) -> Callable[..., None]:
    # Each on/off option has its "off" too: a variable that turned it on (a stack's
    # shared environment) could not be overridden for one process.
    return click.option(
        "--debug-endpoints/--no-debug-endpoints", default=None,
        help="Serve GET /debug/inflight (internal state) and, on the frontend, the API "
             "docs (/docs, /redoc, /openapi.json); off by default.",
    )(func)


def _worker_token_option(func: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--worker-token", default=None, metavar="TOKEN",
        help="Shared secret between the frontend and its workers "
             "(or RIDTRACE_WORKER_TOKEN); workers refuse work without it.",
    )(func)
