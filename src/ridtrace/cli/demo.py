"""``ridtrace demo``: the incident reproduced, the fix shown, both proven from the logs."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import sys
import threading
import warnings
from pathlib import Path
from types import FrameType
from typing import NoReturn

import click

from ridtrace.cli.path_options import NonEmptyPath
from ridtrace.cli.propagators import require_propagators, require_sdk
from ridtrace.cli.serve_options import BadConfiguration, finite_seconds
from ridtrace.cli.stop import (
    HungUp,
    Terminated,
    exit_code,
    hangup_to_handle,
    interrupt_behind,
    received_stop,
    unwind,
)

__all__ = ["demo"]


def _quiet_after_a_stop() -> None:
    """Silence the noise a stop the user asked for leaves: coroutines it left unstarted
    each print a RuntimeWarning when collected, and pending traffic tasks "Task was
    destroyed but it is pending!" through asyncio's logger. Set in the signal handler,
    before anything unwinds: collected while the demo's processes were being stopped,
    they printed ahead of the one line that says what happened."""
    warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGINT, SIGTERM and SIGHUP take one path, so every child process is stopped.
    _quiet_after_a_stop()
    stop = (HungUp() if signum == getattr(signal, "SIGHUP", None)
            else Terminated() if signum == signal.SIGTERM else KeyboardInterrupt())
    unwind(stop, signum, frame)


@click.command()
@click.option("--out", "out_dir", type=NonEmptyPath(file_okay=False, path_type=Path),
              default=Path("demo-out"), show_default=True, help="Where logs and reports go.")
@click.option("--requests", "count", type=click.IntRange(12, 100_000), default=240,
              show_default=True, help="Calls per policy run.")
@click.option("--concurrency", type=click.IntRange(1, 2000), default=120, show_default=True,
              help="Calls in flight at once.")
# Checked here, before the results folder is cleared: nan passed FloatRange, the
# earlier run's results were deleted, and the workers refused it afterwards.
@click.option("--token-delay", type=click.FloatRange(0, 1), callback=finite_seconds,
              default=0.01, show_default=True,
              help="Seconds per generated token in the echo workers.")
@click.option("--keep-running", is_flag=True,
              help="After the safe run's traffic, keep its stack up until Ctrl-C.")
def demo(
    out_dir: Path, count: int, concurrency: int, token_delay: float, keep_running: bool
) -> None:
    """Reproduce the crossed-stream incident, show the fix, and prove both from the logs.

    Exit status: 0 the safe run is clean, the legacy run reproduced the failure (with an
    unlinked finding for its failed calls) and every crossed stream its callers saw was
    reported, 1 otherwise, 2 bad usage (an option, or an OTEL_* or RIDTRACE_*
    variable the stack cannot follow); 129, 130 and 143 when a signal stopped it."""
    require_propagators()  # before the demo's imports (FastAPI) load them
    require_sdk()  # the SDK reads OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT on import
    from rich.console import Console

    from ridtrace.cli.forensics_render import REPORT_WIDTH, layout_width
    from ridtrace.demo.main import run_demo
    from ridtrace.demo.processes import RefusedConfiguration, StackDidNotStart

    traces_endpoint = _traces_endpoint()
    _check_serve_variables()
    _make_out_folder(out_dir)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    # Ctrl-C too, though Python's default handler raises the same: asyncio.run() swaps
    # the *default* handler for one that only cancels its main task, and a cancellation
    # that lands inside httpx's own cancel scopes can be absorbed — the traffic then
    # runs to the end and the demo exits 0 as if never interrupted. A handler of our own
    # is left in place, so Ctrl-C always unwinds (and stops every child process). While
    # the traffic's event loop runs, the loop takes the signal, cancels every call and
    # raises it again once the loop is done (ridtrace.demo.loop_signals).
    signal.signal(signal.SIGINT, _raise_interrupt)
    # Closing the terminal (or the ssh session) that runs the demo: its processes run in
    # sessions of their own, so SIGHUP killed the demo alone and left its frontend and
    # workers running on, orphaned.
    # (Under nohup SIGHUP is ignored, and stays so.)
    hangup = hangup_to_handle()
    if hangup is not None:
        signal.signal(hangup, _raise_interrupt)
    try:
        code = run_demo(
            out_dir,
            count=count,
            concurrency=concurrency,
            token_delay=token_delay,
            keep_running=keep_running,
            otlp_endpoint=traces_endpoint,
            # Piped (`make demo | tee`, a CI log), rich's 80 columns cut the tables'
            # header names and times: laid out as `analyze` lays out its report.
            console=Console(width=layout_width(True, REPORT_WIDTH)),
        )
    except KeyboardInterrupt as stop:
        _stopped(stop)
    except RefusedConfiguration as refused:
        raise BadConfiguration(str(refused)) from None
    except StackDidNotStart as failed:
        # The machine's trouble, not ridtrace's: one line, not "internal error" (exit 4).
        click.echo(f"ridtrace: the demo's stack did not start: {failed}", err=True)
        sys.exit(1)
    except Exception as exc:
        # Ctrl-C that landed in a lock's bookkeeping (seen with the callers' spans
        # exported over gRPC) surfaces as another error with the interrupt as its
        # context: the demo ended with the generic "ridtrace: interrupted", not the
        # line that says every process it started was stopped.
        # So does one that DuckDB turned into its own "Query interrupted" while the demo
        # analysed a run's logs, with no context at all: the stop a signal asked for.
        behind = interrupt_behind(exc) or received_stop()
        if behind is None:
            raise
        _stopped(behind)
    sys.exit(code)


def _make_out_folder(out_dir: Path) -> None:
    """Create `--out` before anything starts. One the user may not create or write in
    (``/opt/demo``, a path through a file) ended in a traceback and exit 4, "please
    report it", where ``serve``'s unwritable ``--log-file`` is bad usage (exit 2)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot create {out_dir}: {exc.strerror or exc}",
                                 param_hint="'--out'") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot write in {out_dir}: "
                                 f"{os.strerror(errno.EACCES)}", param_hint="'--out'")
    _lock_out_folder(out_dir)
    _forget_earlier_runs(out_dir)


