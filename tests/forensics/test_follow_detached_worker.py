"""A worker running on after its caller left does not fold the id's next holders into
an earlier duplicate.

Under the legacy policy a caller whose response task was dropped leaves its worker
streaming (a detached pump). `analyze` clusters callers by their own spans, so two
callers that took the id after the first pair had ended are a duplicate of their own.
Live, the next caller's worker span joined the first pair's cluster while the detached
worker was still open (or had logged past the next caller's start), and a cluster is
reported once: on a legacy `serve` run under load the follower printed 465 duplicates
where `analyze` of the same finished logs reported 472, the missing ones folded into
an earlier finding's callers or lost with it.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import follow_as_written, rt, ts


def _caller(span: str, start: float, end: float, worker_start: float,
            worker_end: float) -> list[tuple[float, str, str]]:
    """A legacy caller: a minted id on its start, the client's id ``7`` after it."""
    trace = f"{span:0>32}"
    minted = {"trace_id": trace, "span_id": span, "request_id": f"minted-{span}",
              "x_request_id": "7"}
    held = {**minted, "request_id": "7"}
    work = {"trace_id": trace, "span_id": f"w{span}", "parent_span_id": span,
            "request_id": "7", "x_request_id": "7", "service": "worker-1"}
    return [
        (start, "frontend.jsonl", rt("request.start", time=ts(start), method="POST",
                                     path="/inference/v1/generate", **minted)),
        (worker_start, "worker.jsonl", rt("worker.start", time=ts(worker_start),
                                          fp_in=f"in-{span}", **work)),
        (end, "frontend.jsonl", rt("request.end", time=ts(end), status=200, outcome="ok",
                                   fp_in=f"in-{span}", fp_out=f"out-{span}", **held)),
        (worker_end, "worker.jsonl", rt("worker.end", time=ts(worker_end), outcome="ok",
                                        fp_out=f"out-{span}", **work)),
    ]


def _found(tmp_path: Path, lines: list[tuple[float, str, str]]) -> list[dict[str, object]]:
    """Write the lines in time order as the services would, a poll after each."""
    return follow_as_written(tmp_path, sorted(lines))


def _duplicates(findings: list[dict[str, object]]) -> list[tuple[object, object]]:
    return sorted((f["span_id"], f["detail"]) for f in findings
                  if f["kind"] == "duplicate_in_flight")


def test_the_next_pair_of_holders_is_a_duplicate_of_its_own(tmp_path: Path) -> None:
    lines = [
        # a1 and b2 hold 7 at once; a1's worker streams on until 0.62, after both left.
        *_caller("a1", 0.0, 0.40, 0.05, 0.62),
        *_caller("b2", 0.10, 0.45, 0.15, 0.44),
        # c3 and d4 take 7 after a1 and b2 ended (a1's worker still running), together.
        *_caller("c3", 0.50, 0.90, 0.55, 0.85),
        *_caller("d4", 0.70, 1.00, 0.75, 0.95),
    ]
    live = _duplicates(_found(tmp_path, lines))
    batch = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    expected = _duplicates(json.loads(batch.stdout)["findings"])
    assert [span for span, _ in expected] == ["a1", "c3"]
    assert live == expected


def test_a_caller_that_took_the_id_late_joins_the_holder_it_started_beside(
    tmp_path: Path,
) -> None:
    """b2 started beside a1 but reached its worker only after c3 had taken the id: under
    the legacy policy it held the id from its start, so `analyze` has a1, b2 and c3 in
    one duplicate. Live, b2 joined c3's cluster alone, a1's left behind."""
    lines = [
        *_caller("a1", 0.0, 0.12, 0.10, 0.60),
        *_caller("b2", 0.01, 0.55, 0.30, 0.50),
        *_caller("c3", 0.20, 0.70, 0.21, 0.65),
    ]
    live = _duplicates(_found(tmp_path, lines))
    batch = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    expected = _duplicates(json.loads(batch.stdout)["findings"])
    assert [span for span, _ in expected] == ["a1"]
    assert live == expected


def test_a_reported_caller_whose_later_line_holds_the_id_longer_is_not_reported_again(
    tmp_path: Path,
) -> None:
    """a1 and b2 are printed as a duplicate; c3 takes the id after both ended, alone.
    a1's Unlinked error, logged after its end (the legacy pump), holds the id past c3's
    start: `analyze` has a1, b2 and c3 in one duplicate, printed already. Live, a1 joined
    c3's cluster, and a second finding named a1 again with c3."""
    unlinked = rt("response.unlinked", time=ts(0.40), request_id="7", x_request_id="7",
                  trace_id=f"{'a1':0>32}", span_id="a1",
                  error="Unlinked response; response task was dropped or cancelled")
    lines = [
        *_caller("a1", 0.0, 0.10, 0.02, 0.09),
        *_caller("b2", 0.05, 0.20, 0.06, 0.19),
        *_caller("c3", 0.25, 0.50, 0.26, 0.49),
        (0.40, "frontend.jsonl", unlinked),
    ]
    live = _duplicates(_found(tmp_path, lines))
    batch = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    expected = _duplicates(json.loads(batch.stdout)["findings"])
    assert [span for span, _ in expected] == ["a1"]
    assert [span for span, _ in live] == ["a1"]
