"""A long record cut short by a line limit makes the read incomplete.

rsyslog keeps 8 KiB of a message by default; promtail left a runtime's 16 KiB split
unjoined; journald splits at 48 KiB. Such a cut loses every record as long, and the
long ones are those with an error's details: one cut Unlinked error among 239 lines
was one bad line, under the 1 % bound, and "No findings." exit 0 where the uncut log
gives the error. A crash's torn last line, a record's first bytes, stays a bad line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_at_us
from tests.support.extras import ENGINES

_MS = 1000


def _lines() -> list[str]:
    """119 requests that went well, and one lost its caller with a long traceback."""
    lines = []
    for n in range(120):
        ids = {"request_id": f"r{n}", "trace_id": f"{n + 1:032x}", "span_id": f"{n + 1:016x}"}
        lines.append(rt_at_us(n * 10 * _MS, "request.start", "frontend", **ids))
        if n == 60:
            lines.append(rt_at_us(n * 10 * _MS + 5 * _MS, "response.unlinked", "frontend",
                                  error="Unlinked response; " + "frame\n" * 3000, **ids))
        lines.append(rt_at_us(n * 10 * _MS + 9 * _MS, "request.end", "frontend", status=200,
                              outcome="ok", duration_ms=9.0, **ids))
    return lines


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("limit", [8192, 16384])
def test_a_record_cut_at_a_line_limit_makes_the_read_incomplete(
    tmp_path: Path, engine: str, limit: int
) -> None:
    lines = _lines()
    plain, cut = tmp_path / "plain.jsonl", tmp_path / "cut.jsonl"
    plain.write_text("\n".join(lines) + "\n")
    cut.write_text("\n".join(line[:limit] for line in lines) + "\n")
    code, doc = analyze_json(str(plain), "--engine", engine)
    assert code == 1 and [f["kind"] for f in doc["findings"]] == ["unlinked"]
    code, doc = analyze_json(str(cut), "--engine", engine)
    summary = doc["summary"]
    assert summary["bad_line_samples"] == [
        {"file": str(cut), "line": 122, "reason": "truncated JSON"}]
    assert summary["bad_lines"] < 0.01 * summary["lines"]
    assert summary["incomplete"] and code == 3
    assert [note["file"] for note in summary["unreadable_files"]] == [str(cut)]


def test_a_crashs_torn_last_line_is_a_bad_line_only(tmp_path: Path) -> None:
    lines = _lines()[:-5]
    log = tmp_path / "torn.jsonl"
    log.write_text("\n".join(lines) + "\n" + json.dumps({"time": "2026-11-29T10:00:00Z"})[:20])
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"][0]["reason"] == "truncated JSON"
    assert not doc["summary"]["incomplete"]
    assert code == 1  # the unlinked error, as without the torn line