# The `--out` folder's lock, held (open) until the process ends.
_OUT_LOCKS: list[int] = []


def _lock_out_folder(out_dir: Path) -> None:
    """Hold `out_dir` for this run: a second demo writing there mixed the two runs' logs
    in one folder, and a verdict on them (a confident OK among them) meant nothing.
    The lock is the folder's own (no file left in it), and goes with the process."""
    try:
        import fcntl
    except ImportError:  # not on this platform: as before
        return
    try:
        fd = os.open(out_dir, os.O_RDONLY)
    except OSError:  # a folder one may write in but not list (mode 0300): as before
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise click.BadParameter(
            f"another ridtrace demo is writing in {out_dir}: wait for it to end, or "
            "name another --out", param_hint="'--out'") from None
    _OUT_LOCKS.append(fd)


def _forget_earlier_runs(out_dir: Path) -> None:
    """Remove what an earlier run left in `out_dir`, before anything starts; what cannot
    be (another user's files after a ``sudo make demo``, ``legacy/logs`` a link to
    another disk, a file named ``legacy``) is bad usage naming it, not the traceback
    and exit 4 it was."""
    from ridtrace.demo.run import POLICIES, forget_earlier_run

    for policy in POLICIES:
        folder = out_dir / policy
        if folder.exists() and not folder.is_dir():
            raise click.BadParameter(f"{folder} is not a folder: the demo writes its "
                                     f"{policy} run there", param_hint="'--out'")
        for part in (folder / "logs", folder / "stderr"):
            if part.is_symlink():
                raise click.BadParameter(
                    f"{part} is a link: the demo replaces that folder at every run "
                    "(remove the link, or name another --out)", param_hint="'--out'")
        try:
            forget_earlier_run(out_dir, policy)
        except OSError as exc:
            where = exc.filename or folder
            if not Path(where).is_absolute():
                # rmtree names an entry by itself, relative to the folder it removes.
                where = f"{where} (under {folder})"
            raise click.BadParameter(
                f"cannot remove the earlier run's {where}: {exc.strerror or exc}",
                param_hint="'--out'") from None


