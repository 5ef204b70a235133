"""A `RIDTRACE_FRONTEND_*` / `RIDTRACE_WORKER_*` variable that names no setting.

The docs say every `FrontendSettings` field can be set through a variable named after
it, and `api_keys` is one: an operator who wrote ``RIDTRACE_FRONTEND_API_KEYS=sk-…``
(the secrets' variables are ``RIDTRACE_API_KEYS`` and ``RIDTRACE_WORKER_TOKEN``) got a
frontend that required no key on any route, without a word. A typo
(``RIDTRACE_FRONTEND_METRICS_REQUIRES_KEY``) left `/metrics` open the same way. Such a
variable is a configuration the server does not start with: exit 2, the variable named.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ridtrace.frontend_plugin import FrontendSettings, WorkerSettings


def _serve(tmp_path: Path, side: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    where = ["--worker", "http://127.0.0.1:9"] if side == "frontend" else []
    with socket.socket() as taken:  # ignored, the server got as far as its bind: exit 3
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        return subprocess.run(
            [sys.executable, "-m", "ridtrace", "serve", side, "--port",
             str(taken.getsockname()[1]), *where, "--log-file", str(tmp_path / "x.jsonl")],
            capture_output=True, text=True, timeout=60, env={**os.environ, **env},
        )


@pytest.mark.parametrize(("side", "variable", "meant"), [
    ("frontend", "RIDTRACE_FRONTEND_API_KEYS", "RIDTRACE_API_KEYS"),
    # Singular, as OPENAI_API_KEY is: ignored, the frontend served every route keyless.
    ("frontend", "RIDTRACE_API_KEY", "RIDTRACE_API_KEYS"),
    ("frontend", "RIDTRACE_API_TOKEN", None),
    ("frontend", "RIDTRACE_FRONTEND_WORKER_TOKEN", "RIDTRACE_WORKER_TOKEN"),
    ("frontend", "RIDTRACE_FRONTEND_METRICS_REQUIRES_KEY", None),
    ("worker", "RIDTRACE_WORKER_DEBUG_ENDPOINT", None),
])
def test_a_variable_that_names_no_setting_is_a_usage_error(
    tmp_path: Path, side: str, variable: str, meant: str | None
) -> None:
    done = _serve(tmp_path, side, {variable: "sk-live-1234"})
    assert done.returncode == 2, done.stderr
    assert variable in done.stderr and "Traceback" not in done.stderr
    if meant is not None:
        assert meant in done.stderr
    assert "sk-live-1234" not in done.stderr  # it may be a secret


def test_each_side_leaves_the_other_sides_variables_alone() -> None:
    # One environment for the whole stack (a compose file's env_file) is usual.
    env = {"RIDTRACE_WORKER_TOKEN": "t0k", "RIDTRACE_WORKER_TOKEN_DELAY": "0.01",
           "RIDTRACE_FRONTEND_TOTAL_TIMEOUT": "60", "RIDTRACE_FRONTEND_WORKERS": "http://w:1",
           "RIDTRACE_API_KEYS": "k1", "RIDTRACE_FRONTEND_UNSET": ""}
    assert FrontendSettings.from_env(env).worker_token == "t0k"
    assert WorkerSettings.from_env(env).token_delay == 0.01
