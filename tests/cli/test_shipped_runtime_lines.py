"""A container runtime's lines as a shipper read them off the node's files without its
CRI parsing, prefix and all: Filebeat's filestream input without its container parser,
Vector's file source on /var/log/pods, Fluent Bit's tail input without a parser, Loki's
promtail without its cri stage (logcli's jsonl and text output). Every line was a bad one
("missing time"), the report "none of its lines is a log record" with no request read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import PlainReport
from tests.cli.helpers import analyze_json
from tests.support.extras import ENGINES

_STAMP = "2026-11-29T10:00:00.000000001Z"


def _cri(line: bytes) -> str:
    return f"{_STAMP} stdout F {line.decode()}"


def _entries(**around: Any) -> Callable[[list[bytes]], bytes]:
    """A shipper's JSON object a line, the runtime's line in the one field left empty."""
    field = next(k for k, v in around.items() if v is None)

    def wrap(lines: list[bytes]) -> bytes:
        return b"".join(json.dumps({**around, field: _cri(x)}).encode() + b"\n" for x in lines)
    return wrap


def _logcli_text(lines: list[bytes]) -> bytes:
    return b"".join(f'2026-11-29T11:00:00+01:00 {{app="frontend"}} {_cri(x)}\n'.encode()
                    for x in lines)


SHAPES: dict[str, Callable[[list[bytes]], bytes]] = {
    "filebeat": _entries(**{"@timestamp": "2026-11-29T10:00:00.000Z"},
                         log={"offset": 0, "file": {"path": "/var/log/containers/fe.log"}},
                         message=None, input={"type": "filestream"}),
    "vector": _entries(file="/var/log/pods/x/fe/0.log", host="node-3", message=None,
                       source_type="file", timestamp="2026-11-29T10:00:00Z"),
    "fluent-bit": _entries(date=1796205600.25, log=None),
    "logcli-jsonl": _entries(labels={"app": "frontend"}, line=None,
                             timestamp="2026-11-29T10:00:00Z"),
    "logcli-text": _logcli_text,
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_runtime_line_inside_a_shippers_entry_is_read(
    plain: Path, plain_report: PlainReport, tmp_path: Path, shape: str, engine: str
) -> None:
    shipped = tmp_path / shape
    shipped.mkdir()
    for path in plain.iterdir():
        (shipped / path.name).write_bytes(SHAPES[shape](path.read_bytes().splitlines()))
    want_code, want = plain_report
    code, got = analyze_json(str(shipped), "--engine", engine)
    assert got["summary"]["bad_line_samples"] == []
    assert [(f["kind"], f["span_id"], f["detail"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"], f["detail"]) for f in want["findings"]]
    assert got["summary"]["requests"] == want["summary"]["requests"]
    assert code == want_code == 1
