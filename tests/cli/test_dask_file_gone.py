"""``--engine dask`` on a file gone when a worker opens it: an incomplete read, not a crash.

logrotate removing the oldest part between the listing and the read is noted as the
local engine notes it (`deleted since it was listed`, exit 3). A file split into
blocks, and any file `audit` reads, was opened through fsspec with nothing to catch
the error: exit 4, "internal error". The scheduler and worker are real processes; the
worker's preload deletes the file just before its block is read: no timing involved.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.dask_processes import dask_processes
from tests.support.extras import require_extra

require_extra("dask")

_DELETE_ON_READ = '''
import os
from ridtrace.forensics.dask_engine import groups

_read = getattr(groups.read_blocks, "wrapped", groups.read_blocks)  # preloaded twice

def _read_after_deleting(group, *args, **kwargs):
    for block in group:
        if block.file.name.endswith("frontend.jsonl") and os.path.exists(block.file.url):
            os.unlink(block.file.url)  # a rotation removing the oldest part
    return _read(group, *args, **kwargs)

_read_after_deleting.wrapped = _read
groups.read_blocks = _read_after_deleting
'''

# A worker on a host where the logs are not mounted: it finds no file at the path the
# client lists; the client still finds it there afterwards.
_HIDE_ON_READ = '''
import os
from ridtrace.forensics.dask_engine import groups

_read = getattr(groups.read_blocks, "wrapped", groups.read_blocks)  # preloaded twice

def _read_unseen(group, *args, **kwargs):
    hidden = [b.file.url for b in group if b.file.name.endswith("frontend.jsonl")
              and os.path.exists(b.file.url)]
    for path in hidden:
        os.rename(path, path + ".elsewhere")
    try:
        return _read(group, *args, **kwargs)
    finally:
        for path in hidden:
            os.rename(path + ".elsewhere", path)

_read_unseen.wrapped = _read
groups.read_blocks = _read_unseen
'''


@pytest.fixture
def address(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    preload = tmp_path / "on_read.py"
    preload.write_text(getattr(request, "param", _DELETE_ON_READ))
    with dask_processes(tmp_path) as cluster:
        cluster.worker("--preload", str(preload))
        yield cluster.address


@pytest.mark.parametrize(("command", "options"), [
    ("analyze", ["--partition-size", "1MiB"]),  # the frontend's log is split into blocks
    ("audit", []),  # audit reads every file through the block reader
])
def test_a_file_deleted_before_its_block_is_read(
    address: str, tmp_path: Path, command: str, options: list[str],
) -> None:
    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=1500 if command == "analyze" else 50))
    if command == "analyze":
        assert (logs / "frontend.jsonl").stat().st_size > 2 << 20
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", command, str(logs), "--format", "json",
         "--engine", "dask", "--scheduler", address, *options],
        capture_output=True, text=True, timeout=300)
    # analyze: the workers' own logs still show error findings, which exit 1 reports.
    assert done.returncode == (1 if command == "analyze" else 3), done.stderr
    assert "Traceback" not in done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert summary["incomplete"] is True
    unreadable = summary["unreadable_files"]
    assert [(Path(u["file"]).name, "deleted since it was listed" in u["reason"])
            for u in unreadable] == [("frontend.jsonl", True)], unreadable


@pytest.mark.parametrize("address", [_HIDE_ON_READ], indirect=True)
def test_a_file_the_workers_cannot_see_is_not_called_deleted(address: str, tmp_path: Path) -> None:
    # It said "deleted since it was listed (a rotation …): read the logs again", of a file
    # still there: reading again gives the same, and the cause (the path is not shared
    # with the workers) went unsaid.
    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=50))
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "audit", str(logs), "--format", "json",
         "--engine", "dask", "--scheduler", address],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr
    [note] = json.loads(done.stdout)["summary"]["unreadable_files"]
    assert Path(note["file"]).name == "frontend.jsonl"
    assert "deleted since it was listed" not in note["reason"], note
    assert "Dask worker" in note["reason"] and "same path" in note["reason"], note
