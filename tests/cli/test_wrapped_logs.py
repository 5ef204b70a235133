"""Logs as infrastructure ships them: a Kubernetes node's CRI files, Docker's json-file
driver, ``journalctl -o json``, ``kubectl logs --timestamps --prefix``, ``stern``, Vector's, Fluent
Bit's, Filebeat's and Loki's logcli JSON objects, Splunk's export, an Elasticsearch answer, Grafana's download, Fluent Bit's and Fluentd's file output. Each wraps the same JSON lines; the report is the one the
plain lines give, with evidence citing the wrapped file's own lines."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.cli.conftest import PlainReport
from tests.cli.helpers import analyze_json, wrap_each_file
from tests.forensics.helpers import rt, rt_request, ts
from tests.support.extras import ENGINES

# Longer lines are cut into parts, as the runtimes cut lines longer than their buffers.
_CUT = 120
# One log record, for the tests of a single wrapped line.
_RECORD = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "message": "m"})


def _cri(lines: list[bytes]) -> bytes:
    """Kubelet's CRI format; long lines cut into P parts and a last F, stderr between."""
    out: list[bytes] = []
    for n, line in enumerate(lines):
        stamp = b"2026-11-29T10:00:%02d.000000001Z" % (n % 60)
        parts = [line[i : i + _CUT] for i in range(0, len(line), _CUT)] or [b""]
        for k, part in enumerate(parts):
            if k == 1:  # another stream's line between two parts of this record
                out.append(stamp + b" stderr F Traceback (most recent call last):")
            tag = b"F" if k == len(parts) - 1 else b"P"
            out.append(stamp + b" stdout " + tag + b" " + part)
    return b"\n".join(out) + b"\n"


def _docker(lines: list[bytes]) -> bytes:
    """Docker's json-file driver: a long line cut into entries, the last ending in \\n."""
    out: list[bytes] = []
    for line in lines:
        text = line.decode()
        parts = [text[i : i + _CUT] for i in range(0, len(text), _CUT)]
        for k, part in enumerate(parts):
            end = "\n" if k == len(parts) - 1 else ""
            out.append(json.dumps({"log": part + end, "stream": "stdout",
                                   "time": "2026-11-29T10:00:00.000000001Z"}).encode())
    return b"\n".join(out) + b"\n"


def _journal(lines: list[bytes]) -> bytes:
    """``journalctl -o json``: the line in MESSAGE (bytes as an array for one of them)."""
    out: list[bytes] = []
    for n, line in enumerate(lines):
        message: Any = list(line) if n == 3 else line.decode()
        out.append(json.dumps({
            "__CURSOR": f"s=1;i={n}", "__REALTIME_TIMESTAMP": "1796205600000000",
            "_PID": "42", "_STREAM_ID": "abc", "MESSAGE": message,
        }).encode())
    return b"\n".join(out) + b"\n"


def _journal_spaced(lines: list[bytes]) -> bytes:
    """``journalctl -o json`` of older systemd (RHEL 8's 239): each object written by
    hand, ``{ "__CURSOR" : "s=…", "__REALTIME_TIMESTAMP" : "…", … }``."""
    out: list[bytes] = []
    for n, line in enumerate(lines):
        fields = {"__CURSOR": f"s=1;i={n}", "__REALTIME_TIMESTAMP": "1796205600000000",
                  "_PID": "42", "MESSAGE": line.decode()}
        pairs = ", ".join(f"{json.dumps(k)} : {json.dumps(v)}" for k, v in fields.items())
        out.append(b"{ " + pairs.encode() + b" }")
    return b"\n".join(out) + b"\n"


def _journal_seq(lines: list[bytes]) -> bytes:
    """``journalctl -o json-seq`` (systemd 252): RFC 7464's record separator, 0x1E,
    before each entry (its lines were all bad, "missing time", no request read)."""
    return b"".join(b"\x1e" + entry + b"\n" for entry in _journal(lines).splitlines())


def _kubectl(lines: list[bytes]) -> bytes:
    """``kubectl logs --prefix --timestamps`` (half the lines), ``--timestamps`` (the rest)."""
    stamp = b"2026-11-29T10:00:00.123456789Z "
    return b"".join((b"[pod/frontend-7d9f/frontend] " if n % 2 else b"") + stamp + line + b"\n"
                    for n, line in enumerate(lines))


def _compose(lines: list[bytes]) -> bytes:
    """``docker compose logs`` into a file: each container's name padded to the longest
    and " | ", half the lines with ``--timestamps`` (a run of its own in practice)."""
    names = [b"dynamo-frontend-1", b"nats-1"]
    width = max(len(x) for x in names)
    stamp = b"2026-11-29T10:00:00.123456789Z "
    return b"".join(names[0].ljust(width) + b" | " + (stamp if n % 2 else b"") + line + b"\n"
                    for n, line in enumerate(lines))


def _stern(lines: list[bytes]) -> bytes:
    """``stern frontend > frontend.log`` (its default output, no colour off a terminal):
    the pod's name and the container's before each line, two pods' lines interleaved."""
    pods = [b"frontend-7d9f4c5b6-x2kqp", b"frontend-7d9f4c5b6-9zt4m"]
    return b"".join(pods[n % 2] + b" frontend " + line + b"\n" for n, line in enumerate(lines))


def _stern_everywhere(lines: list[bytes]) -> bytes:
    """``stern frontend --all-namespaces --timestamps --color always``: the namespace's,
    pod's and container's names, each in its colour, then the time."""
    names = (b"\x1b[32mdynamo\x1b[0m \x1b[32mfrontend-0.dc1\x1b[0m \x1b[33mfrontend\x1b[0m ")
    return b"".join(names + b"2026-11-29T10:00:00.123456789Z " + line + b"\n" for line in lines)


def _splunk_export(lines: list[bytes]) -> bytes:
    """Splunk's export as JSON (Splunk Web's "Export Results", the REST API's
    ``search/jobs/export?output_mode=json``): a result a line, newest first, the event in
    ``_raw``; for a JSON event, half the lines here, the fields Splunk extracted beside it."""
    out = []
    for n, line in reversed(list(enumerate(lines))):
        try:
            fields: Any = json.loads(line) if n % 2 else {}
        except ValueError:
            fields = {}
        result = {**(fields if isinstance(fields, dict) else {}), "_raw": line.decode(),
                  "_time": "2026-11-29T10:00:00.000+00:00", "host": "node-3",
                  "source": "/var/log/frontend.jsonl", "sourcetype": "_json"}
        out.append(json.dumps({"preview": False, "offset": len(out), "result": result}))
    return ("\n".join(out) + "\n").encode()


def _search_answer(lines: list[bytes]) -> bytes:
    """An Elasticsearch ``_search`` answer saved as ``curl`` gives it: one JSON line, every
    line a hit, Filebeat's document (the line in ``message``) or the record itself."""
    hits = []
    for n, line in enumerate(lines):
        record = json.loads(line)
        source = record if n % 2 else {"@timestamp": "2026-11-29T10:00:00.000Z",
                                       "message": line.decode(), "log": {"offset": n * 400}}
        hits.append({"_index": "logs-frontend", "_id": str(n), "_score": 1.0, "_source": source})
    answer = {"took": 7, "timed_out": False, "_shards": {"total": 1, "successful": 1},
              "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": 1.0,
                       "hits": hits}}
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n"


