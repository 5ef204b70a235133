"""A request its frontend never answered (killed mid-stream): no 0 µs span in Jaeger, no
'no fingerprints' in `ridtrace trace`."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from ridtrace.contract import WORKER_START
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from tests.support.inprocess_cli import run_in_process
from tests.support.servers import free_port, run_server

CHAT = {"model": "echo", "stream": True, "max_tokens": 200,
        "messages": [{"role": "user", "content": "a long answer please"}]}


@pytest.fixture(scope="module")
def killed_mid_stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Logs of a real frontend and worker, the frontend SIGKILLed while it streamed an
    answer; and that request's server id."""
    tmp_path = tmp_path_factory.mktemp("killed")
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
        request_id = answer.headers["x-server-request-id"]
        chunks = answer.iter_lines()
        next(chunks)
        next(chunks)  # the stream is under way: the frontend is mid-request
        os.killpg(front.process.pid, signal.SIGKILL)
        front.process.wait(timeout=10)
    return logs, request_id


def _ridtrace(*args: str) -> str:
    # In-process: the reports are the subject, not the process (the servers above are).
    code, stdout, stderr = run_in_process(list(args), env={"COLUMNS": "100"})
    assert code == 0, stderr
    return stdout


def test_a_frontend_killed_mid_stream_leaves_a_span_with_a_warning(
    killed_mid_stream: tuple[Path, str], tmp_path: Path
) -> None:
    # The frontend's request.start was its span's only line, so the export wrote a span
    # of duration 0, no outcome, no error flag: the request the crash cut off, the one an
    # incident is about, looked like an instant success in Jaeger. Live export never
    # sends a span that did not end; a span built from logs says it has no end.
    logs, _ = killed_mid_stream
    out = tmp_path / "traces.json"
    _ridtrace("export", "jaeger", str(logs), "-o", str(out))
    spans = [s for t in json.loads(out.read_text())["data"] for s in t["spans"]]
    frontend = [s for s in spans if s["operationName"] == "POST /v1/chat/completions"]
    assert len(frontend) == 1
    assert frontend[0]["warnings"] and "no answer logged" in frontend[0]["warnings"][0]
    # The worker's own span ended (the frontend's hang-up cancelled it): no warning.
    workers = [s for s in spans if s["operationName"].startswith("worker")]
    assert workers and all(s["warnings"] is None for s in workers)


def test_trace_says_the_request_was_never_answered(killed_mid_stream: tuple[Path, str]) -> None:
    # Its verdict was 'no fingerprints', which cli.md explains as logs that carry none
    # (Dynamo's, a service without the plugin): the reader went looking for a missing
    # plugin, not for the crash. The fingerprints are on request.end, never written.
    logs, request_id = killed_mid_stream
    doc = json.loads(_ridtrace("trace", request_id, str(logs), "--format", "json"))
    assert [r["verdict"] for r in doc["requests"]] == ["no answer logged"]
    assert "verdict: no answer logged" in _ridtrace("trace", request_id, str(logs))


@pytest.fixture(scope="module")
def worker_killed_mid_stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Logs of a real frontend and worker, the worker SIGKILLed while it streamed an
    answer (the frontend answered its caller with the stream's error)."""
    tmp_path = tmp_path_factory.mktemp("worker-killed")
    logs = tmp_path / "logs"
    worker_port, frontend_port = free_port(), free_port()
    worker_log = logs / f"worker-{worker_port}.jsonl"
    worker_argv = ["-m", "ridtrace", "serve", "worker", "--port", str(worker_port),
                   "--token-delay", "0.05",
                   "--log-file", str(worker_log)]
    frontend_argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(frontend_port),
                     "--worker", f"http://127.0.0.1:{worker_port}",
                     "--log-file", str(logs / "frontend.jsonl")]
    with (run_server(worker_argv, port=worker_port, workdir=tmp_path,
                     ready_path="/health") as worker,
          run_server(frontend_argv, port=frontend_port, workdir=tmp_path,
                     ready_path="/health") as front,
          httpx.stream("POST", f"{front.url}/v1/chat/completions", json=CHAT,
                       timeout=30) as answer):
        chunks = answer.iter_lines()
        next(chunks)
        next(chunks)  # the worker is mid-stream
        # Its worker.start line is written at the next turn of its event loop, which can
        # come after its first token left: under load the kill landed between the two,
        # and the logs held no worker span at all (a truthful export, not this case).
        _wait_for_line(worker_log, WORKER_START)
        os.killpg(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)
        assert "worker connection lost" in "".join(chunks)  # the caller was told
    return logs


def _wait_for_line(log: Path, event: str) -> None:
    """Until ``log`` holds a line of ``event`` (a condition with a deadline)."""
    deadline = time.monotonic() + 10
    while f'"event":"{event}"' not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"no {event} line in {log}"
        time.sleep(0.01)


