"""The OpenTelemetry Collector's file exporter writes a batch of log records a line: the
share of bad lines is judged on the records, not on the batches that hold them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary, rt, rt_request
from tests.support.extras import ENGINES
from tests.support.follower import start_follower


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


def _unlinked_batch(odd_body: str) -> bytes:
    """A batch of 60 requests' records, an Unlinked error, and `odd_body`."""
    unlinked = rt("response.unlinked", request_id="r7", span_id=f"{8:016x}",
                  trace_id="e" * 32, error="Unlinked response; response task was dropped")
    requests = _requests(0, 60)
    return _batch([*requests[:3], odd_body, unlinked, *requests[3:]])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_long_body_cut_short_makes_the_read_incomplete(tmp_path: Path, engine: str) -> None:
    # A 20 KB Unlinked record cut at the collector's 8 KiB max_log_size: a plain line so
    # cut makes the read incomplete (such a limit loses every record as long, and those
    # hold an error's details). Carried in a batch it was one bad record "missing time"
    # under the 1 %, "No findings", exit 0.
    long_error = rt("response.unlinked", request_id="r9", span_id=f"{10:016x}",
                    trace_id="f" * 32, error="Unlinked response; " + "x" * 20_000)
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_unlinked_batch(long_error[:8192]))
    code, doc = analyze_json(str(log), "--engine", engine)
    summary = doc["summary"]
    assert [s["reason"] for s in summary["bad_line_samples"]] == [
        "122 JSON objects on one line, one truncated JSON (4 KiB or more)"]
    assert [u["reason"].split(" (")[0] for u in summary["unreadable_files"]] == [
        "a record of 4 KiB or more cut short"]
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"] and code == 1
    # A short cut is a crash's torn record, as on a plain line: the read stays complete.
    log.write_bytes(_unlinked_batch(long_error[:200]))
    code, doc = analyze_json(str(log), "--engine", engine)
    assert doc["summary"]["unreadable_files"] == [] and code == 1


@pytest.mark.parametrize("between", ["", "\n", "\r\n", "\r"], ids=["none", "LF", "CRLF", "CR"])
def test_a_body_holding_two_records_back_to_back_is_read_as_both(
    tmp_path: Path, between: str,
) -> None:
    # As a plain line holding two objects is (a log copied while written); refused as no
    # whole object, both records were lost. A CR between them (a Windows service's
    # lines, a multiline filelog entry) left the batch's line CR-separated text: all of
    # its 123 records lost, "the end of a JSON record, its start missing".
    first, second = rt_request("a" * 16, "r-two", 0, 1)
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_unlinked_batch(first + between + second))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"]) == (123, 0)
    assert summary["requests"] == 62 and code == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_body_nested_too_deeply_is_one_bad_record_and_an_incomplete_read(
    tmp_path: Path, engine: str,
) -> None:
    # Its batch was "the end of a JSON record, its start missing" as a whole, blamed on
    # a rotation, its 121 other records lost.
    deep = rt("response.unlinked", request_id="r9", span_id=f"{10:016x}", trace_id="f" * 32,
              error="Unlinked response")[:-1] + ',"ctx":' + "[" * 2000 + "]" * 2000 + "}"
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_unlinked_batch(deep))
    code, doc = analyze_json(str(log), "--engine", engine)
    summary = doc["summary"]
    assert [s["reason"] for s in summary["bad_line_samples"]] == [
        "122 JSON objects on one line, one JSON nested too deeply"]
    assert summary["requests"] == 61 and summary["incomplete"] is True
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"] and code == 1


def test_the_follower_judges_a_batch_s_unreadable_records_as_the_batch_read_does(
    tmp_path: Path,
) -> None:
    long_error = rt("response.unlinked", request_id="r9", span_id=f"{10:016x}",
                    trace_id="f" * 32, error="Unlinked response; " + "x" * 20_000)
    # A line the follower judges whole (its head, 64 KiB, holds it).
    (tmp_path / "otel-logs.json").write_bytes(_batch([*_requests(0, 20), long_error[:5000]]))
    summary = followed_summary(tmp_path)
    assert [s["reason"] for s in summary["bad_line_samples"]] == [
        "41 JSON objects on one line, one truncated JSON (4 KiB or more)"]
    assert summary["incomplete"] is True and summary["requests"] == 20


