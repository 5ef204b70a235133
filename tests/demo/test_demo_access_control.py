"""The demo's frontend asks for no API key, whatever the shell's ``RIDTRACE_API_KEYS``.

docs/cli.md advises the variable over ``--api-key`` for secrets, and a shell that
exported it for ``ridtrace serve`` then ran the demo: its callers send no key, every
call got 401, and the demo failed both runs (exit 1, "safe run not clean").
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import DEMO_REQUESTS, demo_argv


def test_the_demo_runs_clean_with_api_keys_in_the_environment(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RIDTRACE_", "OTEL_"))},
           "RIDTRACE_API_KEYS": "k1,k2", "RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY": "true"}
    done = subprocess.run(demo_argv(tmp_path / "out", requests=DEMO_REQUESTS), capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "safe policy served every caller its own output" in done.stdout


def test_the_demo_matches_its_calls_whatever_id_headers_the_shell_names(tmp_path: Path) -> None:
    # With RIDTRACE_RESPONSE_ID_HEADER exported, the stack answered the server id under
    # that name, the callers (reading x-server-request-id) got none, no finding matched
    # its call, and the demo said FAIL on a run whose every crossed stream was found.
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RIDTRACE_", "OTEL_"))},
           "RIDTRACE_RESPONSE_ID_HEADER": "x-rid", "RIDTRACE_CLIENT_ID_HEADER": "x-cid",
           "OTEL_PROPAGATORS": "none"}
    done = subprocess.run(demo_argv(tmp_path / "out", requests=60), capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "FAIL" not in done.stdout
