"""``--engine dask`` on a machine where a local cluster cannot start: exit 2, one line.

No usable temporary directory for the workers (here Dask's own setting names one that
cannot exist), a read-only /dev/shm: Dask raises "Cluster failed to start", which was 80
lines of traceback and "internal error" (exit 4), for the machine's trouble.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.extras import require_extra

require_extra("dask")


def test_a_cluster_that_cannot_start_is_a_usage_error(tmp_path: Path) -> None:
    write_logs(tmp_path, SynthSpec(requests=10))
    env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": "/proc/ridtrace-no-such-dir"}
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path), "--engine", "dask", "-q"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        "Error: cannot start a local Dask cluster: Cluster failed to start"), done.stderr
