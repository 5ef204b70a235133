"""The command surface of analyze / audit / trace / export jaeger, through CliRunner."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, SynthTruth, write_logs
from tests.forensics.helpers import jaeger_spans, rt_request

SAMPLE = Path("/work/shared/samples/dynamo-jsonl-sample.jsonl")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthTruth]:
    out = tmp_path_factory.mktemp("logs")
    return out, write_logs(out, SynthSpec(requests=200, deprecated_every=20))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean")
    write_logs(out, SynthSpec(requests=100, crossed=0, collisions=0, duplicates=0,
                              client_reuse=0, deprecated_every=0))
    return out


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_analyze_json_shape_and_exit_1(logs: tuple[Path, SynthTruth]) -> None:
    path, truth = logs
    code, out, _ = run("analyze", str(path), "--format", "json")
    assert code == 1
    doc = json.loads(out)  # exactly one JSON document on stdout
    assert set(doc) == {"summary", "findings"}
    summary = doc["summary"]
    for key in ("lines", "bad_lines", "requests", "crossed_stream", "duplicate_in_flight",
                "unlinked", "client_id_reuse", "deprecated_header"):
        assert isinstance(summary[key], int)
    assert summary["lines"] == truth.lines
    for finding in doc["findings"]:
        assert {"kind", "severity", "request_id", "x_request_id", "time", "detail",
                "evidence"} <= set(finding)
        assert finding["severity"] in ("error", "info")
        assert all(set(e) == {"file", "line"} for e in finding["evidence"])
    severities = [f["severity"] for f in doc["findings"]]
    assert severities == sorted(severities, key=lambda s: s != "error")


def test_analyze_clean_logs_exit_0(clean: Path) -> None:
    code, out, _ = run("analyze", str(clean), "--format", "json")
    assert code == 0
    assert json.loads(out)["findings"] == []


def test_analyze_table_and_csv(logs: tuple[Path, SynthTruth]) -> None:
    path, _ = logs
    code, out, _ = run("analyze", str(path))
    assert code == 1 and "crossed_stream" in out and "findings" in out
    code, out, _ = run("analyze", str(path), "--format", "csv")
    assert code == 1
    header, *rows = out.strip().splitlines()
    assert header.split(",")[:2] == ["kind", "severity"]
    assert rows and ".jsonl:" in rows[0]


def test_analyze_output_file(logs: tuple[Path, SynthTruth], tmp_path: Path) -> None:
    path, _ = logs
    target = tmp_path / "report.json"
    code, out, _ = run("analyze", str(path), "--format", "json", "-o", str(target))
    assert code == 1 and out == ""
    assert json.loads(target.read_text())["summary"]["crossed_stream"] == 1


def test_missing_file_exits_2() -> None:
    code, out, err = run("analyze", "/nonexistent/frontend.jsonl")
    assert code == 2
    assert "no such file or directory: /nonexistent/frontend.jsonl" in err
    assert out == ""


@pytest.mark.parametrize("command", [["analyze"], ["audit"], ["trace", "r1"],
                                     ["export", "jaeger", "-o", "-"]])
def test_a_named_link_loop_or_dangling_link_says_so(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "c.jsonl").symlink_to(tmp_path / "gone.jsonl")
    # `ls -L` tells the two apart: a loop is no typo of a missing target.
    for name, why in (("a.jsonl", "a symbolic link loop"), ("c.jsonl", "a broken symbolic link")):
        code, out, err = run(*command, str(tmp_path / name))
        assert code == 2 and out == ""
        assert f"{why}: {tmp_path / name}" in err


def test_a_walked_link_loop_is_listed_as_a_loop(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "c.jsonl").symlink_to(tmp_path / "gone.jsonl")
    code, out, _ = run("analyze", str(tmp_path), "--format", "json")
    reasons = {Path(entry["file"]).name: entry["reason"]
               for entry in orjson.loads(out)["summary"]["unreadable_files"]}
    assert code == 3 and reasons == {"a.jsonl": "a symbolic link loop",
                                     "b.jsonl": "a symbolic link loop",
                                     "c.jsonl": "a broken symbolic link"}


def test_bad_usage_exits_2(clean: Path) -> None:
    assert run("analyze")[0] == 2
    assert run("analyze", str(clean), "--format", "xml")[0] == 2
    code, _, err = run("analyze", str(clean), "--since", "not-a-time")
    assert code == 2 and "--since" in err


def test_stdin_and_bad_lines_warning() -> None:
    data = SAMPLE.read_bytes() + b"garbage line\n"
    code, out, err = run("analyze", "-", "--format", "json", stdin=data)
    assert code == 1
    doc = json.loads(out)
    assert doc["summary"]["bad_lines"] == 1
    assert doc["summary"]["bad_line_samples"] == [
        {"file": "<stdin>", "line": 10, "reason": "not JSON"}
    ]
    assert "<stdin>:10" in err
    code, out, err = run("analyze", "-", "--format", "json", "--quiet", stdin=data)
    assert err == ""


def test_empty_input_exit_0(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, err = run("analyze", str(empty), "--format", "json")
    assert code == 0
    assert json.loads(out)["summary"]["lines"] == 0
    assert "no log lines" in err


def test_dynamo_sample_cli() -> None:
    code, out, _ = run("analyze", str(SAMPLE), "--format", "json")
    assert code == 1
    summary = json.loads(out)["summary"]
    assert (summary["unlinked"], summary["deprecated_header"]) == (1, 2)


def test_audit(logs: tuple[Path, SynthTruth]) -> None:
    path, truth = logs
    expected = sum(1 for kind, _ in truth.expected if kind == "deprecated_header")
    code, out, _ = run("audit", str(path), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert sum(row["requests"] for row in doc["rows"]) == expected
    assert {row["header"] for row in doc["rows"]} == {"x-dynamo-request-id", "request-id"}
    assert all(row["clients"] == 1 for row in doc["rows"])
    assert sum(sum(day.values()) for day in doc["daily"].values()) == expected
    for by in ("client", "route", "day"):
        code, out, _ = run("audit", str(path), "--by", by)
        assert code == 0 and "deprecated headers by" in out


@pytest.mark.extra("plot")
def test_audit_plot(logs: tuple[Path, SynthTruth], tmp_path: Path) -> None:
    path, _ = logs
    plot = tmp_path / "use.png"
    code, _, _ = run("audit", str(path), "--plot", str(plot))
    assert code == 0 and plot.read_bytes()[:4] == b"\x89PNG"


def test_audit_dynamo_sample() -> None:
    code, out, _ = run("audit", str(SAMPLE), "--format", "csv")
    assert code == 0
    assert "x-dynamo-request-id,1" in out and "request-id,1" in out


def test_trace_unknown_id(clean: Path) -> None:
    code, _, err = run("trace", "no-such-id", str(clean))
    assert code == 1 and "no request" in err


def test_export_jaeger(logs: tuple[Path, SynthTruth], tmp_path: Path) -> None:
    path, truth = logs
    target = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(path), "-o", str(target))
    assert code == 0 and "trace(s)" in err
    doc = json.loads(target.read_text())
    assert len(doc["data"]) == truth.requests
    for trace in doc["data"]:
        assert set(trace) >= {"traceID", "spans", "processes"}
        spans = {s["spanID"]: s for s in trace["spans"]}
        for span in trace["spans"]:
            assert span["traceID"] == trace["traceID"]
            assert isinstance(span["startTime"], int) and isinstance(span["duration"], int)
            assert span["startTime"] > 1_700_000_000_000_000 and span["duration"] >= 0
            assert span["processID"] in trace["processes"]
            tags = {t["key"]: t for t in span["tags"]}
            assert tags["request_id"]["type"] == "string"
            assert all(set(t) == {"key", "type", "value"} for t in span["tags"])
            for log in span["logs"]:
                assert isinstance(log["timestamp"], int) and log["fields"]
            if any(t["value"] == "worker" for t in span["tags"] if t["key"] == "side"):
                (ref,) = span["references"]
                assert ref["refType"] == "CHILD_OF" and ref["spanID"] in spans
        for proc in trace["processes"].values():
            (file_tag,) = proc["tags"]
            assert proc["serviceName"] and file_tag["key"] == "log.file.path"
            assert Path(file_tag["value"]).parent == path


def test_export_jaeger_tags_deprecated_headers_as_the_live_span_names_them(
    logs: tuple[Path, SynthTruth], tmp_path: Path,
) -> None:
    # jaeger.md's search `deprecated_headers=request-id` found a live span but none in
    # the uploaded file, whose tag was named `deprecated` only.
    path, _ = logs
    target = tmp_path / "traces.json"
    assert run("export", "jaeger", str(path), "-o", str(target))[0] == 0
    tagged = [{t["key"]: t["value"] for t in span["tags"]}
              for trace in json.loads(target.read_text())["data"] for span in trace["spans"]]
    users = [tags for tags in tagged if "deprecated" in tags]
    assert users and all(tags["deprecated_headers"] == tags["deprecated"] for tags in users)
    assert not any("deprecated_headers" in tags and "deprecated" not in tags for tags in tagged)


def test_export_jaeger_takes_requests_whose_end_names_no_outcome(tmp_path: Path) -> None:
    # Another system's logs: a request.end with no outcome field, beside one that failed.
    quiet = rt_request("a", "1", 0, 1)
    quiet[1] = json.dumps({k: v for k, v in json.loads(quiet[1]).items() if k != "outcome"})
    failed = rt_request("b", "2", 2, 3)
    failed[1] = json.dumps({**json.loads(failed[1]), "outcome": "error", "status": 500})
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(quiet + failed) + "\n")
    target = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(log), "-o", str(target))
    assert code == 0, err
    spans = jaeger_spans(json.loads(target.read_text()))
    assert set(spans) == {"a", "b"}
    assert not any(t["key"] == "error" for t in spans["a"]["tags"])
    assert {"key": "error", "type": "bool", "value": True} in spans["b"]["tags"]


def test_export_jaeger_keeps_each_traces_logs_and_no_self_reference(tmp_path: Path) -> None:
    # One span id in two traces (requests are keyed by both): each span got both
    # requests' lines. A span logged as its own parent made a reference loop.
    first = rt_request("a" * 16, "1", 0, 1, trace="1" * 32)
    again = rt_request("a" * 16, "2", 2, 3, trace="2" * 32, parent_span_id="a" * 16)
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(first + again) + "\n")
    target = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(log), "-o", str(target))
    assert code == 0, err
    traces = {t["traceID"]: t for t in json.loads(target.read_text())["data"]}
    for trace_id in ("1" * 32, "2" * 32):
        [span] = traces[trace_id]["spans"]
        assert len(span["logs"]) == 2
        assert span["logs"][0]["timestamp"] == span["startTime"]
        assert span["startTime"] % 10**6 == 0 and span["references"] == []
    [span] = traces["2" * 32]["spans"]
    assert {"key": "parent_span_id", "type": "string", "value": "a" * 16} in span["tags"]


def test_export_jaeger_makes_no_reference_loop_between_two_spans(tmp_path: Path) -> None:
    # Two spans of one trace logged as each other's parent (a broken tracer): each
    # reference closes the loop, so both stay roots with the parent's id as a tag; a
    # third span under one of them keeps its reference.
    trace = "3" * 32
    lines = (rt_request("a" * 16, "1", 0, 3, trace=trace, parent_span_id="b" * 16)
             + rt_request("b" * 16, "2", 1, 2, trace=trace, parent_span_id="a" * 16)
             + rt_request("c" * 16, "3", 1, 2, trace=trace, parent_span_id="a" * 16))
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    target = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(log), "-o", str(target))
    assert code == 0, err
    [doc] = json.loads(target.read_text())["data"]
    spans = {s["spanID"]: s for s in doc["spans"]}
    assert spans["a" * 16]["references"] == [] and spans["b" * 16]["references"] == []
    assert {"key": "parent_span_id", "type": "string", "value": "b" * 16} in spans["a" * 16]["tags"]
    assert [r["spanID"] for r in spans["c" * 16]["references"]] == ["a" * 16]


def test_the_table_shows_ids_that_look_like_markup_as_text(tmp_path: Path) -> None:
    # Request ids are the client's: "[/bold]" made rich raise MarkupError, no report.
    rid, xrid = "[/b]7", "[red]y[/red]"  # short: no column folds them
    lines = rt_request("a", rid, 0, 3, xrid=xrid) + rt_request("b", rid, 1, 2)
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    code, out, err = run("analyze", str(log))
    assert code == 1, err
    assert "duplicate_in_flight" in out
    assert f"│ {rid} " in out and f"│ {xrid} " in out


def test_csv_cells_a_spreadsheet_would_run_are_kept_as_text(tmp_path: Path) -> None:
    import csv
    import io

    # A client picks its x-request-id: "=HYPERLINK(...)" must not become a formula.
    rid, xrid = "-7", '=HYPERLINK("http://example.invalid")'
    lines = rt_request("a", rid, 0, 3, xrid=xrid) + rt_request("b", rid, 1, 2)
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    code, out, err = run("analyze", str(log), "--format", "csv")
    assert code == 1, err
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert row["request_id"] == "'-7" and row["x_request_id"] == "'" + xrid
    assert row["kind"] == "duplicate_in_flight" and row["evidence"].startswith(str(log))


def test_trace_and_audit_csv_keep_would_be_formulas_as_text(tmp_path: Path) -> None:
    import csv
    import io

    # The same client text as analyze's CSV: ids, and a client host and path in audit.
    rid, xrid = "=1+1", "@SUM(A1)"
    lines = rt_request("a", rid, 0, 3, xrid=xrid, deprecated_headers="request-id")
    start = json.loads(lines[0])
    lines[0] = json.dumps({**start, "client": "=cmd|' /C calc'!A0:5000", "path": "+cmd"})
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    code, out, err = run("trace", rid, str(log), "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and all(r["request_id"] == "'" + rid for r in rows)
    assert all(r["x_request_id"] == "'" + xrid for r in rows)
    code, out, err = run("audit", str(log), "--format", "csv", "--by", "client")
    assert code == 0, err
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert row["client"] == "'=cmd|' /C calc'!A0" and row["requests"] == "1"
    code, out, err = run("audit", str(log), "--format", "csv", "--by", "route")
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert row["route"] == "'+cmd"


def test_export_requires_output(clean: Path) -> None:
    assert run("export", "jaeger", str(clean))[0] == 2


def test_analyze_leaves_without_teardown_only_from_the_console_entry(tmp_path: Path) -> None:
    lines = rt_request("a", "7", 0, 3) + rt_request("b", "7", 1, 2)
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    report = tmp_path / "report.json"
    # An atexit hook stands for the interpreter's teardown: skipped, the report whole.
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('torn down\\n'))\n"
        "from ridtrace.cli.main import run\n"
        f"sys.argv = ['ridtrace', 'analyze', {str(log)!r}, '--format', 'json', '-q',"
        f" '-o', {str(report)!r}]\n"
        "run()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert "torn down" not in done.stderr
    assert json.loads(report.read_text())["summary"]["duplicate_in_flight"] == 1
    # In process (CliRunner, an embedding program) the command returns as usual.
    code, _, _ = run("analyze", str(log), "--format", "json", "-q", "-o", str(report))
    assert code == 1


def test_audit_prints_times_as_rfc3339_like_the_other_commands(logs: tuple[Path, SynthTruth]) -> None:
    # The table and CSV showed pandas' "2026-11-29 10:00:00.1+00:00", JSON cut to ms.
    path, _ = logs
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
    for fmt in ("table", "csv", "json"):
        code, out, _ = run("audit", str(path), "--format", fmt)
        assert code == 0 and len(stamp.findall(out)) >= 4, out
        assert "+00:00" not in out


def test_export_jaeger_puts_skewed_worker_spans_inside_their_callers(tmp_path: Path) -> None:
    # Jaeger's UI applies no clock-skew adjustment to an uploaded file: with one worker
    # 397 ms behind and one 250 ms ahead, worker spans started before their caller did.
    from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs

    write_dynamo_logs(tmp_path / "logs", DynamoSpec(
        requests=60, duplicates=0, cancelled=0, bad_lines=0, workers=2,
        worker_skew_us=(-397_000, 250_000)))
    target = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(tmp_path / "logs"), "-o", str(target))
    assert code == 0, err
    children = 0
    for trace in json.loads(target.read_text())["data"]:
        spans = {s["spanID"]: s for s in trace["spans"]}
        for span in trace["spans"]:
            end = span["startTime"] + span["duration"]
            assert all(span["startTime"] <= log["timestamp"] <= end for log in span["logs"])
            for ref in span["references"]:
                parent = spans[ref["spanID"]]
                assert parent["startTime"] <= span["startTime"]
                assert end <= parent["startTime"] + parent["duration"]
                children += 1
    assert children >= 50


def test_export_jaeger_is_the_same_file_whatever_order_the_logs_are_named_in(
    logs: tuple[Path, SynthTruth], tmp_path: Path,
) -> None:
    # `logs/*` expands in the shell's order, a list in a runbook in another: the traces,
    # their spans and their process ids came in the order the files were read, so two
    # exports of the same logs did not compare equal.
    _, truth = logs
    files = [str(f) for f in truth.files]
    written = []
    for order in (files, files[::-1]):
        target = tmp_path / f"traces-{len(written)}.json"
        code, _, err = run("export", "jaeger", *order, "-o", str(target))
        assert code == 0, err
        written.append(target.read_bytes())
    assert written[0] == written[1]
    doc = json.loads(written[0])
    firsts = [min(s["startTime"] for s in t["spans"]) for t in doc["data"]]
    assert firsts == sorted(firsts)  # traces in time order, as Jaeger's search lists them


def test_export_jaeger_two_spellings_of_one_trace_id_are_one_trace(tmp_path: Path) -> None:
    # Jaeger reads an id as a number: upper or lower case, with or without leading
    # zeros, it is one trace (and a 32-digit id whose high half is zero is written as
    # 16 digits). Grouped as logged, each spelling was a trace of its own, and the
    # worker's span named a parent that was in the other one.
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    lines = (rt_request("00F067AA0BA902B7", "r1", 0, 5, trace=trace.upper())
             + rt_request("00f067aa0ba902b8", "r2", 1, 2, trace=trace))
    short = "a3ce929d0e0e4736"
    lines += (rt_request("1" * 16, "r3", 6, 7, trace="0" * 16 + short)
              + rt_request("2" * 16, "r4", 8, 9, trace="0x" + short.upper()))
    worker = [json.dumps({**json.loads(line), "service": "worker-1", "event": event,
                          "trace_id": trace, "span_id": "b7ad6b7169203331",
                          "parent_span_id": "f067aa0ba902b7"})
              for line, event in zip(lines[:2], ("worker.start", "worker.end"), strict=True)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "worker-1.jsonl").write_text("\n".join(worker) + "\n")
    target = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(tmp_path), "-o", str(target))
    assert code == 0, err
    traces = json.loads(target.read_text())["data"]
    assert [t["traceID"] for t in traces] == [trace, short]
    assert [len(t["spans"]) for t in traces] == [3, 2]
    spans = {s["spanID"]: s for s in traces[0]["spans"]}
    assert spans["b7ad6b7169203331"]["references"] == [
        {"refType": "CHILD_OF", "traceID": trace, "spanID": "00f067aa0ba902b7"}]
    assert spans["b7ad6b7169203331"]["operationName"] == "worker /v1/chat/completions"
    assert [log["fields"][0]["value"] for log in spans["00f067aa0ba902b7"]["logs"]] == [
        "request.start", "request.end"]


def test_the_findings_table_says_how_many_evidence_lines_it_left_out(tmp_path: Path) -> None:
    # Six callers holding one id cite twelve lines; the table showed four and no hint.
    lines = [line for i in range(6) for line in rt_request(f"{i + 1:016x}", "shared", i * 0.1, 5)]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    # Wide enough that the cell is not wrapped, wherever pytest's tmp_path is.
    result = CliRunner().invoke(main, ["analyze", str(log)], env={"COLUMNS": "400"})
    assert result.exit_code == 1
    assert "frontend.jsonl:8, … +8 more" in result.stdout


def test_export_jaeger_ids_are_lower_case_hex_of_jaegers_widths(tmp_path: Path) -> None:
    # Other systems log ids in upper case, short, with 0x, or not in hex at all ("trace
    # two"): written as logged, Jaeger's UI could not link, search or compare them.
    # Each becomes hex of Jaeger's width; the id as logged stays searchable as a tag.
    lines = (rt_request("ABCDEF", "r1", 0, 1, trace="DEADBEEF")
             + rt_request("span-two", "r2", 2, 3, trace="trace two")
             + rt_request("a" * 16, "r3", 4, 5, trace="b" * 32))
    worker = {"request_id": "r1", "trace_id": "DEADBEEF", "span_id": "0x1F",
              "parent_span_id": "ABCDEF", "service": "worker-1"}
    lines += [json.dumps({**json.loads(lines[0]), **worker, "event": "worker.start"}),
              json.dumps({**json.loads(lines[1]), **worker, "event": "worker.end"})]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    target = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(log), "-o", str(target))
    assert code == 0, err
    traces = json.loads(target.read_text())["data"]
    hex_digits = re.compile(r"[0-9a-f]+")
    logged = {}
    for trace in traces:
        assert len(trace["traceID"]) in (16, 32) and hex_digits.fullmatch(trace["traceID"])
        for span in trace["spans"]:
            assert span["traceID"] == trace["traceID"]
            assert len(span["spanID"]) == 16 and hex_digits.fullmatch(span["spanID"])
            tags = {t["key"]: t["value"] for t in span["tags"]}
            logged[tags.get("span_id", span["spanID"])] = (span, tags)
            for ref in span["references"]:
                assert ref["traceID"] == trace["traceID"]
                assert ref["spanID"] in {s["spanID"] for s in trace["spans"]}
    assert set(logged) == {"ABCDEF", "span-two", "a" * 16, "0x1F"}
    caller, caller_tags = logged["ABCDEF"]
    assert (caller["traceID"], caller["spanID"]) == ("00000000deadbeef", "0000000000abcdef")
    assert caller_tags["trace_id"] == "DEADBEEF"
    work, _ = logged["0x1F"]
    assert work["spanID"] == "000000000000001f"
    assert work["references"] == [{"refType": "CHILD_OF", "traceID": "00000000deadbeef",
                                   "spanID": "0000000000abcdef"}]
    plain, plain_tags = logged["a" * 16]  # already Jaeger's: as logged, no extra tag
    assert plain["traceID"] == "b" * 32 and "trace_id" not in plain_tags
    other, other_tags = logged["span-two"]
    assert other_tags["trace_id"] == "trace two" and other["traceID"] != "trace two"


def test_export_to_standard_output_says_so_not_to_a_file_named_dash(clean: Path) -> None:
    code, out, err = run("export", "jaeger", str(clean), "-o", "-")
    assert code == 0 and json.loads(out)["data"]
    assert "trace(s) to standard output" in err and " to -" not in err


def test_a_csv_cell_that_starts_with_an_apostrophe_is_guarded_too(tmp_path: Path) -> None:
    import csv
    import io

    # The formula guard's `'` before "=x" made it read as the id "'=x", another client's
    # (two requests merged when the CSV was grouped by id): a leading "'" is guarded too,
    # so a cell's first "'" is always the guard's.
    lines = rt_request("a", "=x", 0, 3) + rt_request("b", "=x", 1, 2) \
        + rt_request("c", "'=x", 4, 6) + rt_request("d", "'=x", 5, 7)
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    code, out, err = run("analyze", str(log), "--format", "csv")
    assert code == 1, err
    ids = sorted(row["request_id"] for row in csv.DictReader(io.StringIO(out)))
    assert ids == ["''=x", "'=x"]
    assert sorted(value[1:] for value in ids) == ["'=x", "=x"]  # the guard dropped
