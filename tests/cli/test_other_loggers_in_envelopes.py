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
