"""A container log whose first line is longer than 4 KiB is unwrapped under --follow.

The follower knew a file's wrapping (and its content, across rotations) by its first
whole lines, read from its first 4 KiB: a first line longer than that (a record with a
long prompt or user agent, in a Docker entry or a CRI line) gave no head, so the file's
lines were read as they were, every record a bad line, where the batch read unwrapped
them. Docker cuts a line into 16 KiB entries, so any long record did it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import rt

RECORD = rt("request.start", request_id="r1", trace_id="a" * 32, span_id="b" * 16,
            user_agent="x" * 40_000)


def _docker(record: str) -> str:
    parts = [record[i:i + 16384] for i in range(0, len(record), 16384)]
    return "".join(json.dumps({"log": part + ("\n" if n == len(parts) - 1 else ""),
                               "stream": "stdout", "time": "2026-11-29T10:00:00Z"},
                              separators=(",", ":")) + "\n"
                   for n, part in enumerate(parts))


def _cri(record: str) -> str:
    return f"2026-11-29T10:00:00.000000001Z stdout F {record}\n"


@pytest.mark.parametrize("wrap", [_docker, _cri], ids=["docker", "cri"])
def test_a_first_line_longer_than_the_head_is_unwrapped(tmp_path: Path, wrap: object) -> None:
    assert callable(wrap)
    log = tmp_path / "0.log"
    log.write_text(wrap(RECORD) + wrap(rt("hello", request_id="r2")))
    watch = Watch([str(log)], ReadStats(), from_start=True)
    try:
        watch.discover()
        chunks, _ = watch.read(1 << 24)
    finally:
        watch.close()
    lines = [text for chunk in chunks for text in chunk.data.tobytes().split(b"\n")[:-1]]
    assert [json.loads(text)["request_id"] for text in lines if text] == ["r1", "r2"]
