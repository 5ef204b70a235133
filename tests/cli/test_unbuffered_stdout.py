"""A report cut short on standard output under ``PYTHONUNBUFFERED=1``.

Docker images and CI jobs commonly set it. Python then writes stdout through an
unbuffered file whose text layer ignores a short write: when the reader left mid-report
(`| head`) or a disk filled part way (`> report.json`), the rest of the report was
dropped without an error, and the run exited 0 or 1 with a truncated document, where
the same run without the variable exits 2 and says the report could not be written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.forensics.helpers import rt_request
from tests.support.servers import child_pythonpath


def test_a_reader_leaving_mid_report_is_exit_2_with_the_variable_set(tmp_path: Path) -> None:
    # One deprecated_header finding per request: a JSON report well over a pipe's 64 KiB,
    # so the write is still blocked on the pipe when its reader leaves.
    lines: list[str] = []
    for n in range(300):
        lines += rt_request(f"{n + 1:016x}", f"r{n}", n * 0.01, n * 0.01 + 0.005,
                            deprecated_headers="request-id")
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": child_pythonpath()}
    run = subprocess.Popen([sys.executable, "-m", "ridtrace", "analyze", str(log),
                            "--format", "json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env)
    assert run.stdout is not None and run.stderr is not None
    assert run.stdout.read(1) == b"{"  # the report is being written
    run.stdout.close()  # the reader (`head -c 1`) is gone mid-report
    err = run.stderr.read()
    assert run.wait(timeout=120) == 2, err
    assert b"cannot write the report to standard output: Broken pipe" in err, err
    assert b"Traceback" not in err
