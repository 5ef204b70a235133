"""`ridtrace trace` finds a request by the id its answer carried, on a real stack.

An SDK shows its caller the answer's id (`completion.id`, `message.id`): OpenAI's
`chatcmpl-…` / `cmpl-…`, Anthropic's `msg_…`, the Responses API's `resp_…`, each made
from the request id. Given that id, `trace` said "no request".
"""

from __future__ import annotations

import json

import httpx
import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.frontend_plugin.conftest import Stack

_ROUTES = {
    "chat": ("/v1/chat/completions",
             {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    "completions": ("/v1/completions", {"model": "m", "prompt": "hi"}),
    "messages": ("/v1/messages", {"model": "m", "max_tokens": 8,
                                  "messages": [{"role": "user", "content": "hi"}]}),
    "responses": ("/v1/responses", {"model": "m", "input": "hi"}),
}


@pytest.mark.parametrize("route", sorted(_ROUTES))
def test_the_answers_id_finds_its_request(stack: Stack, route: str) -> None:
    path, body = _ROUTES[route]
    response = httpx.post(stack.url + path, json=body, timeout=30,
                          headers={"anthropic-version": "2023-06-01"})
    assert response.status_code == 200, response.text
    answer_id = response.json()["id"]
    request_id = response.headers["x-server-request-id"]
    assert request_id not in (answer_id, answer_id.replace("-", ""))  # it is another id
    stack.frontend.wait_for_event(request_id, "request.end")
    got = CliRunner().invoke(main, ["trace", answer_id, str(stack.frontend.log),
                                    "--format", "json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.output)
    assert [r["request_id"] for r in doc["requests"]] == [request_id]


def test_an_id_shaped_like_an_answers_that_made_none_finds_nothing(stack: Stack) -> None:
    got = CliRunner().invoke(main, ["trace", "chatcmpl-no-such-request",
                                    str(stack.frontend.log)])
    assert got.exit_code == 1, got.output


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_a_client_sending_an_answers_id_as_its_own_does_not_hide_the_answering_request(
    stack: Stack, route: str,
) -> None:
    # An app chaining calls by the previous answer's id (or a hostile client) sent it as
    # its x-request-id: the response id was tried only when nothing else matched, so
    # `trace` showed that follow-up alone and hid the request that made the answer.
    path, body = _ROUTES[route]
    headers = {"anthropic-version": "2023-06-01"}
    first = httpx.post(stack.url + path, json=body, timeout=30, headers=headers)
    answer_id = first.json()["id"]
    follow_up = httpx.post(stack.url + path, json=body, timeout=30,
                           headers={**headers, "x-request-id": answer_id})
    assert first.status_code == follow_up.status_code == 200
    ids = [r.headers["x-server-request-id"] for r in (first, follow_up)]
    for request_id in ids:
        stack.frontend.wait_for_event(request_id, "request.end")
    got = CliRunner().invoke(main, ["trace", answer_id, str(stack.frontend.log),
                                    "--format", "json"])
    assert got.exit_code == 0, got.output
    assert sorted(r["request_id"] for r in json.loads(got.output)["requests"]) == sorted(ids)
