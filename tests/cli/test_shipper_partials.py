"""A line the container runtime cut into parts, as a shipper's CRI parser ships it when it
does not put the parts together again: Fluent Bit's stock regex ``cri`` parser (the tag
in ``logtag``, the text in ``message``), Fluentd's ``cri`` parser without the concat
filter (``logtag``, ``log``), Fluent Bit's multiline ``cri`` parser on a flush (``_p``).
Each part was a record of its own, a bad line ("truncated JSON"): a long Unlinked error
was lost under the 1 % of bad lines a read may have, and the run said complete."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.cli.conftest import PlainReport
from tests.cli.helpers import analyze_json, wrap_each_file
from tests.support.extras import ENGINES

# Lines longer than this are cut, as containerd cuts lines longer than 16 KiB.
_CUT = 120
# Another container's line, written between two parts of a cut one.
_OTHER = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "message": "m"})
# A record long enough to be cut.
_LONG = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "message": "m" * 300})


def _parts(line: bytes) -> list[tuple[str, str]]:
    text = line.decode()
    cut = [text[i : i + _CUT] for i in range(0, len(text), _CUT)] or [""]
    return [(part, "F" if k == len(cut) - 1 else "P") for k, part in enumerate(cut)]


def _entries(lines: list[bytes], entry: Callable[[str, str, str], str]) -> bytes:
    """Each part of each line as `entry(pod, tag, part)`, another pod's whole line after
    the first part of every cut one."""
    out: list[str] = []
    for line in lines:
        for k, (part, tag) in enumerate(_parts(line)):
            out.append(entry("frontend-7d9f", tag, part))
            if k == 0 and tag == "P":
                out.append(entry("sidecar-0a1b", "F", _OTHER))
    return "".join(x + "\n" for x in out).encode()


def _fluent_bit_cri(lines: list[bytes]) -> bytes:
    """Fluent Bit's json_lines output of its stock regex ``cri`` parser's records."""
    return _entries(lines, lambda pod, tag, part: json.dumps({
        "date": 1796205600.25, "stream": "stdout", "logtag": tag, "message": part,
        "kubernetes": {"pod_name": pod, "namespace_name": "default"}}))


def _fluent_bit_multiline(lines: list[bytes]) -> bytes:
    """Fluent Bit's json_lines output of its multiline ``cri`` parser's records."""
    return _entries(lines, lambda pod, tag, part: json.dumps({
        "date": 1796205600.25, "time": "2026-11-29T10:00:00.25Z", "stream": "stdout",
        "_p": tag, "log": part, "kubernetes": {"pod_name": pod}}))


def _fluentd_file(lines: list[bytes]) -> bytes:
    """Fluentd's file output of its ``cri`` parser's records: the container in the tag
    alone."""
    return _entries(lines, lambda pod, tag, part: (
        f"2026-11-29T10:00:00+00:00\tkubernetes.var.log.containers.{pod}.log\t"
        + json.dumps({"stream": "stdout", "logtag": tag, "log": part})))


def _cri(tag: str, part: str) -> str:
    """The node's CRI line of a part, as the runtime wrote it."""
    return f"2026-11-29T10:00:00.250000001Z stdout {tag} {part}"


def _vector_raw_cri(lines: list[bytes]) -> bytes:
    """Vector's `file` source reading /var/log/pods without CRI parsing: the runtime's
    line in ``message``, its prefix and tag with it."""
    return _entries(lines, lambda pod, tag, part: json.dumps({
        "file": f"/var/log/pods/default_{pod}_uid/c/0.log", "host": "node-1",
        "message": _cri(tag, part), "source_type": "file",
        "timestamp": "2026-11-29T10:00:00.3Z"}))


_RECORDS_A_BATCH = 3


def _collector_raw_cri(lines: list[bytes]) -> bytes:
    """The OpenTelemetry Collector's file exporter after a filelog receiver without its
    CRI parsing: a runtime's line a record's body, three records a line."""
    records = [json.loads(x) for x in _entries(lines, lambda pod, tag, part: json.dumps({
        "observedTimeUnixNano": "1796205600250000000", "body": {"stringValue": _cri(tag, part)},
        "attributes": [{"key": "log.file.path",
                        "value": {"stringValue": f"/var/log/pods/default_{pod}_uid/c/0.log"}}],
    })).splitlines()]
    batches = [records[i : i + _RECORDS_A_BATCH] for i in range(0, len(records), _RECORDS_A_BATCH)]
    return b"".join(json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [
        {"scope": {}, "logRecords": batch}]}]}).encode() + b"\n" for batch in batches)


