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

import httpx
import pytest

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


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_standard_output_that_refuses_writes_costs_lines_not_the_exit_status(
    tmp_path: Path, unbuffered: str
) -> None:
    # Through stdout's buffer, a refused write stayed buffered and failed again at exit:
    # exit status 120 and "Exception ignored … OSError" after a clean SIGTERM. Under
    # PYTHONUNBUFFERED the line about it named an internal class, not standard output.
    port = free_port()
    with open("/dev/full", "wb") as full:
        worker = subprocess.Popen(
            [sys.executable, "-m", "ridtrace", "serve", "worker", "--port", str(port),
             "--log-file", "-"],
            cwd=tmp_path, stdout=full, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": child_pythonpath(),
                 "PYTHONUNBUFFERED": unbuffered},
        )
    try:
        assert worker.stderr is not None
        # The start-up lines were refused first: the line about it may come before.
        heard: list[str] = []
        while not any("listening on" in line for line in heard):
            heard.append(worker.stderr.readline().decode())
            assert len(heard) <= 3 and heard[-1], heard
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/work", timeout=30, json={
            "request_id": "r-1", "endpoint": "completions", "model": "echo",
            "prompt": "hi", "max_tokens": 2})
        assert answer.status_code == 200
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    said = "".join(heard) + err.decode()
    assert worker.returncode == 0, said
    assert said.count("ridtrace: cannot write to standard output: No space left on "
                      "device; log lines are being lost") == 1, said
    assert "Exception ignored" not in said and "Traceback" not in said, said
