"""A time without an offset is UTC (docs/cli.md), whatever the machine's time zone: the
reading threads' DuckDB cursors took it in the zone of the machine (TZ), so on a machine
in New York every such time moved 5 hours, against --since/--until and against the
other files' times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs


def _analyze(tz: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", *args, "--format", "json", "-q"],
        env={**os.environ, "TZ": tz}, capture_output=True, text=True, timeout=300,
    )
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


@pytest.mark.parametrize("tz", ["America/New_York", "Asia/Kolkata"])
def test_naive_times_are_utc_whatever_the_machines_zone(tmp_path: Path, tz: str) -> None:
    plain, naive = tmp_path / "plain", tmp_path / "naive"
    write_logs(plain, SynthSpec(requests=80))
    naive.mkdir()
    for path in plain.iterdir():
        if path.name == "frontend.jsonl":  # the workers keep their "Z"
            (naive / path.name).write_text(path.read_text().replace('Z","', '","'))
        else:
            (naive / path.name).write_bytes(path.read_bytes())
    want = _analyze("UTC", str(plain))
    window = ("--since", "2026-11-29T10:00:00.1", "--until", "2026-11-29T10:00:00.15")
    got = _analyze(tz, str(naive))
    assert [(f["kind"], f["span_id"], f["time"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"], f["time"]) for f in want["findings"]
    ]
    assert got["summary"]["clock_offsets_ms"] == {}
    assert _analyze(tz, str(naive), *window)["summary"]["requests"] == (
        _analyze("UTC", str(plain), *window)["summary"]["requests"]
    )
