"""``ridtrace analyze``: every forensic check over frontend and worker logs.

Thin by design: parse options, call `ridtrace.forensics`, render. pandas and
pyarrow are imported inside the command so ``ridtrace --help`` stays instant.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ridtrace.cli import quick_exit
from ridtrace.cli.engine import dask_report, engine_choice, engine_options
from ridtrace.cli.follow import follow_command, follow_options
from ridtrace.cli.output import refuse_to_overwrite, whole_file

if TYPE_CHECKING:
    from ridtrace.forensics.reading.events import LoadedLogs
    from ridtrace.forensics.reading.stats import ReadStats
    from ridtrace.forensics.records.read import LoadedRequests
    from ridtrace.forensics.rules.report import Report

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class InputError(click.ClickException):
    """Missing or unreadable input: exit code 2, like a usage error."""

    exit_code = 2


def _no_empty_path(
    ctx: click.Context, param: click.Parameter, paths: tuple[str, ...],
) -> tuple[str, ...]:
    # pathlib reads "" as ".": `ridtrace analyze "$LOG_DIR"` with the variable unset
    # walked the current directory instead, and could pass a CI gate on the wrong files.
    if any(path == "" for path in paths):
        raise click.BadParameter("an empty path (an unset variable?); name the logs, or "
                                 "'.' for the current directory", ctx, param)
    return paths


def paths_argument(func: F) -> F:
    """PATH... : files, directories, globs, .gz, or ``-`` for stdin."""
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                          callback=_no_empty_path)(func)


def quiet_option(func: F) -> F:
    """``-q/--quiet``: no progress bar, no warnings on stderr."""
    return click.option("-q", "--quiet", is_flag=True, help="No progress bar or warnings.")(func)


def allow_incomplete_option(func: F) -> F:
    """``--allow-incomplete``: exit 0 instead of 3 on input read only in part."""
    return click.option(
        "--allow-incomplete", is_flag=True,
        help="Exit 0, not 3, when some input could not be read (the report still says so).",
    )(func)


def _with_progress(
    sources: Sequence[Any], quiet: bool, read: Callable[[Callable[[int], None] | None], T]
) -> T:
    """Run `read` with a progress bar on stderr (only on a terminal, never with --quiet)."""
    if quiet or not sys.stderr.isatty():
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


def import_beside(module: str) -> threading.Thread:
    """Import `module` on a thread of its own, started now.

    The rules' modules and pandas take most of a second to import, on one core, while
    the other core waits: imported beside the read, they cost no wall time.
    A failed import is left for the caller's own import to raise.
    """

    def work() -> None:
        with contextlib.suppress(Exception):
            importlib.import_module(module)

    thread = threading.Thread(target=work, name="ridtrace-import", daemon=True)
    thread.start()
    return thread


def load_logs(
    paths: Sequence[str], *, quiet: bool, lean: bool = False, writes: Sequence[Path | None] = (),
) -> LoadedLogs:
    """Load inputs' events, with a progress bar and warnings on stderr.

    ``lean`` skips display-only fields (see `ridtrace.forensics.reading.events.read_sources`);
    ``writes``: the files the command will write, refused when one is a log it read.
    """
    from ridtrace.forensics.reading.events import read_sources
    from ridtrace.forensics.reading.inputs import ForensicsInputError, expand_inputs

    try:
        sources = expand_inputs(paths)
    except ForensicsInputError as exc:
        raise InputError(str(exc)) from exc
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
    from ridtrace.forensics.reading.inputs import ForensicsInputError, expand_inputs
    from ridtrace.forensics.records.read import read_partials

    try:
        sources = expand_inputs(paths)
    except ForensicsInputError as exc:
        raise InputError(str(exc)) from exc
    read = _with_progress(
        sources, quiet,
        lambda on_bytes: read_partials(sources, on_bytes=on_bytes, since=since, until=until),
    )
    refuse_to_overwrite(writes, sources, read.stats)
    if not quiet:
        warn_read_stats(read.stats)
    return read


def warn_read_stats(stats: ReadStats) -> None:
    """Stderr lines about bad lines, ignored and unreadable files, with file:line samples.

    Not called under --quiet: then the exit code (3 for input read only in part) and the
    report's summary (``unreadable_files``, ``incomplete_reasons``) say it.
    """
    from ridtrace.forensics.printable import visible  # file names are anyone's text

    if stats.bad_lines:
        samples = ", ".join(f"{s.file}:{s.line} ({s.reason})" for s in stats.samples[:3])
        click.echo(visible(f"ridtrace: skipped {stats.bad_lines} bad line(s), e.g. {samples}"),
                   err=True)
    for note in stats.ignored_files:
        click.echo(visible(f"ridtrace: ignored {note.file}: {note.reason}"), err=True)
    for note in stats.unreadable_files:
        click.echo(visible(f"ridtrace: could not read all of {note.file}: {note.reason}"),
                   err=True)
    if stats.lines == 0:
        click.echo("ridtrace: no log lines found", err=True)


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


def echo_out(text: str, *, nl: bool = True, what: str) -> None:
    """`text` on stdout, flushed; a full disk or a closed pipe is exit 2 with a message
    naming `what` could not be written, never a traceback."""
    try:
        click.echo(text, nl=nl)
        sys.stdout.flush()  # the failure shows here, not at exit
    except OSError as exc:
        # Nothing more can reach stdout: point it at /dev/null so the exit's flush
        # does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise InputError(f"cannot write {what} to standard output: "
                         f"{exc.strerror or exc}") from None


def emit(text: str, output: Path | None) -> None:
    """Write the report to `output`, or to stdout; a report that cannot be written is an
    error (exit 2), never a traceback or an exit code that reads as findings."""
    if output is None or str(output) == "-":  # -o - is stdout, as - is stdin for inputs
        echo_out(text, nl=not text.endswith("\n"), what="the report")
        return
    try:
        with whole_file(output) as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror}") from exc


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
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
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

        emit(render_report(report, to_terminal=output is None), output)
    code = exit_code(report, allow_incomplete=allow_incomplete)
    if code == 3 and not quiet:
        from ridtrace.forensics.printable import visible  # the reasons name files

        reasons = "; ".join(report.summary["incomplete_reasons"][:3])
        click.echo(visible(f"ridtrace: input incomplete, incidents may be missing: {reasons}"),
                   err=True)
    if not choice.dask:  # a Dask cluster is shut down in order, not dropped
        quick_exit.request()  # everything is written; the rest would be freeing memory
    ctx.exit(code)
