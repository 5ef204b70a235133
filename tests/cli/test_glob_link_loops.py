"""A quoted ``**`` glob over logs whose directories hold links back up the tree (a
``current -> .`` link, a volume linked into itself): the directory walk visits each
directory once, but the glob followed the links round and round; with two such links
the paths it listed grew without end, and the run never finished (its memory grew past a
gigabyte in minutes). Each directory the glob descends into is listed once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forensics.helpers import rt, rt_request, ts
from tests.support.extras import ENGINES


def _looping_logs(root: Path) -> Path:
    logs = root / "logs"
    (logs / "pods" / "fe").mkdir(parents=True)
    ctx = {"request_id": "lost", "trace_id": f"{'abc':0>32}", "span_id": "abc"}
    start, end = rt_request("abc", "lost", 0, 1)
    unlinked = rt("response.unlinked", time=ts(0.5), **ctx)
    (logs / "pods" / "fe" / "frontend.jsonl").write_text("\n".join([start, unlinked, end]) + "\n")
    os.symlink(".", logs / "current")
    os.symlink("../..", logs / "pods" / "fe" / "up")
    return logs


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A timeout, not a hang, is how the loop fails this test.
    return subprocess.run([sys.executable, "-m", "ridtrace", "analyze", "logs/**/*.jsonl",
                           "--format", "json", "-q", *args],
                          cwd=root, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_recursive_glob_over_link_loops_reads_each_log_once(
    tmp_path: Path, engine: str
) -> None:
    _looping_logs(tmp_path)
    done = _run(tmp_path, "--engine", engine)
    doc = json.loads(done.stdout)
    assert doc["summary"]["files"] == 1 and doc["summary"]["requests"] == 1
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"]
    assert done.returncode == 1, done.stderr


def test_a_followed_recursive_glob_over_link_loops_reads_each_log_once(tmp_path: Path) -> None:
    _looping_logs(tmp_path)
    done = _run(tmp_path, "--follow", "--from-start", "--fail-fast")
    assert [json.loads(line)["kind"] for line in done.stdout.splitlines()] == ["unlinked"]
    assert done.returncode == 1, done.stderr
