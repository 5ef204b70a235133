"""Entry point of the ``ridtrace`` command."""

import codecs
import contextlib
import io
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import click
import click.utils

from ridtrace.cli import quick_exit

# Ctrl-C and SIGTERM: the shell's convention (128 + the signal), not click's "Aborted!"
# and exit 1, which a CI gate reads as error findings.
from ridtrace.cli.stop import (
    HungUp,
    Terminated,
    exit_code,
    forget_stops,
    hangup_to_handle,
    interrupt_behind,
    interrupt_to_handle,
    raise_hung_up,
    raise_interrupted,
    raise_terminated,
    received_stop,
)
from ridtrace.cli.whole_writes import write_whole_on_standard_streams


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises `Terminated`, SIGHUP `HungUp`, SIGINT KeyboardInterrupt, while a
    command runs (commands that stop their own way — serve, demo, --follow — install
    their own handlers over these); none is raised inside the import system (`stop`).

    Without them SIGTERM (a CI job's timeout, `timeout`, a container stop) or SIGHUP (the
    terminal or ssh session closed) killed the process where it stood: a read's decoded
    copies, as large as the logs, stayed in the temp directory, and a Dask run left its
    cluster's scratch files behind. Under nohup SIGHUP is ignored, and stays so.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (an embedding program's thread)
        return
    forget_stops()
    handlers = {int(signal.SIGTERM): raise_terminated}
    hangup = hangup_to_handle()
    if hangup is not None:
        handlers[hangup] = raise_hung_up
    interrupt = interrupt_to_handle()
    if interrupt is not None:
        handlers[interrupt] = raise_interrupted
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _UnwritableStdout(click.ClickException):
    """What click printed itself (``--help``, ``--version``) could not be written: exit
    2, as for a report, with the reason on stderr."""

    exit_code = 2


def _click_failed_on_stdout(exc: BaseException) -> _UnwritableStdout | None:
    """`_UnwritableStdout` when `exc` is click's own ``echo`` failing on stdout, else None.

    Help and version text do not go through the report's writer (`analyze.echo_out`):
    a full disk was a traceback and exit 4, ``>&-`` an ignored exception and exit 120,
    and a closed pipe exit 1, which a CI gate reads as error findings.
    """
    if not isinstance(exc, OSError):
        return None
    trace = exc.__traceback__
    while trace is not None:
        frame = trace.tb_frame
        if frame.f_code is click.utils.echo.__code__ and not frame.f_locals.get("err"):
            # The exit's flush would fail again on what is still buffered.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return _UnwritableStdout(f"cannot write to standard output: {exc.strerror or exc}")
        trace = trace.tb_next
    return None


class _Main(click.Group):
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:  # ridtrace --help / --version
            return super().make_context(*args, **kwargs)
        except OSError as exc:
            unwritten = _click_failed_on_stdout(exc)
            if unwritten is None:
                raise
            raise unwritten from None

    def invoke(self, ctx: click.Context) -> object:
        # An earlier command in this process that was interrupted closed the staging of
        # temporary copies (`_stopped`): this one makes its own.
        staging = sys.modules.get("ridtrace.forensics.reading.staging")
        if staging is not None:
            staging.reopen()
        try:
            with _sigterm_as_interrupt():
                return super().invoke(ctx)
        except Exception as exc:
            unwritten = _click_failed_on_stdout(exc)  # ridtrace COMMAND --help
            if unwritten is not None:
                raise unwritten from None
            # Ctrl-C raised inside a lock's own bookkeeping (a Condition's wait) surfaces
            # as "cannot release un-acquired lock", the interrupt as its context: still
            # the user's stop, not ridtrace failing (exit 4, and a hang on the threads).
            # And a stop a library turned into an error of its own: DuckDB's "Query
            # interrupted" keeps no context (exit 4, with a traceback, for a SIGTERM).
            stop = interrupt_behind(exc) or received_stop()
            if stop is None:
                raise
            self._stopped(ctx, stop)
        except KeyboardInterrupt as stop:
            self._stopped(ctx, stop)
        return None

    @staticmethod
    def _stopped(ctx: click.Context, stop: KeyboardInterrupt) -> None:
        """End a command the user stopped: say so, clean up, exit 130, 143 or 129."""
        said = ("hung up" if isinstance(stop, HungUp)
                else "terminated" if isinstance(stop, Terminated) else "interrupted")
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            click.echo(f"\nridtrace: {said}", err=True)
        # The reading threads never reach their cleanup now: their decoded copies
        # (as large as the logs) go first. Imported only if a read began.
        staging = sys.modules.get("ridtrace.forensics.reading.staging")
        if staging is not None:
            staging.remove_all()
        # Leave at once (from the console entry): a reading thread blocked on a pipe
        # would hold the interpreter's exit, which joins every thread, forever.
        quick_exit.request()
        ctx.exit(exit_code(stop))