def _insights_json(lines: list[bytes]) -> bytes:
    """CloudWatch Logs Insights' results downloaded as JSON from its console: an array,
    indented, each result's fields by name, the line in ``@message``, newest first."""
    results = [{"@timestamp": "2026-11-29 10:00:00.000", "@message": line.decode(),
                "@logStream": "ecs/frontend/4f1e"} for line in reversed(lines)]
    return json.dumps(results, indent=2).encode() + b"\n"


def _log_analytics(lines: list[bytes]) -> bytes:
    """``az monitor log-analytics query`` over AKS's ContainerLogV2: its JSON, indented,
    a row an object by column, the line in ``LogMessage``."""
    rows = [{"TimeGenerated": "2026-11-29T10:00:00.000Z", "PodName": "frontend-7d9f",
             "LogMessage": line.decode(), "LogSource": "stdout"} for line in lines]
    return json.dumps(rows, indent=2).encode() + b"\n"


def _grafana_text(lines: list[bytes]) -> bytes:
    """Grafana Explore's "Download logs" as text: the query's meta a line each, two blank
    lines, then a row a line, the time in epoch milliseconds and as ISO 8601, tab-separated."""
    meta = (b'Common labels: {"app":"frontend","namespace":"default"}\n'
            b'Line limit: "1000 (%d displayed)"\n\n\n' % len(lines))
    return meta + b"".join(b"1796205600%03d\t2026-11-29T10:00:00.%03dZ\t" % (n % 1000, n % 1000)
                           + line + b"\n" for n, line in enumerate(lines))


def _grafana_json(lines: list[bytes]) -> bytes:
    """Grafana Explore's "Download logs" as JSON: one array on one line, each row's line in
    ``line`` and the stream's labels in ``fields``, newest first."""
    rows = [{"line": line.decode(), "timestamp": "1796205600000000000",
             "date": "2026-11-29T10:00:00.000Z", "fields": {"app": "frontend"}}
            for line in reversed(lines)]
    return json.dumps(rows, separators=(",", ":")).encode() + b"\n"


def _journalctl(lines: list[bytes]) -> bytes:
    """``journalctl -u dynamo > dynamo.log`` (its default output): its first line its own,
    then each entry's time, host and program before the line; a reboot's mark between."""
    out = [b"-- Logs begin at Sun 2026-11-29 10:00:00 UTC, end at Sun 2026-11-29 11:00:00 UTC. --"]
    for n, line in enumerate(lines):
        if n == len(lines) // 2:
            out.append(b"-- Reboot --")
        out.append(b"Nov 29 10:00:%02d gpu-3 dynamo[4242]: " % (n % 60) + line)
    return b"\n".join(out) + b"\n"


def _rsyslog(lines: list[bytes]) -> bytes:
    """A copied /var/log/syslog as rsyslog writes it by default on Debian and Ubuntu: the
    time in RFC 3339, the host, the program and its pid, then the line."""
    return b"".join(b"2026-11-29T10:00:00.123456+00:00 gpu-3 dynamo[4242]: " + line + b"\n"
                    for line in lines)


def _aws_logs_tail(lines: list[bytes]) -> bytes:
    """``aws logs tail GROUP`` (its default, detailed output): the time, the log stream's
    name, then the line."""
    return b"".join(b"2026-11-29T10:00:00.123000+00:00 ecs/frontend/4f1e2d3c " + line + b"\n"
                    for line in lines)


def _aws_logs_tail_short(lines: list[bytes]) -> bytes:
    """``aws logs tail GROUP --format short``: the time to the second, no offset (UTC),
    then the line."""
    return b"".join(b"2026-11-29T10:00:00 " + line + b"\n" for line in lines)


def _logcli_text(lines: list[bytes]) -> bytes:
    """``logcli query`` (its default output): the time in the local zone, the stream's
    labels padded to the longest, then the line."""
    labels = [b'{app="frontend", pod="frontend-7d9f"}', b'{app="frontend", pod="fe-2"}']
    width = max(len(x) for x in labels)
    return b"".join(b"2026-11-29T11:00:00+01:00 " + labels[n % 2].ljust(width) + b" " + line
                    + b"\n" for n, line in enumerate(lines))


def _fluent_bit_file(lines: list[bytes]) -> bytes:
    """Fluent Bit's file output, default format: ``TAG: [TIME, RECORD]``, the record the
    tail input's (the line in ``log``) or, for every other line, the service's own record
    (an input parser made it so)."""
    out: list[bytes] = []
    for n, line in enumerate(lines):
        record = line if n % 2 else json.dumps(
            {"log": line.decode() + "\n", "stream": "stdout", "time": "2026-11-29T10:00:00Z"},
            separators=(",", ":")).encode()
        out.append(b"kube.var.log.containers.frontend-7d9f_default_frontend-0a1b.log: "
                   b"[1796205600.123456789, " + record + b"]\n")
    return b"".join(out)


def _fluentd_file(lines: list[bytes]) -> bytes:
    """Fluentd's file output, default format: ``TIME<TAB>TAG<TAB>RECORD``, the record the
    tail input's (the line in ``log``, ``format none``'s ``message``) or the service's own
    (a JSON parser made it so), the time as ISO 8601 or, with ``time_type float``, epoch."""
    out: list[bytes] = []
    for n, line in enumerate(lines):
        field = ("log", "message", None)[n % 3]
        record = line if field is None else json.dumps(
            {field: line.decode() + "\n", "stream": "stdout"}, separators=(",", ":")).encode()
        stamp = b"2026-11-29T10:00:00+00:00" if n % 2 else b"1796205600.123456"
        out.append(stamp + b"\tkubernetes.var.log.containers.frontend.log\t" + record + b"\n")
    return b"".join(out)


def _shipper(field: str, **around: Any) -> Callable[[list[bytes]], bytes]:
    """A shipper writing each line as a JSON object of its own, the line in `field`."""
    def wrap(lines: list[bytes]) -> bytes:
        return b"".join(json.dumps({**around, field: line.decode()}).encode() + b"\n"
                        for line in lines)
    return wrap


def _vector_parsed(lines: list[bytes]) -> bytes:
    """Vector's file sink after ``.message = parse_json!(.message)``: the record is an
    object in ``message``, not a string (its lines were all bad, "missing time")."""
    out = []
    for line in lines:
        try:
            message: Any = json.loads(line)
        except ValueError:
            message = line.decode()
        out.append(json.dumps({"file": "/var/log/pods/x/0.log", "host": "node-3",
                               "message": message, "source_type": "kubernetes_logs",
                               "timestamp": "2026-11-29T10:00:00Z"}).encode() + b"\n")
    return b"".join(out)


def _filebeat_json(lines: list[bytes]) -> bytes:
    """Filebeat's log input with ``json.*`` decoding (``keys_under_root: false``, its
    default): the record under ``json``, beside Filebeat's own ``log`` object (its lines
    were all bad, "missing time", the report none of the incident)."""
    out = []
    for n, line in enumerate(lines):
        entry: dict[str, Any] = {
            "@timestamp": "2026-11-29T10:00:00.000Z",
            "log": {"offset": n * 400, "file": {"path": "/var/log/app/frontend.jsonl"}},
            "input": {"type": "log"}, "agent": {"type": "filebeat", "version": "8.15.0"},
        }
        try:
            entry["json"] = json.loads(line)
        except ValueError:
            entry["message"] = line.decode()
        out.append(json.dumps(entry).encode() + b"\n")
    return b"".join(out)


