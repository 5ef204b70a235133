"""Other loggers' lines a shipper parsed into an object are read as they were written.

GKE's agent parses every JSON line of a container into Cloud Logging's `jsonPayload`;
Vector's `parse_json` into `.message`. ridtrace's own records there were read, but a
structlog, python-json-logger or loguru `serialize=True` line beside them was left as
the envelope: a bad line each ("missing time"), and a clean read said incomplete, exit 3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request

_IDS = {"request_id": "r0", "trace_id": "0" * 31 + "1", "span_id": "0" * 15 + "1"}
_OTHERS = [
    {"event": "handler picked model", "level": "info", "timestamp": "2026-11-29T10:00:00.1Z",
     "logger": "app", **_IDS},
    {"timestamp": "2026-11-29T10:00:00.1Z", "levelname": "INFO", "name": "app",
     "message": "python-json-logger line", **_IDS},
]


def _records() -> list[dict[str, Any]]:
    ours = [json.loads(line) for n in range(20)
            for line in rt_request(f"{n + 1:016x}", f"r{n}", n, n + 0.5)]
    return ours[:1] + _OTHERS * 5 + ours[1:]


def _gcp(record: dict[str, Any]) -> dict[str, Any]:
    payload = {k: v for k, v in record.items() if k != "time"}  # the agent moves it
    return {"insertId": "x", "jsonPayload": payload, "resource": {"type": "k8s_container"},
            "timestamp": record.get("time") or record["timestamp"], "severity": "INFO"}


def _vector(record: dict[str, Any]) -> dict[str, Any]:
    return {"host": "h", "message": record, "source_type": "kubernetes_logs",
            "timestamp": record.get("time") or record["timestamp"]}


@pytest.mark.parametrize("envelope", [_gcp, _vector], ids=["cloud-logging", "vector"])
def test_another_loggers_parsed_line_is_no_bad_line(tmp_path: Path, envelope: Any) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    shipped = tmp_path / "shipped.json"
    shipped.write_text("".join(json.dumps(envelope(r)) + "\n" for r in _records()))
    _, want = analyze_json(str(plain))
    code, got = analyze_json(str(shipped))
    counts = ("lines", "bad_lines", "requests", "incomplete")
    assert {k: got["summary"][k] for k in counts} == {k: want["summary"][k] for k in counts}
    assert (got["summary"]["bad_lines"], got["summary"]["requests"], code) == (0, 20, 0)


def _hit(record: dict[str, Any]) -> dict[str, Any]:
    return {"_index": "logs", "_id": "x", "_score": 1.0, "_source": record}


def _search_answer(hits: list[dict[str, Any]], indent: int | None) -> str:
    return json.dumps({"took": 3, "timed_out": False, "hits": {
        "total": {"value": len(hits), "relation": "eq"}, "max_score": 1.0, "hits": hits}},
        indent=indent) + "\n"


# Whole files as users fetch them: `gcloud logging read --format=json` (an indented
# array of entries), elasticdump (a hit a line), and Elasticsearch's `_search` answer,
# on one line and `?pretty`.
_FETCHED = {
    "gcloud-read": lambda records: json.dumps([_gcp(r) for r in records], indent=2) + "\n",
    "elasticdump": lambda records: "".join(json.dumps(_hit(r)) + "\n" for r in records),
    "search-answer": lambda records: _search_answer([_hit(r) for r in records], None),
    "search-answer-pretty": lambda records: _search_answer([_hit(r) for r in records], 2),
}


@pytest.mark.parametrize("fetched", sorted(_FETCHED))
def test_another_loggers_line_in_a_fetched_document_is_no_bad_line(
    tmp_path: Path, fetched: str,
) -> None:
    # Each entry of a document is unwrapped on its own: one carrying no ridtrace or
    # Dynamo record showed no envelope, so the entry whole was a bad line ("missing
    # time"), or a python-json-logger hit's `message` text was taken for the line
    # shipped ("not JSON"), and a clean log exited 3.
    shipped = tmp_path / "fetched.json"
    shipped.write_text(_FETCHED[fetched](_records()))
    code, got = analyze_json(str(shipped))
    summary = got["summary"]
    assert (summary["bad_lines"], summary["requests"], code) == (0, 20, 0), (
        summary["bad_line_samples"])
