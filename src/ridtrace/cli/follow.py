"""``ridtrace analyze --follow``: live detection, rendered one finding per line.

Thin: check the options, run `ridtrace.forensics.live.follow.Follower`, print each
finding as it comes, print the summary on SIGINT/SIGTERM (or at --fail-fast).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ridtrace.cli.follow_stop import WRITE_GRACE_S, StopFlag
from ridtrace.forensics.printable import cited_at, keyed, visible

if TYPE_CHECKING:
    from ridtrace.forensics.live.follow import Follower, FollowSettings

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: str, name: str, *, zero: bool = False) -> float:
    """``10m``, ``90s``, ``1h``, ``250ms`` or plain seconds → seconds (usage error if bad;
    0 only where `zero` allows it)."""
    match = _DURATION.match(value)
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)] if match else -1.0
    if seconds < 0 or (seconds == 0 and not zero):
        kind = "duration" if zero else "positive duration"
        raise click.BadParameter(
            f"not a {kind}: {value!r} (a number of seconds, or one with ms, s, m or h: "
            "250ms, 90s, 10m, 1h)", param_hint=name)
    return seconds


def check_follow_options(*, fmt: str, output: Any, since: Any, until: Any, engine: str) -> None:
    """Options that mean nothing for a live run are usage errors (exit 2), not ignored."""
    if fmt == "csv":
        raise click.UsageError("--follow prints table or json lines, not csv")
    for given, name in ((output, "-o/--output"), (since, "--since"), (until, "--until")):
        if given is not None:
            raise click.UsageError(f"{name} cannot be used with --follow")
    if engine != "pandas":
        raise click.UsageError("--follow runs on one machine: drop --engine dask")


TABLE_EVIDENCE = 4
"""Evidence lines a table line shows: a crossed stream's four (caller start and end, the
worker's start and end) whole. A duplicate held by ten callers cites twenty lines, a
line of about two thousand characters that no terminal shows usefully; the rest are
counted, and ``--format json`` (and the batch report) lists them all."""


def table_line(finding: dict[str, Any]) -> str:
    """One terminal line: time, kind, request ids (those logged), evidence file:line
    (capped)."""
    cited = finding["evidence"]
    evidence = " ".join(cited_at(e["file"], e["line"]) for e in cited[:TABLE_EVIDENCE])
    if len(cited) > TABLE_EVIDENCE:
        evidence += f" … +{len(cited) - TABLE_EVIDENCE} more"
    # An id the logs do not have is left out, as the batch table leaves its cell empty:
    # printed, it read x_request_id=None, a client id as good as any.
    # A megabyte id is cut as the batch table cuts it: whole, it was a line of megabytes.
    # One holding a space or an `=` is quoted: it could forge another id or a citation.
    ids = " ".join(keyed(key, str(finding[key]))
                   for key in ("request_id", "x_request_id") if finding[key] is not None)
    return visible(f"{finding['time']}  {finding['kind']:<19}  {ids}  {evidence}")


def summary_text(summary: dict[str, Any]) -> str:
    """The final table of a followed run."""
    rows = [
        ("files", summary["files"]), ("lines", summary["lines"]),
        ("bad lines", summary["bad_lines"]), ("requests", summary["requests"]),
        ("spans", summary["spans"]), ("crossed_stream", summary["crossed_stream"]),
        ("duplicate_in_flight", summary["duplicate_in_flight"]),
        ("unlinked", summary["unlinked"]), ("errors", summary["errors"]),
        ("open at window edge", summary["open_at_window_edge"]),
        ("open at exit", summary["open_at_exit"]),
    ]
    if summary["ahead_of_present"]:
        rows.append(("ahead of present", summary["ahead_of_present"]))
    width = max(len(name) for name, _ in rows)
    lines = ["", "summary"] + [f"  {name:<{width}}  {value}" for name, value in rows]
    for sample in summary["ahead_of_present_samples"]:
        lines.append(visible(f"  stamped ahead: {cited_at(sample['file'], sample['line'])} "
                             f"({sample['time']})"))
    # Where the bad lines are, as the batch read's stderr says: a count alone left the
    # table's reader no way to find them.
    for sample in summary["bad_line_samples"][:3]:
        lines.append(visible(f"  bad line: {cited_at(sample['file'], sample['line'])} "
                             f"({sample['reason']})"))
    for note in summary["ignored_files"]:
        lines.append(visible(f"  ignored: {note['file']}: {note['reason']}"))
    for reason in summary["incomplete_reasons"]:
        lines.append(visible(f"  incomplete: {reason}"))  # reasons name files
    return "\n".join(lines)


F = TypeVar("F", bound=Callable[..., Any])


def follow_options(func: F) -> F:
    """--follow and the options that only mean something with it."""
    options = (
        click.option("--follow", is_flag=True,
                     help="Watch the inputs grow; print each error finding as it is proven."),
        click.option("--from-start", is_flag=True,
                     help="With --follow: read the existing lines first (default: the end)."),
        click.option("--window", metavar="DURATION",
                     help="With --follow: log time a request is held, e.g. 10m (default)."),
        click.option("--poll-interval", metavar="DURATION",
                     help="With --follow: pause between polls when idle (default 0.25s)."),
        click.option("--settle", metavar="DURATION",
                     help="With --follow: how long one log may lag the others (1s)."),
        click.option("--fail-fast", is_flag=True,
                     help="With --follow: exit 1 at the first error finding."),
    )
    for option in reversed(options):
        func = option(func)
    return func


def follow_command(
    paths: tuple[str, ...], *, follow: bool, fmt: str, output: Any, since: Any, until: Any,
    engine: str, from_start: bool, window: str | None, interval: str | None,
    settle: str | None, fail_fast: bool, allow_incomplete: bool, quiet: bool,
) -> int:
    """Check the --follow options (usage errors exit 2), then follow."""
    if not follow:
        raise click.UsageError(
            "--from-start, --window, --poll-interval, --settle and --fail-fast need --follow"
        )
    check_follow_options(fmt=fmt, output=output, since=since, until=until, engine=engine)
    # Only an option not given takes its default: an empty one ("$WINDOW" unset) is
    # refused, as an empty --since is, not read as the default; and before the
    # follower's modules load, as other usage errors are.
    window = "10m" if window is None else window
    interval = "0.25s" if interval is None else interval
    settle = "1s" if settle is None else settle
    parse_duration(window, "--window")
    parse_duration(interval, "--poll-interval")
    parse_duration(settle, "--settle", zero=True)
    return run_follow(
        paths, fmt=fmt, from_start=from_start, window=window, interval=interval,
        settle=settle, fail_fast=fail_fast, allow_incomplete=allow_incomplete, quiet=quiet,
    )


def run_follow(
    paths: tuple[str, ...], *, fmt: str, from_start: bool, window: str, interval: str,
    fail_fast: bool, allow_incomplete: bool, quiet: bool, settle: str = "1s",
) -> int:
    """Follow `paths` until a signal (or the first error with `fail_fast`); the exit code."""
    from ridtrace.forensics.live.launch import sizes_at_launch

    # First, before the modules that take a second to load: what is old is what the
    # inputs held when the command began, not when the follower first looked.
    launch_sizes = None if from_start else sizes_at_launch(paths)
    from ridtrace.cli.output import InputError
    from ridtrace.forensics.reading.inputs import CLOSED_STDIN, is_url, stdin_closed

    if "-" in paths and stdin_closed():
        raise InputError(CLOSED_STDIN)
    # A URL never appears as a local path: the follower waited for it until Ctrl-C.
    url = next((p for p in paths if is_url(p)), None)
    if url is not None:
        raise InputError(f"--follow reads local files and pipes, not a URL: {url}")
    failed = [False]
    render: Callable[[dict[str, Any]], str] = (
        (lambda f: json.dumps(f, separators=(",", ":"))) if fmt == "json" else table_line
    )

    from ridtrace.cli import quick_exit
    from ridtrace.cli.output import echo_out

    def on_finding(finding: dict[str, Any]) -> bool:
        with stop.writing(1, "findings to standard output"):
            echo_out(render(finding), what="findings")
        _check_written(stop)
        if finding["severity"] == "error":
            failed[0] = True
            return not fail_fast
        return True

    # The stop flag stays in place until the summary is out: a second signal while it is
    # made (a `timeout` then a container stop) must not kill the run it already ended.
    # It is in place before the modules load beside each other, too: a Ctrl-C there
    # raised KeyboardInterrupt inside an import, which exited 130 with no summary, or,
    # raised in importlib's lock callback, was swallowed with the import lock still held,
    # and the follower then waited for the import thread for good, deaf to any signal.
    with StopFlag(quiet=quiet) as stop:
        follower, settings = _start_follower(paths, from_start, window, interval, settle,
                                             stop=stop, launch_sizes=launch_sizes)
        try:
            _announce(follower, settings, quiet=quiet, ctrl_c=stop.takes_interrupt)
            follower.run(on_finding, stop=stop, stop_now=stop.now, sleep=stop.sleep)
            summary = follower.summary()
        finally:
            follower.close()
        if fmt == "json":
            with stop.writing(2, "the summary to standard error"):
                click.echo(json.dumps(summary), err=True)
        else:  # a terminal gone with SIGHUP: exit 2 with a message, not a traceback
            with stop.writing(1, "the summary to standard output"):
                echo_out(summary_text(summary), what="the summary")
        _check_written(stop)
    # The summary is out: leave without freeing the window's state object by object (a
    # second or more after a large follow), when a second SIGTERM, its handler gone, killed
    # the process with 143 instead of the exit its findings give.
    quick_exit.request()
    if failed[0]:
        return 1
    return 3 if summary["incomplete"] and not allow_incomplete else 0


def _start_follower(
    paths: tuple[str, ...], from_start: bool, window: str, interval: str, settle: str,
    *, stop: StopFlag, launch_sizes: dict[tuple[int, int], int] | None = None,
) -> tuple[Follower, FollowSettings]:
    """Load the follower's modules and make it (nothing read yet)."""
    from ridtrace.cli.background_import import import_beside

    # pyarrow imports pandas the first time a parsed chunk becomes numpy: about a second
    # added to the first finding after the follower started, half the 2 s live target,
    # more on a loaded machine. Imported beside the start, it is in before "following".
    warm = import_beside("pandas")
    from ridtrace.forensics.live.follow import Follower, FollowSettings
    from ridtrace.open_file_limit import raise_open_file_limit

    raise_open_file_limit()  # one descriptor per followed file
    settings = FollowSettings(
        from_start=from_start, window_s=parse_duration(window, "--window"),
        interval=parse_duration(interval, "--poll-interval"),
        settle_s=parse_duration(settle, "--settle", zero=True),
    )
    follower = Follower(paths, settings, launch_sizes=launch_sizes)
    # Waited for until a stop, not for good: an import lock a Ctrl-C left held before
    # this function (see run_follow) keeps the import thread waiting forever.
    while warm.is_alive() and not stop():
        warm.join(0.05)
    return follower, settings


