"""A demo run again into the same --out leaves that run's files, not the last run's too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ridtrace.demo import processes
from ridtrace.demo.plan import make_plan
from ridtrace.demo.run import run_policy


def test_a_second_run_leaves_the_stderr_of_its_own_processes_only(
    tmp_path: Path, demo_completed: subprocess.CompletedProcess[str], demo_output: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The demo replaced logs/ on every run but kept adding to stderr/: its workers listen
    # on fresh ports, so after three `make demo` runs stderr/ held six worker-PORT.stderr
    # files beside the two of logs/, and "each process's own stderr" (cli.md) pointed a
    # reader debugging this run at processes of earlier ones.
    # The first run is the session's real demo run (tests/conftest.py), copied: its
    # safe/ holds the logs and stderr files of a stack on other ports.
    assert demo_completed.returncode == 0, demo_completed.stderr[-2000:]
    shutil.copytree(demo_output / "safe", tmp_path / "safe")
    earlier = {p.stem for p in (tmp_path / "safe" / "stderr").glob("worker-*.stderr")}
    assert len(earlier) == 2
    # Not handed out again, as in one process's two runs: this run's files are new ones.
    monkeypatch.setattr(processes, "_handed_out", processes._handed_out | {
        int(stem.removeprefix("worker-")) for stem in earlier})
    run = run_policy("safe", make_plan(12), tmp_path, concurrency=12, token_delay=0.0)
    workers = {p.stem for p in run.log_dir.glob("worker-*.jsonl")}
    assert len(workers) == 2 and not workers & earlier
    stderr = {p.stem for p in (tmp_path / "safe" / "stderr").iterdir()}
    assert stderr == workers | {"frontend"}
