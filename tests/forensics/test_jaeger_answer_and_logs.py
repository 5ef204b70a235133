"""`export jaeger`: a span lasts until its answer, not through the background tasks its
response ran; a span's logs say what each line says.

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


def test_a_retrys_log_says_which_worker_failed_and_why(tmp_path: Path) -> None:
    # The span's tags name the worker that served it; the retry's log said only
    # "dispatch.retry", where `trace` shows the worker given up and the reason.
    ids = {"request_id": "r1", "trace_id": "a" * 32, "span_id": "b" * 16}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        rt_at_us(0, "request.start", "frontend", **ids),
        rt_at_us(500_000, "dispatch.retry", "frontend", worker="http://10.0.0.7:8101",
                 attempt=1, reason="timeout", marked_down=True,
                 error="no first chunk within 0.5s", **ids),
        rt_at_us(600_000, "request.end", "frontend", status=200, outcome="ok",
                 duration_ms=600.0, worker="http://10.0.0.8:8101", **ids),
    ]) + "\n")
    events = load_events([str(tmp_path)]).events
    (trace,) = to_jaeger(build_requests(events), events)["data"]
    (retry,) = [log for log in trace["spans"][0]["logs"]
                if log["fields"][0]["value"] == "dispatch.retry"]
    fields = {f["key"]: f["value"] for f in retry["fields"]}
    assert fields["dispatch"] == "worker http://10.0.0.7:8101, reason timeout, marked down"
    assert fields["error"] == "no first chunk within 0.5s"
