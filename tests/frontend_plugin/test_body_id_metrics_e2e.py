"""A body id (`rid`, `request_id`) the frontend refuses is a rejected client id.

The request is refused (400: the route promises to return the id verbatim), but the
id was still a client id not used: docs/log-schema.md and docs/metrics.md count such ids
in `ridtrace.client_id_rejected`, by reason, headers and body ids alike. A refused body
id was counted nowhere, so the "Client ids rejected" panel stayed flat while a client
sent nothing but bad ids.
"""

from __future__ import annotations

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.frontend_plugin.conftest import Stack

REJECTED = "ridtrace_client_id_rejected_total"


def _rejected(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics", timeout=10).text
    return {
        sample.labels["reason"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples if sample.name == REJECTED
    }


def test_a_refused_body_id_is_counted_by_its_reason(stack: Stack) -> None:
    before = _rejected(stack.url)
    for path, body in (
        ("/generate", {"text": "hi", "rid": "r" * 129}),
        ("/generate", {"text": "hi", "rid": ""}),
        ("/inference/v1/generate", {"prompt": "hi", "request_id": "bad\x01id"}),
        ("/inference/v1/generate", {"prompt": "hi", "request_id": "caf\u00e9"}),
    ):
        refused = httpx.post(stack.url + path, json=body, timeout=30)
        assert refused.status_code == 400, refused.text
        # Flagged where a refused header id is: the metric counted it, and nothing said
        # which request it was.
        end = stack.frontend.wait_for_event(refused.headers["x-server-request-id"],
                                            "request.end")
        assert end.get("x_request_id_rejected") is True, end
    wanted = {"too_long": 1, "empty": 1, "not_printable_ascii": 2}
    deadline = time.monotonic() + 10
    while True:
        after = _rejected(stack.url)
        grown = {reason: after[reason] - before.get(reason, 0) for reason in wanted}
        if grown == wanted or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert grown == wanted
