"""uvicorn's ``--no-access-log`` holds for an app that calls configure_logging."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines


def _served_once(workdir: Path, receiver: OtlpReceiver, *options: str) -> list[dict[str, object]]:
    """The log lines of one request to the test app under uvicorn with ``options``,
    once its request.end is written (the access line, a record written at once when
    the response starts, comes before that event line)."""
    with app_server(workdir, receiver, "--log-level", "info", *options) as running:
        request_id = httpx.get(running.url + "/ids", timeout=10).json()["request_id"]
        lines = wait_for_lines(workdir / "app.jsonl", lambda lines: any(
            x.get("event") == "request.end" and x.get("request_id") == request_id for x in lines
        ))
    return [x for x in lines if x.get("request_id") == request_id]


def test_no_access_log_keeps_uvicorns_access_lines_off(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    # uvicorn --no-access-log leaves uvicorn.access with no handler and not propagating,
    # then imports the app; configure_logging made it propagate again, so every request
    # still wrote its access line into the JSON log the operator had turned them off for.
    (tmp_path / "off").mkdir()
    lines = _served_once(tmp_path / "off", receiver, "--no-access-log")
    assert [x["message"] for x in lines if x.get("logger") == "uvicorn.access"] == []
    # The same app without the option does write it, with the request's ids.
    (tmp_path / "on").mkdir()
    lines = _served_once(tmp_path / "on", receiver)
    assert [x.get("logger") for x in lines].count("uvicorn.access") == 1
