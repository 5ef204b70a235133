"""``--engine dask --scheduler`` on a cluster whose scheduler or worker has no ridtrace.

docs/scale-out.md asked for ridtrace on the workers only; the scheduler unpickles the
task graph, so one without it ended the command in distributed's deserialization
traceback (exit 4, "please report it"), and a worker without it died on its first task
while the command waited for a worker and blamed the worker's start. Both are named
now, before any work is sent. The processes are real `dask scheduler` / `dask worker`
processes, run by this interpreter without its site packages (`-S`), given links to
every one of them but ridtrace's: the libraries importable, ridtrace not.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.dask_processes import DaskProcesses
from tests.support.extras import require_extra
from tests.support.servers import stop_process

require_extra("dask")

@pytest.fixture(scope="module")
def without_ridtrace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose ``python -S`` imports this one's libraries but not ridtrace:
    a folder of links to every entry of its site packages but ridtrace's own, whether
    ridtrace is installed editable or into them (a wheel, the sdist's tests)."""
    libraries = tmp_path_factory.mktemp("without-ridtrace")
    for folder in dict.fromkeys(sysconfig.get_paths()[name] for name in ("purelib", "platlib")):
        for entry in Path(folder).iterdir():
            own = entry.name.lower().replace("-", "_")
            if own.startswith(("ridtrace", "__editable__")) or (libraries / entry.name).exists():
                continue
            (libraries / entry.name).symlink_to(entry)
    env = {"PYTHONPATH": str(libraries)}
    done = subprocess.run([sys.executable, "-S", "-c", "import distributed, ridtrace"],
                          env=env, capture_output=True, text=True)
    assert "No module named 'ridtrace'" in done.stderr, done.stderr
    return env


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DaskProcesses]:
    processes = DaskProcesses(tmp_path)
    try:
        yield processes
    finally:
        for process in reversed(processes.started):
            stop_process(process)


def _analyze_on(address: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    write_logs(tmp_path / "logs", SynthSpec(requests=20))
    return subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path / "logs"), "--format", "json",
         "--engine", "dask", "--scheduler", address, "--no-workers-timeout", "60s"],
        capture_output=True, text=True, timeout=120,
    )


def test_a_scheduler_without_ridtrace_is_named(
    cluster: DaskProcesses, tmp_path: Path, without_ridtrace: dict[str, str],
) -> None:
    cluster.scheduler_process = cluster.start(
        "distributed.cli.dask_scheduler", "--port", cluster.address.rsplit(":")[-1],
        env=without_ridtrace, python=("-S",))
    cluster.wait_for(lambda n: n >= 0)
    cluster.worker()
    done = _analyze_on(cluster.address, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    assert "ridtrace is not installed on the scheduler of the Dask cluster" in done.stderr


def test_a_worker_without_ridtrace_is_named_and_left_running(
    cluster: DaskProcesses, tmp_path: Path, without_ridtrace: dict[str, str],
) -> None:
    cluster.start_scheduler()
    lacking = cluster.worker("--no-nanny", env=without_ridtrace, python=("-S",))
    done = _analyze_on(cluster.address, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    assert "ridtrace is not installed on worker tcp://127.0.0.1:" in done.stderr, done.stderr
    assert "ridtrace[dask]==" in done.stderr
    assert lacking.poll() is None  # nothing was sent to it to die on
