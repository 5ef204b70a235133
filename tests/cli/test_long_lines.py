"""A log line longer than DuckDB's 16 MiB limit is one bad line, not a lost run.

Such a line crashed every command with DuckDB's "maximum_object_size … exceeded"
traceback: a plain file, stdin, a ``.gz``, ``--engine dask`` and the live follower.
The fixture is ten requests around one 40 MiB line: 1 bad line in 21 is over the 1 %
that makes a result incomplete, so ``analyze`` exits 3 (no error finding); the line is
a record, which lists the file as read in part too (`test_long_records`). Every other
line, with its line number, must still be read.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request
from tests.support.follower import start_follower

LONG_LINE = 11  # after requests 0-4, two lines each
DEPRECATED_END_LINE = 17  # request 7's request.end: lines 2 * 7 + 2 and + 3
LONG_REASON = "line longer than 16 MiB"


def _long_line() -> bytes:
    # Valid JSON in a known format: too long is the only thing wrong with it.
    head = b'{"time":"2026-11-29T10:00:00Z","schema":"ridtrace/1","message":"'
    return head + b"a" * (40 << 20) + b'"}'


def _requests(first: int, count: int) -> list[str]:
    lines: list[str] = []
    for i in range(first, first + count):
        extra: dict[str, Any] = {"deprecated_headers": "x-dynamo-request-id"} if i == 7 else {}
        lines += rt_request(f"{i + 1:016x}", f"r{i}", i * 0.01, i * 0.01 + 0.005, **extra)
    return lines


def _log_bytes() -> bytes:
    before = "\n".join(_requests(0, 5)).encode()
    after = "\n".join(_requests(5, 5)).encode()
    return b"\n".join((before, _long_line(), after)) + b"\n"


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("long")
    data = _log_bytes()
    (out / "frontend.jsonl").write_bytes(data)
    (out / "gz").mkdir()
    (out / "gz" / "frontend.jsonl.gz").write_bytes(gzip.compress(data, compresslevel=1))
    return out


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _check_report(doc: dict[str, Any], name: str) -> None:
    summary = doc["summary"]
    assert summary["lines"] == 21 and summary["bad_lines"] == 1
    assert summary["bad_line_samples"] == [
        {"file": name, "line": LONG_LINE, "reason": LONG_REASON}
    ]
    assert summary["requests"] == 10 and summary["incomplete"] is True
    # The long line is a record: its file is read in part, whatever the share of bad lines.
    record_note, share = summary["incomplete_reasons"]
    assert record_note.startswith(f"{name}: a log record longer than 16 MiB is not read")
    assert share == "1 bad lines (4.8% of 21, over 1%)"
    # The lines after the long one keep their numbers.
    (finding,) = doc["findings"]
    assert finding["kind"] == "deprecated_header" and finding["request_id"] == "r7"
    assert finding["evidence"] == [{"file": name, "line": DEPRECATED_END_LINE}]


@pytest.mark.parametrize("source", ["plain", "gzip", "stdin"])
def test_analyze_counts_the_long_line_and_reads_the_others(logs: Path, source: str) -> None:
    plain = logs / "frontend.jsonl"
    if source == "stdin":
        code, out, err = run("analyze", "-", "--format", "json", stdin=plain.read_bytes())
        name = "<stdin>"
    else:
        path = plain if source == "plain" else logs / "gz" / "frontend.jsonl.gz"
        code, out, err = run("analyze", str(path), "--format", "json")
        name = str(path)
    assert code == 3, err
    _check_report(json.loads(out), name)
    assert f"{name}:{LONG_LINE} ({LONG_REASON})" in err


def test_allow_incomplete_exits_0(logs: Path) -> None:
    code, _, _ = run("analyze", str(logs / "frontend.jsonl"), "--allow-incomplete", "-q")
    assert code == 0


def test_trace_shows_the_lines_after_the_long_one(logs: Path) -> None:
    code, out, err = run("trace", "r7", str(logs / "frontend.jsonl"))
    assert code == 0, err
    assert f"frontend.jsonl:{DEPRECATED_END_LINE - 1}" in out
    assert f"frontend.jsonl:{DEPRECATED_END_LINE}" in out
    assert f":{LONG_LINE} ({LONG_REASON})" in err


def test_audit_counts_the_header_sent_after_the_long_line(logs: Path) -> None:
    path = str(logs / "frontend.jsonl")
    code, out, err = run("audit", path, "--format", "json")
    assert code == 3, err
    doc = json.loads(out)
    assert [(r["header"], r["requests"]) for r in doc["rows"]] == [("x-dynamo-request-id", 1)]
    assert doc["summary"]["bad_line_samples"] == [
        {"file": path, "line": LONG_LINE, "reason": LONG_REASON}
    ]


@pytest.mark.extra("dask")
def test_dask_engine_gives_the_same_report(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ridtrace.forensics.dask_engine import engine as dask_engine

    # The CLI's own cluster, in threads: worker processes take ~10 s to start here.
    monkeypatch.setitem(dask_engine.LOCAL_CLUSTER_OPTIONS, "processes", False)
    path = str(logs / "frontend.jsonl")
    want = run("analyze", path, "--format", "json", "-q")
    # 16 MiB blocks: the long line is a block of its own, cut from both sides.
    got = run("analyze", path, "--format", "json", "-q", "--engine", "dask",
              "--partition-size", "16MiB")
    assert got[0] == want[0] == 3, got[2]
    assert json.loads(got[1]) == json.loads(want[1])


def test_follower_counts_long_lines_and_keeps_running(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_bytes(_log_bytes())
    follower = start_follower([str(tmp_path)], "--from-start")
    with open(log, "ab") as fh:  # a second long line, while it follows
        fh.write(_long_line() + b"\n" + "\n".join(_requests(10, 2)).encode() + b"\n")
    assert follower.stop() == 3  # SIGTERM: the lines already written are read first
    summary = follower.summary()
    assert summary["lines"] == 26 and summary["bad_lines"] == 2
    assert [(s["line"], s["reason"]) for s in summary["bad_line_samples"]] == [
        (LONG_LINE, LONG_REASON), (22, LONG_REASON)
    ]
    assert summary["requests"] == 12