# `-h` as well: most command lines take it, and a new user's first try said "No such option".
@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ridtrace", message="ridtrace %(version)s")
def main() -> None:
    """ridtrace: request identity, tracing and log forensics."""


# A failure of ridtrace itself: not 1, which a CI gate reads as "error findings".
EXIT_INTERNAL_ERROR = 4


def _stand_in_for_closed_streams() -> None:
    """Started without stdout or stderr (``>&-``, ``2>&-``, some daemons), Python sets
    them to None and every use was an AttributeError (exit 4). Warnings then go nowhere,
    as their reader chose; the report fails to be written as on a closed pipe (exit 2,
    `analyze.echo_out`), and ``-o FILE`` needs no stdout at all."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the life of the process)
    if sys.stdout is None:
        # A descriptor open for reading only: the first write fails with EBADF.
        sys.stdout = os.fdopen(os.open(os.devnull, os.O_RDONLY), "w")


def _report_in_utf8() -> None:
    """Standard output in UTF-8, whatever the locale, as ``-o FILE`` is written.

    Under a locale that is not UTF-8 (a Windows runner's redirected stdout is cp1252, an
    older server's Latin-1) the table's box drawing or a client's id in CJK could not be
    encoded, and the report was a traceback and exit 4 in place of the report and its
    exit code. JSON must be UTF-8 between systems (RFC 8259 §8.1), `-o -` must give the
    bytes `-o FILE` gives, and click already writes UTF-8 where the locale is ASCII.
    Stderr needs nothing: Python escapes what its encoding cannot hold there.
    """
    stream = sys.stdout
    if isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name != "utf-8":
        stream.reconfigure(encoding="utf-8")


def run() -> None:
    """The ``ridtrace`` console script and ``python -m ridtrace``: `main`, ending the
    process at once when the command asked for it (`ridtrace.cli.quick_exit`), and
    with exit 4 and the traceback when ridtrace itself failed."""
    _stand_in_for_closed_streams()
    _report_in_utf8()
    write_whole_on_standard_streams()
    try:
        main()
    except SystemExit as done:
        if quick_exit.requested() and (done.code is None or isinstance(done.code, int)):
            quick_exit.leave(done.code or 0)
        raise
    except Exception:
        traceback.print_exc()
        print("ridtrace: internal error (exit 4); please report it with the traceback above",
              file=sys.stderr)
        sys.exit(EXIT_INTERNAL_ERROR)


from ridtrace.cli.serve import serve  # noqa: E402  (frontend plugin commands)

main.add_command(serve)


# Forensics commands (issue 4); they import pandas lazily, inside each command.
from ridtrace.cli.analyze import analyze  # noqa: E402
from ridtrace.cli.forensics_commands import audit, export, trace  # noqa: E402

main.add_command(analyze)
main.add_command(audit)
main.add_command(trace)
main.add_command(export)

# The main job (issue 5).
from ridtrace.cli.demo import demo  # noqa: E402

main.add_command(demo)
