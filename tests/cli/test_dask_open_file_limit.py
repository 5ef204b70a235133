"""``--engine dask`` under a low limit on open files (macOS's soft limit is 256).

A local cluster's worker holds a few dozen descriptors and more as the shuffle's
partitions grow with the files read: under a soft limit of 64, 900 small logs made the
workers fail with "Too many open files" (files named unreadable, or a traceback and
exit 4). The local cluster now starts with the soft limit raised to the hard one, and a
shuffle that fails on a worker is the cluster's trouble: exit 2, one line.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.extras import require_extra

require_extra("dask")

from ridtrace.forensics.dask_engine.cluster import (  # noqa: E402
    DaskEngineError,
    shuffle_failure,
)

SAMPLE = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
FILES = 900
LOW = 64


def _low_soft_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LOW, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def _analyze(logs: Path, *engine: str, limited: bool = False) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(logs), *engine, "--format", "json",
         "-q"],
        capture_output=True, text=True, timeout=600,
        preexec_fn=_low_soft_limit if limited else None,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout)


def test_a_low_soft_limit_reads_every_file(tmp_path: Path) -> None:
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 1024:
        pytest.skip("the hard limit on open files is too low to raise the soft one")
    logs = tmp_path / "logs"
    logs.mkdir()
    for n in range(FILES):
        shutil.copyfile(SAMPLE, logs / f"pod-{n}.jsonl")
    local = _analyze(logs)
    on_dask = _analyze(logs, "--engine", "dask", limited=True)
    assert on_dask["summary"]["lines"] == len(SAMPLE.read_text().splitlines()) * FILES
    assert not on_dask["summary"]["incomplete"], on_dask["summary"]
    assert on_dask == local


def test_a_failed_shuffle_is_the_clusters_trouble() -> None:
    failure = shuffle_failure(RuntimeError("P2P 70b3e074 failed during transfer phase"))
    assert isinstance(failure, DaskEngineError)
    said = str(failure)
    assert said.startswith("a Dask worker's shuffle failed, so no report was made: P2P 70b3e074")
    assert "too many open files" in said
    assert f"open files allowed here: {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}" in said \
        or resource.getrlimit(resource.RLIMIT_NOFILE)[0] == resource.RLIM_INFINITY


def test_another_runtime_error_is_left_as_it_is() -> None:
    assert shuffle_failure(RuntimeError("dictionary changed size during iteration")) is None
