"""A log printed newest first names a span's first Unlinked error in time, as oldest first.

docs/cli.md: a log printed newest first (`logcli query` without `--forward`) is judged
as the same log oldest first. A span with two Unlinked errors (the request's, then the
response's) was named by the one on the lower line: the later error, read newest first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.contract import (
    REQUEST_END,
    REQUEST_START,
    RESPONSE_UNLINKED,
    UNLINKED_REQUEST,
    UNLINKED_RESPONSE,
)
from tests.forensics.helpers import rt, ts
from tests.support.extras import ENGINE_ARGS

_IDS = {"request_id": "r1", "x_request_id": "r1", "trace_id": "7" * 32, "span_id": "6" * 16}


def _lines() -> list[str]:
    return [
        rt(REQUEST_START, time=ts(0.0), **_IDS),
        rt(RESPONSE_UNLINKED, time=ts(0.03), level="ERROR", message=UNLINKED_REQUEST, **_IDS),
        rt(REQUEST_END, time=ts(0.031), status=500, outcome="error", duration_ms=31.0, **_IDS),
        rt(RESPONSE_UNLINKED, time=ts(0.065), level="ERROR", message=UNLINKED_RESPONSE,
           **_IDS),
    ]


@pytest.mark.parametrize("engine", ENGINE_ARGS)
def test_the_first_unlinked_error_in_time_names_the_finding(
    tmp_path: Path, engine: list[str]
) -> None:
    lines = _lines()
    findings = {}
    for name, ordered in (("oldest.jsonl", lines), ("newest.jsonl", lines[::-1])):
        path = tmp_path / name
        path.write_text("\n".join(ordered) + "\n")
        result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "-q",
                                           *engine])
        assert result.exit_code == 1, result.output
        (unlinked,) = [f for f in json.loads(result.stdout)["findings"]
                       if f["kind"] == "unlinked"]
        findings[name] = unlinked
    for unlinked in findings.values():
        assert unlinked["detail"].startswith(UNLINKED_REQUEST), unlinked["detail"]
    # The error line cited is the same line of the log, counted from either end.
    cited = {name: [e["line"] for e in f["evidence"]] for name, f in findings.items()}
    assert cited["oldest.jsonl"][0] == 2 and cited["newest.jsonl"][0] == 3
