"""``ridtrace audit``, ``ridtrace trace`` and ``ridtrace export jaeger``."""

from __future__ import annotations

import contextlib
import json
import logging
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ridtrace.cli.analyze import (
    allow_incomplete_export_option,
    allow_incomplete_option,
    load_logs,
    paths_argument,
    piped_stdin_hint,
    quiet_option,
)
from ridtrace.cli.engine import dask_load, engine_choice, engine_options
from ridtrace.cli.output import (
    InputError,
    ReportPath,
    echo_out,
    emit,
    is_standard_output,
    names_standard_output,
    one_file,
    whole_binary_file,
    whole_file,
)
from ridtrace.cli.trace_no_match import id_first, no_match_message
from ridtrace.forensics.printable import visible
from ridtrace.forensics.reading.stats import incomplete_reasons
from ridtrace.forensics.surrogates import spell_lone_surrogates

if TYPE_CHECKING:
    import pandas as pd

_FORMAT = click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
    show_default=True, help="Output format.",
)
_OUTPUT = click.option(
    "-o", "--output", type=ReportPath(),
    help="Write to FILE instead of stdout.",
)


@click.command("audit")
@paths_argument
@click.option(
    "--by", type=click.Choice(["header", "client", "route", "day"]), default="header",
    show_default=True, help="Group deprecated-header use by this key.",
)
@click.option(
    "--plot", type=ReportPath(),
    help="Write a PNG (or the image format the name's extension gives) of requests per "
         "header over time, per second, minute, hour, day, month or year as the time span "
         "of the use needs (needs the `plot` extra).",
)
@_FORMAT
@_OUTPUT
@allow_incomplete_option
@quiet_option
@engine_options
@click.pass_context
def audit(
    ctx: click.Context, paths: tuple[str, ...], by: str, plot: Path | None, fmt: str,
    output: Path | None, allow_incomplete: bool, quiet: bool, engine: str,
    scheduler: str | None, partition_size: str | None, no_workers_timeout: str | None,
) -> None:
    """Deprecated request-id headers: requests, distinct clients, first/last seen, per day.

    Exit status: 0 the input was read whole, 2 bad usage or a missing path, 3 the input
    was incomplete (use of the headers may be missing; --allow-incomplete: 0); 4, 129,
    130 and 143 as for analyze.
    """
    if plot is not None and str(plot) == "-":
        # `-` is standard output to -o and standard input among the PATHs: here it was
        # a PNG file named "-" in the working directory, exit 0.
        raise click.BadParameter("an image needs a file name: standard output carries "
                                 "the report", param_hint="'--plot'")
    if plot is not None and output is not None and one_file(plot, output):
        # Written one after the other, the report replaced the image, exit 0.
        raise click.BadParameter(f"{plot} is -o's file too: one would replace the other",
                                 param_hint="'--plot'")
    if plot is not None and is_standard_output(output) and names_standard_output(plot):
        # `--plot /dev/stdout`: the image and the report went out one after the other,
        # a JSON report no parser read, exit 0.
        raise click.BadParameter(f"{plot} is standard output, which carries the report",
                                 param_hint="'--plot'")
    from ridtrace.forensics.records.spans import build_requests
    from ridtrace.forensics.views.audit import audit as run_audit
    from ridtrace.forensics.views.audit import (
        audit_summary,
        daily_series,
        plot_format,
        plot_usage,
        usage_series,
    )

    if plot is not None:
        if quiet:
            # matplotlib's own warnings at its import (a HOME it cannot write its config
            # and cache in: "mkdir -p failed", "created a temporary cache directory").
            logging.getLogger("matplotlib").setLevel(logging.ERROR)
        with _plot_refusals(plot):  # before the read: a bad name wasted a whole one
            plot_format(plot)

    choice = engine_choice(engine, scheduler, partition_size, no_workers_timeout)
    if choice.dask:
        load = dask_load(choice, paths, lean=False, quiet=quiet, writes=(output, plot))
        requests, stats = load.requests, load.stats
    else:
        logs = load_logs(paths, quiet=quiet, writes=(output, plot))
        requests, stats = build_requests(logs.events), logs.stats
    summary = audit_summary(requests, stats)
    # On one clock, as analyze and trace show them: a replica's clock 2 s ahead moved its
    # requests' first and last use by that much, and the two reports disagreed.
    from ridtrace.forensics.rules.skew import correct_skew

    requests, _ = correct_skew(requests)
    table = _rfc3339(run_audit(requests, by), "first_seen", "last_seen")
    series = daily_series(requests)
    if plot is not None:
        with _plot_refusals(plot), whole_binary_file(plot) as image:  # never half an image
            plot_usage(usage_series(requests), plot, into=image,
                       incomplete=summary["incomplete_reasons"])
    if fmt == "json":
        doc = {
            "summary": summary,
            "by": by,
            "rows": json.loads(table.to_json(orient="records", date_format="iso")),
            "daily": {day: row.to_dict() for day, row in series.iterrows()},
        }
        emit(json.dumps(doc, indent=2), output)
    elif fmt == "csv":
        emit(_csv_cells(table).to_csv(index=False), output)
    else:
        from ridtrace.cli.forensics_render import render_audit

        emit(render_audit(table, summary, by=by, to_terminal=is_standard_output(output)),
             output)
    _exit_if_incomplete(ctx, summary["incomplete_reasons"], "deprecated-header use",
                        allow_incomplete=allow_incomplete, quiet=quiet)


