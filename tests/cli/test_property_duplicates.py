"""Property test of `ridtrace analyze`'s duplicate_in_flight against a brute-force oracle.

Legacy-policy frontend requests (`request.start` under a minted id, later lines under
the client's) share a few client ids; some start at the very microsecond another holder
of their id ended, some were cut off by a killed frontend after their dispatch line.
Each line's time is spelled as RFC 3339 allows (`Z`, `+00:00`, other offsets, a lower-case
`t`/`z`, a space, nanoseconds). The oracle holds each request's id from its first line
to its last (a `[start, end]` of one instant overlaps nothing it only touches) and
groups overlapping holders of one id; `analyze` must report exactly those groups.
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ridtrace.cli.main import main

_BASE = datetime(2026, 10, 2, 14, 0, 0, tzinfo=UTC)
_SPELLINGS = ("Z", "+00:00", "+05:30", "-08:00", "lower", "space", "nanos")


def _spelled(us: int, spelling: str) -> str:
    t = _BASE + timedelta(microseconds=us)
    if spelling in ("+05:30", "-08:00"):
        sign = 1 if spelling[0] == "+" else -1
        offset = timedelta(hours=int(spelling[1:3]), minutes=int(spelling[4:6])) * sign
        return (t + offset).replace(tzinfo=None).isoformat(timespec="microseconds") + spelling
    text = t.replace(tzinfo=None).isoformat(timespec="microseconds")
    return {"Z": text + "Z", "+00:00": text + "+00:00", "lower": text.replace("T", "t") + "z",
            "space": text.replace("T", " ") + "Z", "nanos": text + "999Z"}[spelling]


_REQUEST = st.tuples(
    st.sampled_from(["r1", "r2"]),  # the client id, held after request.start
    st.integers(0, 6),  # start, in steps of 1 ms, or at the end of the request before
    st.sampled_from([0, 1, 1000, 3000]),  # duration in µs
    st.booleans(),  # starts at the previous request's end
    st.booleans(),  # cut off by a killed frontend after its dispatch line
)


def _lines_and_holders(requests: list[tuple[str, int, int, bool, bool]],
                       spellings: list[str]) -> tuple[list[tuple[int, dict[str, object]]],
                                                      list[tuple[str, str, int, int]]]:
    lines, holders, previous_end = [], [], 0
    for n, (rid, step, duration, back_to_back, killed) in enumerate(requests):
        start = previous_end if back_to_back else step * 1000
        span = f"{n + 1:016x}"
        ctx = {"x_request_id": rid, "trace_id": span * 2, "span_id": span}
        dispatched = start + duration // 2
        end = dispatched if killed else start + duration
        lines.append((start, {"event": "request.start", "request_id": f"minted-{n}", **ctx}))
        lines.append((dispatched, {"event": "dispatch.retry", "request_id": rid, **ctx,
                                   "reason": "conflict"}))
        if not killed:
            lines.append((end, {"event": "request.end", "request_id": rid, **ctx,
                                "status": 200, "outcome": "ok"}))
        holders.append((rid, span, start, end))
        previous_end = end
    lines.sort(key=lambda item: item[0])
    return [(us, {"time": _spelled(us, spellings[i % len(spellings)]), "level": "INFO",
                  "message": str(fields["event"]), "schema": "ridtrace/1",
                  "service": "frontend", **fields})
            for i, (us, fields) in enumerate(lines)], holders


def _overlap(a: tuple[str, str, int, int], b: tuple[str, str, int, int]) -> bool:
    if a[2] == b[2]:
        return a[3] > a[2] or b[3] > b[2]
    return a[2] < b[3] and b[2] < a[3]


def _expected_groups(holders: list[tuple[str, str, int, int]]) -> set[frozenset[str]]:
    group = {h[1]: {h[1]} for h in holders}
    for a in holders:
        for b in holders:
            if a[1] < b[1] and a[0] == b[0] and _overlap(a, b):
                merged = group[a[1]] | group[b[1]]
                for span in merged:
                    group[span] = merged
    return {frozenset(g) for g in group.values() if len(g) > 1}


@settings(max_examples=12, deadline=None)
@given(st.lists(_REQUEST, min_size=2, max_size=5),
       st.lists(st.sampled_from(_SPELLINGS), min_size=1, max_size=4))
def test_duplicates_are_the_overlapping_holders_of_an_id(
    requests: list[tuple[str, int, int, bool, bool]], spellings: list[str],
) -> None:
    lines, holders = _lines_and_holders(requests, spellings)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "frontend.jsonl"
        log.write_text("".join(json.dumps(fields) + "\n" for _, fields in lines))
        result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    report = json.loads(result.stdout)
    found = {frozenset(f["detail"].split("(spans ")[1].rstrip(")").split(", "))
             for f in report["findings"] if f["kind"] == "duplicate_in_flight"}
    expected = _expected_groups(holders)
    assert found == expected
    assert (result.exit_code == 1) == bool(expected)
