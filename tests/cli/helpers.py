"""Helpers shared by the CLI tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.reading import files, small_files
from tests.forensics.helpers import rt_request


def analyze_json(*args: str) -> tuple[int, dict[str, Any]]:
    """``ridtrace analyze ARGS --format json -q``: its exit code and its report."""
    result = CliRunner().invoke(main, ["analyze", *args, "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


def rotated_app_logs(logs: Path) -> None:
    """A log folder mid-rotation: two callers holding ``r1`` at once in ``app.jsonl.1``,
    later requests in ``app.jsonl``."""
    logs.mkdir()
    (logs / "app.jsonl.1").write_text("\n".join(
        [*rt_request("a" * 16, "r1", 0, 2), *rt_request("b" * 16, "r1", 1, 3)]) + "\n")
    (logs / "app.jsonl").write_text("\n".join(
        line for i in range(3) for line in rt_request(f"{i + 1:016x}", f"r{i + 2}", 5 + i, 6 + i)
    ) + "\n")


def analyzed_with_parse_hook(
    logs: Path, monkeypatch: pytest.MonkeyPatch, before_parse: Callable[[Path], None],
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """`analyze_json` of `rotated_app_logs(logs)`, each file read alone and in place, with
    `before_parse(path)` run as each file is handed to DuckDB (which opens it again by its
    name): exit code, report, and the unreadable files' reasons by file name."""
    rotated_app_logs(logs)
    monkeypatch.setattr(small_files, "SMALL_FILE_BYTES", 0)
    real_parse = files.parse

    def hooked_parse(con: Any, path: Path, *args: Any, **kwargs: Any) -> Any:
        before_parse(path)
        return real_parse(con, path, *args, **kwargs)

    monkeypatch.setattr(files, "parse", hooked_parse)
    code, doc = analyze_json(str(logs))
    notes = {Path(n["file"]).name: n["reason"] for n in doc["summary"]["unreadable_files"]}
    return code, doc, notes

def wrap_each_file(plain: Path, into: Path, wrap: Callable[[list[bytes]], bytes]) -> Path:
    """`into`, holding each file of `plain` with its lines passed through `wrap` (as a
    shipper or runtime would have written them)."""
    into.mkdir()
    for path in plain.iterdir():
        (into / path.name).write_bytes(wrap(path.read_bytes().splitlines()))
    return into
