"""Nested records (tracing-subscriber's own JSON, loguru's `serialize=True`) are flattened
when a shipper's batch puts several on one line.

The OpenTelemetry Collector's file exporter writes a batch of records a line and
ridtrace writes them back to back on it; the un-nesting parsed one object a line, so
every record of such a line stayed nested: 9 of 9 lines bad (exit 3), or, for records
that also carry a `time` key, no bad line and no request at all, and an Unlinked error
lost with exit 0 beside other logs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import analyze_json
from tests.support.extras import ENGINE_ARGS

_SAMPLE = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
_SPAN_KEYS = {"span_id", "trace_id", "parent_id", "request_id", "x_request_id", "uri",
              "method", "version", "component", "namespace", "instance_id", "otel.kind",
              "x_dynamo_request_id"}


def _nested(flat: dict[str, Any], *, keep_time: bool) -> dict[str, Any]:
    """A Dynamo line as tracing-subscriber's JSON formatter nests it."""
    record = {"timestamp": flat["time"], "level": flat["level"], "target": flat["target"]}
    if keep_time:
        record["time"] = flat["time"]
    fields = {k: v for k, v in flat.items() if k not in _SPAN_KEYS | {"time", "level", "target",
                                                                      "span_name"}}
    record["fields"] = fields
    if "span_name" in flat:
        span = {"name": flat["span_name"], **{k: v for k, v in flat.items() if k in _SPAN_KEYS}}
        record["span"], record["spans"] = span, [span]
    return record


def _batches(records: list[dict[str, Any]], per_line: int) -> bytes:
    lines = []
    for at in range(0, len(records), per_line):
        bodies = [{"timeUnixNano": "0", "body": {"stringValue": json.dumps(r)}}
                  for r in records[at:at + per_line]]
        lines.append(json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [
            {"scope": {}, "logRecords": bodies}]}]}))
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("keep_time", [False, True], ids=["timestamp", "time-too"])
def test_nested_records_packed_on_a_line_read_as_the_flat_log(tmp_path: Path,
                                                              keep_time: bool) -> None:
    flat = [json.loads(line) for line in _SAMPLE.read_text().splitlines() if line.strip()]
    _, want = analyze_json(str(_SAMPLE))
    log = tmp_path / "otel-logs.json"
    log.write_bytes(_batches([_nested(r, keep_time=keep_time) for r in flat], per_line=3))
    code, got = analyze_json(str(log))
    counts = ("lines", "bad_lines", "requests", "unlinked", "incomplete")
    assert {k: got["summary"][k] for k in counts} == {k: want["summary"][k] for k in counts}
    assert [f["kind"] for f in got["findings"]] == [f["kind"] for f in want["findings"]]
    assert got["summary"]["unlinked"] >= 1 and code == 1


@pytest.mark.parametrize("engine", ENGINE_ARGS)
@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_hole_of_nuls_before_the_batches_hides_no_record(
    tmp_path: Path, engine: list[str], packed: bool,
) -> None:
    # copytruncate under a writer that does not append leaves NULs before the first
    # line: the batch format was not recognised behind them, and the whole file was one
    # bad line (its Unlinked error lost, exit 3).
    import gzip

    from click.testing import CliRunner

    from ridtrace.cli.main import main

    flat = [json.loads(line) for line in _SAMPLE.read_text().splitlines() if line.strip()]
    _, want = analyze_json(str(_SAMPLE))
    data = b"\x00" * 64 + _batches([_nested(r, keep_time=False) for r in flat], per_line=3)
    log = tmp_path / ("otel-logs.json.gz" if packed else "otel-logs.json")
    log.write_bytes(gzip.compress(data) if packed else data)
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q", *engine])
    got = json.loads(result.stdout)
    counts = ("lines", "bad_lines", "requests", "unlinked", "incomplete")
    assert {k: got["summary"][k] for k in counts} == {k: want["summary"][k] for k in counts}
    assert result.exit_code == 1
