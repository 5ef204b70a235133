"""A ``RIDTRACE_*`` setting the demo's processes refuse is bad usage, named in one line.

``ridtrace serve`` exits 2 naming such a variable; the demo, which starts its processes
with its shell's environment, ended in a traceback and "internal error (exit 4); please
report it", after clearing the last run's output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ridtrace.demo.processes import RefusedConfiguration, _wait_ready
from tests.conftest import demo_argv
from tests.support.otlp_receiver import otlp_receiver


def _env(variables: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIDTRACE_")}
    return {**env, **variables}


@pytest.mark.parametrize("variables", [
    {"RIDTRACE_ID_GENERATOR": "bogus"},
    {"RIDTRACE_FRONTEND_TOTAL_TIMEOUT": "nan"},
    {"RIDTRACE_WORKER_TOKEN_DELAY": "-1"},
])
def test_a_refused_variable_stops_the_demo_before_it_starts(
    tmp_path: Path, variables: dict[str, str]
) -> None:
    out = tmp_path / "out"
    done = subprocess.run(demo_argv(out), capture_output=True, text=True, timeout=120,
                          env=_env(variables))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    assert next(iter(variables)) in done.stderr
    assert not out.exists()  # stopped before any process was started


def test_a_batch_delay_that_is_no_number_stops_the_demo_before_it_starts(tmp_path: Path) -> None:
    # Read where a span processor is built: the demo's callers built theirs first and
    # ended the demo in a traceback and exit 4.
    variable = "OTEL_BSP_SCHEDULE_DELAY"
    out = tmp_path / "out"
    with otlp_receiver() as receiver:
        env = _env({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                    "OTEL_METRICS_EXPORTER": "none", variable: "soon"})
        done = subprocess.run(demo_argv(out), capture_output=True, text=True, timeout=120,
                              env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    assert variable in done.stderr
    assert not out.exists()


def test_a_process_that_refuses_its_configuration_is_bad_usage(tmp_path: Path) -> None:
    # What the demo does not check itself, a process of the stack may still refuse at
    # start-up (its exit 2): the line it printed is the demo's, not a RuntimeError.
    stderr_path = tmp_path / "worker-1.stderr"
    with stderr_path.open("wb") as stderr:
        refusing = subprocess.Popen(
            [sys.executable, "-c", "import sys; "
             "print('Error: RIDTRACE_X: not a setting', file=sys.stderr); sys.exit(2)"],
            stderr=stderr)
        refusing.wait(timeout=60)
    with (httpx.Client(timeout=1.0) as client,
          pytest.raises(RefusedConfiguration, match=r"^worker-1: RIDTRACE_X: not a setting$")):
        _wait_ready(client, "http://127.0.0.1:9", refusing, stderr_path)
