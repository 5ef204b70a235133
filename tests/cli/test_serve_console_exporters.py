"""`ridtrace serve … --log-file -` with OpenTelemetry's console exporters.

`OTEL_TRACES_EXPORTER=console` / `OTEL_METRICS_EXPORTER=console` print each span and
metric export as indented JSON, to standard output by default: with the JSON lines
going there too, a container's log was mostly lines that are no log line (685 of 694
in one short run), which a log shipper and `ridtrace analyze` read as broken lines.
The exporters write to standard error when standard output carries the JSON lines.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.servers import child_pythonpath, free_port


def test_console_exporters_keep_out_of_the_json_lines_on_stdout(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ, "PYTHONPATH": child_pythonpath(), "OTEL_EXPORTER_OTLP_ENDPOINT": "",
        "OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "serve", "worker", "--port", str(port),
         "--log-file", "-"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    try:
        assert worker.stderr is not None
        listening = worker.stderr.readline().decode()  # written once it listens
        assert f"listening on http://127.0.0.1:{port}" in listening, listening
        response = httpx.get(
            f"http://127.0.0.1:{port}/health", headers={"x-request-id": "console-1"}, timeout=30
        )
        assert response.status_code == 200
    finally:
        # The stop flushes both exporters: everything is written once the process ends.
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert any("Started server process" in line for line in lines)
    for line in lines:
        assert json.loads(line)["schema"] == "ridtrace/1", line
    printed = err.decode()
    assert '"x_request_id": "console-1"' in printed  # the span, as the exporter prints it
    assert '"name": "ridtrace.requests"' in printed  # the metrics
