"""The demo's stack is the demo's: worker settings from the caller's environment stay out."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ridtrace.demo.processes import start_stack


@pytest.mark.parametrize("variable", [
    ("RIDTRACE_WORKER_FOREIGN_CHUNK_AFTER", "1"),
    ("RIDTRACE_WORKER_HANG_AFTER_TOKENS", "1"),
])
def test_worker_fault_variables_of_the_shell_do_not_reach_the_demos_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: tuple[str, str],
) -> None:
    # `ridtrace serve worker` reads its test faults and delays from RIDTRACE_WORKER_*
    # when no option is given; the demo gives none, so a shell that had set one to try a
    # worker turned the demo's safe run into crossed or hung streams.
    monkeypatch.setenv(*variable)
    with start_stack(tmp_path / "logs", id_policy="safe", workers=1) as stack:
        answer = httpx.post(stack.frontend_url + "/v1/completions", timeout=20, json={
            "model": "echo", "prompt": "one two three four", "max_tokens": 4})
    assert answer.status_code == 200, answer.text
    choice = answer.json()["choices"][0]
    assert choice["text"].startswith("echo: one two") and choice["finish_reason"] == "length"
