"""Files joined by ``cat`` where the first lacks its last newline: two records on one
line. Both are read (the line was "not JSON", and a request whose end was on it looked
cut off: a false Unlinked finding)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.cli.helpers import analyze_json
from tests.support.extras import ENGINES


@pytest.mark.parametrize("engine", ENGINES)
def test_records_joined_on_one_line_are_each_read(tmp_path: Path, engine: str) -> None:
    plain = tmp_path / "plain"
    write_logs(plain, SynthSpec(requests=80))
    joined = tmp_path / "joined"
    joined.mkdir()
    for path in plain.iterdir():
        lines = path.read_bytes().splitlines()
        # Every 20th line lost its newline, as the last line of a part `cat` joined.
        text = b"".join(line + (b" " if n % 20 == 19 else b"\n") for n, line in enumerate(lines))
        (joined / path.name).write_bytes(text)
    want_code, want = analyze_json(str(plain))
    code, got = analyze_json(str(joined), "--engine", engine)
    assert got["summary"]["bad_lines"] == 0
    assert got["summary"]["requests"] == want["summary"]["requests"]
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]
    ]
    assert code == want_code


def test_joined_records_one_of_them_bad_say_so(tmp_path: Path) -> None:
    good = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1"})
    log = tmp_path / "app.jsonl"
    log.write_text(good + "\n" + good + json.dumps({"schema": "ridtrace/1"}) + "\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 2, "reason": "2 JSON objects on one line, one missing time"}
    ]