def _elasticsearch_hits(lines: list[bytes]) -> bytes:
    """Elasticsearch or OpenSearch hits a line (elasticdump, a ``_search`` saved as
    ndjson): the shipped document in ``_source``, Filebeat's with the line in
    ``message``, or (decoded under the root) the record itself (its lines were all bad,
    "missing time", no request read)."""
    out = []
    for n, line in enumerate(lines):
        try:
            record: Any = json.loads(line)
        except ValueError:
            record = None
        document = ({**record, "@timestamp": "2026-11-29T10:00:00.000Z"}
                    if n % 2 and isinstance(record, dict)
                    else {"@timestamp": "2026-11-29T10:00:00.000Z", "message": line.decode(),
                          "log": {"offset": n * 400}})
        out.append(json.dumps({"_index": "filebeat-8.15.0", "_id": f"id{n}", "_score": 1.0,
                               "_source": document}).encode() + b"\n")
    return b"".join(out)


def _gcp_export(lines: list[bytes]) -> bytes:
    """Cloud Logging's LogEntry, as a sink writes them to Cloud Storage: GKE's agent parses
    a JSON line into ``jsonPayload`` and moves its ``time`` to the entry's ``timestamp``;
    a line that is no JSON object stays text in ``textPayload``."""
    out = []
    for line in lines:
        entry: dict[str, Any] = {
            "insertId": "x1", "logName": "projects/p/logs/stderr",
            "resource": {"type": "k8s_container", "labels": {"pod_name": "frontend-7d9f"}},
            "receiveTimestamp": "2026-11-29T10:00:05.000000001Z", "severity": "INFO",
        }
        try:
            payload = json.loads(line)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and "time" in payload:
            entry["timestamp"] = payload.pop("time")
            entry["jsonPayload"] = payload
        else:
            entry["timestamp"] = "2026-11-29T10:00:00Z"
            entry["textPayload"] = line.decode()
        out.append(json.dumps(entry).encode() + b"\n")
    return b"".join(out)