def test_a_worker_killed_mid_stream_leaves_a_span_with_a_warning(
    worker_killed_mid_stream: Path, tmp_path: Path
) -> None:
    # The worker's worker.start was its span's only line: the export wrote a worker span
    # of 0 µs with no outcome and no error flag, the work the crash cut off drawn as an
    # instant success under a caller whose stream failed.
    out = tmp_path / "traces.json"
    _ridtrace("export", "jaeger", str(worker_killed_mid_stream), "-o", str(out))
    spans = [s for t in json.loads(out.read_text())["data"] for s in t["spans"]]
    workers = [s for s in spans if s["operationName"].startswith("worker")]
    assert len(workers) == 1
    assert workers[0]["warnings"] and "no end logged" in workers[0]["warnings"][0]
    # The frontend answered (its stream's error): its span ended.
    frontend = [s for s in spans if s["operationName"] == "POST /v1/chat/completions"]
    assert len(frontend) == 1 and frontend[0]["warnings"] is None


def test_a_dynamo_generate_step_of_an_answered_request_has_no_warning(tmp_path: Path) -> None:
    # Dynamo logs the Unlinked error on the request's `generate` span, a child of its
    # `http-request` span, which answered 500: the step was said to have "no answer
    # logged ... its process stopped, or lines were lost", at every incident of the seed.
    write_dynamo_logs(tmp_path / "logs", DynamoSpec(requests=60, duplicates=1, cancelled=1,
                                                    bad_lines=0))
    out = tmp_path / "traces.json"
    _ridtrace("export", "jaeger", str(tmp_path / "logs"), "-o", str(out), "-q")
    traces = json.loads(out.read_text())["data"]
    steps = [(s, t) for t in traces for s in t["spans"]
             if any(e["fields"][0]["value"] == "response.unlinked" for e in s["logs"])]
    assert len(steps) == 2  # a colliding pair's loser, a caller that went away
    for step, trace in steps:
        (parent,) = [p for p in trace["spans"] if p["spanID"] == step["references"][0]["spanID"]]
        assert parent["warnings"] is None  # the request answered (its 500)
        assert step["warnings"] is None, step["warnings"]


def test_a_dynamo_generate_step_of_an_answered_request_has_an_end_in_trace(
    tmp_path: Path,
) -> None:
    # The same step in `ridtrace trace`'s waterfall read "no end", which says a process
    # was killed mid-request or the request is still in flight, beside its caller's 500.
    write_dynamo_logs(tmp_path / "logs", DynamoSpec(requests=60, duplicates=1, cancelled=1,
                                                    bad_lines=0))
    code, report, _ = run_in_process(["analyze", str(tmp_path / "logs"), "--format", "json"])
    assert code == 1
    (duplicate,) = [f for f in json.loads(report)["findings"]
                    if f["kind"] == "duplicate_in_flight"]
    rows = _ridtrace("trace", duplicate["request_id"], str(tmp_path / "logs")).splitlines()
    steps = [r for r in rows if "generate" in r]
    assert steps, rows
    assert not any(r.rstrip().endswith("no end") for r in steps), rows


def test_a_frontend_called_by_another_frontend_is_still_judged(tmp_path: Path) -> None:
    # A gateway in front of an inner service, both with the middleware: the inner
    # request (its own request.start) was cut off, and is no step of its caller.
    from tests.forensics.helpers import rt, rt_request, ts

    trace = "ab" * 16
    outer = rt_request("1" * 16, "outer", 0.0, 0.5, trace=trace)
    inner = rt("request.start", time=ts(0.1), request_id="inner", trace_id=trace,
               span_id="2" * 16, parent_span_id="1" * 16, method="POST",
               path="/v1/chat/completions", client="10.0.0.2:5000")
    (tmp_path / "app.jsonl").write_text("\n".join([outer[0], inner, outer[1]]) + "\n")
    out = tmp_path / "traces.json"
    _ridtrace("export", "jaeger", str(tmp_path / "app.jsonl"), "-o", str(out), "-q")
    spans = {s["spanID"]: s for t in json.loads(out.read_text())["data"] for s in t["spans"]}
    assert spans["1" * 16]["warnings"] is None
    assert spans["2" * 16]["warnings"] and "no answer logged" in spans["2" * 16]["warnings"][0]


def test_the_waterfall_says_the_killed_request_has_no_end(
    killed_mid_stream: tuple[Path, str],
) -> None:
    # Its bar ended at request.start, its only line: "0.0" ms read as an instant answer.
    logs, request_id = killed_mid_stream
    rows = _ridtrace("trace", request_id, str(logs)).splitlines()
    frontend = next(r for r in rows if r.startswith(" #1 frontend"))
    worker = next(r for r in rows if r.lstrip().startswith("worker"))
    assert frontend.rstrip().endswith("no end"), frontend
    assert not worker.rstrip().endswith("no end"), worker
