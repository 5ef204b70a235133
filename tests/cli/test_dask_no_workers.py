"""``--engine dask`` on a scheduler with no worker left: a clear error in bounded time.

Dask never fails a task for want of a worker: the scheduler holds it until one joins,
and the command waited with it, forever. The scheduler and workers here are real
processes, as `dask scheduler` and `dask worker` start them; a worker is gone (SIGKILL,
as the OOM killer sends it) before the test runs the command, or kills itself when it
reads a block, so no timing is involved.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.dask_processes import DaskProcesses, dask_processes
from tests.support.extras import require_extra
from tests.support.servers import stop_process

require_extra("dask")

# A bound on the command only: without the fix it never ended, so this fails it.
HANG = 120
NO_WORKERS = "no Dask worker"

_DIE_ON_READ = '''
import os, signal
from ridtrace.forensics.dask_engine import groups

def _die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # no nanny: nobody starts it again

groups.read_blocks = _die
'''


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[DaskProcesses]:
    """A scheduler of its own, which has never had a worker."""
    with dask_processes(tmp_path) as processes:
        yield processes


@pytest.fixture(scope="module")
def _scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskProcesses]:
    with dask_processes(tmp_path_factory.mktemp("dask-scheduler")) as processes:
        yield processes


@pytest.fixture
def cluster(_scheduler: DaskProcesses) -> Iterator[DaskProcesses]:
    """The module's scheduler (one process start, not one per test), with no worker at
    the start; the workers a test started are stopped after it, and the scheduler has
    seen them go before the next test."""
    _scheduler.wait_for(lambda n: n == 0)
    first = len(_scheduler.started)
    try:
        yield _scheduler
    finally:
        for process in _scheduler.started[first:]:
            stop_process(process)
        del _scheduler.started[first:]
        _scheduler.wait_for(lambda n: n == 0)


def _analyze_on(address: str, tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    write_logs(tmp_path / "logs", SynthSpec(requests=50))
    return subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path / "logs"), "--format", "json",
         "--engine", "dask", "--scheduler", address, *options],
        capture_output=True, text=True, timeout=HANG,
    )


def _assert_no_workers_error(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # no report: nothing was read
    assert NO_WORKERS in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "--no-workers-timeout" in done.stderr  # what the user can change


def test_a_scheduler_that_never_had_a_worker(fresh: DaskProcesses, tmp_path: Path) -> None:
    started = time.monotonic()
    done = _analyze_on(fresh.address, tmp_path, "--no-workers-timeout", "1s")
    _assert_no_workers_error(done)
    assert "for 1s" in done.stderr, done.stderr
    assert time.monotonic() - started < HANG


def test_every_worker_killed_before_the_run(cluster: DaskProcesses, tmp_path: Path) -> None:
    worker = cluster.worker("--no-nanny")
    os.kill(worker.pid, signal.SIGKILL)
    cluster.wait_for(lambda n: n == 0)
    _assert_no_workers_error(_analyze_on(cluster.address, tmp_path, "--no-workers-timeout", "1s"))


def test_the_last_worker_dying_mid_run(cluster: DaskProcesses, tmp_path: Path) -> None:
    # Dask's default allowed-failures (3): the task a dead worker held waits for another
    # worker rather than failing, and there is none.
    preload = tmp_path / "die_on_read.py"
    preload.write_text(_DIE_ON_READ)
    cluster.worker("--no-nanny", "--preload", str(preload))
    _assert_no_workers_error(_analyze_on(cluster.address, tmp_path, "--no-workers-timeout", "1s"))


def test_a_worker_joining_within_the_timeout_runs_the_analysis(
    cluster: DaskProcesses, tmp_path: Path,
) -> None:
    # The timeout is for a cluster with no worker, not a deadline on the run: a worker
    # that joins after the command started (an adaptive cluster scaling up) does the work.
    write_logs(tmp_path / "logs", SynthSpec(requests=50))
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path / "logs"), "--format",
         "json", "--engine", "dask", "--scheduler", cluster.address,
         "--no-workers-timeout", "5m"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        cluster.worker("--no-nanny")
        out, err = process.communicate(timeout=HANG)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    # The local engine's report, in-process: only the Dask run needs to be a command.
    want = CliRunner().invoke(main, ["analyze", str(tmp_path / "logs"), "--format", "json"])
    assert (process.returncode, out) == (want.exit_code, want.stdout), err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-workers-timeout", "10s"], "--no-workers-timeout needs --engine dask"),
        (["--engine", "dask", "--no-workers-timeout", "soon"], "not a positive duration"),
        (["--engine", "dask", "--no-workers-timeout", "0"], "not a positive duration"),
    ],
)
def test_bad_timeouts_are_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    write_logs(tmp_path / "logs", SynthSpec(requests=5))
    for command in ("analyze", "audit"):
        done = CliRunner().invoke(main, [command, str(tmp_path / "logs"), *args])
        assert done.exit_code == 2 and message in done.stderr, done.stderr
