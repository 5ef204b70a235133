"""Dynamo at INFO level: frontend requests with one time each are named, not passed clean.

Without Dynamo's DEBUG ``request received`` line a frontend span is its last line alone,
so requests in flight at once never overlapped, and a duplicate in flight went unseen:
"No findings.", exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs


def _logs(out: Path, *, drop_levels: tuple[str, ...]) -> Path:
    # Enough requests that the banner line is far under 1 % of the lines.
    write_dynamo_logs(out, DynamoSpec(requests=1500, duplicates=3, cancelled=0, bad_lines=0))
    for log in out.glob("*.jsonl"):
        kept = [line for line in log.read_text().splitlines(keepends=True)
                if not any(f'"level":"{level}"' in line for level in drop_levels)]
        log.write_text("".join(kept))
    return out


def _analyze(logs: Path) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


def test_info_level_frontend_logs_make_the_report_incomplete(tmp_path: Path) -> None:
    # DEBUG lines gone (the level Dynamo runs at), and the collisions' ERROR lines too:
    # the duplicates in flight are in the traffic, and nothing left shows them. The
    # frontend's log alone: at INFO its workers logged nothing but their banners.
    logs = _logs(tmp_path, drop_levels=("DEBUG", "ERROR"))
    for worker in logs.glob("worker-*.jsonl"):
        worker.unlink()
    code, doc = _analyze(logs)
    summary = doc["summary"]
    assert summary["duplicate_in_flight"] == 0 and summary["errors"] == 0
    assert summary["incomplete_reasons"] == [
        r for r in summary["incomplete_reasons"] if "at one instant" in r
    ] != []
    assert code == 3 and summary["incomplete"]


def test_debug_level_frontend_logs_are_complete(tmp_path: Path) -> None:
    code, doc = _analyze(_logs(tmp_path, drop_levels=()))
    summary = doc["summary"]
    assert code == 1 and summary["duplicate_in_flight"] == 3
    assert not any("at one instant" in r for r in summary["incomplete_reasons"])