def _check_written(stop: StopFlag) -> None:
    """A write the stop gave up on (nothing read it) fails the run as an unwritable
    stdout does: exit 2, not a code that reads as what the findings say."""
    from ridtrace.cli.output import InputError

    class Shown(InputError):
        def show(self, file: Any = None) -> None:
            pass  # shown already, within the stop's grace

    if stop.lost is not None:
        error = Shown(f"cannot write {stop.lost}: nothing read it within "
                      f"{WRITE_GRACE_S:g} s of the stop")
        # Shown here, not as click leaves: stderr may be a full pipe too, and a stop gives
        # up on it only while its flag is in place (with -q no "stopping" line gave it up).
        with stop.writing(2, None):
            InputError.show(error)
        raise error


def _announce(follower: Follower, settings: FollowSettings, *, quiet: bool,
              ctrl_c: bool) -> None:
    from ridtrace.forensics.reading.inputs import STDIN_NAME, link_state  # loaded with it

    files, missing = follower.start()
    if quiet:
        return
    where = "from the start" if settings.from_start else "from the end"
    # Streams are read from their first line: `kubectl logs -f pod | … -` counted as a
    # file "from the end" read as if the history kubectl writes first were skipped.
    streams = follower.streams()
    what = [f"{files - len(streams)} file(s) {where}"] if files > len(streams) or not streams \
        else []
    if streams:
        named = "standard input" if streams == [STDIN_NAME] else f"{len(streams)} stream(s)"
        what.append(f"{named} from {'its' if len(streams) == 1 else 'their'} first line")
    click.echo(
        f"ridtrace: following {' and '.join(what)}, window "
        f"{settings.window_s:g}s; {'Ctrl-C' if ctrl_c else 'SIGTERM'} "
        "prints the summary", err=True,
    )
    for raw in missing:
        click.echo(f"ridtrace: waiting for {raw} to appear{link_state(raw)}", err=True)
    # Named now, as the batch read names them before its report: only in the summary, a
    # named archive (`--follow logs.tgz`) looked followed until the follow was stopped.
    for note in follower.stats.unreadable_files:
        click.echo(visible(f"ridtrace: cannot follow {note.file}: {note.reason}"), err=True)