def _any_value(value: Any) -> dict[str, Any]:
    """A JSON value as OTLP JSON's AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _any_value(v)}
                                           for k, v in value.items()]}}
    return {"stringValue": value}


def _otel_file(lines: list[bytes], *, batch: int = 7) -> bytes:
    """The OpenTelemetry Collector's file exporter: a batch of log records a line, each
    body the line's text (filelog's container operator) or, every other batch, the map a
    json_parser operator made of it."""
    out = []
    for first in range(0, len(lines), batch):
        parsed = (first // batch) % 2 == 1
        records = [{
            "timeUnixNano": "1796205600123456789", "observedTimeUnixNano": "1796205600200000000",
            "body": _any_value(json.loads(line) if parsed else line.decode()),
            "attributes": [{"key": "log.iostream", "value": {"stringValue": "stderr"}}],
            "traceId": "", "spanId": "",
        } for line in lines[first:first + batch]]
        out.append(json.dumps({"resourceLogs": [{
            "resource": {"attributes": [
                {"key": "k8s.pod.name", "value": {"stringValue": "frontend-7d9f"}}]},
            "scopeLogs": [{"scope": {}, "logRecords": records}],
        }]}).encode() + b"\n")
    return b"".join(out)


WRAPPERS: dict[str, Callable[[list[bytes]], bytes]] = {
    "cri": _cri, "docker": _docker, "journald": _journal, "journald-spaced": _journal_spaced,
    "journald-seq": _journal_seq,
    "kubectl": _kubectl, "docker-compose": _compose, "aws-logs-tail": _aws_logs_tail,
    "aws-logs-tail-short": _aws_logs_tail_short,
    "stern": _stern, "stern-all-namespaces": _stern_everywhere,
    # Vector's file sink (json), Fluent Bit's out_file (json_lines), Loki's logcli.
    "vector": _shipper("message", file="/var/log/pods/x/0.log", host="node-3",
                       source_type="kubernetes_logs", timestamp="2026-11-29T10:00:00Z"),
    "vector-parsed": _vector_parsed,
    "fluent-bit": _shipper("log", date=1796205600.25, stream="stdout",
                           kubernetes={"pod_name": "frontend-7d9f"}),
    "logcli": _shipper("line", labels={"job": "frontend"}, timestamp="2026-11-29T10:00:00Z"),
    "logcli-text": _logcli_text,
    "fluent-bit-file": _fluent_bit_file,
    "fluentd-file": _fluentd_file,
    "gcp-export": _gcp_export,
    # Cloud Logging's Ops Agent (a VM's files receiver, no parse_json processor) keeps
    # every line as text: a sink's export holds the record in textPayload.
    "gcp-export-text": _shipper("textPayload", insertId="x1", logName="projects/p/logs/frontend",
                                resource={"type": "gce_instance", "labels": {}},
                                timestamp="2026-11-29T10:00:00.000000001Z", severity="DEFAULT"),
    # Filebeat's ndjson as Elasticsearch or its file output gets it: the line in
    # "message", or (json.* decoding) the record under "json".
    "filebeat": _shipper("message", **{"@timestamp": "2026-11-29T10:00:00.000Z"},
                         log={"offset": 0, "file": {"path": "/var/log/app/frontend.jsonl"}},
                         input={"type": "filestream"}, ecs={"version": "8.0.0"}),
    "filebeat-json": _filebeat_json,
    "elasticsearch-hits": _elasticsearch_hits,
    "elasticsearch-answer": _search_answer,
    "cloudwatch-insights-json": _insights_json,
    "azure-log-analytics": _log_analytics,
    "grafana-text": _grafana_text, "grafana-json": _grafana_json,
    "journalctl": _journalctl, "rsyslog": _rsyslog,
    "splunk-export": _splunk_export,
    "otel-collector-file": _otel_file,
}


def _record_at(path: Path, line: int) -> bytes:
    return path.read_bytes().split(b"\n")[line - 1]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", sorted(WRAPPERS))
def test_wrapped_logs_give_the_plain_logs_report(
    plain: Path, plain_report: PlainReport, tmp_path: Path, kind: str, engine: str
) -> None:
    wrapped = wrap_each_file(plain, tmp_path / kind, WRAPPERS[kind])
    want_code, want = plain_report
    code, got = analyze_json(str(wrapped), "--engine", engine)
    assert code == want_code == 1
    assert got["summary"]["bad_lines"] == (
        # the stderr lines between the parts are lines too, not JSON
        sum(1 for p in wrapped.iterdir() for x in p.read_bytes().split(b"\n") if b"stderr" in x)
        if kind == "cri" else 0
    )
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]
    ]
    assert got["summary"]["requests"] == want["summary"]["requests"]


def test_evidence_cites_the_line_of_the_records_last_part(plain: Path, plain_report: PlainReport, tmp_path: Path) -> None:
    wrapped = wrap_each_file(plain, tmp_path / "cri", _cri)
    _, got = analyze_json(str(wrapped))
    _, want = plain_report
    for g, w in zip(got["findings"], want["findings"], strict=True):
        for ev, plain_ev in zip(g["evidence"], w["evidence"], strict=True):
            cited = _record_at(Path(ev["file"]), ev["line"])
            record = _record_at(Path(plain_ev["file"]), plain_ev["line"])
            assert b" stdout F " in cited
            assert record.endswith(cited.split(b" ", 3)[3])


def test_a_record_whose_last_part_never_came_is_a_bad_line(tmp_path: Path) -> None:
    record = _RECORD
    stamp = "2026-11-29T10:00:00.000000001Z"
    log = tmp_path / "0.log"
    log.write_text(
        f"{stamp} stdout F {record}\n"
        f"{stamp} stdout P {record[:20]}\n"  # a copy cut here: its F part is lost
        f"{stamp} stderr F {record}\n"
    )
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert summary["lines"] == 3
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 2,
        "reason": "cut short (Kubernetes CRI record whose last part is missing)",
    }]
    assert code == 3  # one bad line in three


def test_a_walk_reads_a_container_log_whatever_its_name(plain: Path, tmp_path: Path) -> None:
    walked = tmp_path / "node"
    walked.mkdir()
    for path in plain.iterdir():  # no log-like name, no line starting with "{"
        (walked / path.stem).write_bytes(_cri(path.read_bytes().splitlines()))
    code, doc = analyze_json(str(walked))
    assert doc["summary"]["ignored_files"] == []
    assert doc["summary"]["requests"] == 80
    assert code == 1


def test_plain_lines_that_start_like_a_wrapper_are_not_unwrapped(tmp_path: Path) -> None:
    # A record whose first key is "log", as Docker's: still read as the record it is.
    line = {"log": "x", "time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1",
            "event": "request.start", "request_id": "r", "trace_id": "t", "span_id": "s"}
    log = tmp_path / "app.jsonl"
    log.write_text(json.dumps(line) + "\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_lines"] == 0
    assert doc["summary"]["requests"] == 1


def test_a_shippers_wrapping_is_known_past_a_banner_and_not_taken_for_a_record(
    tmp_path: Path,
) -> None:
    # Vector, Fluent Bit and logcli wrap every line, the banner's text too; a log whose
    # records have a "message" holding JSON text is no wrapper.
    log = tmp_path / "frontend.json"
    log.write_text(
        json.dumps({"message": "starting frontend", "host": "n3"}) + "\n"
        + json.dumps({"message": _RECORD, "host": "n3"}) + "\n"
    )
    record = json.loads(_RECORD)
    plain = tmp_path / "app.jsonl"
    plain.write_text(json.dumps({**record, "message": '{"a": 1}'}) + "\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 1, "reason": "not JSON"}]
    assert doc["summary"]["lines"] == 2
    _, doc = analyze_json(str(plain))
    assert doc["summary"]["bad_lines"] == 0



@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["vector", "fluent-bit", "logcli"])
def test_a_shippers_records_after_a_long_text_banner_are_read(
    plain: Path, plain_report: PlainReport, tmp_path: Path, kind: str, engine: str
) -> None:
    # A worker's start-up text (an engine loading its weights, CUDA's and NCCL's own
    # lines) can fill the first hundred lines a shipper wraps. Its records came only
    # after the first 64 lines looked at for one, and none of them was read: "none of
    # its lines is a log record", 0 requests, where the file held them all.
    banner = [b"INFO 11-29 10:00:00 [loader.py:%d] loading weights, shard %d of 200" % (n, n)
              for n in range(200)]
    wrapped = tmp_path / kind
    wrapped.mkdir()
    for path in plain.iterdir():
        lines = path.read_bytes().splitlines()
        (wrapped / path.name).write_bytes(WRAPPERS[kind](banner + lines))
    _, want = plain_report
    code, got = analyze_json(str(wrapped), "--engine", engine)
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]
    ]
    assert got["summary"]["requests"] == want["summary"]["requests"]
    files = len(list(plain.iterdir()))
    assert got["summary"]["bad_lines"] == len(banner) * files and code == 1


def _dynamo_line(at: str, message: str, span: str, **fields: Any) -> str:
    return json.dumps({"time": f"2026-10-02T14:00:0{at}Z", "level": "INFO",
                       "target": "dynamo_llm::http::service::service_v2", "message": message,
                       **fields, "span_name": "http-request", "span_id": span,
                       "trace_id": span * 2, "request_id": "dup-1"})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_shippers_records_after_a_banner_of_most_of_the_head_are_read(
    tmp_path: Path, engine: str
) -> None:
    # 250 entries of a model server's start-up text, ~50 KiB, in Vector's file sink:
    # how the records are wrapped was looked for among the first 64 lines of the file's
    # 64 KiB head only, and every record was "missing time" (0 requests, exit 3).
    first, second = "a1b2c3d4e5f60718", "5c20cc08e6afb2b7"
    records = [
        _dynamo_line("1.0", "request received", first),
        _dynamo_line("1.1", "request received", second),
        _dynamo_line("1.5", "http response sent", second, latency_ms="400", status="200"),
        _dynamo_line("1.6", "http response sent", first, latency_ms="600", status="200"),
    ]
    banner = [f"INFO 10-02 13:59:{n % 60:02d} [loader.py:88] Loading safetensors checkpoint "
              f"shards: {n}/250 [00:01<00:00, 3.2it/s]" for n in range(250)]
    log = tmp_path / "frontend.jsonl"
    log.write_text("".join(json.dumps({
        "file": "/var/log/pods/x/0.log", "host": "gpu-3", "message": line,
        "source_type": "file", "timestamp": "2026-10-02T14:00:01Z"}) + "\n"
        for line in banner + records))
    assert 40 << 10 < log.stat().st_size < 64 << 10
    code, doc = analyze_json(str(log), "--engine", engine)
    assert doc["summary"]["requests"] == 2
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"]
    assert doc["summary"]["bad_lines"] == len(banner) and code == 1


def test_follow_unwraps_the_lines_it_tails(tmp_path: Path) -> None:
    record = _RECORD.encode()
    stamp = b"2026-11-29T10:00:00.000000001Z"
    log = tmp_path / "0.log"
    log.write_bytes(stamp + b" stdout F " + record + b"\n")
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    with open(log, "ab") as fh:  # appended while followed, a record in two parts
        fh.write(stamp + b" stdout P " + record[:9] + b"\n")
        fh.write(stamp + b" stdout F " + record[9:] + b"\n")
    chunks, _ = watch.read(1 << 20)
    lines = [
        (chunk.first_line + k, text)
        for chunk in chunks for k, text in enumerate(chunk.data.tobytes().split(b"\n")[:-1])
    ]
    assert lines == [(2, b""), (3, record)]  # from the end, as --follow starts


@pytest.mark.parametrize("from_start", [True, False])
def test_follow_counts_a_record_whose_last_part_never_came(
    tmp_path: Path, from_start: bool
) -> None:
    # The batch read makes such a record a bad line; the follower held its parts and
    # ended without a word, the summary complete on a record it never read.
    record = _RECORD.encode()
    stamp = b"2026-11-29T10:00:00.000000001Z"
    log = tmp_path / "0.log"
    log.write_bytes((stamp + b" stdout F " + record + b"\n") * 3)
    follower = Follower([str(tmp_path)], FollowSettings(from_start=from_start))
    follower.start()
    with open(log, "ab") as fh:  # the follow stops while the runtime cuts a long line
        fh.write(stamp + b" stdout F " + record + b"\n")
        fh.write(stamp + b" stdout P " + record[:9] + b"\n")
    try:
        follower.run(lambda f: True, stop=lambda: True)
        summary = follower.summary()
    finally:
        follower.close()
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 5,
        "reason": "cut short (Kubernetes CRI record whose last part is missing)",
    }]
    assert summary["incomplete"] is True


def test_an_empty_container_line_is_a_blank_line(tmp_path: Path) -> None:
    record = _RECORD
    stamp = "2026-11-29T10:00:00.000000001Z"
    log = tmp_path / "0.log"
    # An empty line printed by the service: the runtime may end it at its tag.
    log.write_text(f"{stamp} stdout F {record}\n{stamp} stdout F\n{stamp} stderr F \n")
    _, doc = analyze_json(str(log))
    assert (doc["summary"]["lines"], doc["summary"]["bad_lines"]) == (1, 0)


def test_a_text_log_with_its_own_time_is_not_taken_for_kubectl_output(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("2026-11-29T10:00:00Z INFO starting\n2026-11-29T10:00:01Z INFO ready\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"][0]["reason"].startswith("a text log line")


def test_kubectl_output_that_opens_with_a_text_banner_is_unwrapped(tmp_path: Path) -> None:
    record = _RECORD
    stamp = "2026-11-29T10:00:00.123456789Z"
    log = tmp_path / "frontend.log"
    log.write_text(f"{stamp} Starting frontend v1.2\n{stamp} {record}\n{stamp} {record}\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 1, "reason": "not JSON"}
    ]


def test_stern_output_that_opens_with_a_text_banner_is_unwrapped(tmp_path: Path) -> None:
    log = tmp_path / "stern.log"
    log.write_text(f"frontend-0 frontend loading model weights\nfrontend-0 frontend {_RECORD}\n"
                   f"frontend-1 frontend {_RECORD}\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 1, "reason": "not JSON"}
    ]
    assert doc["summary"]["lines"] == 3


def test_a_text_banner_of_lower_case_words_is_not_taken_for_stern_names(tmp_path: Path) -> None:
    # Its first words look like a pod's and a container's names, but the next line is
    # plain JSON: no line is unwrapped, and the banner alone is a bad line.
    log = tmp_path / "frontend.jsonl"
    log.write_text(f"starting dynamo frontend\n{_RECORD}\n{_RECORD}\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 1, "reason": "not JSON"}
    ]
    assert doc["summary"]["lines"] == 3


def test_a_search_answer_of_one_page_is_read_and_says_so(tmp_path: Path) -> None:
    # Elasticsearch answers 10 hits unless asked for more: a page of the query's hits.
    answer = json.loads(_search_answer([_RECORD.encode(), _RECORD.encode()]))
    answer["hits"]["total"] = {"value": 10000, "relation": "gte"}
    log = tmp_path / "hits.json"
    log.write_text(json.dumps(answer) + "\n")
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [{
        "file": str(log), "line": 1,
        "reason": "one page of the query's answer: 2 of at least 10000 hits"}]
    assert doc["summary"]["lines"] == 2  # its records, read all the same
    assert [n["file"] for n in doc["summary"]["unreadable_files"]] == [str(log)]
    assert code == 3


def test_a_grafana_download_that_reached_its_line_limit_says_it_is_a_page(tmp_path: Path) -> None:
    lines = [_RECORD.encode()] * 3
    log = tmp_path / "Explore-logs.txt"
    log.write_bytes(_grafana_text(lines).replace(b"(3 displayed)", b"(3 returned)")
                    .replace(b'Line limit: "1000', b'Line limit: "3'))
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [{
        "file": str(log), "line": 2,
        "reason": "one page of the query's answer: 3 of at least 3 lines (Grafana's line limit)"}]
    assert doc["summary"]["lines"] == 4  # the page's line and its rows
    assert [n["file"] for n in doc["summary"]["unreadable_files"]] == [str(log)]
    assert code == 3


@pytest.mark.parametrize("wrap", [_grafana_json, _search_answer], ids=["grafana", "search"])
def test_a_text_entry_on_an_answers_line_makes_it_bad_and_its_records_are_read(
    tmp_path: Path, wrap: Callable[[list[bytes]], bytes]
) -> None:
    # The banner judged as its plain line is (as a Loki answer's or a collector's): it
    # was "missing time" in these, sending a reader to look for a time it never had.
    _one_bad_record_among_two_requests(
        tmp_path, _answer_carrying(wrap, b"frontend: starting", at=0), "not JSON")


def _answer_carrying(wrap: Callable[[list[bytes]], bytes], extra: bytes, *, at: int) -> bytes:
    """Two requests holding one id at once (four records) wrapped by `wrap`, with the
    `extra` line at index `at` among them (in a search answer, a hit of its own)."""
    records = [x.encode() for x in [*rt_request("a" * 16, "7", 0, 2),
                                    *rt_request("b" * 16, "7", 1, 3)]]
    if wrap is not _search_answer:
        return wrap([*records[:at], extra, *records[at:]])
    answer = json.loads(wrap(records))  # a hit's document with the line in `message`
    answer["hits"]["hits"].insert(at, {"_source": {"message": extra.decode()}})
    answer["hits"]["total"]["value"] += 1
    return json.dumps(answer).encode() + b"\n"


def _one_bad_record_among_two_requests(tmp_path: Path, data: bytes, reason: str) -> None:
    log = tmp_path / "answer.json"
    log.write_bytes(data)
    code, doc = analyze_json(str(log), "--allow-incomplete")
    assert [s["reason"] for s in doc["summary"]["bad_line_samples"]] == [
        f"5 JSON objects on one line, one {reason}"]
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (5, 2)
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"]
    assert code == 1


def _fluent_bit_http(lines: list[bytes]) -> bytes:
    """A Fluent Bit ``http`` output's post saved as it came: one JSON array on one line,
    each entry the line in ``log``."""
    entries = [{"date": 1796205600.25, "log": line.decode() + "\n", "stream": "stdout"}
               for line in lines]
    return json.dumps(entries, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("wrap", [_grafana_json, _search_answer, _fluent_bit_http],
                         ids=["grafana", "search", "fluent-bit-http"])
@pytest.mark.parametrize("torn", [b"{", b'{"time": "2026-11-29T10:00:00.3Z", "level": "IN'])
def test_a_torn_record_on_an_answers_line_loses_no_other_record(
    tmp_path: Path, wrap: Callable[[list[bytes]], bytes], torn: bytes,
) -> None:
    # A record cut short (a crash's torn line), or a pretty-printed dump's "{" line, was
    # taken as the record it looked like, back to back with the others: the whole line
    # was unreadable, every record on it lost (0 requests, no finding).
    _one_bad_record_among_two_requests(
        tmp_path, _answer_carrying(wrap, torn, at=2), "truncated JSON")


def test_a_walk_ignores_a_container_log_of_plain_text(plain: Path, tmp_path: Path) -> None:
    # A sidecar's text, wrapped by the runtime, under a name that is no log's: ignored
    # as its text would be, not read into a file with no log record (exit 3).
    stamp = "2026-11-29T10:00:00.000000001Z"
    walked = wrap_each_file(plain, tmp_path / "node",
                   lambda lines: b"".join(stamp.encode() + b" stdout F " + x + b"\n"
                                          for x in lines))
    (walked / "istio-proxy").write_text(
        "".join(f"{stamp} stdout F envoy: listener {n} ready\n" for n in range(5)))
    code, doc = analyze_json(str(walked))
    assert doc["summary"]["ignored_files"] == [
        {"file": str(walked / "istio-proxy"), "reason": "no JSON lines in its first lines"}
    ]
    assert not doc["summary"]["incomplete"]
    assert code == 1


def test_a_record_in_endless_parts_is_held_to_the_line_limit(tmp_path: Path) -> None:
    # A record whose parts never end (a runaway writer, a hostile file) was held whole
    # in memory until its last part; past the 16 MiB line limit it is a bad line
    # whatever follows, so no more of it is kept.
    from ridtrace.forensics.reading.lines import MAX_LINE_BYTES
    from ridtrace.forensics.reading.unwrap import wrapper_of

    record = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1"})
    stamp = b"2026-11-29T10:00:00.000000001Z"
    first = stamp + b" stdout F " + record.encode() + b"\n"
    unwrap = wrapper_of(first)
    assert unwrap is not None
    unwrap.feed(first)
    part = stamp + b" stdout P " + b"x" * (1 << 20) + b"\n"
    for _ in range(24):  # 24 MiB of one record
        assert unwrap.feed(part) == b"\n"
    joined = unwrap.feed(stamp + b" stdout F " + b"y" * 10 + b"\n")
    assert len(joined) == MAX_LINE_BYTES + 1 + 1  # one byte past the limit, its newline

    log = tmp_path / "0.log"
    log.write_bytes(first + part * 17 + stamp + b" stdout F }\n" + first)
    code, doc = analyze_json(str(log))
    assert doc["summary"]["lines"] == 3
    assert doc["summary"]["bad_line_samples"] == [{
        "file": str(log), "line": 19, "reason": "line longer than 16 MiB",
    }]
    assert code == 3


def test_a_line_dockers_journald_driver_cut_is_put_together(tmp_path: Path) -> None:
    # Docker's journald log driver cuts a line every 16 KiB and marks each part but the
    # last CONTAINER_PARTIAL_MESSAGE=true (no _LINE_BREAK): every part was a line of its
    # own, the record torn into bad lines; and its entries share dockerd's _PID, so
    # another container's line between the parts must not join them.
    def entry(n: int, container: str, message: str, **more: str) -> str:
        return json.dumps({"__CURSOR": f"s=1;i={n}", "_PID": "811", "CONTAINER_ID": container,
                           "MESSAGE": message, **more})

    long_record = json.dumps({**json.loads(_RECORD), "traceback": "x" * 20_000})
    log = tmp_path / "journal.json"
    log.write_text("\n".join([
        entry(1, "fe", long_record[:16384], CONTAINER_PARTIAL_MESSAGE="true"),
        entry(2, "wk", _RECORD),
        entry(3, "fe", long_record[16384:]),
    ]) + "\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_lines"] == 0
    assert doc["summary"]["lines"] == 2


def test_a_journal_field_written_as_an_array_is_no_crash(tmp_path: Path) -> None:
    # journalctl -o json writes a field an entry holds twice, or holds as binary, as an
    # array. Such a CONTAINER_ID (or _STREAM_ID, _PID), the key that tells a cut line's
    # stream, stopped the read with "unhashable type: 'list'", exit 4.
    half = len(_RECORD) // 2
    entries = [
        {"__CURSOR": "s=1", "MESSAGE": _RECORD, "_PID": "7"},
        {"__CURSOR": "s=2", "MESSAGE": _RECORD[:half], "CONTAINER_PARTIAL_MESSAGE": "true",
         "CONTAINER_ID": ["c1", "c2"]},
        {"__CURSOR": "s=3", "MESSAGE": _RECORD[half:], "CONTAINER_ID": ["c1", "c2"]},
        {"__CURSOR": "s=4", "MESSAGE": _RECORD, "_STREAM_ID": [49, 50]},
    ]
    log = tmp_path / "journal.json"
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    code, doc = analyze_json(str(log))
    # Three records: the cut one put together again.
    assert doc["summary"]["lines"] == 3 and doc["summary"]["bad_lines"] == 0, doc["summary"]
    assert code == 3  # read, and no request in them: incomplete, not an internal error (4)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_containers_lines_after_the_services_own_are_read(
    plain: Path, plain_report: PlainReport, tmp_path: Path, engine: str
) -> None:
    # `cat frontend.jsonl 0.log`, or a file two services' shippers write: it opens with
    # plain lines, so it is not unwrapped, and each wrapped record after them was a bad
    # line ("a JSON record after a text prefix", "missing time"), dropped
    # under the 1 % of bad lines a read may have.
    stamp = b"2026-11-29T10:00:00.000000001Z"
    wrappers: list[Callable[[list[bytes]], bytes]] = [  # each record whole, in one line
        lambda lines: b"".join(stamp + b" stdout F " + x + b"\n" for x in lines),
        _kubectl, _logcli_text, _shipper("log", stream="stdout"), _journal,
        WRAPPERS["vector"], WRAPPERS["logcli"], _vector_parsed, _rsyslog,
    ]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for path in plain.iterdir():
        lines = path.read_bytes().splitlines()
        half = len(lines) // 2
        step = -(-(len(lines) - half) // len(wrappers))
        data = b"".join(x + b"\n" for x in lines[:half])
        for k, wrap in enumerate(wrappers):
            part = lines[half + k * step : half + (k + 1) * step]
            data += wrap(part) if part else b""
        (mixed / path.name).write_bytes(data)
    want_code, want = plain_report
    code, got = analyze_json(str(mixed), "--engine", engine)
    assert got["summary"]["bad_line_samples"] == []
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]
    ]
    assert got["summary"]["requests"] == want["summary"]["requests"]
    assert code == want_code == 1


def test_a_tracing_subscriber_line_among_flat_ones_is_read(tmp_path: Path) -> None:
    # A Rust service's nested line in a file of flat Dynamo lines (one file two writers
    # share): "missing time", the Unlinked error on it dropped.
    lines = Path("/work/shared/samples/dynamo-jsonl-sample.jsonl").read_text().splitlines()
    flat = json.loads(lines[6])
    assert "Unlinked" in flat["error"]
    span = {k: flat.pop(k) for k in ("request_id", "span_id", "trace_id", "x_request_id")}
    span["name"] = flat.pop("span_name")
    nested = {"timestamp": flat.pop("time"), "level": flat.pop("level"),
              "fields": {"message": flat.pop("message"), "error": flat.pop("error")},
              "target": flat.pop("target"), "span": span, "spans": [span]}
    # Past the first 64 KiB, where a file's nesting is looked for.
    stats = json.dumps({"time": "2026-10-02T14:03:00Z", "level": "INFO", "target": "dynamo_vllm",
                        "message": "engine stats", "kv_cache_usage": "0.125"})
    head = [stats] * (65536 // len(stats) + 1) + lines[:6]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join([*head, json.dumps(nested), *lines[7:]]) + "\n")
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_lines"] == 0
    assert [(f["kind"], f["evidence"]) for f in doc["findings"] if f["kind"] == "unlinked"] == [
        ("unlinked", [{"file": str(log), "line": len(head) + 1}])]
    assert code == 1


def test_a_journal_line_journalctl_left_out_makes_the_read_incomplete(
    plain: Path, tmp_path: Path
) -> None:
    # journalctl -o json writes a field over 4096 bytes as null unless run with --all:
    # the line (a traceback, a request.end with a long error) is not in the export. It
    # was one bad line saying "missing time", and under 1 % of bad lines the run said
    # clean and complete.
    wrapped = wrap_each_file(plain, tmp_path / "journal", _journal)
    log = wrapped / "frontend.jsonl"
    entries = log.read_bytes().splitlines()
    lost = json.loads(entries[5])
    lost["MESSAGE"] = None
    entries[5] = json.dumps(lost).encode()
    log.write_bytes(b"\n".join(entries) + b"\n")
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 6,
        "reason": "MESSAGE null: journalctl -o json leaves out a line over 4096 bytes",
    }]
    assert summary["bad_lines"] * 100 < summary["lines"]
    assert summary["unreadable_files"] == [{
        "file": str(log),
        "reason": "journalctl -o json left out its lines over 4096 bytes (MESSAGE null, see "
                  "its bad lines): export it again with journalctl --all -o json",
    }]
    assert summary["incomplete"] is True
    assert any("journalctl --all" in r for r in summary["incomplete_reasons"])
    assert code == 1  # the frontend's findings, still reported


def test_lines_journald_dropped_under_its_rate_limit_make_the_read_incomplete(
    plain: Path, tmp_path: Path
) -> None:
    # journald drops a service's lines past its rate limit (RateLimitBurst=, 10,000 in
    # 30 s by default: a busy frontend at DEBUG passes it) and writes one entry of its
    # own in their place, which `journalctl -u UNIT -o json` exports with the unit's
    # lines. That entry was one text line among thousands of records: under 1 % of bad
    # lines the run said clean and complete over 3184 lines never recorded.
    wrapped = wrap_each_file(plain, tmp_path / "journal", _journal)
    log = wrapped / "frontend.jsonl"
    entries = log.read_bytes().splitlines()
    notice = {
        "__CURSOR": "s=1;i=notice", "__REALTIME_TIMESTAMP": "1796205600000000",
        "PRIORITY": "6", "SYSLOG_IDENTIFIER": "systemd-journald", "_PID": "301",
        "_COMM": "systemd-journal", "MESSAGE_ID": "a596d6fe7bfa4994828e72309e95d61e",
        "MESSAGE": "Suppressed 3184 messages from frontend.service", "N_DROPPED": "3184",
        "OBJECT_PID": "42", "OBJECT_SYSTEMD_UNIT": "frontend.service",
    }
    entries.insert(20, json.dumps(notice).encode())
    log.write_bytes(b"\n".join(entries) + b"\n")
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 21,
        "reason": "journald dropped lines under its rate limit: "
                  "Suppressed 3184 messages from frontend.service",
    }]
    assert summary["bad_lines"] * 100 < summary["lines"]
    assert [note["file"] for note in summary["unreadable_files"]] == [str(log)]
    assert "never recorded" in summary["unreadable_files"][0]["reason"]
    assert summary["incomplete"] is True
    assert code == 1  # the frontend's findings, still reported


def test_a_text_body_in_a_collectors_batch_is_a_bad_line_its_records_read(
    tmp_path: Path,
) -> None:
    # A start-up banner's text is a log record's body like any line: its batch's line
    # is a bad one, and the records beside it are read all the same.
    request = {**json.loads(_RECORD), "request_id": "r1", "trace_id": "1" * 32,
               "span_id": "a" * 16, "method": "POST", "path": "/v1/completions"}
    lines = [b"starting frontend",
             json.dumps({**request, "event": "request.start"}).encode(),
             json.dumps({**request, "event": "request.end", "time": "2026-11-29T10:00:01Z",
                         "status": 200, "outcome": "ok"}).encode()]
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_otel_file(lines, batch=3))
    _, doc = analyze_json(str(log))
    assert doc["summary"]["lines"] == 3 and doc["summary"]["requests"] == 1  # records
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 1, "reason": "3 JSON objects on one line, one not JSON"}
    ]


def test_a_containers_stdout_and_stderr_lines_cut_at_once_are_put_together_apart(
    tmp_path: Path,
) -> None:
    # Docker's journald driver writes a container's stdout at PRIORITY 6 and its stderr
    # at 3, both under the container's id: a long line on each, cut and interleaved,
    # was put together as one, and both records were lost as bad lines.
    def entry(n: int, priority: str, message: str, **more: str) -> str:
        return json.dumps({"__CURSOR": f"s=1;i={n}", "_PID": "811", "CONTAINER_ID": "fe",
                           "PRIORITY": priority, "MESSAGE": message, **more})

    record = json.loads(_RECORD)
    out = json.dumps({**record, "stream": "stdout", "body": "o" * 20_000})
    err = json.dumps({**record, "stream": "stderr", "body": "e" * 20_000})
    partial = {"CONTAINER_PARTIAL_MESSAGE": "true"}
    log = tmp_path / "journal.json"
    log.write_text("\n".join([
        entry(1, "6", out[:16384], **partial),
        entry(2, "3", err[:16384], **partial),
        entry(3, "6", out[16384:]),
        entry(4, "3", err[16384:]),
    ]) + "\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_lines"] == 0
    assert doc["summary"]["lines"] == 2


@pytest.mark.parametrize("prefix", [b"\x1b[36mdynamo-frontend-1 |\x1b[0m ",
                                    b"\x1b[36mdynamo-frontend-1  | \x1b[0m"],
                         ids=["docker-compose v1", "Compose v2"])
def test_coloured_docker_compose_logs_are_unwrapped(tmp_path: Path, prefix: bytes) -> None:
    # `docker compose logs` on a terminal (or `--ansi always`) colours each container's
    # name and bar (v2 the space after the bar too): every such line was "a JSON record
    # after a text prefix", so a real duplicate was an incomplete read (exit 3) with no
    # finding.
    lines = rt_request("a" * 16, "7", 0, 2) + rt_request("b" * 16, "7", 1, 3)
    log = tmp_path / "compose.log"
    log.write_bytes(b"".join(
        prefix + (b"2026-11-29T10:00:00.123456789Z " if n % 2 else b"")
        + line.encode() + b"\n" for n, line in enumerate(lines)))
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == []
    assert [(f["kind"], f["evidence"]) for f in doc["findings"]] == [
        ("duplicate_in_flight", [{"file": str(log), "line": n} for n in (1, 2, 3, 4)])]
    assert code == 1


def _requests(count: int = 60) -> list[str]:
    """Twice `count` good lines: one bad line among 120 is under the 1 % a read may have."""
    return [line for i in range(count)
            for line in rt_request(f"{i + 1:016x}", f"r{i}", i * 0.01, i * 0.01 + 0.005)]


def _long_unlinked(length: int) -> str:
    """A ridtrace Unlinked line whose error is about `length` characters long."""
    return rt("response.unlinked", time=ts(0.5), request_id="r-x", trace_id="e" * 32,
              span_id="e" * 16, error="Unlinked response; " + "x" * length)


def _unlinked_with(field: str) -> bytes:
    """A ridtrace Unlinked line whose `payload` is `field`'s JSON text, the rest plain."""
    head = rt("response.unlinked", time=ts(0.5), request_id="r-x", trace_id="e" * 32,
              span_id="e" * 16, error="Unlinked response; response task was dropped")
    return head[:-1].encode() + b',"payload":' + field.encode() + b"}"


