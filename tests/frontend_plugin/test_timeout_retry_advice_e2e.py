"""What a 504 tells the official SDKs, which retry every 5xx twice unless told not to.

A request that ran out of its ``total_timeout`` gets the same budget for the same work
when retried: the SDKs' two retries tripled the time the caller waited for nothing and
the workers' load. A worker that timed out (no first chunk, a silent stream) is another
matter: the retry may reach another worker, so that 504 keeps the SDKs' retries.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from ridtrace.frontend_plugin.failures import (
    REQUEST_TIMED_OUT,
    WORKER_TIMED_OUT,
    Failed,
    retry_advice,
)
from tests.frontend_plugin.conftest import Proc, start_stack

_PROMPT = "slow worker a b c d e f g h"


def _starts(frontend: Proc) -> int:
    return len([x for x in frontend.lines() if x.get("event") == "request.start"])


def test_a_total_timeout_tells_the_sdks_not_to_retry(tmp_path: Path) -> None:
    # Tokens keep coming, 0.4 s apart, slower than the whole request may take (1 s).
    with start_stack(tmp_path, workers=[["--token-delay", "0.4"]],
                     frontend=["--total-timeout", "1", "--chunk-timeout", "10"]) as stack:
        answer = httpx.post(stack.url + "/v1/chat/completions", timeout=30, json={
            "model": "echo", "messages": [{"role": "user", "content": _PROMPT}]})
        assert answer.status_code == 504, answer.text
        assert answer.json()["error"]["message"] == "request timed out"
        assert answer.headers["x-should-retry"] == "false"

        # Each SDK, with its retries on, asks once.
        oai = openai.OpenAI(base_url=stack.url + "/v1", api_key="x", max_retries=2)
        before = _starts(stack.frontend)
        with pytest.raises(openai.InternalServerError) as timed_out:
            oai.chat.completions.create(model="echo",
                                        messages=[{"role": "user", "content": _PROMPT}])
        assert timed_out.value.status_code == 504
        # Its last line is written after its answer: every line before it is in.
        stack.frontend.wait_for_event(
            timed_out.value.response.headers["x-server-request-id"], "request.end")
        assert _starts(stack.frontend) - before == 1

        claude = anthropic.Anthropic(base_url=stack.url, api_key="x", max_retries=2)
        before = _starts(stack.frontend)
        with pytest.raises(anthropic.InternalServerError) as claude_timed_out:
            claude.messages.create(model="echo", max_tokens=64,
                                   messages=[{"role": "user", "content": _PROMPT}])
        assert claude_timed_out.value.status_code == 504
        assert claude_timed_out.value.body["error"]["type"] == "timeout_error"  # type: ignore[index]
        stack.frontend.wait_for_event(
            claude_timed_out.value.response.headers["x-server-request-id"], "request.end")
        assert _starts(stack.frontend) - before == 1


def test_only_the_total_timeout_is_final() -> None:
    final = ((b"x-should-retry", b"false"),)
    assert retry_advice(Failed(REQUEST_TIMED_OUT, 504, "timeout")) == final
    # Another worker may answer in time: the SDKs' retry is worth it.
    assert retry_advice(Failed(WORKER_TIMED_OUT, 504, "timeout")) == ()
