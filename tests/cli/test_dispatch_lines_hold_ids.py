"""A caller's dispatch lines are its lines: `analyze` reads the id they name.

Found by an independent oracle over generated logs: under `--id-policy legacy` a
request's `request.start` names a minted id and its later lines the client's, the id
it held. A frontend killed mid-request leaves a caller with `request.start` and a
`dispatch.retry` (WARN: a worker already held the id, a Conflict) and no end. The
library's `analyze(load_events(...))` judged the caller by both lines, a duplicate in
flight with the other holder of the id; `ridtrace analyze` (either engine) read only
`request.start`, a minted id at one instant, and exited 0 with an info finding claiming
the two callers held distinct ids.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics import analyze, load_events, report_json
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, ts


def _killed_legacy_caller(log: Path) -> None:
    """Caller B holds ``r1`` from 0 s to 1 s; caller A, in flight with it, got a Conflict
    for ``r1`` at 0.2 s and was never ended (its frontend was killed)."""
    b = {"trace_id": "b" * 32, "span_id": "b" * 16, "x_request_id": "r1"}
    a = {"trace_id": "a" * 32, "span_id": "a" * 16, "x_request_id": "r1"}
    log.write_text("\n".join([
        rt("request.start", time=ts(0.0), request_id="minted-b", **b),
        rt("request.start", time=ts(0.1), request_id="minted-a", **a),
        rt("dispatch.retry", time=ts(0.2), request_id="r1", **a, worker="http://127.0.0.1:8101",
           attempt=1, reason="conflict", marked_down=False),
        rt("request.end", time=ts(1.0), request_id="r1", **b, status=200, outcome="ok"),
    ]) + "\n")


def test_a_dispatch_retry_names_the_id_the_caller_held(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    _killed_legacy_caller(log)
    code, report = analyze_json(str(log))
    library = report_json(analyze(load_events([str(log)])))
    assert code == 1
    kinds = sorted(f["kind"] for f in report["findings"])
    assert kinds == ["duplicate_in_flight"]
    duplicate = report["findings"][0]
    assert duplicate["request_id"] == "r1"
    assert [(e["file"].rsplit("/", 1)[-1], e["line"]) for e in duplicate["evidence"]] == [
        ("frontend.jsonl", 1), ("frontend.jsonl", 4), ("frontend.jsonl", 2),
        ("frontend.jsonl", 3)]
    assert report["findings"] == library["findings"]
