"""Standard input named twice, as ``-`` and as ``/dev/stdin``, or redirected from a log
that is also named: one input, read once, as a log named under two paths is.

``cat app.jsonl | ridtrace analyze /dev/stdin -`` read the pipe with two readers, each
taking part of its lines: lines torn at the readers' buffer edges were bad lines, and a
request whose lines went to both readers was two requests holding one id, a false
duplicate_in_flight. ``ridtrace analyze - app.jsonl < app.jsonl`` counted every line twice.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ridtrace.testing.synth import SynthSpec, write_logs


def _analyze(cwd: Path, *paths: str, stdin: Any) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "ridtrace", "analyze", *paths, "--format",
                           "json", "-q"], cwd=cwd, stdin=stdin, capture_output=True,
                          timeout=120, check=False)
    assert done.returncode in (0, 1), done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)["summary"]
    return summary


def _frontend_log(tmp_path: Path) -> Path:
    write_logs(tmp_path, SynthSpec(requests=400))
    return tmp_path / "frontend.jsonl"


def test_a_pipe_named_as_dash_and_dev_stdin_is_read_once(tmp_path: Path) -> None:
    log = _frontend_log(tmp_path)
    alone = _analyze(tmp_path, "-", stdin=log.open("rb"))
    # Through a pipe, as `cat` hands it over: both names lead to the same pipe.
    with subprocess.Popen(["cat", str(log)], stdout=subprocess.PIPE) as cat:
        twice = _analyze(tmp_path, "/dev/stdin", "-", stdin=cat.stdout)
    assert twice["files"] == 1
    assert twice["bad_lines"] == 0
    assert (twice["lines"], twice["requests"], twice["errors"]) == (
        alone["lines"], alone["requests"], alone["errors"])


def test_stdin_redirected_from_a_named_log_counts_its_lines_once(tmp_path: Path) -> None:
    log = _frontend_log(tmp_path)
    alone = _analyze(tmp_path, "frontend.jsonl", stdin=subprocess.DEVNULL)
    with log.open("rb") as redirected:
        twice = _analyze(tmp_path, "-", "frontend.jsonl", stdin=redirected)
    assert twice["files"] == 1
    assert twice["lines"] == alone["lines"]
