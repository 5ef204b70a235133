"""What the demo prints: the before/after table, findings side by side, the audit."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ridtrace.demo.proof import Detection
from ridtrace.demo.run import PolicyRun

__all__ = ["audit_table", "before_after", "findings_side_by_side"]

_KINDS = (
    "crossed_stream", "duplicate_in_flight", "unlinked", "client_id_reuse", "deprecated_header",
)


def before_after(console: Console, runs: Sequence[PolicyRun]) -> None:
    """The seed's table: what the callers saw under each policy."""
    table = Table(title="What the callers saw")
    table.add_column("")
    for run in runs:
        table.add_column(f"--id-policy {run.policy}", justify="right")
    rows: list[tuple[str, list[object]]] = [
        ("requests sent", [len(r.results) for r in runs]),
        # After the first bytes, which may already hold the whole reply.
        ("walked away after the first bytes, on purpose",
         [len(r.results) - len(r.answered) for r in runs]),
        ("non-200 answers", [r.non_200 for r in runs]),
        ("200 answers that were not the caller's output", [len(r.not_own_output) for r in runs]),
        ("... of which carried another caller's prompt", [
            sum(1 for x in r.not_own_output if x.foreign_prompts) for r in runs
        ]),
        ("in-flight entries left afterwards", [
            "?" if r.inflight_after is None else r.inflight_after for r in runs
        ]),
    ]
    for label, values in rows:
        table.add_row(label, *(str(v) for v in values))
    console.print(table)


def findings_side_by_side(
    console: Console, runs: Sequence[PolicyRun], detections: Sequence[Detection]
) -> None:
    """``ridtrace analyze`` on each run's logs, one column per run."""
    table = Table(title="What `ridtrace analyze` found in the logs")
    table.add_column("finding")
    for run in runs:
        table.add_column(run.policy, justify="right")
    for kind in _KINDS:
        table.add_row(kind, *(str(run.report["summary"].get(kind, 0)) for run in runs))
    table.add_row("bad log lines", *(str(run.report["summary"]["bad_lines"]) for run in runs))
    table.add_row(
        "crossed streams callers saw / reported / missed",
        *(_detected(d) for d in detections),
    )
    console.print(table)


def _detected(detection: Detection) -> str:
    """Seen / reported / missed; the reported ones no caller could confirm named, so a
    "2 / 3 / 0" does not read as a crossing `analyze` made up."""
    unconfirmable = len((detection.reported & detection.hung_up) - detection.seen_by_callers)
    reported = f"{len(detection.reported)}"
    if unconfirmable:
        reported += f" ({unconfirmable} to callers that hung up)"
    return f"{len(detection.seen_by_callers)} / {reported} / {len(detection.missed)}"


def _cell(value: object) -> str:
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M:%SZ")
    return escape(str(value))  # client ids come from the logs: text, not markup


def audit_table(console: Console, audit: pd.DataFrame) -> None:
    """Deprecated-header use in the safe run."""
    table = Table(title="Deprecated request-id headers (safe run)")
    for i, column in enumerate(audit.columns):
        # The header's name whole (an 80-column terminal cut "x-dynamo-request-id" in
        # three); the times fold at their space instead.
        table.add_column(str(column), no_wrap=i == 0)
    for row in audit.itertuples(index=False):
        table.add_row(*(_cell(value) for value in row))
    console.print(table)
