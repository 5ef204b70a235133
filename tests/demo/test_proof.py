"""Matching the logs' crossed-stream findings to what the demo's callers saw."""

from __future__ import annotations

from pathlib import Path

from ridtrace.demo.plan import CallResult, PlannedCall
from ridtrace.demo.proof import crossed_detection
from ridtrace.demo.run import PolicyRun


def _result(index: int, *, foreign: bool = False, disconnect: bool = False) -> CallResult:
    call = PlannedCall(index, "/v1/completions", True, f"p{index}", {}, None, disconnect, f"t{index}")
    result = CallResult(call=call, status=200, text=f"echo: p{index}")
    if foreign:
        result.text, result.foreign_prompts = "echo: p99", ["p99"]
    return result


def _run(results: list[CallResult], crossed_spans: list[str]) -> PolicyRun:
    run = PolicyRun("legacy", Path("."), results, 0)
    run.report = {"findings": [{"kind": "crossed_stream", "span_id": s} for s in crossed_spans]}
    run.trace_of_span = {f"s{r.call.index}": r.call.trace_id for r in results}
    return run


def test_a_crossing_reported_for_a_caller_that_hung_up_is_not_invented() -> None:
    run = _run([_result(1, foreign=True), _result(2, disconnect=True), _result(3)], ["s1", "s2"])
    detection = crossed_detection(run)
    assert detection.missed == frozenset() and detection.invented == frozenset()


def test_the_findings_table_says_which_reported_crossings_no_caller_could_confirm() -> None:
    # "2 / 3 / 0" read as a crossing analyze made up, under the demo's OK: the third was
    # a caller that hung up on purpose, whose answer nobody read.
    import io

    from rich.console import Console

    from ridtrace.demo.report import findings_side_by_side

    run = _run([_result(1, foreign=True), _result(2, disconnect=True), _result(3)], ["s1", "s2"])
    run.report["summary"] = {"bad_lines": 0}
    out = io.StringIO()
    findings_side_by_side(Console(file=out, width=200), [run], [crossed_detection(run)])
    assert "1 / 2 (1 to callers that hung up) / 0" in out.getvalue()


def test_missed_and_invented_crossings_are_named() -> None:
    run = _run([_result(1, foreign=True), _result(2), _result(3)], ["s2"])
    detection = crossed_detection(run)
    assert detection.missed == {"t1"} and detection.invented == {"t2"}
