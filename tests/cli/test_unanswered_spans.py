"""A request its frontend never answered (killed mid-stream) is no 0 µs span in Jaeger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.servers import free_port, run_server

CHAT = {"model": "echo", "stream": True, "max_tokens": 200,
        "messages": [{"role": "user", "content": "a long answer please"}]}


def test_a_frontend_killed_mid_stream_leaves_a_span_with_a_warning(tmp_path: Path) -> None:
    # The frontend's request.start was its span's only line, so the export wrote a span
    # of duration 0, no outcome, no error flag: the request the crash cut off, the one an
    # incident is about, looked like an instant success in Jaeger. Live export never
    # sends a span that did not end; a span built from logs says it has no end.
    logs = tmp_path / "logs"
    worker_port, frontend_port = free_port(), free_port()
    worker = ["-m", "ridtrace", "serve", "worker", "--port", str(worker_port),
              "--token-delay", "0.05", "--log-file", str(logs / f"worker-{worker_port}.jsonl")]
    frontend_argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(frontend_port),
                     "--worker", f"http://127.0.0.1:{worker_port}",
                     "--log-file", str(logs / "frontend.jsonl")]
    with (run_server(worker, port=worker_port, workdir=tmp_path, ready_path="/health"),
          run_server(frontend_argv, port=frontend_port, workdir=tmp_path,
                     ready_path="/health") as front,
          httpx.stream("POST", f"{front.url}/v1/chat/completions", json=CHAT,
                       timeout=30) as answer):
        chunks = answer.iter_lines()
        next(chunks)
        next(chunks)  # the stream is under way: the frontend is mid-request
        os.killpg(front.process.pid, signal.SIGKILL)
        front.process.wait(timeout=10)
    out = tmp_path / "traces.json"
    done = subprocess.run([sys.executable, "-m", "ridtrace", "export", "jaeger", str(logs),
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    spans = [s for t in json.loads(out.read_text())["data"] for s in t["spans"]]
    frontend = [s for s in spans if s["operationName"] == "POST /v1/chat/completions"]
    assert len(frontend) == 1
    assert frontend[0]["warnings"] and "no answer logged" in frontend[0]["warnings"][0]
    # The worker's own span ended (the frontend's hang-up cancelled it): no warning.
    workers = [s for s in spans if s["operationName"].startswith("worker")]
    assert workers and all(s["warnings"] is None for s in workers)
