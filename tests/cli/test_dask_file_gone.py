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

# The worker's preload, before each block is read: in a folder named `UNSEEN`, the
# frontend's log is moved away for the read and put back after it (a worker on a host
# where the logs are not mounted: it finds no file at the path the client lists, and the
# client still finds it there afterwards); anywhere else it is deleted (a rotation
# removing the oldest part).
UNSEEN = "unseen-logs"
# In a folder named `LOCKED`, the worker may not open the frontend's log (its user may
# not read it: as root here, the OS would let it); in one named `STAGED`, where each
# block was staged is written beside the folder. Nothing is removed in either.
LOCKED, STAGED = "locked-logs", "staged-logs"
_ON_READ = f'''
import os
from ridtrace.forensics.dask_engine import blocks, groups

_read = getattr(groups.read_blocks, "wrapped", groups.read_blocks)  # preloaded twice
_open = getattr(blocks.opened_file, "wrapped", blocks.opened_file)
_stage = getattr(blocks.stage, "wrapped", blocks.stage)

def _refused(url):
    if os.path.basename(os.path.dirname(url)) == "{LOCKED}" and url.endswith("frontend.jsonl"):
        raise PermissionError(13, "Permission denied", url)
    return _open(url)

def _staged(head, stream, out, name, *args, **kwargs):
    if os.path.basename(os.path.dirname(name)) == "{STAGED}":
        with open(os.path.join(os.path.dirname(os.path.dirname(name)), "staged.txt"), "a") as f:
            f.write(out.name + "\\n")
    return _stage(head, stream, out, name, *args, **kwargs)

_refused.wrapped, _staged.wrapped = _open, _stage
blocks.opened_file, blocks.stage = _refused, _staged

def _read_after_removing(group, *args, **kwargs):
    moved = []
    for block in group:
        path = block.file.url
        folder = os.path.basename(os.path.dirname(path))
        if (not block.file.name.endswith("frontend.jsonl") or not os.path.exists(path)
                or folder in ("{LOCKED}", "{STAGED}")):
            continue
        if folder == "{UNSEEN}":
            os.rename(path, path + ".elsewhere")
            moved.append(path)
        else:
            os.unlink(path)
    try:
        return _read(group, *args, **kwargs)
    finally:
        for path in moved:
            os.rename(path + ".elsewhere", path)

_read_after_removing.wrapped = _read
groups.read_blocks = _read_after_removing
'''


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One scheduler and worker for the module (nothing here kills them; each test's
    logs are its own folder): two process starts, not two per test."""
    workdir = tmp_path_factory.mktemp("dask-cluster")
    preload = workdir / "on_read.py"
    preload.write_text(_ON_READ)
    with dask_processes(workdir) as cluster:
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


def _audit_on_the_cluster(address: str, logs: Path) -> subprocess.CompletedProcess[str]:
    """`ridtrace audit` of 50 requests' logs written to `logs`, read by the workers."""
    write_logs(logs, SynthSpec(requests=50))
    return subprocess.run(
        [sys.executable, "-m", "ridtrace", "audit", str(logs), "--format", "json",
         "--engine", "dask", "--scheduler", address],
        capture_output=True, text=True, timeout=300)


def _the_frontends_note(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The one unreadable file of an incomplete read (exit 3): the frontend's log."""
    assert done.returncode == 3, done.stderr
    [note] = json.loads(done.stdout)["summary"]["unreadable_files"]
    assert Path(note["file"]).name == "frontend.jsonl"
    return dict(note)


def test_a_file_the_workers_cannot_see_is_not_called_deleted(address: str, tmp_path: Path) -> None:
    # It said "deleted since it was listed (a rotation …): read the logs again", of a file
    # still there: reading again gives the same, and the cause (the path is not shared
    # with the workers) went unsaid.
    logs = tmp_path / UNSEEN
    done = _audit_on_the_cluster(address, logs)
    note = _the_frontends_note(done)
    assert "deleted since it was listed" not in note["reason"], note
    assert "Dask worker" in note["reason"] and "same path" in note["reason"], note


def test_a_file_the_workers_may_not_read_is_named_as_the_local_engine_names_it(
    address: str, tmp_path: Path,
) -> None:
    # The reason was the raw error with the worker's absolute path ("cannot open:
    # [Errno 13] Permission denied: '/srv/…/frontend.jsonl'"), where the local engine
    # says "cannot read it: permission denied".
    logs = tmp_path / LOCKED
    done = _audit_on_the_cluster(address, logs)
    note = _the_frontends_note(done)
    assert note["reason"].startswith("cannot read it on a Dask worker: permission denied")
    assert str(logs) not in note["reason"], note


def test_a_worker_stages_its_blocks_in_its_own_local_directory(
    address: str, tmp_path: Path,
) -> None:
    # Staged under $TMPDIR, a worker the OOM killer ended left its copy of the block
    # (up to a partition, 64 MiB) there for good; the next worker started in a Dask
    # worker's local directory removes a dead one's.
    from distributed import Client

    logs = tmp_path / STAGED
    done = _audit_on_the_cluster(address, logs)
    assert done.returncode == 0, done.stderr
    with Client(address, timeout=30) as client:
        local = set(client.run(lambda dask_worker: dask_worker.local_directory).values())
    staged = (tmp_path / "staged.txt").read_text().split()
    assert staged and all(any(Path(p).is_relative_to(d) for d in local) for p in staged), (
        staged, local)
