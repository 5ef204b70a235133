"""`export jaeger`: a span lasts until its answer, not through the background tasks its
response ran.

The middleware writes `request.end` once the app returns, after those tasks; the span
exported live ended at the answer's last byte, and `duration_ms` leaves them out. The
export ended the span at the line: a 5 ms answer with a 1 s task was a 1 s span, where
`trace` said 5 ms.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.jaeger import to_jaeger
from tests.forensics.helpers import rt_at_us


def test_a_span_ends_where_its_answer_says_not_after_its_background_task(
    tmp_path: Path,
) -> None:
    tasked = {"request_id": "r1", "trace_id": "a" * 32, "span_id": "b" * 16}
    plain = {"request_id": "r2", "trace_id": "c" * 32, "span_id": "d" * 16}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        rt_at_us(0, "request.start", "frontend", **tasked),
        rt_at_us(1_005_000, "request.end", "frontend", status=200, outcome="ok",
                 duration_ms=4.572, **tasked),
        rt_at_us(2_000_000, "request.start", "frontend", **plain),
        rt_at_us(2_250_300, "request.end", "frontend", status=200, outcome="ok",
                 duration_ms=250.1, **plain),
    ]) + "\n")
    events = load_events([str(tmp_path)]).events
    spans = {s["spanID"]: s for t in to_jaeger(build_requests(events), events)["data"]
             for s in t["spans"]}
    assert spans["b" * 16]["duration"] == 4_572
    # Its line within a millisecond of the duration it states: the line's time.
    assert spans["d" * 16]["duration"] == 250_300
