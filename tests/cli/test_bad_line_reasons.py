"""Lines of logs ridtrace does not read say what they are, not only "not JSON" or
"invalid time": a log in epoch times, a service logging text."""

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


def test_a_text_log_says_it_is_one_and_how_dynamo_writes_json(tmp_path: Path) -> None:
    # Dynamo's default (READABLE) format, as its docs show it; then a JSON line.
    log = tmp_path / "worker.log"
    log.write_text(
        "2025-09-02T15:50:01.770028Z  INFO main.init: VllmWorker has been initialized\n"
        "Traceback (most recent call last):\n"
        + json.dumps({"time": "2026-11-29T10:00:00Z", "target": "log", "message": "m"})
        + "\n"
    )
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    samples = json.loads(result.stdout)["summary"]["bad_line_samples"]
    assert [(s["line"], s["reason"]) for s in samples] == [
        (1, "a text log line, not JSON (Dynamo writes JSON lines with DYN_LOGGING_JSONL=1)"),
        (2, "not JSON"),
    ]
