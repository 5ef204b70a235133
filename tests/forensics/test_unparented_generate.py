"""Dynamo's ``generate`` span logged without ``parent_id``: inside its ``http-request``.

The shared sample's pre-fix Unlinked failure (`/work/shared/samples`, line 7) is a
``generate`` line with no ``parent_id``. With its request's ``http-request`` lines
beside it, the one failed request was counted as two requests holding its id at once:
an invented ``duplicate_in_flight`` error (exit 1) in `analyze`, `--engine dask`,
`--follow` and `trace` alike. Such a span's parent is its trace's one other frontend
span.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics import analyze, load_events, report_json
from ridtrace.forensics.live.rules import LiveRules
from tests.forensics.test_follow_rules import S, _rows

_UNLINKED = "Unlinked response; response task was dropped or cancelled"


def _line(t: str, message: str, span: str, name: str, trace: str, **more: Any) -> str:
    return json.dumps({
        "time": f"2026-10-02T14:05:{t}Z", "level": "INFO", "file": "generate.rs", "line": 1,
        "target": "dynamo_llm::http::service::generate", "message": message,
        "request_id": "1", "span_id": span, "span_name": name, "trace_id": trace,
        "x_request_id": "1", **more})


def _request(trace: str, host: str, inner: str, start: int) -> list[str]:
    """A pre-fix request on /inference/v1/generate that failed Unlinked."""
    return [
        _line(f"{start:02d}.100000", "request received", host, "http-request", trace,
              uri="/inference/v1/generate", method="POST"),
        _line(f"{start:02d}.400000", "engine generate call failed", inner, "generate", trace,
              error=_UNLINKED, level="ERROR"),
        _line(f"{start:02d}.700000", "http response sent", host, "http-request", trace,
              latency_ms="600", status="500", uri="/inference/v1/generate", method="POST"),
    ]


def _report(path: Path) -> dict[str, Any]:
    return report_json(analyze(load_events([str(path)])))


def test_one_failed_request_is_one_request_with_one_unlinked(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_request("b6" * 16, "a1" * 8, "5c" * 8, 1)) + "\n")
    doc = _report(log)
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"]
    assert doc["summary"]["requests"] == 1 and doc["summary"]["spans"] == 2


def test_two_such_requests_holding_one_id_at_once_are_still_a_duplicate(
    tmp_path: Path,
) -> None:
    log = tmp_path / "frontend.jsonl"
    lines = _request("b6" * 16, "a1" * 8, "5c" * 8, 1) + _request("c7" * 16, "a2" * 8,
                                                                  "5d" * 8, 1)
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    doc = _report(log)
    kinds = sorted(f["kind"] for f in doc["findings"])
    assert kinds == ["duplicate_in_flight", "unlinked", "unlinked"]
    assert doc["summary"]["requests"] == 2
    found = next(f for f in doc["findings"] if f["kind"] == "duplicate_in_flight")
    assert found["detail"].startswith("2 requests held request_id 1")


def test_trace_shows_the_generate_span_inside_its_request(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_request("b6" * 16, "a1" * 8, "5c" * 8, 1)) + "\n")
    got = CliRunner().invoke(main, ["trace", "1", str(log), "--format", "json", "-q"])
    doc = json.loads(got.output)
    assert doc["matched"] == 1, doc
    (request,) = doc["requests"]
    assert {e["span_id"] for e in request["events"]} == {"a1" * 8, "5c" * 8}


def _live_row(span: str, t0: int, *, inner: bool = False, t1: int | None = None,
              **more: Any) -> dict[str, Any]:
    return {"span_id": span, "request_id": "1", "x_request_id": "1", "t0": t0,
            "t1": t1 if t1 is not None else t0, "trace_id": "b6" * 16, "inner": inner,
            **more}


def test_live_the_generate_span_read_before_or_after_its_request_is_one_caller() -> None:
    host = _live_row("a1" * 8, 0, t1=S, closing=True)
    inner = _live_row("5c" * 8, S // 2, inner=True)
    for rows in ([host, inner], [inner, host]):
        rules = LiveRules(window_s=600)
        found = [f for row in rows for f in rules.feed(_rows(row))]
        assert found == [], rows
        assert rules.callers_seen == 1, rows


def test_live_two_requests_with_their_generate_spans_are_still_a_duplicate() -> None:
    rules = LiveRules(window_s=600)
    first = [_live_row("a1" * 8, 0, t1=3 * S), _live_row("5c" * 8, S, inner=True)]
    second = [{**_live_row("a2" * 8, 2 * S, t1=4 * S), "trace_id": "c7" * 16},
              {**_live_row("5d" * 8, 2 * S, inner=True), "trace_id": "c7" * 16}]
    found = [f for row in (*first, *second) for f in rules.feed(_rows(row))]
    assert [(f["kind"], f["request_id"]) for f in found] == [("duplicate_in_flight", "1")]
