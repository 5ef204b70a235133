"""A time whose year RFC 3339 cannot write (five digits, or before year 1) is no time,
nor is an hour 24 or a UTC offset of 24 hours or more.

DuckDB's cast read ``12026-…`` and ``-2026-…`` (a BC year) as times; the Python side of
the read (`record_time.parse_time`) reads neither. So a line torn or forged into such a
year was a request thousands of years away, stretching every report's time axis, on
whichever side read it. It is now a bad line, "invalid time", on every path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import engine_report, rt, rt_request
from tests.support.extras import ENGINES

YEARS = ["12026-11-29T10:00:00.000000Z", "-2026-11-29T10:00:00.000000Z",
         # RFC 3339 writes them, but their UTC is in year 10000 and year 0: DuckDB cast
         # them, a request shown in year 10000 and audited in 1972.
         "9999-12-31T23:59:59.240645-05:00", "0001-01-01T00:00:00.240613+05:00",
         # An hour 24 or an offset of 24 hours or more, which RFC 3339 has no room for:
         # DuckDB cast `T24:00:00Z` as the next midnight and `+99:99` four days off, a
         # line moved days from its request's others with no bad line to say so.
         "2026-11-29T10:00:00.000000+99:99", "2026-11-29T10:00:00+24:00",
         "2026-11-29T24:00:00.000000Z", "2026-11-29T10:00:00-2400",
         # The same with no seconds, and an offset of 24 h spelt with its minutes.
         "2026-11-29T10:00+99:00", "2026-11-29 10:00-30:00", "2026-11-29T10:00:00+23:60"]
# The offsets the world uses, at their edges: each the same instant, 10:00 UTC.
FAIR_OFFSETS = ["2026-11-29T23:59:00+13:59", "2026-11-28T20:01:00-13:59",
                "2026-11-29T15:30:00+0530", "2026-11-29T05:00:00.000000-05:00",
                "2026-11-29T10:00:00.000000+00:00", "2026-11-29T15:30+05:30"]


def _log(directory: Path, time: str) -> Path:
    good = rt_request("a" * 16, "r1", 0, 1)
    odd = rt("request.start", time=time, request_id="r2", span_id="b" * 16, trace_id="t" * 32)
    path = directory / "frontend.jsonl"
    path.write_text("\n".join([*good, odd]) + "\n")
    return path


@pytest.mark.parametrize("time", YEARS)
@pytest.mark.parametrize("engine", ENGINES)
def test_a_year_rfc3339_cannot_write_is_a_bad_line(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str, time: str
) -> None:
    _log(tmp_path, time)
    summary = engine_report(request, engine, tmp_path)["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (3, 1, 1)
    [sample] = summary["bad_line_samples"]
    assert (sample["line"], sample["reason"]) == (3, "invalid time")


@pytest.mark.parametrize("time", YEARS)
def test_the_event_views_read_it_so_too(tmp_path: Path, time: str) -> None:
    path = _log(tmp_path, time)
    result = CliRunner().invoke(main, ["trace", "r2", str(path), "--format", "json"])
    # Its one line is bad: no request r2 (exit 3, as part of the input was not read).
    assert result.exit_code == 3, result.output
    assert "invalid time" in result.stderr


def test_years_1_and_9999_are_times(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        rt("request.start", time="0001-01-01T00:00:00.000000Z", request_id="r1",
           span_id="a" * 16, trace_id="t" * 32),
        rt("request.start", time="9999-12-31T23:59:59.999999Z", request_id="r2",
           span_id="b" * 16, trace_id="t" * 32),
    ]) + "\n")
    summary = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))["summary"]
    assert (summary["bad_lines"], summary["requests"]) == (0, 2)


@pytest.mark.parametrize("time", FAIR_OFFSETS)
def test_offsets_rfc3339_writes_are_read(
    request: pytest.FixtureRequest, tmp_path: Path, time: str
) -> None:
    _log(tmp_path, time)
    summary = engine_report(request, "pandas", tmp_path)["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (3, 0, 2)
