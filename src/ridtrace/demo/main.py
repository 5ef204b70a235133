"""The demo from start to verdict: two runs, their proof, what to look at next."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from ridtrace.demo.plan import CallResult, make_plan, with_own_traces
from ridtrace.demo.proof import Detection, analyze_run, crossed_detection, write_audit, write_jaeger
from ridtrace.demo.rejections import METRICS, SpanRejections
from ridtrace.demo.report import audit_table, before_after, findings_side_by_side
from ridtrace.demo.run import POLICIES, PolicyRun, forget_earlier_run, run_policy
from ridtrace.demo.sampled import first_kept

__all__ = ["ridtrace_command", "run_demo"]


def ridtrace_command() -> str:
    """How to run this very ``ridtrace`` from the current directory, as a user types it.

    ``make demo`` runs ``.venv/bin/ridtrace`` without activating the environment, so a
    bare ``ridtrace`` in the hints the demo prints would be "command not found". The
    bare name is used only when the shell would find this installation under it.
    """
    script = Path(sys.executable).parent / "ridtrace"
    if not script.is_file():
        # Running from a source tree without the console script installed.
        return f"{shlex.quote(sys.executable)} -m ridtrace"
    found = shutil.which("ridtrace")
    if found is not None and Path(found).resolve() == script.resolve():
        return "ridtrace"
    # Relative when under the current directory (".venv/bin/ridtrace" after make demo);
    # it always holds a "/", so the shell runs it rather than searching PATH.
    try:
        shown = os.path.relpath(script)
    except (ValueError, OSError):  # another drive (Windows); a current directory deleted
        shown = str(script)
    return shlex.quote(str(script) if shown.startswith("..") else shown)


def _hint(console: Console, command: str) -> None:
    # Text, not markup: a path may hold "[" (rich markup); no wrap, so a long path
    # can still be copied and run as printed.
    console.print(Text("  " + command), soft_wrap=True)


def _verdict(legacy: PolicyRun, safe: PolicyRun, detection: Detection) -> list[str]:
    """Why the demo failed, or nothing when it proved its point."""
    problems = []
    if safe.non_200 or safe.not_own_output or safe.report["summary"]["errors"]:
        problems.append(
            f"safe run not clean: {safe.non_200} non-200, {len(safe.not_own_output)} foreign "
            f"outputs, {safe.report['summary']['errors']} error findings"
        )
    if safe.inflight_after not in (0, None):
        problems.append(f"safe run left {safe.inflight_after} in-flight entries")
    if detection.missed:
        problems.append(f"{len(detection.missed)} crossed streams callers saw were not reported")
    if detection.invented:
        problems.append(f"{len(detection.invented)} crossed streams reported that no caller saw")
    if legacy.non_200 and not legacy.findings("unlinked"):
        problems.append("legacy run had failed calls but no unlinked finding")
    if not (legacy.non_200 or legacy.not_own_output):
        problems.append("legacy run did not reproduce the failure (raise --concurrency)")
    return problems


def run_demo(
    out_dir: Path,
    *,
    count: int,
    concurrency: int,
    token_delay: float,
    keep_running: bool = False,
    otlp_endpoint: str | None = None,
    console: Console | None = None,
) -> int:
    """Run the whole demo; return the process exit code (0 = point proven)."""
    console = console or Console()
    out_dir.mkdir(parents=True, exist_ok=True)
    # Both policies' at once: a demo stopped during its legacy run must not leave the
    # last run's safe/ beside this run's legacy/ as if one run had made both.
    for policy in POLICIES:
        forget_earlier_run(out_dir, policy)
    plan = make_plan(count)
    ridtrace = ridtrace_command()
    console.print("Watch the legacy run live from a second terminal (it waits for the logs):")
    # --from-start: the earlier run's logs are gone, so it reads this run's lines only;
    # from the end, a follower started a few seconds late (as a second terminal is)
    # skipped what the run had already written, and printed "No findings", exit 0.
    _hint(console, f"{ridtrace} analyze {_path(out_dir / 'legacy' / 'logs')} --follow "
                   "--from-start")
    runs: list[PolicyRun] = []
    rejections = SpanRejections()
    for policy in POLICIES:
        hold: Callable[[str], None] | None = None
        if keep_running and policy == "safe":
            from ridtrace.cli.demo import wait_for_interrupt

            hold = wait_for_interrupt
        with Progress(
            TextColumn(f"[bold]{policy:>6}[/] traffic"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=console, transient=not console.is_terminal,
        ) as progress:
            task = progress.add_task(policy, total=len(plan))

            def advance(_: CallResult, task_id: TaskID = task) -> None:
                progress.advance(task_id)

            runs.append(
                run_policy(policy, with_own_traces(plan), out_dir, concurrency=concurrency,
                           token_delay=token_delay, on_done=advance, keep_running=hold)
            )
    legacy, safe = runs
    rejected = rejections.first(out_dir)
    metrics_lost = rejections.first(out_dir, METRICS)
    requests = {run.policy: analyze_run(run) for run in runs}
    detections = [crossed_detection(run) for run in runs]
    jaeger_path = write_jaeger(safe)
    audit, plot_path = write_audit(safe, requests["safe"])

    before_after(console, runs)
    findings_side_by_side(console, runs, detections)
    audit_table(console, audit)
    _next_steps(console, out_dir, safe, jaeger_path, plot_path, otlp_endpoint, rejected,
                metrics_lost)
    problems = _verdict(legacy, safe, detections[0])
    for problem in problems:
        console.print(f"[red]FAIL[/] {problem}")
    if not problems:
        console.print(
            "[green]OK[/] the legacy policy crossed streams and the logs proved every one; "
            "the safe policy served every caller its own output."
        )
    return 1 if problems else 0


def _next_steps(
    console: Console,
    out_dir: Path,
    safe: PolicyRun,
    jaeger_path: Path,
    plot_path: Path | None,
    otlp_endpoint: str | None,
    rejected: str | None,
    metrics_lost: str | None = None,
) -> None:
    named = [r for r in safe.results if r.call.headers.get("x-request-id")]
    example = next(iter(named), None)
    # The request to search for in Jaeger: one whose trace the servers' sampler kept.
    kept_at = (first_kept(r.call.headers.get("traceparent") for r in named)
               if otlp_endpoint else None)
    traced = None if kept_at is None else named[kept_at]
    ridtrace = ridtrace_command()
    legacy_logs, safe_logs = _path(out_dir / "legacy" / "logs"), _path(out_dir / "safe" / "logs")
    console.print("\n[bold]Look further[/]")
    _hint(console, f"{ridtrace} analyze {legacy_logs}")
    _hint(console, f"{ridtrace} analyze {safe_logs} --format json")
    if example is not None:
        client_id = example.call.headers["x-request-id"]
        _hint(console, f"{ridtrace} trace {shlex.quote(client_id)} {safe_logs}")
    _hint(console, f"{ridtrace} audit {safe_logs} --by client")
    # Text, as in _hint: a "[" in a path (--out 'runs/[a]') was read as markup and lost.
    console.print(Text(f"  Jaeger UI → Search → JSON File → {jaeger_path}"), soft_wrap=True)
    if plot_path is not None:
        console.print(Text(f"  deprecated-header plot: {plot_path}"), soft_wrap=True)
    else:  # without matplotlib the plot was left out, with no word of why
        console.print(Text("  deprecated-header plot: not drawn (it needs the plot extra: "
                           "pip install 'ridtrace[plot]')"), soft_wrap=True)
    if otlp_endpoint and rejected:
        # Not "exported": the collector did not keep them all, perhaps none (a 500 to
        # every export), in its own words as logged; "not all were kept" said some were.
        console.print(Text(f"  spans were sent to {otlp_endpoint}, but the collector did not "
                           f"keep them all (perhaps none): {rejected}", style="yellow"),
                      soft_wrap=True)
    if otlp_endpoint and metrics_lost:
        console.print(Text(f"  metrics were sent, but the collector did not take them all "
                           f"(perhaps none): {metrics_lost}", style="yellow"), soft_wrap=True)
    if otlp_endpoint and traced is not None and traced.server_request_id:
        kept = "where the collector kept them, " if rejected else ""
        console.print(  # an IPv6 endpoint's "[::1]" is no markup either
            Text(f"  spans were {'sent' if rejected else 'exported'} to {otlp_endpoint}: "
                 f"{kept}in Jaeger search tags request_id={traced.server_request_id} or "
                 f"x_request_id={traced.call.headers['x-request-id']}"),
            soft_wrap=True,  # a tag cut across two lines cannot be copied
        )
    elif otlp_endpoint and named:
        sampler = os.environ.get("OTEL_TRACES_SAMPLER", "")
        console.print(Text(f"  no trace of these requests was sampled (OTEL_TRACES_SAMPLER="
                           f"{sampler}): nothing to search for in Jaeger", style="yellow"),
                      soft_wrap=True)


def _path(path: Path) -> str:
    return shlex.quote(str(path))
