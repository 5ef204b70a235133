"""A Dynamo line with a ``header`` field is the deprecation WARN only when it says so.

Rust services log ``tracing::warn!(header = %name, "…")`` on many warnings; read as
Dynamo's deprecation WARN, any of them made its request one that sent a deprecated
header, named after whatever header the warning was about.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_spanless_evidence import _HEAD, _request, _run, _write


@pytest.mark.parametrize("command", ["analyze", "audit"])
def test_a_header_field_on_another_dynamo_warning_is_no_deprecated_header(
    tmp_path: Path, command: str,
) -> None:
    # Rust services log `tracing::warn!(header = %name, "Skipping invalid header value")`:
    # any Dynamo line with a `header` field was read as the deprecation WARN, so a
    # request was reported as sending a deprecated "content-type" header, and the audit
    # counted it among the headers to retire.
    head = {**_HEAD, "request_id": "a", "span_id": "a1b2c3d4e5f60718"}
    other = {"time": "2026-10-02T14:03:11.200000Z", **head, "level": "WARN",
             "message": "Skipping invalid header value", "header": "content-type"}
    lines = _request("a", "a1b2c3d4e5f60718", 1)
    log = _write(tmp_path / "frontend.jsonl", [lines[0], other, lines[1]])
    code, doc = _run(command, str(log))
    assert code == 0
    if command == "analyze":
        assert doc["findings"] == []
    else:
        assert doc["rows"] == []
