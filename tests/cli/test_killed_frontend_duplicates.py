"""Two callers holding one id when their legacy frontend was killed are a duplicate in flight.

Found against real runs: under `--id-policy legacy` a request's `request.start` logs a
minted id and its later lines the client's, which it held; a frontend SIGKILLed with two
callers of `x-request-id: dup-1` in flight left each with its `request.start` alone. Its
workers' lines (`worker.start` under `dup-1`, parented to the caller) prove which id each
held and that both were in flight at once, and `ridtrace analyze --follow` printed the
duplicate live; the batch `analyze` judged each caller by its one line — a minted id, an
instant — and reported nothing.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.inprocess_cli import run_in_process
from tests.support.servers import free_port, run_server

CHAT = {"model": "echo", "stream": True, "max_tokens": 200,
        "messages": [{"role": "user", "content": "a long answer please, word by word"}]}


def _read_to_the_first_token(lines: Iterator[str]) -> None:
    """Read the stream up to its first generated token: the worker's first chunk has
    reached the frontend, which has linked it to this caller."""
    for line in lines:
        if '"content":"echo' in line:
            return
    raise AssertionError("the stream ended before its first token")


@pytest.fixture(scope="module")
def killed_with_two_holders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Logs of a legacy stack whose frontend was SIGKILLed while two callers of
    ``x-request-id: dup-1`` were both streaming their answers."""
    return _killed_with_two_callers(tmp_path_factory, "legacy")


@pytest.fixture(scope="module")
def killed_safe_with_two_callers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same under the safe policy: two requests, ids of their own, one client id."""
    return _killed_with_two_callers(tmp_path_factory, "safe")


def _killed_with_two_callers(tmp_path_factory: pytest.TempPathFactory, policy: str) -> Path:
    tmp_path = tmp_path_factory.mktemp(f"killed-{policy}")
    logs = tmp_path / "logs"
    worker_port, frontend_port = free_port(), free_port()
    worker_argv = ["-m", "ridtrace", "serve", "worker", "--port", str(worker_port),
                   "--id-policy", policy, "--token-delay", "0.05",
                   "--log-file", str(logs / f"worker-{worker_port}.jsonl")]
    frontend_argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(frontend_port),
                     "--id-policy", policy, "--worker", f"http://127.0.0.1:{worker_port}",
                     "--log-file", str(logs / "frontend.jsonl")]
    headers = {"x-request-id": "dup-1"}
    with (run_server(worker_argv, port=worker_port, workdir=tmp_path, ready_path="/health"),
          run_server(frontend_argv, port=frontend_port, workdir=tmp_path,
                     ready_path="/health") as front):
        url = f"{front.url}/v1/chat/completions"
        # The first caller's stream is under way (its entry claimed by its worker's
        # first chunk) before the second caller registers the same key.
        with httpx.stream("POST", url, json=CHAT, headers=headers, timeout=30) as first:
            first_lines = first.iter_lines()  # held: a dropped iterator closes the stream
            _read_to_the_first_token(first_lines)
            with httpx.stream("POST", url, json=CHAT, headers=headers, timeout=30) as second:
                second_lines = second.iter_lines()
                _read_to_the_first_token(second_lines)
                os.killpg(front.process.pid, signal.SIGKILL)
                front.process.wait(timeout=10)
    return logs


def _analyzed(logs: Path) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    """`analyze` of `logs` in process (the fixture's servers are the real processes):
    its exit code, report, the frontend's chat lines, and its stderr."""
    code, stdout, stderr = run_in_process(["analyze", str(logs), "--format", "json", "-q"])
    chat = [json.loads(line) for line in (logs / "frontend.jsonl").read_text().splitlines()
            if '"/v1/chat/completions"' in line]
    return code, json.loads(stdout), chat, stderr


def test_batch_analyze_reports_the_duplicate(killed_with_two_holders: Path) -> None:
    code, report, chat, stderr = _analyzed(killed_with_two_holders)
    starts = [line for line in chat if line["event"] == "request.start"]
    assert len(starts) == 2 and len(chat) == 2  # no request.end: both were in flight
    (dup,) = [f for f in report["findings"] if f["kind"] == "duplicate_in_flight"]
    assert dup["request_id"] == "dup-1"
    assert dup["detail"].startswith("2 requests held request_id dup-1")
    assert {s["span_id"] for s in starts} <= set(dup["detail"].split("(spans ")[1][:-1]
                                                 .split(", "))
    assert code == 1, stderr


def test_trace_shows_the_duplicate(killed_with_two_holders: Path) -> None:
    """`ridtrace trace` judges the callers as `analyze` does: each held the id its
    workers' lines name while they worked for it, so both are in the duplicate, each
    naming the other, under the id they held (not the minted one of their one line)."""
    code, stdout, stderr = run_in_process(
        ["trace", "dup-1", str(killed_with_two_holders), "--format", "json", "-q"])
    assert code == 0, stderr
    doc = json.loads(stdout)
    chat = [b for b in doc["requests"] if b["route"] == "/v1/chat/completions"]
    assert len(chat) == 2, doc
    first, second = chat
    assert first["request_id"] == second["request_id"] == "dup-1"
    assert "duplicate_in_flight" in first["findings"]
    assert "duplicate_in_flight" in second["findings"]
    assert second["span_id"] in first["overlaps"] and first["span_id"] in second["overlaps"]
    # Ranked as a duplicate: ahead of any request in no finding.
    assert [b["span_id"] for b in doc["requests"][:2]] == [first["span_id"], second["span_id"]]
    _, text, _ = run_in_process(["trace", "dup-1", str(killed_with_two_holders), "-q"],
                                env={"COLUMNS": "100"})
    assert "held request dup-1 at the same time" in text, text


def test_batch_analyze_reports_the_client_id_reuse_of_two_safe_callers(
    killed_safe_with_two_callers: Path,
) -> None:
    # As duplicate_in_flight counts them, client_id_reuse counts a caller that logged no
    # end by its worker spans: each caller's one line, request.start, is an instant.
    code, report, starts, stderr = _analyzed(killed_safe_with_two_callers)
    assert [line["event"] for line in starts] == ["request.start"] * 2
    (reuse,) = [f for f in report["findings"] if f["kind"] == "client_id_reuse"]
    assert reuse["detail"].startswith("2 requests held client x_request_id dup-1")
    assert not [f for f in report["findings"] if f["severity"] == "error"]
    assert code == 0, stderr
