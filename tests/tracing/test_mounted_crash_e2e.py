"""A crash inside a mounted app, answered by the outer app's own handler, under a real
uvicorn.

ridtrace found Starlette's outer error layer from ``scope["app"]`` when the crash came
back to it; a mounted app had written itself there by then, the walk never met
ridtrace, and the outer layer called the handler after the request: its lines had no
ids.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines


@pytest.mark.parametrize(("path", "crash"), [
    ("/api/boom", "crash in the mounted api"),
    ("/files/stream", "crash in the mounted stream"),
])
def test_the_outer_handler_runs_once_with_the_ids_for_a_crash_in_a_mounted_app(
    tmp_path: Path, receiver: OtlpReceiver, path: str, crash: str
) -> None:
    with app_server(tmp_path, receiver,
                    app="tests.tracing.mounted_crash_app:create_app") as running:
        with httpx.stream("GET", running.url + path, headers={"x-request-id": "c1"},
                          timeout=10) as answer:
            request_id = answer.headers["x-server-request-id"]
            with pytest.raises(httpx.HTTPError) if path.endswith("stream") else contextlib.nullcontext():
                answer.read()
        lines = wait_for_lines(tmp_path / "app.jsonl", lambda got: any(
            x.get("event") == "request.end" and x.get("request_id") == request_id
            for x in got))
        assert httpx.get(running.url + "/", timeout=10).status_code == 200  # still serving
    handled = [x for x in lines if x.get("message") == f"outer handler for {crash}"]
    assert len(handled) == 1, lines
    assert (handled[0].get("request_id"), handled[0].get("x_request_id")) == (request_id, "c1")
    assert handled[0].get("trace_id") and handled[0].get("span_id")

