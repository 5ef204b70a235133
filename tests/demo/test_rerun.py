"""A demo run again into the same --out leaves that run's files, not the last run's too."""

from __future__ import annotations

from pathlib import Path

from ridtrace.demo.plan import make_plan
from ridtrace.demo.run import run_policy


def test_a_second_run_leaves_the_stderr_of_its_own_processes_only(tmp_path: Path) -> None:
    # The demo replaced logs/ on every run but kept adding to stderr/: its workers listen
    # on fresh ports, so after three `make demo` runs stderr/ held six worker-PORT.stderr
    # files beside the two of logs/, and "each process's own stderr" (cli.md) pointed a
    # reader debugging this run at processes of earlier ones.
    for _ in range(2):
        run = run_policy("safe", make_plan(12), tmp_path, concurrency=12, token_delay=0.0)
    workers = {p.stem for p in run.log_dir.glob("worker-*.jsonl")}
    assert len(workers) == 2
    stderr = {p.stem for p in (tmp_path / "safe" / "stderr").iterdir()}
    assert stderr == workers | {"frontend"}
