"""A compressed rotation with zeros after its last stream (a preallocated or
block-padded copy; xz's own stream padding): gzip, xz and bzip2 ignore them, and so
does the read. They were "corrupt gzip data" and the result incomplete (exit 3)."""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request

PACKERS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress,
}


@pytest.mark.parametrize("suffix", sorted(PACKERS))
def test_zeros_after_the_last_stream_are_no_damage(tmp_path: Path, suffix: str) -> None:
    text = ("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n").encode()
    log = tmp_path / f"frontend.jsonl.1{suffix}"
    log.write_bytes(PACKERS[suffix](text) + b"\x00" * 4096)
    code, doc = analyze_json(str(log))
    assert doc["summary"]["unreadable_files"] == []
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (2, 1)
    assert code == 0


def test_zeros_then_something_else_are_still_damage(tmp_path: Path) -> None:
    text = ("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n").encode()
    log = tmp_path / "frontend.jsonl.1.gz"
    log.write_bytes(gzip.compress(text) + b"\x00" * 64 + b"junk")
    code, doc = analyze_json(str(log))
    assert "corrupt gzip data" in doc["summary"]["unreadable_files"][0]["reason"]
    assert code == 3
