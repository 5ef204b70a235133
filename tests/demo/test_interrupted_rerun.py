"""A demo stopped part way leaves no earlier run's results beside its own logs."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import demo_argv
from tests.support.extras import missing_extra_module

# The demo draws its plot only with the plot extra installed (ridtrace/demo/proof.py).
RESULTS = ("calls.json", "report.json", "traces.json",
           *(("deprecated-headers.png",) if missing_extra_module("plot") is None else ()))


def _worker_logs(out: Path) -> set[str]:
    return {p.name for p in (out / "legacy" / "logs").glob("worker-*.jsonl")}


def test_ctrl_c_on_a_rerun_leaves_no_report_of_the_last_run(
    tmp_path: Path, demo_completed: subprocess.CompletedProcess[str], demo_output: Path
) -> None:
    # Stopped during its legacy traffic, a second `make demo` left legacy/report.json and
    # calls.json of the run before it beside its own new logs (evidence file:line into
    # worker files that no longer exist), and safe/ whole from that run: results the
    # user would read as this run's.
    # The run before is the session's real demo run (tests/conftest.py), copied: the
    # same files a first `make demo` leaves, without a demo run of this test's own.
    out = tmp_path / "out"
    assert demo_completed.returncode == 0, demo_completed.stdout[-2000:]
    shutil.copytree(demo_output, out)
    assert all((out / "safe" / name).exists() for name in RESULTS)
    earlier_workers = _worker_logs(out)

    # 12 calls at a time: the traffic outlasts the signal as surely as 600 at once did.
    demo = subprocess.Popen(demo_argv(out, requests=600, concurrency=12),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    frontend_log = out / "legacy" / "logs" / "frontend.jsonl"
    deadline = time.monotonic() + 120
    # This run's stack is up once its own workers' logs exist and a request came in.
    while not (_worker_logs(out) - earlier_workers and frontend_log.exists()
               and b"request.start" in frontend_log.read_bytes()):
        assert demo.poll() is None, "demo ended before traffic started"
        assert time.monotonic() < deadline, "traffic never started"
        time.sleep(0.05)
    demo.send_signal(signal.SIGINT)
    assert demo.wait(timeout=60) == 130
    left = sorted(str(p.relative_to(out)) for policy in ("legacy", "safe")
                  for name in RESULTS if (p := out / policy / name).exists())
    assert left == []
