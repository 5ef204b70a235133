"""A caller every worker refused, given another caller's stream: a crossed stream.

From a real run (`data/refused-crossing`, the lines of client id `dup-B`): a legacy
frontend in front of upgraded (safe) workers, the pull request's migration state. Both
workers refused caller 0d5c39a55c1a253a's id with a Conflict, as another caller held it,
and the legacy registry then handed it that caller's output (status 200, outcome ok).
`analyze`, `trace` and `--follow` judged only a caller whose own work was read, took
the two refusals for no worker log at all, and reported no crossing.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.support.lagged_replay import batch_errors, follow_copies, key

_DATA = Path(__file__).parent / "data" / "refused-crossing"
_CALLER, _PRODUCER = "0d5c39a55c1a253a", "bd293b8422d32bb4"
_LAST = datetime.fromisoformat("2026-12-06T04:26:53+00:00").timestamp()
_CROSSED = ("crossed_stream", _CALLER, "dup-B")


def test_analyze_and_trace_report_the_crossing_of_a_caller_every_worker_refused() -> None:
    assert _CROSSED in batch_errors(_DATA)
    runner = CliRunner()
    result = runner.invoke(main, ["analyze", str(_DATA), "--format", "json", "-q"])
    assert result.exit_code == 1, result.output
    (crossed,) = [f for f in json.loads(result.stdout)["findings"]
                  if f["kind"] == "crossed_stream"]
    assert crossed["span_id"] == _CALLER and f"worker span {_PRODUCER}" in crossed["detail"]
    shown = runner.invoke(main, ["trace", _CALLER, str(_DATA), "-q"])
    assert "verdict: crossed" in shown.stdout, shown.stdout


def test_follow_reports_the_crossing_of_a_caller_every_worker_refused(tmp_path: Path) -> None:
    live = follow_copies(tmp_path, _DATA, sorted(p.name for p in _DATA.iterdir()), _LAST)
    assert _CROSSED in [key(f) for f in live]