_DEEP = "[" * 20_000 + "1" + "]" * 20_000  # valid JSON, deeper than any Python parser follows
_BIG = "1" * 5000  # an integer of more digits than Python converts


@pytest.mark.parametrize("wrap", [
    lambda r: b'{"host":"node-3","message":' + r + b',"timestamp":"2026-11-29T10:00:00Z"}',
    lambda r: b'{"@timestamp":"2026-11-29T10:00:00.000Z","json":' + r + b"}",
], ids=["vector-parsed", "filebeat-json"])
@pytest.mark.parametrize("field", ["deep", "big"])
def test_a_wrapped_record_of_valid_json_is_never_a_silent_bad_line(
    tmp_path: Path, wrap: Callable[[bytes], bytes], field: str
) -> None:
    # The unwrapper's parser gave up on the line (nested ~1,000 deep, or an integer of
    # over 4,300 digits), passed the wrapper on as it was, and the reader took it for a
    # record with no time: one bad line under the 1 %, exit 0, the Unlinked error lost.
    lines = [line.encode() for line in _requests(80)]
    lines.insert(100, _unlinked_with(_DEEP if field == "deep" else _BIG))
    log = tmp_path / "app.log"
    log.write_bytes(b"\n".join(wrap(line) for line in lines) + b"\n")
    code, doc = analyze_json(str(log))
    if field == "big":  # RFC 8259 sets no limit: the record is read
        assert [f["kind"] for f in doc["findings"]] == ["unlinked"] and code == 1, doc["summary"]
        assert doc["summary"]["bad_lines"] == 0
    else:  # what the parser cannot follow makes the read incomplete, as a plain line's
        assert doc["summary"]["bad_line_samples"] == [
            {"file": str(log), "line": 101, "reason": "JSON nested too deeply"}]
        assert doc["summary"]["unreadable_files"] and code == 3


