"""The generate routes' body ids against the x-request-id header, on real processes.

The header is the correlation id from the first log line on: `request.start` is
written before the body is read, so a body id that differs must not replace it
part-way through the request (the echoed header, `request.end`, the span and the
worker's lines all kept the header's value). The body id is what the body returns.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.frontend_plugin.conftest import Proc, Stack


def _lines_of(proc: Proc, request_id: str, last_event: str) -> list[dict[str, Any]]:
    """This request's log lines once `last_event` is written (a condition, not a nap)."""
    deadline = time.monotonic() + 20
    while True:
        mine = [x for x in proc.lines() if x.get("request_id") == request_id]
        if any(x.get("event") == last_event for x in mine):
            return mine
        if time.monotonic() > deadline:
            raise AssertionError(f"no {last_event} for {request_id}: {mine}")
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("path", "body_field", "returned"),
    [("/generate", "rid", "body"), ("/inference/v1/generate", "request_id", "header")],
)
def test_a_body_id_never_replaces_the_header_as_correlation_id(
    stack: Stack, path: str, body_field: str, returned: str
) -> None:
    prompt = {"text": "ids"} if path == "/generate" else {"prompt": "ids"}
    response = httpx.post(
        stack.url + path, json={**prompt, body_field: "from-body"},
        headers={"x-request-id": "from-header"}, timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-request-id"] == "from-header"
    body_id = response.json()[body_field]
    assert body_id == ("from-body" if returned == "body" else "from-header")
    request_id = response.headers["x-server-request-id"]
    frontend = _lines_of(stack.frontend, request_id, "request.end")
    assert {x.get("x_request_id") for x in frontend} == {"from-header"}
    worker_lines = [
        x for w in stack.workers for x in w.lines() if x.get("request_id") == request_id
    ]
    assert worker_lines and {x.get("x_request_id") for x in worker_lines} == {"from-header"}


def test_a_body_id_fills_in_a_missing_header(stack: Stack) -> None:
    response = httpx.post(
        stack.url + "/generate", json={"text": "ids", "rid": "only-body"}, timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.json()["rid"] == "only-body"
    request_id = response.headers["x-server-request-id"]
    end = next(
        x for x in _lines_of(stack.frontend, request_id, "request.end")
        if x.get("event") == "request.end"
    )
    assert end["x_request_id"] == "only-body"



@pytest.mark.parametrize(("path", "body_field"),
                         [("/generate", "rid"), ("/inference/v1/generate", "request_id")])
def test_a_body_id_with_surrounding_spaces_correlates_as_clients_read_it(
    stack: Stack, path: str, body_field: str
) -> None:
    # A body id filling in for the header went into x_request_id and the echoed header
    # with its spaces; HTTP clients trim a header's value, so the id they read
    # ("padded-body-id") matched no log line or span (`ridtrace trace padded-body-id` found none).
    prompt = {"text": "ids"} if path == "/generate" else {"prompt": "ids"}
    response = httpx.post(stack.url + path, json={**prompt, body_field: "  padded-body-id "},
                          timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()[body_field] == "  padded-body-id "  # the body's own, verbatim
    assert response.headers["x-request-id"] == "padded-body-id"
    request_id = response.headers["x-server-request-id"]
    frontend = _lines_of(stack.frontend, request_id, "request.end")
    assert {x.get("x_request_id") for x in frontend if x.get("event") == "request.end"} == {
        "padded-body-id"}


@pytest.mark.parametrize(("path", "body"), [
    ("/inference/v1/generate", {"prompt": "a b", "max_tokens": 0, "request_id": "refused-1"}),
    ("/generate", {"text": "a b", "rid": "refused-2", "sampling_params": {"n": 2}}),
])
def test_a_body_refused_for_another_field_still_names_its_caller(
    stack: Stack, path: str, body: dict[str, Any]
) -> None:
    # The 400 echoed no id and no line carried it: the caller could not find, by the id
    # it sent, why its request was refused (`ridtrace trace refused-1` found none).
    body_id = body.get("request_id", body.get("rid"))
    response = httpx.post(stack.url + path, json=body, timeout=30)
    assert response.status_code == 400, response.text
    assert response.headers["x-request-id"] == body_id
    end = stack.frontend.wait_for_event(response.headers["x-server-request-id"], "request.end")
    assert (end["status"], end["x_request_id"]) == (400, body_id)


def test_a_bad_body_id_is_refused_and_never_correlated(stack: Stack) -> None:
    response = httpx.post(stack.url + "/generate",
                          json={"text": "a", "rid": "   ", "sampling_params": {"n": 2}},
                          timeout=30)
    assert response.status_code == 400, response.text
    assert "x-request-id" not in response.headers
    end = stack.frontend.wait_for_event(response.headers["x-server-request-id"], "request.end")
    assert "x_request_id" not in end
