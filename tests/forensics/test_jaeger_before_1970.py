"""`export jaeger` writes no negative time: a span logged before 1970 (Go's zero time,
year 1, a clock not set) is at 1970 with a warning saying so.

Jaeger's model types startTime and a log's timestamp as unsigned microseconds since
1970; the file held -62135596800000000 for such a span, which Jaeger cannot read.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.jaeger import to_jaeger
from ridtrace.forensics.views.jaeger_epoch import BEFORE_1970
from tests.forensics.helpers import rt


def test_a_span_logged_in_year_one_starts_at_1970_with_a_warning(tmp_path: Path) -> None:
    ids = {"request_id": "r1", "trace_id": "a" * 32, "span_id": "b" * 16}
    later = {"request_id": "r2", "trace_id": "c" * 32, "span_id": "d" * 16}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        rt("request.start", time="0001-01-01T00:00:00Z", **ids),
        rt("request.end", time="0001-01-01T00:00:00.250000Z", status=200, outcome="ok", **ids),
        rt("request.start", time="2026-11-29T10:00:00Z", **later),
        rt("request.end", time="2026-11-29T10:00:01Z", status=200, outcome="ok", **later),
    ]) + "\n")
    events = load_events([str(tmp_path)]).events
    spans = {s["spanID"]: s for t in to_jaeger(build_requests(events), events)["data"]
             for s in t["spans"]}
    early, normal = spans["b" * 16], spans["d" * 16]
    # 1 µs, not 0: Jaeger UI's upload drops a span whose startTime is 0, warning and all.
    assert (early["startTime"], early["duration"], early["warnings"]) == (1, 250_000,
                                                                         [BEFORE_1970])
    assert [log["timestamp"] for log in early["logs"]] == [1, 1]
    # A span after 1970 is as it was.
    assert (normal["startTime"], normal["warnings"]) == (1_795_946_400_000_000, None)
    assert [log["timestamp"] for log in normal["logs"]] == [1_795_946_400_000_000,
                                                            1_795_946_401_000_000]