def test_a_plain_line_with_a_big_integer_and_a_lone_surrogate_is_read(tmp_path: Path) -> None:
    # DuckDB refused the lone surrogate, the judge's parser the integer: "not JSON".
    lines = _requests(80)
    lines.insert(100, _unlinked_with(f'[{_BIG}, "1\\udc80"]').decode())
    log = tmp_path / "app.jsonl"
    log.write_text("\n".join(lines) + "\n")
    code, doc = analyze_json(str(log))
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"] and code == 1, doc["summary"]


@pytest.mark.parametrize("runtime", ["docker", "cri"])
def test_a_record_cut_short_mid_file_is_not_joined_to_the_next(
    tmp_path: Path, runtime: str
) -> None:
    # A container killed while writing a long record (two of its parts written, the last
    # never), restarted onto the same file and stream: its parts were joined to the next
    # record, one "not JSON" bad line cited at that record's line, both records lost,
    # and the file read whole (exit 0 on an Unlinked error among 120 good lines).
    lines, unlinked = _requests(), _long_unlinked(3 * _CUT)
    stamp = "2026-11-29T10:00:00.000000001Z"
    if runtime == "docker":
        def entry(text: str) -> str:
            return json.dumps({"log": text, "stream": "stdout", "time": stamp})
        written = [entry(line + "\n") for line in lines[:100]]
        written += [entry(unlinked[:_CUT]), entry(unlinked[_CUT : 2 * _CUT])]
        written += [entry(line + "\n") for line in lines[100:]]
    else:
        written = [f"{stamp} stdout F {line}" for line in lines[:100]]
        written += [f"{stamp} stdout P {unlinked[:_CUT]}",
                    f"{stamp} stdout P {unlinked[_CUT : 2 * _CUT]}"]
        written += [f"{stamp} stdout F {line}" for line in lines[100:]]
    log = tmp_path / "0.log"
    log.write_text("\n".join(written) + "\n")
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert summary["lines"] == len(lines) + 1 and summary["requests"] == 60
    name = "Docker json-file" if runtime == "docker" else "Kubernetes CRI"
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 101, "reason": f"cut short ({name} record whose last part is missing)",
    }]
    assert summary["unreadable_files"] and code == 3


