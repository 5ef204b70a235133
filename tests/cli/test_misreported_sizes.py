"""A named file that holds more than its size says is read whole.

/proc and /sys report a size of 0 (or a page) for files full of text, as some FUSE file
systems do. DuckDB read such a file as that size while the line map counted its lines:
`lines` went up, no line was parsed, none was bad, and beside a real log the report said
it read everything, exit 0.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request

_STATUS = Path("/proc/self/status")


@pytest.mark.skipif(not _STATUS.exists() or os.stat(_STATUS).st_size != 0,
                    reason="needs a procfs file that reports size 0")
def test_a_file_larger_than_its_reported_size_has_its_lines_judged(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    code, doc = analyze_json(str(_STATUS), str(log))
    summary = doc["summary"]
    assert code == 3, summary
    assert summary["bad_lines"] == summary["lines"] - 2 > 0
    assert summary["bad_line_samples"][0] == {
        "file": str(_STATUS), "line": 1, "reason": "not JSON"}
    assert summary["requests"] == 1
