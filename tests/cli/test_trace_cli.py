"""`ridtrace trace` through the CLI: JSON shape, limit, CSV, crossed streams, Dynamo, skew."""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.contract import WORKER_END, WORKER_START
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, SynthTruth, write_logs
from tests.forensics.helpers import rt, rt_request, ts

SAMPLE = Path("/work/shared/samples/dynamo-jsonl-sample.jsonl")

# The documented shape (docs/cli.md, `ridtrace trace`).
DOC_KEYS = {"id", "matched", "shown", "more", "incomplete", "incomplete_reasons",
            "clock_offsets_ms", "workers", "requests"}
REQUEST_KEYS = {
    "request_id", "x_request_id", "span_id", "trace_id", "route", "status", "outcome", "start",
    "duration_ms", "verdict", "got_output_of", "findings", "overlaps", "deprecated_headers",
    "spans", "events",
}
PRODUCER_KEYS = {"request_id", "x_request_id", "span_id", "worker_span_id"}
SPAN_KEYS = {"side", "span_id", "start_ms", "end_ms", "outcome", "file", "name"}
EVENT_KEYS = {"ms", "side", "span_id", "event", "outcome", "level", "file", "line", "detail"}
VERDICTS = {"own output", "crossed", "no output", "unmatched output", "cut short",
            "no fingerprints", "no caller in logs"}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def crossed_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthTruth]:
    out = tmp_path_factory.mktemp("crossed")
    return out, write_logs(out, SynthSpec(requests=300, crossed=3, deprecated_every=0))


def check_shape(doc: dict[str, Any]) -> None:
    assert set(doc) == DOC_KEYS
    assert doc["shown"] == len(doc["requests"]) and doc["more"] == doc["matched"] - doc["shown"]
    assert all(isinstance(v, float) for v in doc["clock_offsets_ms"].values())
    assert all(k.startswith("worker-") for k in doc["workers"])
    for req in doc["requests"]:
        assert set(req) == REQUEST_KEYS
        assert req["verdict"] in VERDICTS
        assert req["start"].endswith("Z") and isinstance(req["duration_ms"], float)
        producer = req["got_output_of"]
        assert (producer is None) == (req["verdict"] != "crossed")
        assert producer is None or set(producer) == PRODUCER_KEYS
        assert set(req["findings"]) <= {"crossed_stream", "duplicate_in_flight", "unlinked"}
        assert all(set(s) == SPAN_KEYS for s in req["spans"])
        assert all(set(e) == EVENT_KEYS for e in req["events"])
        assert [e["ms"] for e in req["events"]] == sorted(e["ms"] for e in req["events"])


def producer_of(logs: Path, caller_span: str) -> str:
    """The caller whose worker produced what `caller_span` was delivered, read by hand."""
    lines = [json.loads(x) for f in sorted(logs.glob("*.jsonl")) for x in f.open()]
    delivered = next(x["fp_out"] for x in lines
                     if x.get("event") == "request.end" and x["span_id"] == caller_span)
    return next(str(x["parent_span_id"]) for x in lines
                if x.get("event") == "worker.end" and x.get("fp_out") == delivered)


def test_each_crossed_caller_names_whose_output_it_got(
    crossed_logs: tuple[Path, SynthTruth],
) -> None:
    path, truth = crossed_logs
    crossed = sorted(key for kind, key in truth.expected if kind == "crossed_stream")
    assert len(crossed) == 3
    for span in crossed:
        whose = producer_of(path, span)
        assert whose != span
        code, out, _ = run("trace", span, str(path), "--format", "json")
        assert code == 0
        doc = json.loads(out)
        check_shape(doc)
        (req,) = doc["requests"]
        assert req["verdict"] == "crossed" and req["got_output_of"]["span_id"] == whose
        # By the shared request_id both callers show, and the table says who got whose.
        code, out, _ = run("trace", req["request_id"], str(path))
        assert code == 0
        assert f"✗ #1 got output of span {whose} (#2)" in out  # the crossed caller is #1
        assert f"verdict: crossed — got output of span {whose} (#2)" in out


