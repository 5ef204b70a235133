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

from tests.support.servers import child_pythonpath, free_port, stop_process, wait_until_serving


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


def test_a_container_log_of_merged_streams_is_all_log_lines(tmp_path: Path) -> None:
    # A container runtime keeps stdout and stderr in one log. The serve's own lines on
    # stderr (listening, an empty secret's variable) were plain text there: bad lines,
    # and in a pod log under 100 lines over 1 %, so `analyze` said exit 3, incomplete.
    env = {**os.environ, "PYTHONPATH": child_pythonpath(), "RIDTRACE_WORKER_TOKEN": ""}
    worker_port, frontend_port = free_port(), free_port()
    logs = {name: tmp_path / f"{name}.log" for name in ("worker", "frontend")}
    argvs = {
        "worker": ["worker", "--port", str(worker_port)],
        "frontend": ["frontend", "--port", str(frontend_port),
                     "--worker", f"http://127.0.0.1:{worker_port}"],
    }
    processes = []
    try:
        for name, argv in argvs.items():
            with logs[name].open("wb") as log:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "ridtrace", "serve", *argv, "--log-file", "-"],
                    cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env=env,
                    start_new_session=True))
            wait_until_serving(f"http://127.0.0.1:{argv[2]}", processes[-1])
        answer = httpx.post(f"http://127.0.0.1:{frontend_port}/v1/completions", timeout=30,
                            json={"model": "echo", "prompt": "hi", "max_tokens": 2})
        assert answer.status_code == 200, answer.text
    finally:
        for process in reversed(processes):
            stop_process(process)
    for name, path in logs.items():
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert all(line["schema"] == "ridtrace/1" for line in lines), name
        said = [line["message"] for line in lines if line["logger"] == "ridtrace.serve"]
        assert any("listening on" in text for text in said), (name, said)
        assert any("RIDTRACE_WORKER_TOKEN is empty" in text for text in said), (name, said)
    analyzed = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", *map(str, logs.values())],
        capture_output=True, text=True, env=env, timeout=120)
    assert analyzed.returncode == 0, analyzed.stdout + analyzed.stderr
    assert "bad line" not in analyzed.stderr, analyzed.stderr
