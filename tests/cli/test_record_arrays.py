"""A line that is a JSON array of log records: the batch a shipper or an HTTP log
receiver writes (Fluent Bit's ``http`` output posts its records as one JSON array).

It was one bad line ("not a JSON object") however many records it held, under the 1 % of
bad lines a read may have: an Unlinked error in a batch was dropped and the run said
"No findings", exit 0. Each record is read, cited at that line, as records ``cat``
joined on one line are.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, rt_request, ts
from tests.support.extras import ENGINES


def _log_with_batch(log: Path, batch: list[str]) -> None:
    lines = [line for n in range(200) for line in rt_request(f"{n + 1:x}", f"r{n}", n, n + 0.5)]
    log.write_text("\n".join([*lines[:100], "[" + ",".join(batch) + "]", *lines[100:]]) + "\n")


def _lost_request() -> list[str]:
    ctx = {"request_id": "lost", "trace_id": f"{'abc':0>32}", "span_id": "abc"}
    start, end = rt_request("abc", "lost", 300, 301)
    return [start, rt("response.unlinked", time=ts(300.5), **ctx), end]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_array_of_records_on_a_line_is_read_as_its_records(
    tmp_path: Path, engine: str
) -> None:
    log = tmp_path / "frontend.jsonl"
    _log_with_batch(log, _lost_request())
    code, doc = analyze_json(str(log), "--engine", engine)
    assert doc["summary"]["bad_lines"] == 0 and doc["summary"]["requests"] == 201
    assert [(f["kind"], f["span_id"], f["evidence"]) for f in doc["findings"]] == [
        ("unlinked", "abc", [{"file": str(log), "line": 101}])]
    assert code == 1


def test_a_bad_record_in_the_array_is_a_bad_line_and_the_others_are_read(
    tmp_path: Path,
) -> None:
    log = tmp_path / "frontend.jsonl"
    _log_with_batch(log, [*_lost_request(), json.dumps({"schema": "ridtrace/1"})])
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [{
        "file": str(log), "line": 101,
        "reason": "an array of 4 JSON objects on one line, one missing time"}]
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"] and code == 1


def test_an_array_of_other_values_is_still_not_a_record(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    _log_with_batch(log, [*_lost_request()[:1], "3"])
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 101, "reason": "not a JSON object"}]
