"""A small compressed log torn before its first line is read and named under --follow.

The follower looked at a walked file again every poll until it held a whole line: a
rotation under 64 KiB whose gzip was corrupt (or held only the magic) never did, so it
was neither read nor named, and the summary said complete (exit 0), where the batch
read lists it as unreadable (exit 3).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary, rt_request


def _corrupt() -> bytes:
    torn = bytearray(gzip.compress(b'{"time": "2026-11-29T10:00:00Z"}\n'))
    torn[2] = 7  # an unknown compression method
    return bytes(torn)


@pytest.mark.parametrize("content", [_corrupt(), b"\x1f\x8b"], ids=["corrupt", "magic-only"])
def test_a_small_gzip_torn_before_its_first_line_is_named(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    (tmp_path / "frontend.jsonl.1.gz").write_bytes(content)
    code, batch = analyze_json(str(tmp_path))
    live = followed_summary(tmp_path)
    named = {note["file"] for note in live["unreadable_files"]}
    assert any(name.endswith("frontend.jsonl.1.gz") for name in named), live
    assert live["incomplete"] and batch["summary"]["incomplete"] and code == 3
