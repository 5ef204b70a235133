"""Dynamo-style logs written by Rust tracing-subscriber's own JSON formatter: what
Dynamo's JSONL writes flat is nested under ``fields``, ``span`` and ``spans``, the time
in ``timestamp``. Its lines were read without their ids (no request, no bad line: a
file's requests silently lost beside other logs) or were all "missing time"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import analyze_json
from tests.support.follower import start_follower

SAMPLE = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
# What tracing-subscriber records on the span rather than the event.
_SPAN_FIELDS = {
    "span_id", "trace_id", "parent_id", "span_name", "method", "uri", "version",
    "request_id", "x_request_id", "component", "endpoint", "namespace", "instance_id",
}
START_UP = {"timestamp": "2026-10-02T14:00:00.000001Z", "level": "INFO",
            "fields": {"message": "OTLP export enabled"}, "target": "dynamo_runtime::logging"}


def _nested(record: dict[str, Any], *, flatten_event: bool) -> dict[str, Any]:
    span = {("name" if k == "span_name" else k): v for k, v in record.items()
            if k in _SPAN_FIELDS}
    event = {k: v for k, v in record.items() if k not in _SPAN_FIELDS and k != "time"}
    out: dict[str, Any] = {"timestamp": record["time"], "level": event.pop("level")}
    if flatten_event:
        out.update(event)
    else:
        out["target"] = event.pop("target")
        out["fields"] = event
    if span:
        out["span"] = span
        out["spans"] = [{"name": "runtime"}, span]
    return out


def _write(path: Path, *, flatten_event: bool, wrap: bool = False) -> Path:
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    # A service's first line is outside any span: with flatten_event it has no nesting.
    start = {k: v for k, v in START_UP.items() if k != "fields"} | START_UP["fields"] \
        if flatten_event else START_UP
    lines = [json.dumps(start)] + [json.dumps(_nested(r, flatten_event=flatten_event),
                                              separators=(",", ":")) for r in records]
    if wrap:  # as a Kubernetes node keeps it
        lines = [f"2026-10-02T14:00:00.000000001Z stderr F {line}" for line in lines]
    path.write_text("\n".join(lines) + "\n")
    return path


def _found(doc: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(f["kind"], f["span_id"], f["evidence"][0]["line"]) for f in doc["findings"]]


@pytest.mark.parametrize("wrap", [False, True], ids=["file", "in CRI"])
@pytest.mark.parametrize("flatten_event", [False, True], ids=["fields", "flatten_event"])
def test_tracing_subscriber_json_gives_the_flat_report(
    tmp_path: Path, flatten_event: bool, wrap: bool
) -> None:
    _, want = analyze_json(str(SAMPLE))
    log = _write(tmp_path / "frontend.log", flatten_event=flatten_event, wrap=wrap)
    code, got = analyze_json(str(log))
    assert code == 1
    assert got["summary"]["bad_lines"] == 0
    assert got["summary"]["requests"] == want["summary"]["requests"]
    # One start-up line more, at the top: the same findings, one line further down.
    assert _found(got) == [(kind, span, line + 1) for kind, span, line in _found(want)]


def test_a_nested_file_beside_flat_logs_is_not_lost(tmp_path: Path) -> None:
    flat = tmp_path / "frontend.jsonl"
    flat.write_text(SAMPLE.read_text().splitlines()[0] + "\n")
    _write(tmp_path / "worker.jsonl", flatten_event=True)
    _, doc = analyze_json(str(tmp_path))
    assert ("unlinked", "5c20cc08e6afb2b7") in [(k, s) for k, s, _ in _found(doc)]


def test_a_flattened_line_means_what_it_meant(tmp_path: Path) -> None:
    # A key given twice keeps its first value (as for any line), and a number JSON
    # writes but Python's float cannot hold does not make the line bad.
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    lines = []
    for record in records:
        text = json.dumps(_nested(record, flatten_event=False), separators=(",", ":"))
        lines.append(text[:-1] + ',"elapsed":1e400,"fields":{"message":"shadowed"}}')
    log = tmp_path / "frontend.log"
    log.write_text("\n".join(lines) + "\n")
    code, doc = analyze_json(str(log))
    _, want = analyze_json(str(SAMPLE))
    assert doc["summary"]["bad_lines"] == 0
    assert _found(doc) == _found(want)
    assert code == 1


def _after_start_up(path: Path, start_up_bytes: int) -> Path:
    """A flatten_event log whose start-up lines, outside any span, fill `start_up_bytes`."""
    flat_start = {k: v for k, v in START_UP.items() if k != "fields"} | START_UP["fields"]
    line = json.dumps(flat_start, separators=(",", ":"))
    nested = _write(path.with_suffix(".nested"), flatten_event=True).read_text()
    path.write_text((line + "\n") * (start_up_bytes // len(line) + 1) + nested)
    return path


def test_start_up_lines_past_the_head_do_not_hide_the_nesting(tmp_path: Path) -> None:
    # A worker's start-up (model loading, config) logged outside any span filled the
    # 64 KiB the format is known by: every line after was "missing time", no request.
    log = _after_start_up(tmp_path / "frontend.log", 80 << 10)
    code, doc = analyze_json(str(log))
    _, want = analyze_json(str(SAMPLE))
    assert doc["summary"]["bad_lines"] == 0
    assert [(k, s) for k, s, _ in _found(doc)] == [(k, s) for k, s, _ in _found(want)]
    assert code == 1


def test_the_follower_knows_the_nesting_past_its_head(tmp_path: Path) -> None:
    # --follow knows a format from its first 4 KiB: past them, the batch read flattened
    # the lines and the follower counted them all bad, printing no finding.
    log = _after_start_up(tmp_path / "frontend.log", 8 << 10)
    follower = start_follower(["-"], stdin=subprocess.PIPE)
    try:
        assert follower.process.stdin is not None
        follower.process.stdin.write(log.read_bytes())
        follower.process.stdin.close()
        code = follower.process.wait(timeout=60)
    finally:
        follower.stop()
    assert follower.summary()["bad_lines"] == 0
    assert [p.json()["span_id"] for p in follower.findings()] == ["5c20cc08e6afb2b7"]
    assert code == 1


def test_records_posted_in_one_line_arrays_are_flattened(tmp_path: Path) -> None:
    # Fluent Bit's http output posts a service's records in JSON arrays, one a line:
    # each record was "missing time", the file had no request (exit 3), and the bad
    # line said "one missing time" of seven.
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    nested = [_nested(r, flatten_event=False) for r in records]
    log = tmp_path / "frontend.log"
    log.write_text("".join(json.dumps(nested[i:i + 3]) + "\n" for i in range(0, len(nested), 3)))
    code, doc = analyze_json(str(log))
    _, want = analyze_json(str(SAMPLE))
    assert doc["summary"]["bad_lines"] == 0, doc["summary"]["bad_line_samples"]
    assert doc["summary"]["requests"] == want["summary"]["requests"]
    assert [(k, s) for k, s, _ in _found(doc)] == [(k, s) for k, s, _ in _found(want)]
    assert code == 1
    # Records of no known shape in such a line: each counted in the line's reason.
    log.write_text(json.dumps([{"msg": "a"}, {"msg": "b"}, {"msg": "c"}]) + "\n")
    _, doc = analyze_json(str(log))
    (sample,) = doc["summary"]["bad_line_samples"]
    assert sample["reason"].endswith("an array of 3 JSON objects on one line, 3 of them "
                                     "missing time"), sample
