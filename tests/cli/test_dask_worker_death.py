"""``--engine dask`` on a cluster that fails mid-run: a clear error, no report.

The scheduler and its worker are real processes, as `dask scheduler` and `dask worker`
start them; the worker's preload makes the block read kill its own process (as the
kernel's OOM killer or a node lost would) or the scheduler's, every time it runs: no
timing involved.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.dask_processes import dask_processes
from tests.support.extras import require_extra

require_extra("dask")

_ON_READ = '''
import os, signal, time
from ridtrace.forensics.dask_engine import groups

def _fail(*args, **kwargs):
    # SIGKILL, as the OOM killer sends it: no exception, no goodbye to anyone.
    os.kill(int(os.environ["RIDTRACE_TEST_KILL_PID"] or os.getpid()), signal.SIGKILL)
    time.sleep(60)

groups.read_blocks = _fail
'''


@contextmanager
def _cluster(workdir: Path, *, kill_scheduler: bool) -> Iterator[str]:
    """A scheduler (a task whose worker dies once is not retried) and one worker that
    SIGKILLs itself, or the scheduler, when it reads a block."""
    preload = workdir / "on_read.py"
    preload.write_text(_ON_READ)
    env = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    with dask_processes(workdir, env) as cluster:
        killed = cluster.scheduler_process.pid if kill_scheduler else None
        cluster.worker("--preload", str(preload),
                       env={"RIDTRACE_TEST_KILL_PID": str(killed or "")})
        yield cluster.address


def _analyze_on(address: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    write_logs(tmp_path / "logs", SynthSpec(requests=50))
    return subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path / "logs"), "--format", "json",
         "--engine", "dask", "--scheduler", address],
        capture_output=True, text=True, timeout=120,
    )


def test_a_worker_dying_mid_run_is_a_clear_error_not_an_internal_one(tmp_path: Path) -> None:
    with _cluster(tmp_path, kill_scheduler=False) as address:
        done = _analyze_on(address, tmp_path)
    # It was exit 4 with distributed's KilledWorker traceback and "internal error; please
    # report it": ridtrace's bug, said of a worker the machine killed (its memory limit).
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # no report: the dead worker's part would be missing from it
    assert "a Dask worker died" in done.stderr and "Traceback" not in done.stderr


def test_the_scheduler_lost_mid_run_is_a_clear_error_not_an_internal_one(tmp_path: Path) -> None:
    with _cluster(tmp_path, kill_scheduler=True) as address:
        done = _analyze_on(address, tmp_path)
    # It was exit 4 with FutureCancelledError ("scheduler-connection-lost") and "internal
    # error; please report it", where a scheduler unreachable at the start is exit 2.
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "lost the Dask scheduler" in done.stderr and "internal error" not in done.stderr
    # distributed's client logged its failed reconnection above it, two tracebacks read
    # as a crash: ridtrace's one line says it.
    assert "Traceback" not in done.stderr and "distributed.client" not in done.stderr
