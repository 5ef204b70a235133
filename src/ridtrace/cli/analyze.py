"""``ridtrace analyze``: every forensic check over frontend and worker logs.

Thin by design: parse options, call `ridtrace.forensics`, render. pandas and
pyarrow are imported inside the command so ``ridtrace --help`` stays instant.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ridtrace.cli import quick_exit
from ridtrace.cli.arrow_memory import use_system_allocator
from ridtrace.cli.background_import import import_beside
from ridtrace.cli.engine import dask_report, engine_choice, engine_options
from ridtrace.cli.follow import follow_command, follow_options
from ridtrace.cli.output import (
    InputError,
    ReportPath,
    emit,
    is_standard_output,
    refuse_to_overwrite,
    warn_read_stats,
)

if TYPE_CHECKING:
    from ridtrace.forensics.reading.events import LoadedLogs
    from ridtrace.forensics.reading.inputs import Source
    from ridtrace.forensics.records.read import LoadedRequests
    from ridtrace.forensics.rules.report import Report

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def _no_empty_path(
    ctx: click.Context, param: click.Parameter, paths: tuple[str, ...],
) -> tuple[str, ...]:
    # pathlib reads "" as ".": `ridtrace analyze "$LOG_DIR"` with the variable unset
    # walked the current directory instead, and could pass a CI gate on the wrong files.
    if any(path == "" for path in paths):
        raise click.BadParameter("an empty path (an unset variable?); name the logs, or "
                                 "'.' for the current directory", ctx, param)
    return paths


def piped_stdin_hint(command: str) -> str:
    """What to add to "Missing argument 'PATH...'" when the logs come down a pipe or a
    redirect (`cat app.jsonl | ridtrace analyze`): standard input is read as ``-`` only.
    `command` is how to call it with ``-`` (``ridtrace analyze -``)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # no standard input at all
        return ""
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return ""
    return f"Standard input is a pipe or a file: name it '-' to read it ({command})."


class _PathsArgument(click.Argument):
    def process_value(self, ctx: click.Context, value: Any) -> Any:
        try:
            return super().process_value(ctx, value)
        except click.MissingParameter as exc:
            hint = piped_stdin_hint(f"{ctx.command_path} -")
            if not hint:
                raise
            raise click.MissingParameter(hint, ctx=ctx, param=exc.param) from None


def paths_argument(func: F) -> F:
    """PATH... : files, directories, globs, .gz, or ``-`` for stdin."""
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                          callback=_no_empty_path, cls=_PathsArgument)(func)


def quiet_option(func: F) -> F:
    """``-q/--quiet``: no progress bar, no warnings on stderr."""
    return click.option("-q", "--quiet", is_flag=True, help="No progress bar or warnings.")(func)


def _allow_incomplete(said: str) -> Callable[[F], F]:
    """``--allow-incomplete``: exit 0 instead of 3 on input read only in part."""
    return click.option(
        "--allow-incomplete", is_flag=True,
        help=f"Exit 0, not 3, when some input could not be read{said}.",
    )


allow_incomplete_option = _allow_incomplete(" (the report still says so)")
# An export has no report to say so in.
allow_incomplete_export_option = _allow_incomplete("")


def _with_progress(
    sources: Sequence[Any], quiet: bool, read: Callable[[Callable[[int], None] | None], T]
) -> T:
    """Run `read` with a progress bar on stderr (only on a terminal, never with --quiet,
    nor while the user types or pastes the logs into that terminal: redrawn every tenth
    of a second, the bar wiped what was typed and glued itself to each pasted line)."""
    if quiet or not sys.stderr.isatty() or _typed_in(sources):
        return read(None)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    total = sum(s.size for s in sources) or None
    with Progress(
        "[progress.description]{task.description}", BarColumn(), DownloadColumn(),
        TimeRemainingColumn(), console=Console(stderr=True), transient=True,
    ) as progress:
        task = progress.add_task("reading logs", total=total)
        return read(lambda n: progress.advance(task, n))


def _typed_in(sources: Sequence[Source]) -> bool:
    """Whether one of `sources` is standard input left on a terminal (`-`, no pipe)."""
    return any(_typed(source) for source in sources)


def _typed(source: Source) -> bool:
    """Whether `source` is this process's terminal, typed or pasted in: standard input
    left on it (``-``), or the terminal named as a path (``/dev/stdin``, ``/dev/tty``)."""
    from ridtrace.forensics.reading.inputs import STDIN_NAME, on_a_terminal

    if source.path is None:
        return source.name == STDIN_NAME and on_a_terminal(sys.stdin)
    return _this_terminal(source.path)


