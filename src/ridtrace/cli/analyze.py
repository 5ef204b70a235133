"""``ridtrace analyze``: every forensic check over frontend and worker logs.

Thin by design: parse options, call `ridtrace.forensics`, render. pandas and
pyarrow are imported inside the command so ``ridtrace --help`` stays instant.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ridtrace.cli.engine import dask_report, engine_choice, engine_options

if TYPE_CHECKING:
    from ridtrace.forensics.reading.events import LoadedLogs
    from ridtrace.forensics.reading.reader import ReadStats

F = TypeVar("F", bound=Callable[..., Any])


class InputError(click.ClickException):
    """Missing or unreadable input: exit code 2, like a usage error."""

    exit_code = 2


def paths_argument(func: F) -> F:
    """PATH... : files, directories, globs, .gz, or ``-`` for stdin."""
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...")(func)


def quiet_option(func: F) -> F:
    """``-q/--quiet``: no progress bar, no warnings on stderr."""
    return click.option("-q", "--quiet", is_flag=True, help="No progress bar or warnings.")(func)


def load_logs(paths: Sequence[str], *, quiet: bool, lean: bool = False) -> LoadedLogs:
    """Load inputs with a progress bar on stderr (only on a terminal, never with --quiet).

    ``lean`` skips display-only fields (see `ridtrace.forensics.reading.events.read_sources`).
    """
    from ridtrace.forensics.reading.events import read_sources
    from ridtrace.forensics.reading.inputs import ForensicsInputError, expand_inputs

    try:
        sources = expand_inputs(paths)
        if quiet or not sys.stderr.isatty():
            logs = read_sources(sources, lean=lean)
        else:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

            total = sum(s.size for s in sources) or None
            with Progress(
                "[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                TimeRemainingColumn(), console=Console(stderr=True), transient=True,
            ) as progress:
                task = progress.add_task("reading logs", total=total)
                logs = read_sources(
                    sources, lean=lean, on_bytes=lambda n: progress.advance(task, n)
                )
    except ForensicsInputError as exc:
        raise InputError(str(exc)) from exc
    if not quiet:
        warn_bad_lines(logs)
    return logs


def warn_bad_lines(logs: LoadedLogs) -> None:
    """One stderr line about bad lines and skipped files, with a few file:line samples."""
    warn_read_stats(logs.stats)


def warn_read_stats(stats: ReadStats) -> None:
    """`warn_bad_lines` from the read's counters alone (what the Dask engine returns)."""
    if stats.bad_lines:
        samples = ", ".join(f"{s.file}:{s.line} ({s.reason})" for s in stats.samples[:3])
        click.echo(f"ridtrace: skipped {stats.bad_lines} bad line(s), e.g. {samples}", err=True)
    if stats.skipped_files:
        names = ", ".join(stats.skipped_files[:3])
        click.echo(
            f"ridtrace: ignored {len(stats.skipped_files)} non-log file(s): {names}", err=True
        )
    if stats.lines == 0:
        click.echo("ridtrace: no log lines found", err=True)


def parse_time_option(value: str | None, name: str) -> Any:
    """--since/--until → UTC Timestamp, or a usage error (exit 2)."""
    if value is None:
        return None
    from ridtrace.forensics.rules.report import parse_time

    try:
        return parse_time(value)
    except ValueError as exc:
        raise click.BadParameter(f"not an ISO 8601 time: {value!r}", param_hint=name) from exc


def emit(text: str, output: Path | None) -> None:
    """Write the report to `output`, or to stdout."""
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    try:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror}") from exc


@click.command("analyze")
@paths_argument
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
    show_default=True, help="Report format.",
)
@click.option("--since", help="Only requests active at or after this time (ISO 8601, UTC).")
@click.option("--until", help="Only requests that started before this time (ISO 8601, UTC).")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to FILE instead of stdout.",
)
@quiet_option
@engine_options
@click.pass_context
def analyze(
    ctx: click.Context,
    paths: tuple[str, ...],
    fmt: str,
    since: str | None,
    until: str | None,
    output: Path | None,
    quiet: bool,
    engine: str,
    scheduler: str | None,
    partition_size: str | None,
) -> None:
    """Find crossed streams, duplicate in-flight ids, unlinked responses, client id
    reuse and deprecated headers in frontend and worker logs.

    Exit status: 0 no error finding, 1 at least one, 2 bad usage or unreadable input.
    """
    from ridtrace.forensics.rules.report import analyze as run_analysis
    from ridtrace.forensics.rules.report import report_csv, report_json

    choice = engine_choice(engine, scheduler, partition_size)
    since_t = parse_time_option(since, "--since")
    until_t = parse_time_option(until, "--until")
    if choice.dask:
        report = dask_report(choice, paths, quiet=quiet, since=since_t, until=until_t)
    else:
        logs = load_logs(paths, quiet=quiet, lean=True)
        report = run_analysis(logs, since=since_t, until=until_t)
    if fmt == "json":
        emit(json.dumps(report_json(report), indent=2), output)
    elif fmt == "csv":
        emit(report_csv(report), output)
    else:
        from ridtrace.cli.forensics_render import render_report

        emit(render_report(report, to_terminal=output is None), output)
    ctx.exit(1 if report.has_errors else 0)