@pytest.mark.parametrize("runtime", ["docker", "cri"])
def test_a_live_log_that_starts_with_the_rest_of_a_record_is_read_in_part(
    tmp_path: Path, runtime: str
) -> None:
    # A rotation fell between the parts a runtime cut a long record into: the rotated file
    # ends with its start, the live one starts with the rest. That rest was one "not
    # JSON" bad line among 120 good ones: exit 0, the record (an Unlinked error) lost.
    lines, unlinked = _requests(), _long_unlinked(30_000)
    rest = unlinked[16_384:]  # Docker's and kubelet's 16 KiB parts
    stamp = "2026-11-29T10:00:00.000000001Z"
    if runtime == "docker":
        written = [json.dumps({"log": text + "\n", "stream": "stdout", "time": stamp})
                   for text in [rest, *lines]]
    else:
        written = [f"{stamp} stdout F {text}" for text in [rest, *lines]]
    log = tmp_path / "0.log"
    log.write_text("\n".join(written) + "\n")
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 1, "reason": "the end of a JSON record, its start missing"}]
    (note,) = summary["unreadable_files"]
    assert "whose start is missing" in note["reason"] and code == 3


_TRACING_UNLINKED = (
    '{"timestamp":"2026-11-29T10:00:00.500000Z","level":"ERROR",'
    '"target":"dynamo_llm::http::service::generate","fields":{"message":"engine generate '
    'call failed","error":"Unlinked response; response task was dropped or cancelled"},'
    '"span":{"request_id":"r-x","trace_id":"' + "e" * 32 + '","span_id":"' + "e" * 16
    + '","name":"generate"},"payload":DEEP}'
)


