"""A request whose `request.start` is not in the logs (rotated away, or lost) is not
shown by `ridtrace trace` as an answer in 0 ms.

Its `request.end` was its frontend span's only line: the span started and ended at that
line's time, and the block said `0.0 ms` for a request that took as long as the line's
own `duration_ms` says, or, without one, for a request whose start nobody knows.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.inprocess_cli import run_in_process
from tests.support.servers import free_port, run_server

CHAT = {"model": "echo", "max_tokens": 40,
        "messages": [{"role": "user", "content": "count to forty, word by word"}]}


def _frontend_lines(log: Path, calls: tuple[str, ...],
                    deadline: float = 30.0) -> list[dict[str, Any]]:
    """The frontend's lines once the request.end line of each of `calls` (client ids) is
    written (the sink writes a line at the event loop's next turn, after the answer may
    have reached the caller). Counted by id: the readiness probes' `/health` requests end
    too, and counting every request.end returned before the last call's was written."""
    until = time.monotonic() + deadline
    while True:
        text = log.read_text() if log.exists() else ""
        lines = [json.loads(line) for line in text[:text.rfind("\n") + 1].splitlines()]
        ended = {line.get("x_request_id") for line in lines if line.get("event") == "request.end"}
        if ended.issuperset(calls):
            return lines
        if time.monotonic() > until:
            raise AssertionError(f"request.end of {calls} not written in {deadline} s")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def rotated_away(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any],
                                                                    dict[str, Any]]:
    """Logs of a real frontend and worker after two chat calls, the frontend's log
    without the calls' request.start lines (they were in a part not given), the second
    call's request.end also without its duration_ms; and those two request.end lines."""
    tmp_path = tmp_path_factory.mktemp("lone-end")
    served = tmp_path / "served"
    worker_port, frontend_port = free_port(), free_port()
    worker = ["-m", "ridtrace", "serve", "worker", "--port", str(worker_port),
              "--token-delay", "0.01", "--log-file", str(served / f"worker-{worker_port}.jsonl")]
    frontend_argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(frontend_port),
                     "--worker", f"http://127.0.0.1:{worker_port}",
                     "--log-file", str(served / "frontend.jsonl")]
    with (run_server(worker, port=worker_port, workdir=tmp_path, ready_path="/health"),
          run_server(frontend_argv, port=frontend_port, workdir=tmp_path,
                     ready_path="/health") as front):
        calls = ("lone-1", "lone-2")
        for call in calls:
            answer = httpx.post(f"{front.url}/v1/chat/completions", json=CHAT,
                                headers={"x-request-id": call}, timeout=30)
            assert answer.status_code == 200, answer.text
        lines = _frontend_lines(served / "frontend.jsonl", calls)
    logs = tmp_path / "logs"
    logs.mkdir()
    for worker_log in served.glob("worker-*.jsonl"):
        (logs / worker_log.name).write_bytes(worker_log.read_bytes())
    kept = []
    ends: dict[str, dict[str, Any]] = {}
    for line in lines:
        if line.get("route") == "/health" or line.get("path") == "/health":
            continue
        if line.get("event") == "request.start":
            continue  # in the rotated part, which was not given
        if line.get("event") == "request.end":
            ends[line["x_request_id"]] = dict(line)
            if line["x_request_id"] == "lone-2":
                del line["duration_ms"]
        kept.append(json.dumps(line))
    (logs / "frontend.jsonl").write_text("\n".join(kept) + "\n")
    return logs, ends["lone-1"], ends["lone-2"]


def _trace(*args: str) -> str:
    # In-process: the report is the subject, not the process (the servers above are).
    code, stdout, stderr = run_in_process(["trace", *args, "-q"], env={"COLUMNS": "100"})
    assert code == 0, stderr
    return stdout


def _block(doc: dict[str, Any]) -> dict[str, Any]:
    (block,) = [b for b in doc["requests"] if b["route"] == "/v1/chat/completions"]
    return block


def test_the_duration_is_the_one_its_end_line_states(
    rotated_away: tuple[Path, dict[str, Any], dict[str, Any]],
) -> None:
    logs, end, _ = rotated_away
    assert end["duration_ms"] > 0
    block = _block(json.loads(_trace("lone-1", str(logs), "--format", "json")))
    assert block["duration_ms"] == pytest.approx(end["duration_ms"], abs=0.002)
    assert "request.start" not in {e["event"] for e in block["events"]}
    # It started that long before its end line, and its end line is there on that clock.
    (answer,) = [e for e in block["events"] if e["event"] == "request.end"]
    assert answer["ms"] == pytest.approx(end["duration_ms"], abs=0.002)
    frontend = block["spans"][0]
    assert frontend["side"] == "frontend" and frontend["start_ms"] == 0.0
    text = _trace("lone-1", str(logs))
    assert f"{end['duration_ms']:.1f} ms (start not in logs)" in text, text


def test_without_a_stated_duration_it_says_the_start_is_missing(
    rotated_away: tuple[Path, dict[str, Any], dict[str, Any]],
) -> None:
    logs, _, _ = rotated_away
    block = _block(json.loads(_trace("lone-2", str(logs), "--format", "json")))
    assert block["duration_ms"] is None  # JSON's null: not known
    text = _trace("lone-2", str(logs))
    header = next(line for line in text.splitlines() if line.startswith("/v1/chat/completions"))
    assert "start not in logs" in header and "0.0 ms" not in header, text
    # The waterfall names the missing start in its ms column, as it names a missing end.
    assert "no start" in text, text


def test_a_request_whose_start_is_logged_is_shown_as_before(
    rotated_away: tuple[Path, dict[str, Any], dict[str, Any]], tmp_path: Path,
) -> None:
    logs, _, _ = rotated_away
    whole = tmp_path / "whole"
    whole.mkdir()
    served = logs.parent / "served"
    for log in served.glob("*.jsonl"):
        (whole / log.name).write_bytes(log.read_bytes())
    block = _block(json.loads(_trace("lone-2", str(whole), "--format", "json")))
    assert block["duration_ms"] > 0
    assert "start not in logs" not in _trace("lone-2", str(whole))


def test_the_jaeger_export_dates_the_span_back_or_warns(
    rotated_away: tuple[Path, dict[str, Any], dict[str, Any]], tmp_path: Path,
) -> None:
    # A 0 µs span ending at its request.end, no warning: the request passed for an
    # instant answer in Jaeger, as a request killed mid-way did before NO_ANSWER.
    logs, stated, bare = rotated_away
    out = tmp_path / "traces.json"
    code, _, stderr = run_in_process(["export", "jaeger", str(logs), "-o", str(out), "-q"])
    assert code == 0, stderr
    spans = {s["spanID"]: s for t in json.loads(out.read_text())["data"] for s in t["spans"]}
    dated, unknown = spans[stated["span_id"]], spans[bare["span_id"]]
    assert dated["duration"] == pytest.approx(stated["duration_ms"] * 1000, abs=2)
    assert dated["warnings"] is None
    assert unknown["warnings"] and "no start logged" in unknown["warnings"][0]
