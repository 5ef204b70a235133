"""Docker's ``local`` log driver keeps a container's lines in a binary file of protobuf
entries: the report names the driver and how to get the lines, not bad lines."""

from __future__ import annotations

import struct
from pathlib import Path

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary, rt_request


def _varint(n: int) -> bytes:
    out = b""
    while n > 0x7F:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def _local_driver_file(path: Path) -> None:
    """moby's LogEntry (source, time_nano, line), each framed by its size before and after."""
    entries = []
    for n, line in enumerate(rt_request("a" * 16, "r1", 0, 1)):
        body = line.encode()
        entry = (b"\x0a\x06stdout" + b"\x10" + _varint(1796205600000000000 + n)
                 + b"\x1a" + _varint(len(body)) + body)
        entries.append(struct.pack(">I", len(entry)) + entry + struct.pack(">I", len(entry)))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(entries))


REASON = "Docker's local log driver"


def test_a_local_driver_file_is_unreadable_with_the_way_to_read_it(tmp_path: Path) -> None:
    # Its bytes split at newlines were "not JSON" and "binary data" bad lines: nothing
    # said which system wrote them, nor how to get its lines out.
    log = tmp_path / "containers" / "c0ffee" / "local-logs" / "container.log"
    _local_driver_file(log)
    for path in (log, tmp_path / "containers"):
        code, doc = analyze_json(str(path))
        summary = doc["summary"]
        assert summary["bad_lines"] == 0 and summary["ignored_files"] == []
        [note] = summary["unreadable_files"]
        assert note["file"] == str(log)
        assert REASON in note["reason"] and "docker logs" in note["reason"]
        assert summary["incomplete"] is True and code == 3


def test_a_followed_local_driver_file_is_unreadable_with_the_way_to_read_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "containers" / "c0ffee" / "local-logs" / "container.log"
    _local_driver_file(log)
    summary = followed_summary(tmp_path)
    assert summary["bad_lines"] == 0
    [note] = summary["unreadable_files"]
    assert note["file"] == str(log) and REASON in note["reason"]
    assert summary["incomplete"] is True
