"""A directory of small logs under a low limit on open files is read whole.

DuckDB holds every file of a batch of small files open while it reads it, and two
batches are read at once. Under `ulimit -n 64` (hard) a directory of pod logs gave
batches of 64 files: "Too many open files", and the Python import the error broke on
another thread left `ridtrace analyze` waiting forever, with no report. Batches are now
cut to the descriptors left, and a soft limit under the hard one is raised first.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import ridtrace.open_file_limit as open_file_limit
from ridtrace.forensics.reading import small_files
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.servers import child_pythonpath

HARD_LIMIT = 48


def _pod_logs(out: Path, lines_per_file: int = 6) -> tuple[Path, Counter[str]]:
    """ridtrace/1 logs cut into many small files; the findings in them, by kind."""
    whole = out / "whole"
    truth = write_logs(whole, SynthSpec(requests=200))
    pods = out / "pods"
    pods.mkdir()
    for log in sorted(whole.rglob("*.jsonl")):
        lines = log.read_bytes().splitlines(keepends=True)
        for at in range(0, len(lines), lines_per_file):
            name = f"{log.stem}-{at // lines_per_file:04d}.jsonl"
            (pods / name).write_bytes(b"".join(lines[at:at + lines_per_file]))
    return pods, Counter(kind for kind, _ in truth.expected)


def _limit_open_files(soft: int, hard: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _analyze_under(limit: tuple[int, int], pods: Path, report: Path) -> int:
    """`ridtrace analyze` of `pods` in a process under `limit` (soft, hard)."""
    env = {"PYTHONPATH": child_pythonpath(), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(pods), "--format", "json",
         "-q", "-o", str(report)],
        env=env, preexec_fn=lambda: _limit_open_files(*limit),
        capture_output=True, timeout=120, check=False,
    )
    assert report.exists(), done.stderr.decode(errors="replace")
    return done.returncode


def test_a_directory_of_small_logs_under_a_low_hard_limit_is_read_whole(
    tmp_path: Path,
) -> None:
    pods, findings = _pod_logs(tmp_path)
    files = len(list(pods.iterdir()))
    assert files > 3 * HARD_LIMIT  # more than two default batches could hold open
    report = tmp_path / "report.json"
    code = _analyze_under((HARD_LIMIT, HARD_LIMIT), pods, report)
    summary = json.loads(report.read_text())["summary"]
    assert summary["unreadable_files"] == []
    assert summary["files"] == files
    assert summary["bad_lines"] == 0
    assert {kind: summary[kind] for kind in findings} == findings
    assert code == 1, summary  # the logs' error findings, not a read left incomplete


@pytest.fixture
def spare(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Sets how many descriptors the process has left, as `spare_descriptors` says."""
    left = [1000]
    monkeypatch.setattr(open_file_limit, "spare_descriptors", lambda: left[0])
    yield left


def test_batches_are_cut_to_the_descriptors_left(tmp_path: Path, spare: list[int]) -> None:
    pods, _ = _pod_logs(tmp_path)
    sources = expand_inputs([str(pods)])
    assert max(map(len, small_files.plan_reads(sources, batch=True, readers=2))) == (
        small_files.BATCH_FILES)
    spare[0] = small_files.DESCRIPTOR_RESERVE + 2 * 5
    assert max(map(len, small_files.plan_reads(sources, batch=True, readers=2))) == 5
    spare[0] = 3  # nothing to spare: one file at a time, not none
    assert {len(r) for r in small_files.plan_reads(sources, batch=True, readers=2)} == {1}


def test_analyze_raises_a_soft_limit_under_the_hard_one(tmp_path: Path) -> None:
    """Read in batches of the default size, not one file at a time: the soft limit of a
    login shell (1024, or lower) is not the process's to keep."""
    pods, _ = _pod_logs(tmp_path)
    probe = (
        "import resource, sys\n"
        "from ridtrace.cli.analyze import _sources\n"
        "from ridtrace.forensics.reading import small_files\n"
        "_sources([sys.argv[1]], quiet=True)\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], small_files.batch_files(2))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(pods)],
        env={"PYTHONPATH": child_pythonpath(), "PATH": "/usr/bin:/bin"},
        preexec_fn=lambda: _limit_open_files(HARD_LIMIT, 4096),
        capture_output=True, text=True, timeout=60, check=True,
    )
    soft, batch = map(int, done.stdout.split())
    assert soft == 4096
    assert batch == small_files.BATCH_FILES
