"""A log's content, known by its first lines across the names rotations give it.

A copy-and-truncate rotation's ``app.jsonl.1`` (or its gzip) starts with the lines the
follower already read from ``app.jsonl``: recognised by its first bytes and its stem, it
continues after them instead of reading them again (`ridtrace.forensics.live.tail`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ridtrace.forensics.reading.decoding import BOM
from ridtrace.forensics.reading.lines import MAX_LINE_BYTES
from ridtrace.forensics.reading.rotation import rotation_place

__all__ = ["HEAD_BYTES", "HEAD_READ", "Identities", "Identity", "decoded_head", "first_lines",
           "plain_head", "read_past_nuls"]

# How many first bytes (whole lines) identify a file's content.
HEAD_BYTES = 4096
# How many first bytes are read to find them: a first line longer than `HEAD_BYTES` (a
# container runtime's entry of a long record) is the head itself. Read to `HEAD_BYTES`
# only, it gave no head, and a container log's lines were never unwrapped.
HEAD_READ = 64 << 10


@dataclass
class Identity:
    """One content stream: its first lines, and how many of its lines were read."""

    head: bytes
    path: Path
    lines: int = 0
    # The stream's name in the per-file counters: its first file's name (``#2`` on for
    # later streams under that name), whatever names its lines are read under since.
    label: str = ""
    # The latest file found to hold a copy of this content (copy-and-truncate's
    # ``app.jsonl.1``): where the lines read from the original are once it is truncated.
    copy: Path | None = None


def _same_log(a: Path, b: Path) -> bool:
    """Whether `a` and `b` may name parts of one log: the same directory and stem
    (``app.jsonl``, ``app.jsonl.1``, ``app.jsonl.2.gz``, ``app.1.jsonl``), or the same live
    log by the batch read's rotation names. Those know logrotate's ``dateext`` with its
    ``extension`` option, ``app-20261203.log`` for ``app.log``: by its stem alone that
    copy was another log, its unread lines lost or its read ones read again. In another
    directory, a rotated part of a log of the same live name is one too: logrotate's
    ``olddir`` puts ``app.jsonl``'s copy in ``old/app.jsonl.1`` (two logs of one name,
    ``a/app.jsonl`` and ``b/app.jsonl``, are not parts of each other)."""
    if a.parent == b.parent and a.name.split(".", 1)[0] == b.name.split(".", 1)[0]:
        return True
    place_a, place_b = rotation_place(str(a))[0], rotation_place(str(b))[0]
    return place_a == place_b or (place_a[1] == place_b[1] and a.name != b.name)


class Identities:
    """The content streams seen so far (a bounded list: the most recent ones)."""

    def __init__(self, keep: int = 256) -> None:
        self._known: list[Identity] = []
        self._keep = keep
        self._labels: dict[str, int] = {}

    def claim(self, head: bytes, path: Path) -> Identity:
        """The stream `path` is a copy of, or a new one.

        A copy is named after its original (same directory and stem: ``app.jsonl.1``,
        ``app.jsonl.2.gz``) and starts with the same lines. Both are required: two
        workers' logs may open with the same banner line.
        """
        best = self.copy_of(head, path)
        if best is not None:
            best.copy = path
            return best
        taken = self._labels[str(path)] = self._labels.get(str(path), 0) + 1
        label = str(path) if taken == 1 else f"{path}#{taken}"
        fresh = Identity(head=head, path=path, label=label)
        self._known.append(fresh)
        del self._known[: -self._keep]
        return fresh

    def copy_of(self, head: bytes, path: Path) -> Identity | None:
        """The stream a file at `path` starting with `head` is a copy of, if any."""
        best: Identity | None = None
        for known in self._known:
            if known.path == path or not _same_log(known.path, path):
                continue
            if same_start(head, known.head) and (best is None or len(known.head) > len(best.head)):
                best = known
        return best


def plain_head(fd: int, start: int) -> bytes:
    """The first whole lines of a plain file from `start` (`first_lines`), reading on
    past `HEAD_READ` to the first newline when the first line is longer: a collector's
    batch of hundreds of records is one line of more. Read to `HEAD_READ` only, such a
    file gave no head: its lines were never unwrapped, one bad line "missing time"."""
    data = os.pread(fd, HEAD_READ, start)
    return first_lines(_to_first_newline(
        data, lambda size, have: os.pread(fd, size, start + have)))


def _to_first_newline(data: bytes, read: Callable[[int, int], bytes]) -> bytes:
    """`data` read on, by doubling it (`read(size, bytes_had)`), until it holds a newline,
    ends, or is as long as a line may be (`MAX_LINE_BYTES`)."""
    while b"\n" not in data and len(data) < MAX_LINE_BYTES:
        more = read(len(data), len(data))
        if not more:
            break
        data += more
    return data


def first_lines(data: bytes) -> bytes:
    """The whole lines among the first `HEAD_BYTES` of `data` (at least one line)."""
    head = data[:HEAD_BYTES]
    cut = head.rfind(b"\n")
    if cut >= 0:
        return head[: cut + 1]
    end = data.find(b"\n")
    return data[: end + 1] if end >= 0 else b""


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes | None: ...


def read_past_nuls(decoded: _Readable, size: int) -> bytes:
    """Up to `size` bytes of a decompressed log from its first byte that is not NUL.

    A copy-and-truncate under a writer that does not append leaves a hole of NULs at the
    log's start, and every later copy holds it (`holes.past_hole` skips it in a plain
    file). Taken with the NULs, a compressed copy's head was no copy of the log read (its
    lines read twice), and a hole longer than what is looked at left it nothing to be
    judged by: never read, the lines only it held were lost.
    """
    data = b""
    while len(data) < size:
        block = decoded.read(size)
        if not block:
            break
        data = (data + block) if data else block.lstrip(b"\0")
    return data[:size]


def decoded_head(decoded: _Readable) -> bytes:
    """The first whole lines of a decompressed log, past the NULs at its start.

    With the byte-order mark the decoder took off (`DecodedStream.had_bom`), as a plain
    file's head is read with it: without, the compressed copy of a log that starts with
    one was no copy of it, and its lines were read again (bad lines twice, exit 3).
    """
    data = _to_first_newline(read_past_nuls(decoded, HEAD_READ),
                             lambda size, _: decoded.read(size) or b"")
    if getattr(decoded, "had_bom", False):
        data = BOM + data
    return first_lines(data)


def same_start(head: bytes, other: bytes) -> bool:
    """Whether two files' first lines agree as far as both go: one content, one of
    them perhaps read (or written) less far than the other."""
    return head.startswith(other) or other.startswith(head)
