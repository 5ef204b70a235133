"""`GET /v1/models?limit=` with more digits than Python turns into an int.

The page size was checked as ``1 <= int(limit) <= 1000``: past 4300 digits ``int``
raises, so the request got a plain-text ``500 Internal Server Error`` and the log an
ERROR line with a traceback, where any other bad limit gets the API's 400 naming it.
"""

from __future__ import annotations

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack


@pytest.mark.parametrize("limit", ["1" * 5000, "0" * 5000])
def test_a_limit_of_thousands_of_digits_is_a_400_naming_it(stack: Stack, limit: str) -> None:
    answer = httpx.get(stack.url + "/v1/models", params={"limit": limit}, timeout=30)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "limit"
    rid = answer.headers["x-server-request-id"]
    assert stack.frontend.wait_for_event(rid, "request.end")["status"] == 400
    assert not [line for line in stack.frontend.lines()
                if line.get("request_id") == rid and line["level"] == "ERROR"]


def test_a_limit_with_leading_zeros_is_still_its_number(stack: Stack) -> None:
    answer = httpx.get(stack.url + "/v1/models", params={"limit": "0" * 5000 + "1"}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert [model["id"] for model in answer.json()["data"]] == ["echo"]