def test_json_shape_on_dynamo_sample() -> None:
    code, out, _ = run("trace", "rollout-42-s7", str(SAMPLE), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    check_shape(doc)
    assert (doc["matched"], doc["shown"], doc["more"]) == (1, 1, 0)
    (req,) = doc["requests"]
    assert req["verdict"] == "no fingerprints"  # Dynamo logs carry none
    assert [e["line"] for e in req["events"]] == [1, 2, 3, 4, 5, 6]
    assert {e["side"] for e in req["events"]} == {"frontend", "worker-0"}
    assert req["events"][-1]["ms"] == pytest.approx(1843.091)


def test_synth_collision_lists_both_callers(crossed_logs: tuple[Path, SynthTruth]) -> None:
    path, truth = crossed_logs
    for rid in sorted(key for kind, key in truth.expected if kind == "duplicate_in_flight"):
        code, out, _ = run("trace", rid, str(path), "--format", "json")
        assert code == 0
        reqs = json.loads(out)["requests"]
        assert len(reqs) == 2 and {r["request_id"] for r in reqs} == {rid}
        assert all("duplicate_in_flight" in r["findings"] for r in reqs)
        assert reqs[0]["overlaps"] == [reqs[1]["span_id"]]


def test_limit_and_how_many_more(tmp_path: Path) -> None:
    lines = [line for i in range(12)
             for line in rt_request(f"{i + 1:016x}", f"r{i}", 2.0 * i, 2.0 * i + 1, xrid="shared")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    code, out, _ = run("trace", "shared", str(tmp_path))
    assert code == 0
    assert "shared: 12 matching request(s), 10 shown" in out
    assert "… 2 more matching request(s); --limit 0 shows all" in out
    code, out, _ = run("trace", "shared", str(tmp_path), "--limit", "0", "--format", "json")
    doc = json.loads(out)
    assert (doc["matched"], doc["shown"], doc["more"]) == (12, 12, 0)
    assert [r["request_id"] for r in doc["requests"]] == [f"r{i}" for i in range(12)]
    code, out, _ = run("trace", "shared", str(tmp_path), "--limit", "3", "--format", "json")
    assert json.loads(out)["more"] == 9


def test_csv_one_row_per_event(crossed_logs: tuple[Path, SynthTruth]) -> None:
    path, truth = crossed_logs
    span = min(key for kind, key in truth.expected if kind == "crossed_stream")
    code, out, _ = run("trace", span, str(path), "--format", "csv")
    assert code == 0
    rows = out.splitlines()
    assert rows[0].startswith("request_span_id,request_id,x_request_id,verdict,")
    assert len(rows) > 4 and all(row.startswith(f"{span},") for row in rows[1:])
    assert all(",crossed," in row for row in rows[1:])


def test_dynamo_collision_with_skewed_worker_clocks(tmp_path: Path) -> None:
    truth = write_dynamo_logs(tmp_path, DynamoSpec(
        requests=60, duplicates=1, cancelled=0, bad_lines=0, workers=2,
        worker_skew_us=(-397_000, 250_000)))
    rid = next(key for kind, key in truth.expected if kind == "duplicate_in_flight")
    files = [str(f) for f in truth.files]
    code, out, _ = run("trace", rid, *files, "--format", "json", "-q")
    assert code == 0
    doc = json.loads(out)
    check_shape(doc)
    assert doc["matched"] == 2
    assert all("duplicate_in_flight" in r["findings"] for r in doc["requests"])
    offsets = doc["clock_offsets_ms"]
    assert offsets and all(v != 0 for v in offsets.values())
    for req in doc["requests"]:  # on one clock, every worker span lies inside its caller
        for bar in req["spans"][1:]:
            assert bar["start_ms"] >= 0 and bar["end_ms"] <= req["duration_ms"]
    code, out, _ = run("trace", rid, *files, "-q")
    assert code == 0 and "clock offsets corrected: worker-" in out
    assert f"held request {rid} at the same time" in out


SkewedIncident = tuple[Path, str, str]


@pytest.fixture(scope="module")
def skewed_incident(tmp_path_factory: pytest.TempPathFactory) -> SkewedIncident:
    """Dynamo logs with two skewed workers and one duplicate, its id and the log of a
    worker that served it: generated and traced once, each test changing a copy."""
    logs = tmp_path_factory.mktemp("skewed")
    truth = write_dynamo_logs(logs, DynamoSpec(
        requests=60, duplicates=1, cancelled=0, bad_lines=0, workers=2,
        worker_skew_us=(-397_000, 250_000)))
    rid = next(key for kind, key in truth.expected if kind == "duplicate_in_flight")
    code, out, err = run("trace", rid, str(logs), "--format", "json", "-q")
    assert code == 0, err
    served_by = sorted({Path(event["file"]).name for req in json.loads(out)["requests"]
                        for event in req["events"]} - {"frontend.jsonl"})
    return logs, rid, served_by[0]


def _skewed_incident(incident: SkewedIncident, directory: Path) -> tuple[str, str]:
    """The incident's logs copied into `directory`: its id and the log of a worker that
    served it."""
    logs, rid, served_by = incident
    shutil.copytree(logs, directory, dirs_exist_ok=True)
    return rid, served_by


def _records(log: Path) -> list[dict[str, Any]]:
    """The JSON records of `log` (its banner line left out)."""
    return [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]


def _span_logs_outside_their_span(export: Path) -> list[dict[str, Any]]:
    return [log for trace in json.loads(export.read_text())["data"] for span in trace["spans"]
            for log in span.get("logs", ())
            if not span["startTime"] <= log["timestamp"] <= span["startTime"] + span["duration"]]


@pytest.mark.parametrize(("copy_name", "later"), [
    ("a-copy.jsonl", False), ("zz-copy.jsonl", False), ("zz-copy.jsonl", True)])
def test_a_copy_of_a_skewed_worker_log_is_shown_on_the_corrected_clock(
    tmp_path: Path, skewed_incident: SkewedIncident, copy_name: str, later: bool
) -> None:
    # One pod's log collected twice: the two files' spans are one, the offset estimated
    # for the file that owns them, and the copy's lines were shown (trace) and exported
    # (Jaeger's span logs) on the raw clock, a worker working after its caller answered.
    # `later`: collected later, the copy has one more span of its own.
    logs = tmp_path / "logs"
    rid, served_by = _skewed_incident(skewed_incident, logs)
    (logs / copy_name).write_bytes((logs / served_by).read_bytes())
    if later:
        record = next(x for x in _records(logs / served_by) if x.get("parent_id"))
        record.update(span_id="dead00beef00cafe", request_id="later-1", parent_id=None)
        with (logs / copy_name).open("a") as fh:
            fh.write(json.dumps(record) + "\n")
    code, out, err = run("trace", rid, str(logs), "--format", "json", "-q")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["clock_offsets_ms"]
    copied = 0
    for req in doc["requests"]:
        for event in req["events"]:
            assert 0 <= event["ms"] <= req["duration_ms"], (event, req["duration_ms"])
            copied += event["file"].endswith(copy_name)
    assert copied  # the copy's lines are shown, on the corrected clock
    code, _, err = run("export", "jaeger", str(logs), "-o", str(tmp_path / "j.json"), "-q")
    assert code == 0, err
    assert _span_logs_outside_their_span(tmp_path / "j.json") == []


@pytest.mark.parametrize("shown", ["a duplicate", "one request"])
def test_a_worker_line_repeating_its_callers_span_id_moves_no_frontend_line(
    tmp_path: Path, skewed_incident: SkewedIncident, shown: str
) -> None:
    # The frontend's log is on the reference clock: it has no offset, and is no copy
    # of the skewed worker whose line names the frontend's span (its lines were moved
    # by the worker's offset, the request's start shown after its worker's end). Judged
    # on the lines of the requests shown, one request's made the frontend a copy.
    rid, served_by = _skewed_incident(skewed_incident, tmp_path)
    if shown == "one request":
        rid = next(line["request_id"] for line in _records(tmp_path / served_by)
                   if line.get("request_id") not in (None, rid))

    def frontend_lines() -> dict[int, tuple[int, float]]:
        """line → (its request's number in the view, its ms in that request)"""
        code, out, err = run("trace", rid, str(tmp_path), "--format", "json", "-q")
        assert code == 0, err
        return {e["line"]: (n, e["ms"]) for n, r in enumerate(json.loads(out)["requests"])
                for e in r["events"] if e["file"].endswith("frontend.jsonl")}

    before = frontend_lines()
    worker = tmp_path / served_by
    lines = worker.read_text().splitlines()
    at, served = next((n, json.loads(x)) for n, x in enumerate(lines) if rid in x)
    lines.insert(at + 1, json.dumps({**served, "span_id": served["parent_id"], "parent_id": None,
                                     "message": "a line naming its caller's span"}))
    worker.write_text("\n".join(lines) + "\n")
    after = frontend_lines()
    # The merged span starts where its first line is now, a few ms earlier: the
    # frontend's lines keep their spacing, and none moves by a worker's offset.
    assert after.keys() == before.keys()
    moved: dict[int, set[float]] = {}
    for line, (request, ms) in after.items():
        moved.setdefault(request, set()).add(round(ms - before[line][1], 3))
    assert all(len(m) == 1 and abs(next(iter(m))) < 50 for m in moved.values()), moved


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00Z", "0001-06-01T00:00:00+01:00"])
def test_a_time_outside_pandas_nanoseconds_is_shown_not_a_crash(
    tmp_path: Path, stamp: str
) -> None:
    # Go's zero time (an unset clock field) is read; with worker clocks corrected, the shift must stay in microseconds (1677-2262 in ns).
    truth = write_dynamo_logs(tmp_path, DynamoSpec(
        requests=20, duplicates=1, cancelled=0, bad_lines=0, workers=2,
        worker_skew_us=(-397_000, 250_000)))
    rid = next(key for kind, key in truth.expected if kind == "duplicate_in_flight")
    front = tmp_path / "frontend.jsonl"
    first = next(json.loads(x) for x in front.read_text().splitlines()[1:] if rid in x)
    with front.open("a") as fh:
        # One of its lifecycle lines again (a request is timed by those), clock unset.
        fh.write(json.dumps({**first, "time": stamp}) + "\n")
    for fmt in ("json", "table", "csv"):
        code, out, err = run("trace", rid, str(tmp_path), "--format", fmt, "-q")
        assert code == 0, err
    code, out, _ = run("trace", rid, str(tmp_path), "-q")
    shown = datetime.fromisoformat(stamp).astimezone(UTC).isoformat()[:19]
    assert f"waterfall from {shown}.000000Z" in out


def test_unknown_id_exit_1(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a" * 16, "r", 0, 1)) + "\n")
    code, _, err = run("trace", "no-such-id", str(tmp_path))
    assert code == 1 and "no request" in err


def test_an_unknown_id_is_said_as_typed(tmp_path: Path) -> None:
    # Said in Python's quoted form, each backslash typed was two ('a\\c'), as a user
    # copying the id back from the message would then send it; a match's header says it
    # as typed.
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a" * 16, "r", 0, 1)) + "\n")
    code, _, err = run("trace", "a\\c\x1b", str(tmp_path))
    assert code == 1 and "span_id 'a\\c\u241b'" in err, err


def test_the_analyze_table_lists_clock_offsets_one_file_a_line(tmp_path: Path) -> None:
    # The summary table showed the offsets as a Python dict: {'…/worker-0.jsonl': -397.0}.
    truth = write_dynamo_logs(tmp_path, DynamoSpec(
        requests=60, duplicates=1, cancelled=0, bad_lines=0, workers=2,
        worker_skew_us=(-397_000, 250_000)))
    _, out, _ = run("analyze", *[str(f) for f in truth.files], "-q")
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "clock_offsets_ms" in line)
    rows = [line.split("│")[2].strip() for line in lines[at:at + 2]]
    assert [row.split(": ")[0] for row in rows] == [str(f) for f in truth.files[1:]], rows
    assert all(abs(float(row.split(": ")[1])) > 100 for row in rows)


def test_a_trace_id_from_jaeger_finds_its_request_and_its_workers(
    crossed_logs: tuple[Path, SynthTruth],
) -> None:
    # An operator copies the trace id Jaeger shows (or `export jaeger` wrote): trace
    # answered "no request" for it, though every span of that trace is in the logs.
    path, truth = crossed_logs
    span = min(key for kind, key in truth.expected if kind == "crossed_stream")
    code, out, _ = run("trace", span, str(path), "--format", "json")
    (by_span,) = json.loads(out)["requests"]
    code, out, err = run("trace", by_span["trace_id"], str(path), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    check_shape(doc)
    (req,) = doc["requests"]
    assert req["span_id"] == span and req["trace_id"] == by_span["trace_id"]
    assert len(req["spans"]) == len(by_span["spans"]) > 1


def test_the_ids_export_jaeger_wrote_for_odd_logged_ids_find_the_request(tmp_path: Path) -> None:
    # Ids logged as DEADBEEF / ABCDEF are 00000000deadbeef / 0000000000abcdef in Jaeger:
    # the id an operator copies from Jaeger's UI must lead back to the logs.
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("ABCDEF", "r1", 0, 1, trace="DEADBEEF")) + "\n")
    for ident in ("00000000deadbeef", "0000000000abcdef", "DEADBEEF"):
        code, out, err = run("trace", ident, str(log), "--format", "json")
        assert code == 0, (ident, err)
        assert [r["request_id"] for r in json.loads(out)["requests"]] == ["r1"]


def test_an_id_in_another_spelling_finds_the_request_as_jaeger_finds_it(tmp_path: Path) -> None:
    # Jaeger reads an id as a hex number: F81E… finds the trace logged as f81e…, as does
    # a 16-digit trace id padded to 32 or written with 0x. trace answered "no request".
    trace_id, span_id = "f81e54dd1c0502c6f02905313d0a270b", "d84cf5e616f83207"
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request(span_id, "r1", 0, 1, trace=trace_id)
                             + rt_request("00000000000000aa", "r2", 2, 3,
                                          trace="00000000000000ab")) + "\n")
    for ident, want in ((trace_id.upper(), "r1"), ("0x" + trace_id, "r1"),
                        (span_id.upper(), "r1"), ("0X" + span_id.upper(), "r1"),
                        ("0" * 16 + "00000000000000AB", "r2"), ("aa", "r2"), ("AB", "r2")):
        code, out, err = run("trace", ident, str(log), "--format", "json")
        assert code == 0, (ident, err)
        assert [r["request_id"] for r in json.loads(out)["requests"]] == [want], ident
    code, _, err = run("trace", "F81E54DD1C0502C6F02905313D0A270C", str(log))
    assert code == 1 and "no request" in err


