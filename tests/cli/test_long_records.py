"""A log record over the 16 MiB line limit makes the read incomplete, however few bad lines.

Such a line is a bad line (`reading.overlong`): one among a hundred is under the 1 % of
bad lines a read tolerates, so an Unlinked error whose field held a huge payload was
dropped and `ridtrace analyze` said "No findings.", exit 0: a clean bill of health on a
log that records the incident. A line that starts like a record of either format now
lists its file in `unreadable_files` (exit 3), in a batch read, with ``--engine dask``
and under ``--follow``. An over-long line that is no record (text, a binary blob) stays
a plain bad line. Every run is the CLI in a process of its own, but for the comparison of
the Dask engine's report with the local one's, which asks nothing of a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.forensics.helpers import rt_request, ts
from tests.support.follower import start_follower
from tests.support.inprocess_cli import run_in_process
from tests.support.servers import child_pythonpath

REQUESTS = 60  # 120 lines: one bad line is under 1 % of them
LONG_LINE = 61  # after requests 0-29, two lines each
LONG_REASON = "line longer than 16 MiB"
NOTE = "a log record longer than 16 MiB is not read"
PAYLOAD = b"a" * (17 << 20)


def _ridtrace_unlinked() -> bytes:
    # As ridtrace's formatter writes it: the message, huge here, comes before "schema".
    head = (b'{"time":"' + ts(0.3).encode() + b'","level":"ERROR","message":"')
    tail = json.dumps({"logger": "ridtrace.frontend", "schema": "ridtrace/1",
                       "span_id": "f" * 16, "trace_id": "f" * 32, "request_id": "r-big",
                       "error": "Unlinked response; response task was dropped"})
    return head + PAYLOAD + b'",' + tail[1:].encode()


def _dynamo_unlinked() -> bytes:
    head = json.dumps({"time": ts(0.3), "level": "ERROR", "target": "dynamo_llm::http",
                       "message": "engine generate call failed", "span_id": "5c20cc08e6afb2b7",
                       "trace_id": "b672ccf48683b392891c5cb4163d4b51", "request_id": "1"})
    return head[:-1].encode() + b',"error":"Unlinked response; ' + PAYLOAD + b'"}'


def _array_of_records() -> bytes:
    # A one-line array of records (Fluent Bit's http batch, `jq -c -s`), the big one last.
    return b"[" + _dynamo_unlinked() + b"]"


def _grafana_rows() -> bytes:
    # Grafana's rows: each record escaped in a row's `line`.
    return json.dumps([{"line": _dynamo_unlinked().decode()}]).encode()


NOT_RECORDS = {
    "text": b"INFO " + PAYLOAD,
    "binary": bytes(b for b in range(256) if b != 0x0A) * (len(PAYLOAD) // 255),  # no newline
    "json_string": b'"' + PAYLOAD + b'"',
    "json_object_without_record_keys": b'{"blob":"' + PAYLOAD + b'"}',
}


def _lines(first: int, count: int) -> bytes:
    lines: list[str] = []
    for i in range(first, first + count):
        lines += rt_request(f"{i + 1:016x}", f"r{i}", i * 0.01, i * 0.01 + 0.005)
    return ("\n".join(lines) + "\n").encode()


def _log(path: Path, long: bytes) -> Path:
    half = REQUESTS // 2
    path.write_bytes(_lines(0, half) + long + b"\n" + _lines(half, half))
    return path


def _run(*args: str) -> tuple[int, dict[str, Any], str]:
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    done = subprocess.run([sys.executable, "-m", "ridtrace", *args, "--format", "json"],
                          capture_output=True, env=env, timeout=600, check=False)
    err = done.stderr.decode(errors="replace")
    assert "Traceback" not in err, err
    return done.returncode, json.loads(done.stdout), err


def _run_in_process(*args: str) -> tuple[int, dict[str, Any], str]:
    """`_run` through click's CliRunner: a `--engine dask` process of its own would start
    a cluster of worker processes (seconds of CPU) for a report threads compute alike
    (tests/conftest.py)."""
    code, out, err = run_in_process([*args, "--format", "json"])
    assert "Traceback" not in err, err
    return code, json.loads(out), err


def _check_incomplete(summary: dict[str, Any], name: str) -> None:
    assert summary["bad_lines"] == 1 and summary["lines"] == 2 * REQUESTS + 1
    assert summary["bad_line_samples"] == [
        {"file": name, "line": LONG_LINE, "reason": LONG_REASON}]
    (note,) = summary["unreadable_files"]
    assert note["file"] == name and note["reason"].startswith(NOTE), note
    assert "head -c" in note["reason"]  # says how to read the line that was left out
    assert summary["incomplete"] is True


@pytest.mark.parametrize("make", [_ridtrace_unlinked, _dynamo_unlinked, _array_of_records,
                                  _grafana_rows])
def test_an_over_long_record_makes_the_read_incomplete(tmp_path: Path, make: Any) -> None:
    log = _log(tmp_path / "frontend.jsonl", make())
    code, doc, err = _run("analyze", str(log))
    assert code == 3, err  # was 0, "No findings." on a log holding an Unlinked error
    _check_incomplete(doc["summary"], str(log))
    assert NOTE in err

    code, _, err = _run("analyze", str(log), "--allow-incomplete", "-q")
    assert code == 0, err


@pytest.mark.parametrize("kind", sorted(NOT_RECORDS))
def test_an_over_long_line_that_is_no_record_stays_a_bad_line(tmp_path: Path, kind: str) -> None:
    log = _log(tmp_path / "frontend.jsonl", NOT_RECORDS[kind])
    code, doc, err = _run("analyze", str(log))
    assert code == 0, err
    summary = doc["summary"]
    assert summary["bad_lines"] == 1 and summary["unreadable_files"] == []
    assert summary["incomplete"] is False


@pytest.mark.extra("dask")
def test_dask_engine_lists_the_file_as_the_local_read_does(tmp_path: Path) -> None:
    log = _log(tmp_path / "frontend.jsonl", _dynamo_unlinked())
    want = _run_in_process("analyze", str(log), "-q")
    # 16 MiB blocks: the long line lies across blocks, cut from both sides.
    got = _run_in_process("analyze", str(log), "-q", "--engine", "dask",
                          "--partition-size", "16MiB")
    assert got[0] == want[0] == 3, got[2]
    _check_incomplete(got[1]["summary"], str(log))
    assert got[1] == want[1]


def test_follow_lists_the_file_when_a_long_record_is_written(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_bytes(_lines(0, REQUESTS))
    follower = start_follower([str(tmp_path)], "--from-start")
    with open(log, "ab") as fh:  # the record arrives while it follows, in pieces
        record = _ridtrace_unlinked()
        for at in range(0, len(record), 5 << 20):
            fh.write(record[at : at + (5 << 20)])
            fh.flush()
        fh.write(b"\n" + _lines(REQUESTS, 1))
    assert follower.stop() == 3  # SIGTERM: the lines already written are read first
    summary = follower.summary()
    assert summary["bad_lines"] == 1 and summary["requests"] == REQUESTS + 1
    assert summary["bad_line_samples"] == [
        {"file": str(log), "line": 2 * REQUESTS + 1, "reason": LONG_REASON}]
    (note,) = summary["unreadable_files"]
    assert note["file"] == str(log) and note["reason"].startswith(NOTE), note
