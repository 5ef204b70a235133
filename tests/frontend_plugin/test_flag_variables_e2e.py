"""`RIDTRACE_FRONTEND_*` / `RIDTRACE_WORKER_*` on/off variables, read by `ridtrace serve`.

Only ``1``, ``true`` and ``yes`` counted as on; any other value was read as off without a
word: ``RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY=on`` left ``/metrics`` open to anyone, and
``RIDTRACE_FRONTEND_DEBUG_ENDPOINTS=enabled`` left the debug routes off. ``on`` /
``off`` (and ``0``, ``false``, ``no``) are read as the words say; anything else is a
configuration the server does not start with (exit 2, the variable named), as every
other bad ``RIDTRACE_*`` value is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from click.testing import Result

from tests.frontend_plugin.conftest import refused
from tests.support.servers import free_port, run_server


def test_metrics_require_key_on_closes_metrics(tmp_path: Path) -> None:
    port = free_port()
    env = {"RIDTRACE_API_KEYS": "k1", "RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY": "on"}
    argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(port),
            "--worker", "http://127.0.0.1:9", "--log-file", str(tmp_path / "f.jsonl")]
    with run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/health") as server:
        assert httpx.get(server.url + "/metrics").status_code == 401
        scrape = httpx.get(server.url + "/metrics", headers={"x-api-key": "k1"})
        assert scrape.status_code == 200 and "ridtrace_inflight" in scrape.text


@pytest.mark.parametrize(("side", "variable", "value"), [
    ("frontend", "RIDTRACE_FRONTEND_DEBUG_ENDPOINTS", "enabled"),
    ("frontend", "RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY", "required"),
    ("frontend", "RIDTRACE_FRONTEND_DEBUG_ENDPOINTS", "maybe"),
    ("worker", "RIDTRACE_WORKER_DEBUG_ENDPOINTS", "2"),
    ("worker", "RIDTRACE_WORKER_GATE", "closed"),
])
def test_a_flag_variable_that_says_neither_on_nor_off_is_a_usage_error(
    serve_cli: Callable[..., Result], side: str, variable: str, value: str
) -> None:
    # Read as off, the server went on to start (in-process here, click's runner: the
    # command stops with ServeStarted where it would set up its log and serve).
    stderr = refused(serve_cli(side, env={variable: value}))  # exit 2, no crash
    assert f"{variable}={value!r}" in stderr, stderr