@pytest.mark.parametrize("minted", ["1111aaaa-1111-4111-8111-111111111111",
                                    "1111AAAA-1111-4111-8111-111111111111"])
def test_the_id_a_legacy_request_start_logged_finds_that_request(
    tmp_path: Path, minted: str
) -> None:
    # Under --id-policy legacy request.start logs a minted id and the later lines the
    # client's; the request is judged by the latter, and the minted id an operator read
    # on its first line answered "no request". A UUID in any case (the one the client got
    # in x-server-request-id, quoted upper case) found none either.
    from tests.forensics.helpers import legacy_rotated

    legacy_rotated(tmp_path)
    code, out, err = run("trace", minted, str(tmp_path), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["matched"] == 1
    (request,) = doc["requests"]
    assert (request["request_id"], request["span_id"]) == ("7", "a1")


@pytest.mark.parametrize("ident", ["", "  "])
def test_a_blank_id_is_bad_usage_not_a_request_not_found(tmp_path: Path, ident: str) -> None:
    # `ridtrace trace "$RID" logs/` with RID unset: the logs were read in full and the run
    # ended "no request ... ''", exit 1, as if the id had been looked for and was absent.
    log = tmp_path / "app.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    code, _, err = run("trace", ident, str(log))
    assert code == 2, err
    assert "ID" in err and "is empty" in err


def test_a_caller_that_hung_up_mid_stream_is_cut_short_not_unmatched(tmp_path: Path) -> None:
    # Seen on a real frontend and worker (--token-delay 0.1, the client closing its socket
    # after the first chunk): the worker had produced one token more than the frontend
    # forwarded before it saw the hang-up, so the two fp_outs differ. With the worker's
    # log right there, `trace` said "unmatched output", which cli.md explains as output
    # no worker in these logs produced (worker logs missing).
    span, work, rid = "79467e8e0b58bc0a", "250cf900be50e2b7", "r-hung-up"
    ctx = {"request_id": rid, "x_request_id": "hang-1", "trace_id": f"{span:0>32}"}
    front = [
        rt("request.start", time=ts(0.0), **ctx, span_id=span, method="POST",
           path="/v1/chat/completions", client="127.0.0.1:47714"),
        rt("request.end", time=ts(0.216), **ctx, span_id=span, status=200,
           outcome="cancelled", route="/v1/chat/completions", fp_in="bf64983d58e07db1",
           fp_out="1111111111111111"),
    ]
    worker = [
        rt(WORKER_START, time=ts(0.001), **ctx, span_id=work, parent_span_id=span,
           service="worker-51075", fp_in="bf64983d58e07db1"),
        rt(WORKER_END, time=ts(0.2165), **ctx, span_id=work, parent_span_id=span,
           service="worker-51075", outcome="cancelled", fp_out="2222222222222222"),
    ]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(worker) + "\n")
    code, out, err = run("trace", "hang-1", str(tmp_path), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    check_shape(doc)
    assert [r["verdict"] for r in doc["requests"]] == ["cut short"]
    code, out, _ = run("trace", "hang-1", str(tmp_path))
    assert "verdict: cut short (cancelled)" in out and "unmatched" not in out


def test_json_says_the_input_was_read_only_in_part_even_when_quiet(tmp_path: Path) -> None:
    """With -q the stderr note is the only word of a torn input: the JSON says it too."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "frontend.jsonl").write_text("\n".join(rt_request("a1" * 8, "r-1", 0.0, 0.5)) + "\n")
    whole = run("trace", "r-1", str(logs), "--format", "json", "-q")
    assert whole[0] == 0 and json.loads(whole[1])["incomplete"] is False
    (logs / "worker.jsonl.gz").write_bytes(gzip.compress(b"x" * 100_000)[:50])
    code, out, err = run("trace", "r-1", str(logs), "--format", "json", "-q")
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert doc["incomplete"] is True and doc["matched"] == 1
    assert any("worker.jsonl.gz" in reason for reason in doc["incomplete_reasons"])


def test_the_rotated_parts_of_one_worker_log_are_one_worker(tmp_path: Path) -> None:
    """A worker log rotated while it served (``worker.jsonl.1.gz`` then ``worker.jsonl``)
    was two workers, ``worker-0`` and ``worker-1``, in the timeline and its legend."""
    front, parts = [], {"worker.jsonl.1.gz": [], "worker.jsonl": []}
    for i, part in enumerate(parts):
        span, work = f"{i + 1:016x}", f"{i + 0xa1:016x}"
        ctx = {"request_id": "rot-1", "trace_id": span * 2}
        front += rt_request(span, "rot-1", i * 1.0, i * 1.0 + 0.5)
        parts[part] += [
            rt(WORKER_START, time=ts(i + 0.1), **ctx, span_id=work, parent_span_id=span,
               service="worker-8103"),
            rt(WORKER_END, time=ts(i + 0.4), **ctx, span_id=work, parent_span_id=span,
               service="worker-8103", outcome="ok"),
        ]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (tmp_path / "worker.jsonl.1.gz").write_bytes(
        gzip.compress(("\n".join(parts["worker.jsonl.1.gz"]) + "\n").encode()))
    (tmp_path / "worker.jsonl").write_text("\n".join(parts["worker.jsonl"]) + "\n")
    code, out, err = run("trace", "rot-1", str(tmp_path), "--format", "json", "-q")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["workers"] == {"worker-0": f"{tmp_path}/worker.jsonl.1.gz, "
                                          f"{tmp_path}/worker.jsonl (worker-8103)"}
    sides = {s["side"] for r in doc["requests"] for s in r["spans"]}
    assert sides == {"frontend", "worker-0"}


def test_a_failed_request_says_why_and_a_deprecated_header_which(tmp_path: Path) -> None:
    # A 504 read "request.end error" and nothing more, while its line said the worker
    # sent nothing in time: `trace` sent users back to grep (export jaeger showed it).
    # A dispatch retry keeps its worker and reason, and adds the refusal it logged.
    span = "5a5a5a5a5a5a5a5a"
    ctx = {"request_id": "r-504", "x_request_id": "slow-1", "trace_id": f"{span:0>32}",
           "span_id": span}
    lines = [
        rt("deprecated_header", time=ts(0.0), level="WARN", **ctx, header="x-dynamo-request-id"),
        rt("request.start", time=ts(0.0), **ctx, method="POST", path="/v1/chat/completions"),
        rt("dispatch.retry", time=ts(0.01), **ctx, worker="http://127.0.0.1:9001",
           reason="conflict", error="worker refused duplicate id"),
        rt("request.end", time=ts(1.5), **ctx, status=504, outcome="error",
           route="/v1/chat/completions",
           error="worker http://127.0.0.1:9002 sent nothing for 1.5s"),
    ]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    code, out, err = run("trace", "slow-1", str(tmp_path), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    check_shape(doc)
    assert [(e["event"], e["detail"]) for e in doc["requests"][0]["events"]] == [
        ("deprecated_header", "header x-dynamo-request-id"),
        ("request.start", None),
        ("dispatch.retry", "worker http://127.0.0.1:9001, reason conflict, "
                           "error: worker refused duplicate id"),
        ("request.end", "error: worker http://127.0.0.1:9002 sent nothing for 1.5s"),
    ]
    code, out, _ = run("trace", "slow-1", str(tmp_path))
    assert "error: worker http://127.0.0.1:9002 sent nothing for 1.5s" in out
