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
