"""Ctrl-C during ``--engine dask`` on a local cluster: one line, no workers' tracebacks.

The terminal sends SIGINT to its whole foreground process group: ridtrace and the local
cluster's worker processes. Each worker raised KeyboardInterrupt in its event loop and
printed two tracebacks above ridtrace's "interrupted", which read as a crash. The
workers now ignore the signal and ridtrace stops them.

A preload named in Dask's configuration (which ridtrace keeps beside its own) holds
every block read until the test has sent the signal: the run is mid-read, with its
worker processes up, when the signal comes, whatever the machine's speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.extras import require_extra

require_extra("dask")

_HOLD_READ = '''
import os, time
from pathlib import Path
from ridtrace.forensics.dask_engine import groups

def _held(*args, **kwargs):
    Path(os.environ["RIDTRACE_TEST_READING"]).touch()
    time.sleep(600)

groups.read_blocks = _held
'''


def _terminal_like_sigint() -> None:
    # As a terminal's foreground job: SIGINT at its default (a background job of a
    # non-interactive shell, as the test runner may be, inherits it ignored).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_mid_read_prints_one_line_and_no_worker_tracebacks(tmp_path: Path) -> None:
    write_logs(tmp_path / "logs", SynthSpec(requests=50))
    hold = tmp_path / "hold_read.py"
    hold.write_text(_HOLD_READ)
    reading = tmp_path / "reading"
    env = {**os.environ, "RIDTRACE_TEST_READING": str(reading),
           "DASK_DISTRIBUTED__WORKER__PRELOAD": f"[{str(hold)!r}]"}
    run = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path / "logs"), "--format",
         "json", "--engine", "dask"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_terminal_like_sigint,
    )
    try:
        deadline = time.monotonic() + 120
        while not reading.exists():
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "no block read began"
            time.sleep(0.05)
        os.killpg(run.pid, signal.SIGINT)  # the whole group, as a terminal's Ctrl-C
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()

    assert run.returncode == 130, err
    assert out == ""
    assert err.strip().splitlines() == ["ridtrace: interrupted"], err
