"""The OpenTelemetry Collector's file exporter writes a batch of log records a line: the
share of bad lines is judged on the records, not on the batches that hold them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, rt_request


def _batch(bodies: list[str]) -> bytes:
    """One line of the collector's file exporter: each body a service's line as text."""
    records = [{"timeUnixNano": "1796205600123456789",
                "observedTimeUnixNano": "1796205600200000000",
                "body": {"stringValue": body}} for body in bodies]
    return json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [
        {"scope": {}, "logRecords": records}]}]}).encode() + b"\n"


def _requests(first: int, count: int) -> list[str]:
    return [line for n in range(first, first + count)
            for line in rt_request(f"{n + 1:016x}", f"r{n}", n, n + 0.5)]


def test_a_text_body_among_a_batchs_records_is_one_bad_record_of_many(tmp_path: Path) -> None:
    # One start-up banner among 121 records: under 1 %. Counted a batch line against
    # two batch lines, it was 50 % bad lines, and a clean read exited 3.
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batch(["starting frontend", *_requests(0, 30)]) + _batch(_requests(30, 30)))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (121, 1, 60)
    assert [s["line"] for s in summary["bad_line_samples"]] == [1]
    assert summary["incomplete"] is False and code == 0


@pytest.mark.parametrize("cut", [60, -1], ids=["mid-record", "after-an-inner-object"])
def test_a_body_cut_short_loses_only_its_own_record(tmp_path: Path, cut: int) -> None:
    # The collector's max_log_size cuts a long line short: read back to back with the
    # batch's others, the whole batch line was "truncated JSON", its Unlinked error and
    # every other record lost, under the 1 %, exit 0. Cut just after an inner object, it
    # ends in "}" as a whole record does.
    requests = _requests(0, 60)
    requests[3] = requests[3][:-1] + ',"ctx":{"k":"v"}}'
    cut_short = requests[3][:cut]
    unlinked = rt("response.unlinked", request_id="r7", span_id=f"{8:016x}",
                  trace_id="e" * 32, error="Unlinked response; response task was dropped")
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batch([*requests[:3], unlinked, *requests[3:]]))
    _, whole = analyze_json(str(log))
    assert [f["kind"] for f in whole["findings"]] == ["unlinked"]
    log.write_bytes(_batch([*requests[:3], cut_short, unlinked, *requests[3:]]))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"]) == (whole["summary"]["lines"] + 1, 1)
    assert summary["requests"] == whole["summary"]["requests"]
    assert doc["findings"] == whole["findings"] and code == 1


def test_text_bodies_over_one_percent_of_the_records_make_the_read_incomplete(
    tmp_path: Path,
) -> None:
    # Two banners in one batch of 102 records: two bad records, not one bad line.
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batch(["starting", *_requests(0, 50), "ready"]) + _batch(_requests(50, 40)))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"]) == (182, 2)
    assert [s["line"] for s in summary["bad_line_samples"]] == [1]
    assert summary["incomplete"] is True and code == 3


def _parsed_batch(records: list[tuple[dict[str, Any], dict[str, str]]]) -> bytes:
    """One batch whose bodies a json_parser operator made maps of, with record times."""
    log_records = [{**times, "body": {"kvlistValue": {"values": [
        {"key": k, "value": {"stringValue": v}} for k, v in body.items()]}}}
        for body, times in records]
    return json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [
        {"scope": {}, "logRecords": log_records}]}]}).encode() + b"\n"


def test_a_body_without_its_time_takes_the_records_time_or_observed_time(
    tmp_path: Path,
) -> None:
    # A filelog pipeline that parsed the service's time into the record's timestamp and
    # dropped it from the body (or a receiver that set only the observed time) left
    # every record "missing time": the Logs Data Model's rule is to use the record's
    # time, else its observed time.
    start, end = (json.loads(line) for line in rt_request("a" * 16, "r1", 0, 1))
    del start["time"], end["time"]
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_parsed_batch([
        (start, {"timeUnixNano": "1796205600123456789", "observedTimeUnixNano": "1796205601000000000"}),
        (end, {"timeUnixNano": "0", "observedTimeUnixNano": "1796205600500000000"}),
    ]))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (2, 0, 1)
    assert code == 0


def test_a_batch_written_before_otlp_named_its_scopes_is_read(tmp_path: Path) -> None:
    # A collector released before mid-2022 wrote `instrumentationLibraryLogs` for
    # `scopeLogs` (and, before that, `logs` for `logRecords`): read as batches of no
    # record, its lines were left out without a bad line, and the Unlinked error in them
    # was a clean "No findings" with exit 0.
    sample = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
    records = [{"timeUnixNano": "1796205600123456789", "body": {"stringValue": line}}
               for line in sample.read_text().splitlines()]
    batches = [{"resourceLogs": [{"resource": {}, "instrumentationLibraryLogs": [
        {"instrumentationLibrary": {}, records_key: half}]}]}
        for records_key, half in (("logRecords", records[:5]), ("logs", records[5:]))]
    log = tmp_path / "otel-logs.json"
    log.write_text("".join(json.dumps(batch) + "\n" for batch in batches))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (9, 0, 3)
    assert [f["span_id"] for f in doc["findings"] if f["kind"] == "unlinked"] == [
        "5c20cc08e6afb2b7"]
    assert code == 1


def test_a_record_time_past_the_year_9999_is_a_bad_record_not_a_crash(tmp_path: Path) -> None:
    # A corrupt timeUnixNano (10**30) on a body without its time overflowed the
    # conversion to a date: every command stopped with exit 4 and no report.
    start, end = (json.loads(line) for line in rt_request("a" * 16, "r1", 0, 1))
    del end["time"]
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_parsed_batch([
        (start, {"timeUnixNano": "1796205600123456789"}),
        (end, {"timeUnixNano": str(10**30), "observedTimeUnixNano": "0"}),
    ]))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (2, 1, 1)
    assert summary["bad_line_samples"][0]["line"] == 1
    assert code == 3


def test_a_finding_cites_a_batch_line_once_however_many_of_its_records_it_holds(
    tmp_path: Path,
) -> None:
    # Two callers holding one id, both in one batch line: the duplicate's evidence named
    # that line once per caller (`otel-logs.json:1` twice), a line to open twice.
    log = tmp_path / "otel-logs.json"
    held = [*rt_request("00000000000000a1", "dup", 0, 2), *rt_request("00000000000000b2", "dup", 1, 3)]
    log.write_bytes(_batch(held))
    code, doc = analyze_json(str(log))
    found = [f for f in doc["findings"] if f["kind"] == "duplicate_in_flight"]
    assert len(found) == 1 and code == 1
    cited = [(e["file"], e["line"]) for e in found[0]["evidence"]]
    assert cited == [(str(log), 1)]
