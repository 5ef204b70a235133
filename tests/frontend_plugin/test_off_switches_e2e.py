"""An on/off setting a variable turned on can be turned off on the command line.

"An option given on the command line wins over its variable", but the on/off options
had no "off": with ``RIDTRACE_FRONTEND_DEBUG_ENDPOINTS=1`` in an environment a whole
stack shares, no process could be started without the debug endpoints (and the API docs)
short of editing that environment. ``--no-debug-endpoints`` and
``--no-metrics-require-key`` say off, as ``--debug-endpoints`` says on.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.servers import free_port, run_server


def test_the_command_line_turns_off_what_a_variable_turned_on(tmp_path: Path) -> None:
    worker_port, frontend_port = free_port(), free_port()
    env = {"RIDTRACE_WORKER_DEBUG_ENDPOINTS": "1", "RIDTRACE_FRONTEND_DEBUG_ENDPOINTS": "1",
           "RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY": "1", "RIDTRACE_API_KEYS": "k1"}
    worker = ["-m", "ridtrace", "serve", "worker", "--port", str(worker_port),
              "--log-file", str(tmp_path / "w.jsonl"), "--no-debug-endpoints"]
    frontend = ["-m", "ridtrace", "serve", "frontend", "--port", str(frontend_port),
                "--worker", f"http://127.0.0.1:{worker_port}", "--log-file",
                str(tmp_path / "f.jsonl"), "--no-debug-endpoints", "--no-metrics-require-key"]
    with run_server(worker, port=worker_port, workdir=tmp_path, env=env,
                    ready_path="/health") as w, \
            run_server(frontend, port=frontend_port, workdir=tmp_path, env=env,
                       ready_path="/health") as f:
        keyed = {"x-api-key": "k1"}
        assert httpx.get(w.url + "/debug/inflight", timeout=30).status_code == 404
        assert httpx.get(f.url + "/debug/inflight", headers=keyed, timeout=30).status_code == 404
        assert httpx.get(f.url + "/openapi.json", headers=keyed, timeout=30).status_code == 404
        assert httpx.get(f.url + "/metrics", timeout=30).status_code == 200  # open again
