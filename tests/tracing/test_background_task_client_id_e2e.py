"""`ridtrace analyze` on a client that sends its id again once answered, while the app
still runs its first request's background task (a real uvicorn).

The middleware writes `request.end` once the app returns, after the background tasks
its response ran, so the first request's lines run on past its answer. `analyze` held
the client id until that last line and reported the client's second request as a
reuse of an id in flight; the client had its answer `duration_ms` after the start.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.support.servers import RunningServer
from tests.tracing.conftest import wait_for_lines


def _line(lines: list[dict[str, Any]], event: str, **ids: str) -> dict[str, Any] | None:
    return next((x for x in lines if x.get("event") == event
                 and all(x.get(k) == v for k, v in ids.items())), None)


def test_an_id_sent_again_after_the_answer_is_no_reuse_but_one_in_flight_is(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    base = f"http://127.0.0.1:{running.port}"
    with httpx.Client(base_url=base, timeout=20) as client, ThreadPoolExecutor(1) as pool:
        # Answered, its background task held until released; then the same id again.
        first = client.get("/held", params={"key": "bg"}, headers={"x-request-id": "again-1"})
        assert first.status_code == 200
        second = client.get("/ids", headers={"x-request-id": "again-1"})
        assert second.status_code == 200
        # The same id sent again while a request with it waits for its answer.
        waiting = pool.submit(client.get, "/held-answer", params={"key": "answer"},
                              headers={"x-request-id": "overlap-1"})
        wait_for_lines(log_path, lambda got: _line(got, "request.start",
                                                   x_request_id="overlap-1") is not None)
        during = client.get("/ids", headers={"x-request-id": "overlap-1"})
        assert during.status_code == 200
        for key in ("answer", "bg"):
            assert client.get("/release", params={"key": key}).status_code == 200
        assert waiting.result().status_code == 200
    first_id, second_id = first.json()["request_id"], second.json()["request_id"]
    lines = wait_for_lines(log_path, lambda got: _line(got, "request.end", request_id=first_id)
                           is not None and _line(got, "request.end", request_id=
                                                 waiting.result().json()["request_id"]) is not None)
    # What makes the first case a test: the second request started before the first's
    # last line, and after its answer.
    first_end = _line(lines, "request.end", request_id=first_id)
    second_start = _line(lines, "request.start", request_id=second_id)
    assert first_end is not None and second_start is not None
    assert second_start["time"] < first_end["time"]
    got = CliRunner().invoke(main, ["analyze", str(log_path), "--format", "json"])
    assert got.exit_code == 0, got.output
    reused = [f for f in json.loads(got.stdout)["findings"] if f["kind"] == "client_id_reuse"]
    assert [f["x_request_id"] for f in reused] == ["overlap-1"], reused