@pytest.mark.parametrize("depth", [1_500, 20_000])
@pytest.mark.parametrize("shape", ["cri", "kubectl", "tracing-subscriber"])
def test_a_record_too_deep_to_unwrap_among_plain_lines_makes_the_read_incomplete(
    tmp_path: Path, shape: str, depth: int,
) -> None:
    # One such line among a plain file's (`cat app.jsonl 0.log`): judged by its prefix ("a
    # JSON record after a text prefix ridtrace does not take off") or as the row DuckDB
    # made of it ("missing time"), one bad line under the 1 %, the Unlinked error lost and
    # the run clean, exit 0 (hostile-logs pass).
    deep = "[" * depth + "]" * depth
    if shape == "tracing-subscriber":
        line = _TRACING_UNLINKED.replace("DEEP", deep).encode()
    else:
        prefix = b"2026-11-29T10:00:00.500000000Z " + (b"stdout F " if shape == "cri" else b"")
        line = prefix + _unlinked_with(deep)
    lines = [line.encode() for line in _requests(80)]
    lines.insert(100, line)
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 101, "reason": "JSON nested too deeply"}]
    assert doc["summary"]["unreadable_files"] and code == 3


def test_records_near_the_parsers_depth_limit_are_never_an_internal_error(
    tmp_path: Path,
) -> None:
    # Parsed a few frames up, a tracing-subscriber line nested ~980 levels failed when
    # written back flat (RecursionError): exit 4, a traceback, for the whole read.
    lines = [line.encode() for line in _requests(80)]
    for depth in range(940, 1020, 2):
        lines.insert(100, _TRACING_UNLINKED.replace(
            "DEEP", "[" * depth + "]" * depth).replace('"r-x"', f'"r-{depth}"').encode())
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    # The command as users run it: where the limit falls depends on the stack above.
    done = subprocess.run([sys.executable, "-m", "ridtrace", "analyze", str(log), "-q",
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode in (1, 3), done.stderr[-2000:]
    reasons = {s["reason"] for s in json.loads(done.stdout)["summary"]["bad_line_samples"]}
    assert reasons <= {"JSON nested too deeply"}, reasons


def _long_cjk_unlinked(length: int) -> bytes:
    """A ridtrace Unlinked line whose error holds `length` three-byte characters, raw."""
    return rt("response.unlinked", time=ts(0.5), request_id="r-x", trace_id="e" * 32,
              span_id="e" * 16, error="Unlinked response; " + "你" * length,
              ).encode().replace(b"\\u4f60", "你".encode())


@pytest.mark.parametrize("where", ["end", "start"])
def test_a_record_cut_inside_a_character_is_a_cut_record(tmp_path: Path, where: str) -> None:
    # Byte limits (a syslog daemon's 8 KiB, a runtime's 16 KiB parts) cut inside non-ASCII
    # text as often as not: the record was "invalid UTF-8", its file not named, exit 0,
    # where the same record in ASCII, cut at the same byte, made the read incomplete.
    lines = [line.encode() for line in _requests()]
    unlinked = _long_cjk_unlinked(10_000)
    cut = 8192 + next(i for i in range(3) if (unlinked[8192 + i] & 0xC0) == 0x80)
    kept = unlinked[:cut] if where == "end" else unlinked[cut:]
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"\n".join([kept, *lines]) + b"\n")
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    reason = "truncated JSON" if where == "end" else "the end of a JSON record, its start missing"
    assert summary["bad_line_samples"] == [{"file": str(log), "line": 1, "reason": reason}]
    assert summary["unreadable_files"] and code == 3