def _exit_if_incomplete(ctx: click.Context, reasons: list[str], what: str, *,
                        allow_incomplete: bool, quiet: bool) -> None:
    """Exit 3 (unless allowed) when the input was read only in part: `what` may be missing."""
    if reasons and not allow_incomplete:
        if not quiet:
            # The reasons name files, and file names are anyone's text.
            click.echo(visible(f"ridtrace: input incomplete, {what} may be missing: "
                               f"{'; '.join(reasons[:3])}"), err=True)
        ctx.exit(3)


def _csv_cells(frame: pd.DataFrame) -> pd.DataFrame:
    # Client hosts and routes (a path, when no route matched) are the clients' text, as
    # analyze's request ids are: no cell may start a spreadsheet formula.
    from ridtrace.forensics.printable import csv_cell

    out: pd.DataFrame = frame.copy()
    for column in out.columns:
        out[column] = out[column].map(lambda v: csv_cell(v) if isinstance(v, str) else v)
    return out


def _rfc3339(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    # The times every other command prints (2026-12-01T15:40:29.665502Z), in all three
    # formats: pandas would print "2026-12-01 15:40:29.665502+00:00" in the table and
    # CSV, and cut JSON to milliseconds.
    import pandas as pd

    out: pd.DataFrame = frame.copy()
    for column in columns:
        if column in out and len(out):
            stamps = pd.to_datetime(out[column], utc=True)
            out[column] = stamps.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return out


class _MaybeUnread(click.ClickException):
    """Nothing matched, but part of the input could not be read: exit 3, not 1."""

    exit_code = 3


def _an_id(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """ID as given; a blank one (an unset shell variable, ``"$RID"``) is bad usage, which
    no log can answer: it was read in full and ended "no request", exit 1."""
    if not value.strip():
        raise click.BadParameter("is empty: give a request, client, trace or span id")
    # Bytes that are not UTF-8 (an id copied from a Latin-1 terminal) arrive as lone
    # surrogates, which Arrow's strings cannot hold: a traceback and exit 4. The reader
    # spells the logs' lone surrogate escapes as their escape; the id is spelt the same way.
    return spell_lone_surrogates(value)


class _TraceCommand(click.Command):
    """`trace`, whose one argument given is taken as the ID: with the logs left out
    (`ridtrace trace demo-out/logs`), "Missing argument 'PATH...'" said nothing of the
    ID that the path was taken for."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.MissingParameter as exc:
            ident = ctx.params.get("ident")
            if exc.param is None or exc.param.name != "paths" or not ident:
                raise
            hint = piped_stdin_hint(f"{ctx.command_path} {visible(shlex.quote(ident))} -")
            if hint:  # the ID was meant, and the logs come down the pipe
                raise click.MissingParameter(hint, ctx=ctx, param=exc.param) from None
            raise click.MissingParameter(
                f"{visible(repr(ident))} was taken as the ID: give the ID to look for, "
                "then the logs (trace ID PATH...)", ctx=ctx, param=exc.param) from None


@click.command("trace", cls=_TraceCommand)
@click.argument("ident", metavar="ID", callback=_an_id)
@paths_argument
@_FORMAT
@click.option(
    "--limit", type=click.IntRange(min=0), default=10, show_default=True,
    help="Requests to show, most relevant first (0: all).",
)
@click.option(
    "--max-lines", type=click.IntRange(min=0), default=1000, show_default=True,
    help="Lines listed per request besides its lifecycle lines, the first and last "
         "half (0: all).",
)
@_OUTPUT
@click.option(
    "--allow-incomplete", is_flag=True,
    help="Exit 1, not 3, when no request matches and some input could not be read.",
)
@quiet_option
def trace(
    ident: str, paths: tuple[str, ...], fmt: str, limit: int, max_lines: int,
    output: Path | None, allow_incomplete: bool, quiet: bool,
) -> None:
    """Who got whose output: the requests matching ID, as a waterfall and a timeline each.

    ID is matched against request_id, x_request_id, trace_id and span_id. Several
    callers can match (a client id reused, or a pre-fix id collision): overlapping ones
    are stacked, and a caller delivered another caller's output is marked with whose.
    Requests in error findings come first, then by time.

    Exit status: 0 shown, 1 no request matches, 2 bad usage or a missing path, 3 none
    matches but part of the input could not be read (--allow-incomplete: 1); 4, 129,
    130 and 143 as for analyze.
    """
    from ridtrace.forensics.records.spans import build_requests
    from ridtrace.forensics.views.trace_export import trace_csv, trace_document
    from ridtrace.forensics.views.trace_model import build_trace

    with id_first(ident):  # `trace LOGDIR ID`: ID is read as a missing path
        logs = load_logs(paths, quiet=quiet, writes=(output,))
    requests = build_requests(logs.events)
    reasons = incomplete_reasons(logs.stats, requests=len(requests))
    view = build_trace(logs.events, requests, ident, limit=limit or None,
                       max_lines=max_lines or None)
    if not view.matched:
        message = no_match_message(ident, read_whole=not reasons)
        raise (click.ClickException if allow_incomplete or not reasons else _MaybeUnread)(message)
    if fmt == "json":
        emit(json.dumps(trace_document(view, reasons), indent=2), output)
    elif fmt == "csv":
        emit(trace_csv(view), output)
    else:
        from ridtrace.cli.forensics_render import render_trace

        emit(render_trace(view, to_terminal=is_standard_output(output)), output)
    if reasons and not quiet:  # what was found is shown; a note says what may be missing
        click.echo(visible(f"ridtrace: input incomplete, lines of these requests may be "
                           f"missing: {'; '.join(reasons[:3])}"), err=True)


@click.group("export")
def export() -> None:
    """Export joined requests to other tools."""


@export.command("jaeger")
@paths_argument
@click.option(
    "-o", "--output", type=ReportPath(), required=True,
    help="Trace file to write (Jaeger UI → Search → JSON File).",
)
@click.option(
    "--include-health", is_flag=True,
    help=(
        "Keep health and readiness probes (/health, /readyz, /metrics, gRPC's "
        "/grpc.health.v1.Health/Check, …), left out by default."
    ),
)
@allow_incomplete_export_option
@quiet_option
@click.pass_context
def jaeger(ctx: click.Context, paths: tuple[str, ...], output: Path, include_health: bool,
           allow_incomplete: bool, quiet: bool) -> None:
    """Write the requests as a Jaeger JSON trace file: one trace per request.

    Exit status: 0 the input was read whole, 2 bad usage or a missing path, 3 the input
    was incomplete (traces may be missing; --allow-incomplete: 0); 4, 129, 130 and
    143 as for analyze.
    """
    from ridtrace.forensics.records.spans import build_requests
    from ridtrace.forensics.views.jaeger import jaeger_traces, untraced, write_jaeger

    logs = load_logs(paths, quiet=quiet, writes=(output,))
    requests = build_requests(logs.events)
    traces = jaeger_traces(requests, logs.events, health=include_health)
    # Streamed, a trace at a time: the whole document (and its text) was twice the
    # memory the read itself needs.
    if str(output) == "-":
        count = write_jaeger(traces, lambda text: echo_out(text, nl=False, what="the traces"))
        echo_out("", what="the traces")
    else:
        try:
            with whole_file(output) as fh:
                count = write_jaeger(traces, fh.write)
                fh.write("\n")
        except OSError as exc:
            raise InputError(f"cannot write {visible(str(output))}: {exc.strerror}") from exc
    if not quiet:
        where = "standard output" if str(output) == "-" else visible(str(output))
        click.echo(f"wrote {count} trace(s) to {where}", err=True)
    reasons = incomplete_reasons(logs.stats, requests=len(requests))
    left_out = untraced(requests, health=include_health)
    if left_out:  # written nowhere else: a file of 0 traces read as all there was
        reasons.append(f"{left_out} span(s) logged no trace_id, which a Jaeger trace "
                       "needs: they are not in the file")
    _exit_if_incomplete(ctx, reasons, "traces", allow_incomplete=allow_incomplete,
                        quiet=quiet)


@contextlib.contextmanager
def _plot_refusals(plot: Path) -> Iterator[None]:
    """The --plot file's troubles as usage errors (exit 2), as -o's are."""
    from ridtrace.forensics.views.audit import PlotFormatError

    try:
        yield
    except ImportError as exc:  # a missing extra, like --engine dask's
        raise InputError("--plot needs matplotlib: pip install 'ridtrace[plot]'") from exc
    except OSError as exc:  # a report that cannot be written, as -o's
        raise InputError(f"cannot write {visible(str(plot))}: {exc.strerror or exc}") from exc
    except PlotFormatError as exc:
        raise InputError(f"cannot write {visible(str(plot))}: {visible(str(exc))}") from exc
