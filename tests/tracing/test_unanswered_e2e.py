"""An application that returns without answering, under a real uvicorn.

uvicorn answers such a request with a 500 of its own after the application returned,
once ridtrace's context was gone: the client's 500 carried no ``x-server-request-id``,
uvicorn's ERROR ``ASGI callable returned without starting response.`` no ids, and the
request's ``request.end`` and span said no answer went out at all (status ``0``, no
``http.response.status_code``), though the client got a 500. ridtrace now gives that
answer itself, as it does the 500 of an unhandled exception.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines

APP = "tests.tracing.unanswering_app:create_app"


def _end_of(lines: list[dict[str, Any]], request_id: str) -> dict[str, Any] | None:
    ends = [x for x in lines if x.get("event") == "request.end"]
    return next((x for x in ends if x.get("request_id") == request_id), None)


def test_a_request_the_app_never_answered_gets_ridtraces_500(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    with app_server(tmp_path, receiver, app=APP) as server:
        response = httpx.get(f"{server.url}/silent", headers={"x-request-id": "silent-1"})
        assert response.status_code == 500
        assert response.headers["x-request-id"] == "silent-1"
        request_id = response.headers.get("x-server-request-id")
        assert request_id

        log = tmp_path / "app.jsonl"
        lines = wait_for_lines(log, lambda got: _end_of(got, request_id) is not None)
        end = _end_of(lines, request_id)
        assert end is not None
        assert (end["status"], end["outcome"]) == (500, "error")
        lines = wait_for_lines(
            log, lambda got: any(x["level"] == "ERROR" for x in got if x.get("request_id"))
        )
        errors = [x for x in lines if x["level"] == "ERROR"]
        assert errors, "the application's failure to answer is logged"
        for line in errors:  # uvicorn's own, without ids, no longer
            assert (line.get("request_id"), line.get("x_request_id")) == (request_id, "silent-1")

    def silent(spans: list[Any]) -> list[Any]:
        return [s for s in spans if s.attributes.get("x_request_id") == "silent-1"]

    (span,) = silent(receiver.wait_until(lambda got: bool(silent(got))))
    assert span.attributes["request_id"] == request_id
    assert span.attributes["http.response.status_code"] == 500
    assert span.attributes["error.type"] == "500"
    assert span.status_code == 2  # ERROR



def test_a_crash_fails_its_own_request_not_the_next_on_its_connection(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    # uvicorn drops the connection after an exception: ridtrace's 500 must say so, or a
    # keep-alive client sends its next request into the closed socket and gets a reset.
    with app_server(tmp_path, receiver, app=APP) as server, httpx.Client() as client:
        for i in range(20):
            crashed = client.get(f"{server.url}/crash")
            assert crashed.status_code == 500
            assert crashed.headers["connection"] == "close"
            assert crashed.headers.get("x-server-request-id")
            assert client.get(f"{server.url}/ok", headers={"x-request-id": f"ok-{i}"}
                              ).status_code == 200
