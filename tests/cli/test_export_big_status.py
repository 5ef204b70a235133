"""`export jaeger` on a status of thousands of digits: valid JSON, so no bad line, and
no crash (it raised `int()`'s 4,300-digit limit: exit 4, "internal error")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request

_DIGITS = "9" * 4301


@pytest.mark.parametrize("status", [_DIGITS, f'"{_DIGITS}"'], ids=["number", "string"])
def test_a_status_of_thousands_of_digits_is_exported_as_logged(
    tmp_path: Path, status: str
) -> None:
    log = tmp_path / "frontend.jsonl"
    start, end = rt_request("a1" * 8, "big", 0.0, 0.5)
    record = json.loads(end)
    record["status"] = "STATUS"  # written as JSON text: Python's int() refuses the number
    line = json.dumps(record).replace('"STATUS"', status)
    log.write_text(f"{start}\n{line}\n")
    out = tmp_path / "traces.json"
    got = CliRunner().invoke(main, ["export", "jaeger", str(log), "-o", str(out)])
    assert got.exit_code == 0, got.output
    (span,) = json.loads(out.read_text())["data"][0]["spans"]
    tags = {tag["key"]: tag for tag in span["tags"]}
    assert tags["status"]["value"] == "9" * 4301
    assert "error" not in tags  # no HTTP 5xx, and its outcome is ok
