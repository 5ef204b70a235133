"""A log whose times are epoch numbers: each line is bad, and says why."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main


def test_an_epoch_number_time_names_itself(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_text("".join(
        json.dumps({"time": t, "schema": "ridtrace/1", "message": "m"}) + "\n"
        for t in (1796205600.25, 1796205600250, "2026-11-29T10:00:00Z")
    ))
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    samples = json.loads(result.stdout)["summary"]["bad_line_samples"]
    assert [(s["line"], s["reason"]) for s in samples] == [
        (1, "invalid time (an epoch number; RFC 3339 text expected)"),
        (2, "invalid time (an epoch number; RFC 3339 text expected)"),
    ]
    assert result.exit_code == 3
