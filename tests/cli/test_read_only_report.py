"""`-o FILE` on a file its user may not write is refused, as the shell's `>` refuses it.

The report is written to a temporary file beside FILE that then replaces it, and the
directory's permission is all a rename asks: a report made read-only (`chmod a-w`, kept
as an incident's evidence) was replaced without a word, exit 0, and the new one even
took its read-only mode.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.forensics.helpers import rt_request
from tests.support.unprivileged import unprivileged_prefix

_AS_USER = unprivileged_prefix("a write")


@pytest.mark.parametrize("command", [
    ["analyze", "LOG", "--format", "json"], ["audit", "LOG"], ["trace", "r1", "LOG"],
    ["export", "jaeger", "LOG"],
], ids=["analyze", "audit", "trace", "export"])
def test_a_read_only_report_is_not_replaced(tmp_path: Path, command: list[str]) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    kept = tmp_path / "report.out"
    kept.write_text("the incident's report\n")
    kept.chmod(0o444)
    args = [str(log) if arg == "LOG" else arg for arg in command]
    done = subprocess.run(
        [*_AS_USER, sys.executable, "-m", "ridtrace", *args, "-o", str(kept), "-q"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"cannot write {kept}: Permission denied" in done.stderr
    assert kept.read_text() == "the incident's report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frontend.jsonl", "report.out"]


def test_a_writable_report_is_still_replaced(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    report = tmp_path / "report.json"
    report.write_text("old\n")
    done = subprocess.run(
        [*_AS_USER, sys.executable, "-m", "ridtrace", "analyze", str(log), "--format", "json",
         "-o", str(report), "-q"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert report.read_text().startswith("{")