def _check_serve_variables() -> None:
    """The ``RIDTRACE_*`` variables the stack's processes read (and ``OTEL_BSP_*`` /
    ``OTEL_METRIC_EXPORT_*``), refused as ``ridtrace serve`` refuses them: one line naming
    the variable, exit 2, before anything starts.
    A refused one (``RIDTRACE_ID_GENERATOR=bogus`` in the shell) ended the demo in a
    traceback and "internal error (exit 4)", after it had cleared the last run's output.
    """
    from ridtrace.demo.processes import stack_environ
    from ridtrace.frontend_plugin.settings import FrontendSettings, WorkerSettings
    from ridtrace.tracing.excluded_urls import excluded_urls
    from ridtrace.tracing.export_schedule import check_export_schedule
    from ridtrace.tracing.otlp_endpoints import otlp_export_endpoint
    from ridtrace.tracing.settings import TracingSettings

    environ = stack_environ()
    try:
        for from_env in (TracingSettings.from_env, FrontendSettings.from_env,
                         WorkerSettings.from_env):
            from_env(environ)
        # Read where an exporter is built: with an endpoint, in every process of the stack
        # and in the demo's callers, whose own spans failed the demo with exit 4.
        if any(otlp_export_endpoint(environ, name) for name in ("traces", "metrics")):
            check_export_schedule(environ)
        excluded_urls()  # the processes inherit it, and `ridtrace serve` refuses a bad one
    except ValueError as exc:
        raise BadConfiguration(str(exc)) from None


def _stopped(stop: KeyboardInterrupt) -> NoReturn:
    _quiet_after_a_stop()  # a KeyboardInterrupt that came without our handler
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        click.echo("interrupted: every process the demo started has been stopped", err=True)
    sys.exit(exit_code(stop))  # 130 after Ctrl-C, 143 after SIGTERM, 129 after SIGHUP


def _traces_endpoint() -> str | None:
    """Where the stack's spans go, as its processes will decide it, redacted to be
    printed (``shown_endpoint``); an ``OTEL_*`` variable they cannot follow is a usage
    error, said in one line.

    The hint naming ids to search for in Jaeger read only OTEL_EXPORTER_OTLP_ENDPOINT:
    spans sent through OTEL_EXPORTER_OTLP_TRACES_ENDPOINT came with no hint, and
    OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none printed "spans were exported"
    when none were. A variable such as OTEL_EXPORTER_OTLP_PROTOCOL=thrift ended the demo
    in a traceback and "internal error (exit 4)", where ``ridtrace serve`` names it.
    """
    from ridtrace.cli.collector_diagnosis import why_not_exported
    from ridtrace.tracing.otlp import otlp_exporter
    from ridtrace.tracing.otlp_endpoints import (
        exporter_names,
        otlp_export_endpoint,
        shown_endpoint,
    )
    from ridtrace.tracing.spans import sdk_disabled

    if sdk_disabled(os.environ):
        return None
    try:
        for signal_name in ("metrics", "traces"):
            endpoint = otlp_export_endpoint(os.environ, signal_name)
            if endpoint is None:
                continue
            otlp_exporter(os.environ, signal_name, endpoint).shutdown()
            diagnosis = why_not_exported(signal_name, endpoint)
            if diagnosis is not None:
                why, hint = diagnosis
                others = sorted(n for n in exporter_names(os.environ, signal_name) if n != "otlp")
                os.environ[f"OTEL_{signal_name.upper()}_EXPORTER"] = ",".join(others) or "none"
                click.echo(f"ridtrace demo: {why}: {signal_name} are not exported this run "
                           f"({hint})", err=True)
        traces = otlp_export_endpoint(os.environ, "traces")
        return None if traces is None else shown_endpoint(traces)
    except (ValueError, ImportError) as exc:
        raise BadConfiguration(str(exc)) from None


def wait_for_interrupt(frontend_url: str) -> None:
    """Block until Ctrl-C (used by --keep-running), then let the demo go on to its report.

    The Ctrl-C this asks for used to end the whole demo: exit 130 and no report,
    report.json, calls.json or traces.json, so --keep-running never gave its result.
    SIGTERM (or SIGHUP) still stops everything.
    """
    click.echo(f"stack kept running: frontend at {frontend_url} — Ctrl-C to stop it "
               "and see the report")
    try:
        threading.Event().wait()
    except Terminated:
        raise
    except KeyboardInterrupt:
        click.echo("stopping the stack")
