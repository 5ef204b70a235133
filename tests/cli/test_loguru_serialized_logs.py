"""loguru's own JSON lines (``serialize=True``) are read as ridtrace's lines.

An application that logs through a serializing loguru sink of its own gets ridtrace's
events there with the request's ids in ``record.extra`` (docs/tracing.md); read as they
were, every line was a bad one ("missing time"), no request was read, exit 3.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ridtrace.cli.main import main

# One process writes both logs from the same requests: configure_logging's JSON lines,
# and the application's own serializing sink, which gets every event and the ids.
_APP = """
import asyncio, sys
import httpx
from loguru import logger
from starlette.responses import PlainTextResponse
from ridtrace import RequestTracingMiddleware, configure_logging

plain, serialized = sys.argv[1:3]
configure_logging(plain, service="api", events_via_loguru=True)
logger.add(serialized, serialize=True)

async def slow(scope, receive, send):
    logger.info("handling")
    await asyncio.sleep(0.05)
    await PlainTextResponse("ok")(scope, receive, send)

app = RequestTracingMiddleware(slow)

async def main():
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        calls = [client.get("/v1/x", headers={"x-request-id": "shared", "request-id": "old"})
                 for _ in range(3)]
        calls.append(client.get("/v1/y", headers={"x-request-id": "own"}))
        for answer in await asyncio.gather(*calls):
            assert answer.status_code == 200

asyncio.run(main())
"""


def _report(path: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


def _kinds(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f["kind"], f.get("request_id") or f.get("x_request_id") or "")
                  for f in doc["findings"])


def test_a_serialized_loguru_log_gives_the_json_sinks_report(tmp_path: Path) -> None:
    plain, serialized = tmp_path / "api.jsonl", tmp_path / "app.json"
    subprocess.run([sys.executable, "-c", _APP, str(plain), str(serialized)], check=True,
                   timeout=60)
    assert json.loads(serialized.read_text().splitlines()[0])["record"]["extra"]
    plain_code, plain_doc = _report(plain)
    code, doc = _report(serialized)
    summary = doc["summary"]
    assert (summary["bad_lines"], summary["incomplete"]) == (0, False), summary
    assert summary["requests"] == plain_doc["summary"]["requests"] == 4
    assert summary["lines"] == plain_doc["summary"]["lines"]
    assert _kinds(doc) == _kinds(plain_doc)
    kinds = {kind for kind, _ in _kinds(doc)}
    assert {"client_id_reuse", "deprecated_header"} <= kinds
    assert code == plain_code
    # Evidence cites the serialized log's own lines.
    cited = {e["file"] for f in doc["findings"] for e in f.get("evidence", [])}
    assert cited == {str(serialized)}


# The application logs fields of its own named like ridtrace's lifecycle fields: a
# webhook's payload type, a header it saw. ridtrace's sink writes them `_event`,
# `_outcome` (docs/log-schema.md); read from loguru's own JSON as they were, they made
# an Unlinked failure (exit 1) and a deprecated header no client sent.
_APP_OWN_FIELDS = _APP.replace(
    '    logger.info("handling")\n',
    '    logger.info("handling")\n'
    '    logger.info("webhook", event="response.unlinked", outcome="unlinked")\n'
    '    logger.info("header seen", event="deprecated_header", header="x-dynamo-request-id")\n',
)


def test_an_applications_event_field_is_no_lifecycle_event(tmp_path: Path) -> None:
    assert _APP_OWN_FIELDS != _APP
    plain, serialized = tmp_path / "api.jsonl", tmp_path / "app.json"
    subprocess.run([sys.executable, "-c", _APP_OWN_FIELDS, str(plain), str(serialized)],
                   check=True, timeout=60)
    plain_code, plain_doc = _report(plain)
    code, doc = _report(serialized)
    assert "unlinked" not in {kind for kind, _ in _kinds(plain_doc)}
    assert _kinds(doc) == _kinds(plain_doc)
    assert doc["summary"] == plain_doc["summary"] | {"files": doc["summary"]["files"]}
    assert code == plain_code


def test_the_same_log_in_a_walk_is_read_whatever_its_name(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    plain, serialized = tmp_path / "api.jsonl", logs / "app.out"
    subprocess.run([sys.executable, "-c", _APP, str(plain), str(serialized)], check=True,
                   timeout=60)
    _, doc = _report(logs)
    assert doc["summary"]["requests"] == 4 and not doc["summary"]["ignored_files"]


def test_a_one_line_serialized_log_in_a_walk_is_read_not_ignored_as_a_document(
    tmp_path: Path,
) -> None:
    line = {"text": "request.start\n", "record": {
        "message": "request.start", "time": {"repr": "2026-11-30 10:00:00+00:00"}}}
    (tmp_path / "app.json").write_text(json.dumps(line) + "\n")
    (tmp_path / "report.json").write_text(json.dumps({"summary": {}, "findings": []}))
    _, doc = _report(tmp_path)
    summary = doc["summary"]
    assert [Path(n["file"]).name for n in summary["ignored_files"]] == ["report.json"]
    assert (summary["lines"], summary["bad_lines"]) == (1, 0)


def test_both_sinks_writing_one_file_give_the_json_sinks_report(tmp_path: Path) -> None:
    # An application's serializing sink and ridtrace's writing to one stream (stdout, or
    # a file both are given): the loguru lines after ridtrace's first one were each a bad
    # line ("missing time"), and an event only there was lost.
    plain, both = tmp_path / "api.jsonl", tmp_path / "both.jsonl"
    subprocess.run([sys.executable, "-c", _APP, str(plain), str(tmp_path / "app.json")],
                   check=True, timeout=60)
    subprocess.run([sys.executable, "-c", _APP, str(both), str(both)], check=True, timeout=60)
    lines = [json.loads(line) for line in both.read_text().splitlines()]
    assert "schema" in lines[0] and any("record" in line for line in lines)
    plain_code, plain_doc = _report(plain)
    code, doc = _report(both)
    summary = doc["summary"]
    assert (summary["bad_lines"], summary["incomplete"]) == (0, False), summary
    assert summary["requests"] == plain_doc["summary"]["requests"] == 4
    # Two runs mint two sets of ids: the same findings, by kind.
    assert sorted(k for k, _ in _kinds(doc)) == sorted(k for k, _ in _kinds(plain_doc))
    assert code == plain_code


def test_serialized_lines_in_a_collectors_batches_give_the_json_sinks_report(
    tmp_path: Path,
) -> None:
    # The OpenTelemetry Collector's file exporter writes a batch of records a line; ridtrace
    # puts them back to back on it, and the loguru lines among them were read one object
    # a line: "6 JSON objects on one line, 6 of them missing time", every line bad.
    plain, serialized = tmp_path / "api.jsonl", tmp_path / "app.json"
    subprocess.run([sys.executable, "-c", _APP, str(plain), str(serialized)], check=True,
                   timeout=60)
    records = serialized.read_text().splitlines()
    batches = tmp_path / "otel-logs.json"
    batches.write_text("".join(
        json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": [
            {"timeUnixNano": "0", "body": {"stringValue": r}} for r in records[at:at + 4]]}]}]})
        + "\n" for at in range(0, len(records), 4)))
    plain_code, plain_doc = _report(plain)
    code, doc = _report(batches)
    summary = doc["summary"]
    assert (summary["bad_lines"], summary["incomplete"]) == (0, False), summary
    assert summary["requests"] == plain_doc["summary"]["requests"] == 4
    assert _kinds(doc) == _kinds(plain_doc) and code == plain_code
