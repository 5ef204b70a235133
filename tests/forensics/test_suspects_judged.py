"""A file of bad lines past `lean.SUSPECTS_JUDGED` is read in bounded memory, counted whole.

The lean pass listed every line that is no log record, to judge each in Python: ~70 B
a line, so a 10 KB gzip of "1" lines (5M lines) took 560 MB and a 4 GiB one 12 GB. The
first lines are judged; the rest are counted as bad lines, and the file is named, as a
record among them would go unread.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading import lean, small_files
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request

JUDGED = 10


def test_bad_lines_past_the_judged_are_counted_and_the_file_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lean, "SUSPECTS_JUDGED", JUDGED)
    # Read alone, as a big file is: a batch of small files (the Dask engine's whole
    # files too) lists its suspects whole, bounded by the batch's 16 MiB.
    monkeypatch.setattr(small_files, "SMALL_FILE_BYTES", 0)
    lines = [*rt_request("a" * 16, "r1", 0, 1), *["not json"] * 25, *rt_request("b" * 16, "r2", 2, 3)]
    (tmp_path / "app.jsonl").write_text("\n".join(lines) + "\n")
    code, doc = analyze_json(str(tmp_path))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (29, 25, 2)
    assert code == 3 and summary["incomplete"]
    [note] = summary["unreadable_files"]
    assert note["reason"].startswith(f"15 more lines that are no log record were not judged, "
                                     f"past the first {JUDGED:,} of this file")
    assert len(summary["bad_line_samples"]) == JUDGED  # the ones judged, with their lines
