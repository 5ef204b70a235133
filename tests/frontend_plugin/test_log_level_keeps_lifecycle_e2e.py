"""`ridtrace serve --log-level WARNING` still writes every request's lifecycle lines.

The level filtered ridtrace's own INFO lines with the rest: the frontend's log held no
`request.end` of a 200, so under the legacy policy the callers who received another
caller's output left no trace, and `analyze` proved "no crossed stream" on logs that
never said what each caller got.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.frontend_plugin.conftest import start_stack


@pytest.mark.parametrize("level", ["WARNING", "ERROR"])
def test_a_level_above_info_keeps_the_lines_analyze_reads(tmp_path: Path, level: str) -> None:
    flags = ["--log-level", level]
    with start_stack(tmp_path, workers=[flags], frontend=flags) as stack:
        answer = httpx.post(stack.url + "/v1/completions",
                            json={"model": "m", "prompt": "hi", "max_tokens": 2}, timeout=30)
        assert answer.status_code == 200, answer.text
        request_id = answer.headers["x-server-request-id"]
        for proc, events in ((stack.frontend, ("request.start", "request.end")),
                             (stack.workers[0], ("worker.start", "worker.end"))):
            for event in events:  # each written (else: an AssertionError at its deadline)
                proc.wait_for_event(request_id, event)
        # The level still applies to everything else: uvicorn's INFO start-up lines.
        for proc in (stack.frontend, *stack.workers):
            assert not [x for x in proc.lines()
                        if x.get("level") == "INFO" and "event" not in x], proc.lines()
