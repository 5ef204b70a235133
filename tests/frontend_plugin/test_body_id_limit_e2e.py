"""A body id is held to the same `max_client_id_length` as the header, on real processes.

`RIDTRACE_MAX_CLIENT_ID_LENGTH=10` dropped a 16-character `x-request-id` (counted
`too_long`), yet the same id as the body's `request_id` or `rid` was served, echoed and
written as `x_request_id` on every line: the body ids were held to the default 128
whatever the settings said (docs/log-schema.md: client ids, body ids included, are
checked against `max_client_id_length`).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack


@pytest.fixture(scope="module")
def short_ids(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with start_stack(tmp_path_factory.mktemp("short-ids"), workers=[[]],
                     env={"RIDTRACE_MAX_CLIENT_ID_LENGTH": "10"}) as running:
        yield running


@pytest.mark.parametrize(("path", "body"), [
    ("/generate", {"text": "hi", "rid": "{id}"}),
    ("/inference/v1/generate", {"prompt": "hi", "request_id": "{id}"}),
])
def test_a_body_id_longer_than_the_limit_is_refused(
    short_ids: Stack, path: str, body: dict[str, str]
) -> None:
    field = next(name for name, value in body.items() if value == "{id}")
    too_long = {**body, field: "sixteen-chars-id"}
    refused = httpx.post(short_ids.url + path, json=too_long, timeout=30)
    assert refused.status_code == 400, refused.text
    assert f"'{field}' must be 1-10 printable ASCII characters" in refused.text
    fits = {**body, field: "ten-chars!"}
    served = httpx.post(short_ids.url + path, json=fits, timeout=30)
    assert served.status_code == 200, served.text
    request_id = served.headers["x-server-request-id"]
    end = short_ids.frontend.wait_for_event(request_id, "request.end")
    assert end["x_request_id"] == "ten-chars!"


@pytest.mark.parametrize(("path", "body"), [
    ("/generate", {"text": "hi", "rid": "   "}),
    ("/inference/v1/generate", {"prompt": "hi", "request_id": "  "}),
])
def test_a_body_id_of_spaces_only_is_refused_and_counted(
    short_ids: Stack, path: str, body: dict[str, str]
) -> None:
    def empty_rejections() -> float:
        text = httpx.get(short_ids.url + "/metrics", timeout=30).text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("ridtrace_client_id_rejected_total")
                   and 'reason="empty"' in line)

    before = empty_rejections()
    refused = httpx.post(short_ids.url + path, json=body, timeout=30)
    assert refused.status_code == 400, refused.text
    assert "not only spaces" in refused.text
    assert empty_rejections() == before + 1