def _loki_raw_cri(lines: list[bytes]) -> bytes:
    """Loki's query_range answer after promtail without its `cri` stage: each pod's
    stream newest first, a runtime's line a value, the answer one line."""
    streams: dict[str, list[str]] = {}
    for entry in _entries(lines, lambda pod, tag, part: json.dumps([pod, _cri(tag, part)]))\
            .splitlines():
        pod, text = json.loads(entry)
        streams.setdefault(pod, []).append(text + "\n")
    result = [{"stream": {"pod": pod}, "values": [
        [str(1796205600000000000 + n), text] for n, text in enumerate(texts)][::-1]}
        for pod, texts in streams.items()]
    return json.dumps({"status": "success", "data": {"resultType": "streams", "result": result}},
                      separators=(",", ":")).encode() + b"\n"


# Vector's, the collector's and Loki's: no tag field, the tag in the runtime's prefix. A long
# record's parts were each a bad line ("missing time", "not JSON"), its Unlinked error
# lost, and the run said complete (exit 0).
SHAPES = {"fluent-bit-cri": _fluent_bit_cri, "fluent-bit-multiline": _fluent_bit_multiline,
          "fluentd-file-cri": _fluentd_file, "vector-raw-cri": _vector_raw_cri,
          "collector-raw-cri": _collector_raw_cri, "loki-raw-cri": _loki_raw_cri}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_line_cut_into_parts_is_put_together_again(
    plain: Path, plain_report: PlainReport, tmp_path: Path, shape: str, engine: str
) -> None:
    wrapped = wrap_each_file(plain, tmp_path / shape, SHAPES[shape])
    want_code, want = plain_report
    code, got = analyze_json(str(wrapped), "--engine", engine)
    assert got["summary"]["bad_line_samples"] == []
    assert [(f["kind"], f["span_id"], f["detail"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"], f["detail"]) for f in want["findings"]]
    assert got["summary"]["requests"] == want["summary"]["requests"]
    assert code == want_code == 1


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_unlinked_error_in_a_cut_line_is_found(tmp_path: Path, shape: str) -> None:
    # The one error of the log is a long line (its error text holds the payload).
    trace, span = "1" * 32, "a" * 16
    base = {"schema": "ridtrace/1", "service": "frontend", "request_id": "r1",
            "trace_id": trace, "span_id": span}
    records = [
        {**base, "time": "2026-11-29T10:00:00Z", "event": "request.start", "message": "m"},
        {**base, "time": "2026-11-29T10:00:01Z", "level": "ERROR", "event": "response.unlinked",
         "message": "Unlinked response; response task was dropped or cancelled",
         "error": "x" * 300},
        {**base, "time": "2026-11-29T10:00:02Z", "event": "request.end", "message": "m",
         "status": 500, "outcome": "error"},
    ]
    log = tmp_path / "shipped.log"
    log.write_bytes(SHAPES[shape]([json.dumps(r).encode() for r in records]))
    code, doc = analyze_json(str(log))
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"]
    assert doc["summary"]["bad_lines"] == 0
    assert code == 1


@pytest.mark.parametrize("shape", ["fluent-bit-cri", "vector-raw-cri", "collector-raw-cri"])
def test_a_line_whose_last_part_never_came_is_cut_short(tmp_path: Path, shape: str) -> None:
    # A copy cut after the first part of its last line: the lines before hold one cut
    # line (its parts, the other pod's line between), the last the first part of the next.
    log = tmp_path / "shipped.log"
    data = SHAPES[shape]([_LONG.encode()])
    log.write_bytes(data + data.split(b"\n")[0] + b"\n")
    code, doc = analyze_json(str(log))
    shipper = "OpenTelemetry Collector file" if shape == "collector-raw-cri" else "log shipper JSON"
    assert doc["summary"]["bad_line_samples"] == [{
        "file": str(log), "line": data.count(b"\n") + 1,
        "reason": f"cut short ({shipper} record whose last part is missing)",
    }]
    assert code == 3


def test_follow_puts_a_cut_line_together(tmp_path: Path) -> None:
    log = tmp_path / "fluent-bit.log"
    log.write_bytes(_fluent_bit_cri([_OTHER.encode()]))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    with open(log, "ab") as fh:  # appended while followed
        fh.write(_fluent_bit_cri([_LONG.encode()]))
    try:
        follower.run(lambda f: True, stop=lambda: True)
        summary = follower.summary()
    finally:
        follower.close()
    assert summary["bad_line_samples"] == []
    assert summary["lines"] == 3  # the cut line once, the other pod's line between
