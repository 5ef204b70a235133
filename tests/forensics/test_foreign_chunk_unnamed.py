"""A refused foreign chunk is an `unlinked` finding whatever id the chunk named.

The frontend writes a chunk's id as `chunk_request_id` only when it is one it may write
(a string, printable, short): a chunk naming none, a number, a 200-character value or one
with a line break was refused and logged with none, and `analyze` said "No findings".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.contract import FOREIGN_CHUNK, REQUEST_END, REQUEST_START
from tests.forensics.helpers import follow_as_written, rt, ts
from tests.support.extras import ENGINE_ARGS

_IDS = {"request_id": "r1", "trace_id": "7" * 32, "span_id": "6" * 16}
_LINES = [
    rt(REQUEST_START, time=ts(0.0), **_IDS),
    rt(FOREIGN_CHUNK, time=ts(0.02), level="ERROR",
       message="worker sent a chunk for another request; stream stopped", **_IDS),
    rt(REQUEST_END, time=ts(0.03), status=502, outcome="error", duration_ms=30.0, **_IDS),
]
_DETAIL = "a worker chunk naming no valid request id reached this caller's stream"


@pytest.mark.parametrize("engine", ENGINE_ARGS)
def test_analyze_reports_a_refused_chunk_that_named_no_id(tmp_path: Path,
                                                          engine: list[str]) -> None:
    path = tmp_path / "frontend.jsonl"
    path.write_text("\n".join(_LINES) + "\n")
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "-q", *engine])
    assert result.exit_code == 1, result.output
    (finding,) = json.loads(result.stdout)["findings"]
    assert (finding["kind"], finding["span_id"]) == ("unlinked", "6" * 16)
    assert finding["detail"].startswith(_DETAIL)
    assert [e["line"] for e in finding["evidence"]] == [2, 3]


def test_follow_and_trace_report_it_too(tmp_path: Path) -> None:
    found = follow_as_written(tmp_path, [(0.0, "frontend.jsonl", line) for line in _LINES])
    assert [(f["kind"], f["detail"].startswith(_DETAIL)) for f in found] == [("unlinked", True)]
    result = CliRunner().invoke(main, ["trace", "r1", str(tmp_path / "frontend.jsonl")])
    assert result.exit_code == 0, result.output
    assert "unlinked" in result.stdout