def _this_terminal(path: Path) -> bool:
    """Whether `path` is the device of a terminal this process has open or controls.

    Told by the device number, never by opening the path: opening a named pipe to look
    at it would let its waiting writer go on to a reader that is not there yet.
    """
    import stat

    try:
        device = path.stat()
    except OSError:
        return False
    if not stat.S_ISCHR(device.st_mode):
        return False
    terminals = set()
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd):
                terminals.add(os.fstat(fd).st_rdev)
    with contextlib.suppress(OSError):  # no controlling terminal: /dev/tty opens none
        os.close(os.open(os.ctermid(), os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK))
        terminals.add(os.stat(os.ctermid()).st_rdev)
    return device.st_rdev in terminals


def _sources(paths: Sequence[str], *, quiet: bool) -> list[Source]:
    """The inputs `paths` name, with this process allowed the descriptors to read them,
    and a word on stderr for any the read will wait on (`endless_input_note`).

    DuckDB reads a batch of small files (a directory of pod logs is thousands of them)
    with the whole batch open: the soft limit is raised to the hard one, as ``--follow``
    and ``serve`` do, so batches keep their size (`small_files.batch_files` cuts them
    to what a low hard limit leaves).
    """
    from ridtrace.forensics.reading.inputs import ForensicsInputError, expand_inputs
    from ridtrace.open_file_limit import raise_open_file_limit

    raise_open_file_limit()
    try:
        sources = expand_inputs(paths)
    except ForensicsInputError as exc:
        raise InputError(str(exc)) from exc
    if not quiet:
        for source in sources:
            if (note := endless_input_note(source)) is not None:
                click.echo(f"ridtrace: {note}", err=True)
    return sources


def endless_input_note(source: Source) -> str | None:
    """What to expect of a named pipe or a device the user named: it is read until it
    ends, as ``cat`` reads it, and a pipe with no writer waits for one first. Said
    before the read, which would otherwise wait in silence (``mkfifo``'d pipe nobody
    writes to, ``/dev/zero``); the pipes a shell makes (``<(zcat …)``, ``/dev/fd/N``)
    and standard input are what the user meant and get no word, but for standard input
    left on the terminal: a forgotten pipe."""
    import stat

    from ridtrace.forensics.printable import visible  # a file name is anyone's text

    if _typed(source):
        # `ridtrace analyze -` with no pipe: the read waits on the keyboard, silently.
        shown = "standard input" if source.path is None else visible(str(source.path))
        return f"reading {shown}, a terminal: paste log lines, then Ctrl-D (or pipe logs in)"
    # A walk's or a glob's pipe or device is left alone, and said to be (not read).
    if (source.regular or source.path is None or source.unreadable is not None
            or source.from_directory):
        return None
    shown = str(source.path)
    if shown in ("-", "/dev/stdin") or shown.startswith(("/dev/fd/", "/proc/")):
        return None
    try:
        mode = source.path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return f"reading {visible(source.name)}, a named pipe, until its writer closes it"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return (f"reading {visible(source.name)}, a device, until it ends (Ctrl-C stops the "
                "run, with no report)")
    return None


def load_logs(
    paths: Sequence[str], *, quiet: bool, lean: bool = False, writes: Sequence[Path | None] = (),
) -> LoadedLogs:
    """Load inputs' events, with a progress bar and warnings on stderr.

    ``lean`` skips display-only fields (see `ridtrace.forensics.reading.events.read_sources`);
    ``writes``: the files the command will write, refused when one is a log it read.
    """
    from ridtrace.forensics.reading.events import read_sources

    use_system_allocator()
    sources = _sources(paths, quiet=quiet)
    logs = _with_progress(
        sources, quiet, lambda on_bytes: read_sources(sources, lean=lean, on_bytes=on_bytes)
    )
    refuse_to_overwrite(writes, sources, logs.stats)
    if not quiet:
        warn_read_stats(logs.stats)
    return logs


def read_for_analysis(
    paths: Sequence[str], *, quiet: bool, since: Any = None, until: Any = None,
    writes: Sequence[Path | None] = (),
) -> LoadedRequests:
    """`analyze`'s read: per-span partials of every input, warnings on stderr."""
    from ridtrace.forensics.records.read import read_partials

    use_system_allocator()
    sources = _sources(paths, quiet=quiet)
    read = _with_progress(
        sources, quiet,
        lambda on_bytes: read_partials(sources, on_bytes=on_bytes, since=since, until=until),
    )
    refuse_to_overwrite(writes, sources, read.stats)
    if not quiet:
        warn_read_stats(read.stats)
    return read


