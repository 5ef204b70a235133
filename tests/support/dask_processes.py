"""A real `dask scheduler` and `dask worker` processes on loopback, for the CLI tests of
``--engine dask`` on clusters that fail: each test starts what it needs, and every
process is stopped at the end whatever happened."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.servers import free_port, stop_process


class DaskProcesses:
    """A scheduler at `address` and the workers started on it, all real processes."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.env = {**os.environ, **(env or {})}
        self.address = f"tcp://127.0.0.1:{free_port()}"
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, *argv: str, env: dict[str, str] | None = None,
              python: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
        """`python -m ARGV` on loopback; `python`: the interpreter's own options first."""
        self.started.append(subprocess.Popen(
            [sys.executable, *python, "-m", *argv, "--host", "127.0.0.1",
             "--dashboard-address", "127.0.0.1:0"], cwd=self.workdir,
            env={**self.env, **(env or {})}, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))
        return self.started[-1]

    def start_scheduler(self) -> subprocess.Popen[bytes]:
        """The scheduler (also `scheduler_process`), once it answers."""
        self.scheduler_process = self.start("distributed.cli.dask_scheduler", "--port",
                                            self.address.rsplit(":")[-1])
        self.wait_for(lambda n: n >= 0)
        return self.scheduler_process

    def worker(self, *options: str, env: dict[str, str] | None = None,
               python: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
        """A one-thread worker, once the scheduler has one (`--no-nanny`: nothing
        restarts it)."""
        process = self.start("distributed.cli.dask_worker", self.address, "--nthreads", "1",
                             *options, env=env, python=python)
        self.wait_for(lambda n: n >= 1)
        return process

    def wait_for(self, workers: Callable[[int], bool]) -> None:
        """Until the scheduler's number of workers satisfies `workers`."""
        import distributed

        with distributed.Client(self.address, timeout="30s") as client:
            deadline = time.monotonic() + 60
            while not workers(client.scheduler_info(n_workers=0)["n_workers"]):
                assert time.monotonic() < deadline, "the scheduler's workers did not change"
                time.sleep(0.1)


@contextmanager
def dask_processes(workdir: Path, env: dict[str, str] | None = None) -> Iterator[DaskProcesses]:
    """`DaskProcesses` with its scheduler started; every process stopped on the way out."""
    processes = DaskProcesses(workdir, env)
    try:
        processes.start_scheduler()
        yield processes
    finally:
        for process in reversed(processes.started):
            stop_process(process)
