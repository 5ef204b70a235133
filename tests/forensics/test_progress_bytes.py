"""The read's progress counts the bytes the progress bar's total counts: file sizes."""

from __future__ import annotations

import gzip
from pathlib import Path

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from tests.forensics.helpers import rt_request


def _progress(path: Path) -> tuple[int, int]:
    counted: list[int] = []
    sources = expand_inputs([str(path)])
    read_partials(sources, on_bytes=counted.append)
    return sum(counted), sum(s.size for s in sources)


def test_a_gzip_counts_its_compressed_bytes(tmp_path: Path) -> None:
    lines = [line for i in range(2000)
             for line in rt_request(f"{i + 1:016x}", f"r{i}", i * 0.001, i * 0.001 + 0.5)]
    path = tmp_path / "frontend.jsonl.1.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    counted, total = _progress(path)
    # Counted decompressed, they ran the bar far past 100 %.
    assert counted == total == path.stat().st_size


def test_a_plain_file_counts_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "frontend.jsonl"
    path.write_text("\n".join(rt_request("00000000000000a1", "r1", 0, 1)) + "\n")
    counted, total = _progress(path)
    assert counted == total == path.stat().st_size