def exit_code(report: Report, *, allow_incomplete: bool) -> int:
    """1 on an error finding; 3 when the input was incomplete (unless allowed); else 0."""
    if report.has_errors:
        return 1
    if report.summary.get("incomplete") and not allow_incomplete:
        return 3
    return 0


def parse_time_option(value: str | None, name: str) -> Any:
    """--since/--until → UTC Timestamp, or a usage error (exit 2)."""
    if value is None:
        return None
    from ridtrace.forensics.rules.report import parse_time

    try:
        return parse_time(value, bound=name.lstrip("-"))
    except (ValueError, OverflowError) as exc:
        raise click.BadParameter(f"not an ISO 8601 time: {value!r}", param_hint=name) from exc


@click.command("analyze")
@paths_argument
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
    show_default=True, help="Report format.",
)
@click.option("--since", help="Only requests active at or after this time (ISO 8601; UTC "
              "unless it names an offset).")
@click.option("--until", help="Only requests that started before this time (ISO 8601; UTC "
              "unless it names an offset).")
@click.option(
    "-o", "--output", type=ReportPath(),
    help="Write the report to FILE instead of stdout.",
)
@allow_incomplete_option
@quiet_option
@engine_options
@follow_options
@click.pass_context
def analyze(
    ctx: click.Context,
    paths: tuple[str, ...],
    fmt: str,
    since: str | None,
    until: str | None,
    output: Path | None,
    allow_incomplete: bool,
    quiet: bool,
    engine: str,
    scheduler: str | None,
    partition_size: str | None,
    no_workers_timeout: str | None,
    follow: bool,
    from_start: bool,
    window: str | None,
    poll_interval: str | None,
    settle: str | None,
    fail_fast: bool,
) -> None:
    """Find crossed streams, duplicate in-flight ids, unlinked responses, client id
    reuse and deprecated headers in frontend and worker logs.

    Exit status: 0 no error finding, 1 at least one, 2 bad usage or a missing path,
    3 no error finding but the input was incomplete (incidents may be missing), 4 an
    internal error, 130 stopped by Ctrl-C, 143 by SIGTERM, 129 by SIGHUP.

    With --follow, watch the logs grow and print each error finding as soon as the
    logs prove it, one per line, until Ctrl-C, SIGTERM or SIGHUP (which print the summary).
    """
    if follow or from_start or fail_fast or window or poll_interval or settle:
        if engine == "pandas":  # --scheduler & co. without the engine: exit 2, not ignored
            engine_choice(engine, scheduler, partition_size, no_workers_timeout)
        ctx.exit(follow_command(
            paths, follow=follow, fmt=fmt, output=output, since=since, until=until,
            engine=engine, from_start=from_start, window=window, interval=poll_interval,
            settle=settle, fail_fast=fail_fast, allow_incomplete=allow_incomplete, quiet=quiet,
        ))
    choice = engine_choice(engine, scheduler, partition_size, no_workers_timeout)
    since_t = parse_time_option(since, "--since")
    until_t = parse_time_option(until, "--until")
    if since_t is not None and until_t is not None and since_t >= until_t:
        raise click.BadParameter("--since must be before --until", param_hint="--since")
    if choice.dask:
        report = dask_report(choice, paths, quiet=quiet, since=since_t, until=until_t,
                             writes=(output,))
    else:
        rules = import_beside("ridtrace.forensics.rules.report")
        read = read_for_analysis(paths, quiet=quiet, since=since_t, until=until_t,
                                  writes=(output,))
        rules.join()
        from ridtrace.forensics.rules.report import analyze_read

        report = analyze_read(read, since=since_t, until=until_t)
    from ridtrace.forensics.rules.report import report_csv, report_json_text

    if fmt == "json":
        emit(report_json_text(report), output)
    elif fmt == "csv":
        emit(report_csv(report), output)
    else:
        from ridtrace.cli.forensics_render import render_report

        emit(render_report(report, to_terminal=is_standard_output(output)), output)
    code = exit_code(report, allow_incomplete=allow_incomplete)
    if code == 3 and not quiet:
        from ridtrace.forensics.printable import visible  # the reasons name files

        reasons = "; ".join(report.summary["incomplete_reasons"][:3])
        click.echo(visible(f"ridtrace: input incomplete, incidents may be missing: {reasons}"),
                   err=True)
    if not choice.dask:  # a Dask cluster is shut down in order, not dropped
        quick_exit.request()  # everything is written; the rest would be freeing memory
    ctx.exit(code)
