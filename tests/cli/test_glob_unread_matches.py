"""A quoted glob whose matches include a pipe or a broken link to a log.

A directory walk lists such entries (the broken link to a log makes the result
incomplete, exit 3), but the glob left them out without a word: `'logs/*.jsonl'` over a
frontend log and a `worker.jsonl` link whose volume was not mounted said "No findings"
and exit 0, the worker's lines never read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forensics.helpers import rt_request
from tests.support.extras import ENGINES


def _logs_with_a_lost_worker(root: Path) -> None:
    logs = root / "logs"
    logs.mkdir()
    (logs / "frontend.jsonl").write_text("\n".join(rt_request("a1b2c3d4e5f60718", "r1", 0, 1)) + "\n")
    os.symlink(root / "unmounted" / "worker.jsonl", logs / "worker.jsonl")
    # Opened, a pipe with no writer would hold the run forever: it is listed, not read.
    os.mkfifo(logs / "spool.jsonl")


def _ridtrace(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ridtrace", *args], cwd=root,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("engine", ENGINES)
def test_analyze_lists_a_globbed_broken_link_and_pipe(tmp_path: Path, engine: str) -> None:
    _logs_with_a_lost_worker(tmp_path)
    done = _ridtrace(tmp_path, "analyze", "logs/*.jsonl", "--format", "json", "--engine", engine)
    summary = json.loads(done.stdout)["summary"]
    assert summary["unreadable_files"] == [
        {"file": "logs/worker.jsonl", "reason": "a broken symbolic link"}]
    assert [n["file"] for n in summary["ignored_files"]] == ["logs/spool.jsonl"]
    assert summary["incomplete"] and summary["requests"] == 1
    assert done.returncode == 3, done.stderr
    assert "logs/worker.jsonl: a broken symbolic link" in done.stderr


@pytest.mark.extra("dask")
def test_a_file_url_glob_lists_its_broken_link(tmp_path: Path) -> None:
    _logs_with_a_lost_worker(tmp_path)
    done = _ridtrace(tmp_path, "analyze", f"file://{tmp_path}/logs/*.jsonl", "--format", "json",
                     "--engine", "dask")
    summary = json.loads(done.stdout)["summary"]
    assert [n["reason"] for n in summary["unreadable_files"]] == ["a broken symbolic link"]
    assert done.returncode == 3, done.stderr


@pytest.mark.parametrize("command", [
    ["audit"], ["trace", "nobody-sent-this"], ["export", "jaeger", "-o", "traces.json"]])
def test_other_commands_say_a_globbed_log_was_not_read(tmp_path: Path, command: list[str]) -> None:
    _logs_with_a_lost_worker(tmp_path)
    done = _ridtrace(tmp_path, *command, "logs/*.jsonl")
    assert "logs/worker.jsonl: a broken symbolic link" in done.stderr
    # `trace` with no match exits 3, not 1, when part of the input was not read.
    assert done.returncode == 3, done.stderr
