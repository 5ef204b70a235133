"""An application's exception handler that raises, under a real uvicorn.

ridtrace runs the handler inside the request, so its lines carry the ids, and marks
the crash answered so that Starlette's outer layer skips it. The mark was set only
once the handler had returned: a handler that raised was called again by that layer,
outside the request, its lines and the server's traceback without ids and its side
effects (an error report, an alert) twice.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines


def test_a_handler_that_raises_runs_once_inside_the_request_and_its_failure_is_logged(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    with app_server(tmp_path, receiver,
                    app="tests.tracing.failing_handler_app:create_app") as running:
        answer = httpx.get(f"{running.url}/crash", headers={"x-request-id": "r1"}, timeout=10)
        assert answer.status_code == 500
        request_id = answer.headers["x-server-request-id"]
        lines = wait_for_lines(tmp_path / "app.jsonl", lambda got: any(
            x.get("event") == "request.end" and x.get("request_id") == request_id
            for x in got))
        assert httpx.get(running.url + "/", timeout=10).status_code == 200  # still serving
    called = [x for x in lines if x.get("message", "").startswith("error handler called")]
    assert len(called) == 1, called
    assert (called[0].get("request_id"), called[0].get("x_request_id")) == (request_id, "r1")
    failed = [x for x in lines if "exception handler raised" in x.get("message", "")]
    assert len(failed) == 1, lines
    assert failed[0].get("request_id") == request_id
    assert "error reporter unavailable" in str(failed[0].get("exception", ""))
