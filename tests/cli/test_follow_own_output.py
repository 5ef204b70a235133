"""`ridtrace analyze logs --follow > logs/findings.jsonl`: the follower's own output.

An alerting set-up keeps the findings beside the logs they are about. The follower walked
the directory, found its own stdout there and read each finding it wrote back as a log
line: every one a bad line, the file "none of its lines is a log record", the run
incomplete, the bad-line samples its own output instead of the logs'.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while len(path.read_bytes().splitlines()) < count:
        assert process.poll() is None, f"follower exited {process.returncode}"
        assert time.monotonic() < deadline, f"fewer than {count} lines in {path}"
        time.sleep(0.05)


def test_the_followers_own_output_in_a_followed_directory_is_not_read(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write_logs(logs, SynthSpec(requests=400))
    findings = logs / "findings.jsonl"
    summary = tmp_path / "summary.txt"
    with open(findings, "ab") as out, open(summary, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "ridtrace", "analyze", str(logs), "--follow", "--from-start",
             "--format", "json", "--poll-interval", "0.1s"],
            stdout=out, stderr=err,
        )
    try:
        _wait_for_lines(findings, 1, process)
        # More log lines, so that polls come after the findings file holds lines: a new
        # finding printed proves the follower looked at the directory since.
        more = tmp_path / "more"
        write_logs(more, SynthSpec(requests=400, seed=11))
        printed = len(findings.read_bytes().splitlines())
        for file in sorted(more.iterdir()):
            (logs / f"later-{file.name}").write_bytes(file.read_bytes())
        _wait_for_lines(findings, printed + 1, process)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    report = json.loads(summary.read_text().splitlines()[-1])
    assert code == 1
    assert report["bad_lines"] == 0, report["bad_line_samples"]
    assert report["incomplete"] is False, report["incomplete_reasons"]
    assert {"file": str(findings), "reason": "this run's own output (standard output)"} \
        in report["ignored_files"]
    for line in findings.read_text().splitlines():
        assert json.loads(line)["severity"] == "error"


def test_an_earlier_follows_findings_file_is_no_log_to_a_walk(tmp_path: Path) -> None:
    # The findings an earlier follower wrote beside the logs: the batch `analyze` of the
    # same directory afterwards, and the next follower, read each as a bad line (the
    # file "none of its lines is a log record"), so clean logs exited 3, incomplete.
    logs = tmp_path / "logs"
    logs.mkdir()
    write_logs(logs, SynthSpec(requests=100, crossed=0, collisions=0, duplicates=0))
    finding = {"kind": "unlinked", "severity": "error", "request_id": "r-1",
               "x_request_id": None, "span_id": "ab", "time": "2026-12-03T13:08:22.5Z",
               "detail": "Unlinked response", "evidence": [{"file": "logs/f.jsonl", "line": 3}]}
    (logs / "findings.jsonl").write_text(json.dumps(finding) + "\n")
    # The batch read in-process: its report and exit code are all it is checked by.
    done = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json"])
    summary = json.loads(done.stdout)["summary"]
    assert done.exit_code == 0, (done.stderr, summary)
    assert summary["bad_lines"] == 0
    assert {"file": str(logs / "findings.jsonl"),
            "reason": "ridtrace's findings (analyze --follow --format json), not log lines"} \
        in summary["ignored_files"]
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(logs), "--follow", "--from-start",
         "--format", "json", "--poll-interval", "0.1s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    started = process.stderr.readline()  # "following …": the inputs were looked at
    assert b"following" in started
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=60)
    report = json.loads(err.splitlines()[-1])
    assert process.returncode == 0, report
    assert report["bad_lines"] == 0 and report["incomplete"] is False


def test_an_earlier_follows_stderr_file_is_no_log_to_a_walk(tmp_path: Path) -> None:
    # `… --follow --format json 2> logs/follow.err`: its "ridtrace: …" lines and its JSON
    # summary made the batch `analyze` of the same clean logs afterwards exit 3 ("none of
    # its 3 lines is a log record").
    logs = tmp_path / "logs"
    logs.mkdir()
    write_logs(logs, SynthSpec(requests=100, crossed=0, collisions=0, duplicates=0))
    stderr = logs / "follow.err"
    with open(stderr, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "ridtrace", "analyze", str(logs), "--follow",
             "--from-start", "--format", "json", "--poll-interval", "0.1s"],
            stdout=subprocess.DEVNULL, stderr=err,
        )
    try:
        _wait_for_lines(stderr, 1, process)  # "following …": the inputs were looked at
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    written = stderr.read_text().splitlines()
    assert written[0].startswith("ridtrace: ") and json.loads(written[-1])["incomplete"] is False
    done = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json"])
    summary = json.loads(done.stdout)["summary"]
    assert done.exit_code == 0, (done.stderr, summary)
    assert summary["bad_lines"] == 0 and summary["incomplete"] is False
    assert {"file": str(stderr), "reason": "ridtrace's messages and summary "
            "(analyze --follow's stderr), not log lines"} in summary["ignored_files"]
