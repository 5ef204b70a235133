"""An hour 24 or a UTC offset of 24 hours or more is no time.

DuckDB's cast read ``T24:00:00Z`` as the next midnight and ``+99:99`` as an offset of
four days; RFC 3339 writes neither and the Python side of the read refuses both. A torn
or forged line was read as good and moved days from its request's other lines (its
overlaps and windows with it), with no bad line to say so. It is now "invalid time" on
every path; the offsets RFC 3339 writes are read as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.forensics.helpers import engine_report, rt, rt_request
from tests.support.extras import ENGINES

ODD = ["2026-11-29T10:00:00.000000+99:99", "2026-11-29T10:00:00+24:00",
       "2026-11-29T24:00:00.000000Z", "2026-11-29T10:00:00-2400"]
# The offsets the world uses, at their edges: each the same instant, 10:00 UTC.
FAIR = ["2026-11-29T23:59:00+13:59", "2026-11-28T20:01:00-13:59", "2026-11-29T15:30:00+0530",
        "2026-11-29T05:00:00.000000-05:00", "2026-11-29T10:00:00.000000+00:00"]


def _log(directory: Path, time: str) -> None:
    good = rt_request("a" * 16, "r1", 0, 1)
    odd = rt("request.start", time=time, request_id="r2", span_id="b" * 16, trace_id="t" * 32)
    (directory / "frontend.jsonl").write_text("\n".join([*good, odd]) + "\n")


@pytest.mark.parametrize("time", ODD)
@pytest.mark.parametrize("engine", ENGINES)
def test_an_hour_or_offset_rfc3339_cannot_write_is_a_bad_line(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str, time: str
) -> None:
    _log(tmp_path, time)
    summary = engine_report(request, engine, tmp_path)["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (3, 1, 1)
    [sample] = summary["bad_line_samples"]
    assert (sample["line"], sample["reason"]) == (3, "invalid time")


@pytest.mark.parametrize("time", FAIR)
def test_offsets_rfc3339_writes_are_read_as_their_instant(
    request: pytest.FixtureRequest, tmp_path: Path, time: str
) -> None:
    _log(tmp_path, time)
    summary = engine_report(request, "local", tmp_path)["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (3, 0, 2)