def test_the_follower_reads_a_batch_line_longer_than_its_head(tmp_path: Path) -> None:
    # The collector's batch processor writes lines of hundreds of records: longer than
    # the 64 KiB the follower looked at for a file's first line, the line gave no head,
    # was never unwrapped, and was one bad line "missing time", where the batch read
    # found every request.
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batch(_requests(0, 200)) + _batch(_requests(200, 10)))
    assert log.stat().st_size > 2 * 64 * 1024
    summary = followed_summary(tmp_path)
    assert summary["bad_line_samples"] == []
    assert (summary["lines"], summary["requests"]) == (420, 210)
    # And as a pipe's stream, which ends with its writer.
    follower = start_follower(["-"], stdin=subprocess.PIPE)
    try:
        pipe = follower.process.stdin
        assert pipe is not None
        pipe.write(log.read_bytes())
        pipe.close()
        code = follower.process.wait(timeout=60)
    finally:
        follower.stop()
    streamed = follower.summary()
    assert streamed["bad_line_samples"] == [] and code == 0
    assert (streamed["lines"], streamed["requests"]) == (420, 210)


def test_an_application_s_line_of_the_unreadable_record_shape_writes_no_reason(
    tmp_path: Path,
) -> None:
    # Only the reasons the unwrapper gives are taken from such an object: any other text
    # was shown as the bad line's reason, as the application wrote it.
    # A list or an object there made the lookup raise: exit 4 on any log holding it.
    log = tmp_path / "app.jsonl"
    for value in ("disk on fire", [], {}, 1):
        log.write_text("\n".join([*_requests(0, 60),
                                  json.dumps({"ridtrace.unreadable_record": value})]) + "\n")
        code, doc = analyze_json(str(log))
        assert [s["reason"] for s in doc["summary"]["bad_line_samples"]] == ["missing time"]
        assert code == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_body_behind_a_container_runtime_s_prefix_is_read(tmp_path: Path, engine: str) -> None:
    # A collector whose filelog receiver tails /var/log/pods without its `container`
    # operator carries each line with the runtime's prefix ("<time> stdout F {…}"): every
    # record was "missing time", and a folder of such batches lost its crossed streams
    # and Unlinked errors while Vector's or Fluent Bit's entries of the same lines were read.
    unlinked = rt("response.unlinked", request_id="r7", span_id=f"{8:016x}",
                  trace_id="e" * 32, error="Unlinked response; response task was dropped")
    prefixed = [f"2026-12-01T10:00:00.{n:06d}Z stdout F {line}"
                for n, line in enumerate([*_requests(0, 30), unlinked])]
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batch(prefixed))
    code, doc = analyze_json(str(log), "--engine", engine)
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (61, 0, 31)
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"] and code == 1
    # A runtime's partial line (P) is no whole record: a bad one, as on a CRI file.
    log.write_bytes(_batch([*prefixed, "2026-12-01T10:00:01Z stdout P {\"time\":"]))
    code, doc = analyze_json(str(log), "--engine", engine)
    assert doc["summary"]["bad_lines"] == 1 and code == 1


def test_a_text_body_is_judged_as_its_plain_line_not_missing_time(tmp_path: Path) -> None:
    # A banner or a text logger's line in a batch was "missing time", which sent the
    # reader looking for a time the line never had.
    text_logger = "2026-12-01T10:00:00Z INFO worker ready"
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batch(["starting frontend", *_requests(0, 60)])
                    + _batch([text_logger, *_requests(60, 60)]))
    code, doc = analyze_json(str(log))
    assert [s["reason"] for s in doc["summary"]["bad_line_samples"]] == [
        "121 JSON objects on one line, one not JSON",
        "121 JSON objects on one line, one a text log line, not JSON "
        "(Dynamo writes JSON lines with DYN_LOGGING_JSONL=1)"]
    assert code == 0
    followed = followed_summary(tmp_path)
    assert followed["bad_line_samples"] == doc["summary"]["bad_line_samples"]


def test_a_record_holding_a_lone_surrogate_itself_is_the_only_bad_one(tmp_path: Path) -> None:
    # A lone surrogate itself (not its escape) is bytes no UTF-8 reader takes, as on a
    # plain line; written into the batch's line, it made every record on it unread.
    requests = _requests(0, 60)
    raw = requests[0][:-1] + ', "note": "a\ud800b"}'
    assert "\ud800" in raw
    log = tmp_path / "otel-logs.json"
    for body in (raw, f"2026-12-01T10:00:00Z stdout F {raw}"):
        log.write_bytes(_batch([body, *requests[1:]]))
        _, doc = analyze_json(str(log))
        summary = doc["summary"]
        assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (120, 1, 60)
        assert [s["reason"] for s in summary["bad_line_samples"]] == [
            "120 JSON objects on one line, one invalid UTF-8"]


def test_blank_bodies_are_skipped_and_a_byte_order_mark_is_no_part_of_a_record(
    tmp_path: Path,
) -> None:
    # As in a plain file: a blank line is no line, a BOM before a record is taken off.
    requests = _requests(0, 60)
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batch(["", "   ", "\ufeff" + requests[0],
                            f"2026-12-01T10:00:00Z stdout F \ufeff{requests[1]}", *requests[2:]]))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (120, 0, 60)
    assert summary["incomplete"] is False and code == 0
