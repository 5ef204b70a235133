"""The lean read (`analyze`) parses only evidence lines wide: same findings, same counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ridtrace.forensics.reading import evidence
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.rules.report import analyze, parse_time, report_json
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.forensics.helpers import rt


def _report(path: Path, *, lean: bool, **window: str) -> dict[str, object]:
    logs = load_events([str(path)], lean=lean)
    times = {k: parse_time(v) for k, v in window.items()}
    return report_json(analyze(logs, **times))


@pytest.mark.parametrize("window", [{}, {"since": "2026-11-29T10:00:00.4"},
                                    {"until": "2026-11-29T10:00:00.6"}])
def test_lean_read_reports_what_the_full_read_reports(
    tmp_path: Path, window: dict[str, str]
) -> None:
    write_logs(tmp_path, SynthSpec(requests=400, engine_noise=True, deprecated_every=25))
    lean = _report(tmp_path, lean=True, **window)
    full = _report(tmp_path, lean=False, **window)
    assert lean["findings"] == full["findings"]
    assert lean["summary"] == full["summary"]


def test_bad_noise_lines_are_counted_with_their_reasons(tmp_path: Path) -> None:
    noise = rt(None, message="handler says hi", span_id="a" * 16)
    lines = [
        rt("request.start", span_id="a" * 16, trace_id="t" * 32, request_id="r1"),
        noise,
        "not json at all",
        '{"time":"2026-11-29T10:00:00.000000Z","schema":"ridtrace/1","message":"cut',
        json.dumps({"time": "2026-11-29T10:00:00Z", "message": "no format marker"}),
        json.dumps({"schema": "ridtrace/1", "message": "no time"}),
        rt(None, time="yesterday"),
        "",
        '{"a": 1}{"b": 2}',
        rt("request.end", span_id="a" * 16, trace_id="t" * 32, request_id="r1", fp_in="f"),
    ]
    path = tmp_path / "f.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    for lean in (True, False):
        logs = load_events([str(path)], lean=lean)
        assert logs.stats.lines == 9 and logs.stats.bad_lines == 6
        reasons = {s.line: s.reason for s in logs.stats.samples}
        assert reasons == {
            3: "not JSON", 4: "truncated JSON", 5: "unknown format", 6: "missing time",
            7: "invalid time", 9: "not JSON",
        }
    lean_logs = load_events([str(path)], lean=True)
    assert list(lean_logs.events["line"]) == [1, 10]
    assert len(lean_logs.other_times) == 1


def test_split_lines_keeps_newlines_and_a_missing_last_one() -> None:
    for buf in (b"a\nbb\n\nccc\n", b"a\nbb\n\nccc"):
        lines = evidence.split_lines(buf)
        assert b"".join(lines.to_pylist()) == buf
        assert [x.rstrip(b"\n") for x in lines.to_pylist()] == [b"a", b"bb", b"", b"ccc"]
