"""`ridtrace serve … --log-file -` logs its JSON lines to standard output.

`-` is standard output to every `-o` and standard input among the PATHs, and a
container's service logs to its standard output (the runtime's files, which `analyze`
unwraps, are made from it). `--log-file -` wrote a file named "-" in the working
directory and the container's log stayed empty.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.servers import child_pythonpath, free_port


def test_log_file_dash_is_standard_output(tmp_path: Path) -> None:
    port = free_port()
    worker = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "serve", "worker", "--port", str(port),
         "--log-file", "-"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": child_pythonpath()},
    )
    try:
        assert worker.stderr is not None
        listening = worker.stderr.readline().decode()  # written once it listens
        assert f"listening on http://127.0.0.1:{port}" in listening, listening
        assert "logging to standard output" in listening
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert not (tmp_path / "-").exists()
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert lines, err
    assert all(line["schema"] == "ridtrace/1" and line["service"].startswith("worker-")
               for line in lines)
    assert any("Started server process" in line["message"] for line in lines)
