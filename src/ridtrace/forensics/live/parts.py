"""The parts of a log named on the command line, found beside it.

A followed directory's walk finds every file a rotation makes; a log named as a file,
or matched by ``logs/*.jsonl``, has only its own name, so the files beside it that are
parts of the same log (`rotation_place`) are looked at for two things:

- the name a rotation gave the followed file (``create``: renamed to ``app.jsonl.1``),
  under which its writer goes on until it reopens its log (`rotated_name`);
- the copy a copy-and-truncate rotation made of it (`Copies`).

logrotate's ``copytruncate`` copies ``app.jsonl`` to ``app.jsonl.1`` (or compresses the
copy to ``app.jsonl.1.gz``) and then truncates the log. The lines written between the
follower's last read and the copy are in the copy only: for a named log they were lost
without a word, the summary complete. A part beside it that starts with content the
follower read (`Identities.copy_of`) is followed, and only its lines not read yet are
read. Other parts (yesterday's rotation) are not inputs and are not read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ridtrace.forensics.live.holes import past_hole
from ridtrace.forensics.live.identity import HEAD_READ, Identities, decoded_head, first_lines
from ridtrace.forensics.reading.decoding import DecodedStream
from ridtrace.forensics.reading.rotation import rotation_place

DevIno = tuple[int, int]


def parts_beside(path: Path) -> Iterator[Path]:
    """The other files in `path`'s directory that are parts of its log
    (``app.jsonl.1``, ``app.jsonl.2.gz``, ``app.jsonl-20261202``, ``app.1.jsonl``)."""
    log = rotation_place(str(path))[0]
    with contextlib.suppress(OSError), os.scandir(path.parent) as entries:
        for entry in entries:
            part = path.parent / entry.name  # spelled as `path` is
            if part != path and rotation_place(str(part))[0] == log:
                yield part


def parts_of_named(named: list[Path]) -> Iterator[Path]:
    """The files beside the `named` logs that are parts of one of them, other than the
    named ones: each directory listed once (a glob over hundreds of logs in one
    directory listed it once per log, a quarter of a core while idle)."""
    by_directory: dict[Path, set[Path]] = {}
    for path in named:
        by_directory.setdefault(path.parent, set()).add(path)
    for directory, paths in by_directory.items():
        logs = {rotation_place(str(path))[0] for path in paths}
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                part = directory / entry.name  # spelled as the named paths are
                if part not in paths and rotation_place(str(part))[0] in logs:
                    yield part


def rotated_name(path: Path, key: DevIno) -> Path | None:
    """The name a rotation gave the file that was at `path` (``app.jsonl.1``), when
    `path` now holds another file or none and no input names the file any more.

    A named file (or a glob's match) renamed by logrotate's ``create`` is still written
    until the service reopens its log (``postrotate``): closed at once, those lines were
    lost.
    """
    with contextlib.suppress(OSError):
        st = path.stat()
        if (st.st_dev, st.st_ino) == key:
            return None
    for part in parts_beside(path):
        with contextlib.suppress(OSError):
            st = part.stat()
            if (st.st_dev, st.st_ino) == key:
                return part
    return None


def content_head(path: Path) -> bytes:
    """The first whole lines of what `path` holds, decompressed (b"" until it has one)."""
    with open(path, "rb") as raw:
        decoded = DecodedStream(raw)
        if decoded.compression is not None:
            return decoded_head(decoded)
        fd = raw.fileno()
        start = past_hole(fd, 0, os.fstat(fd).st_size)
        return first_lines(os.pread(fd, HEAD_READ, start))


@dataclass
class Copies:
    """Which parts beside named logs are copies of what was read."""

    identities: Identities
    # Parts that are no copy, by their mtime and size then: not looked at again unless
    # written since (a copy being made may not hold a whole line yet).
    _others: dict[DevIno, tuple[int, int]] = field(default_factory=dict)

    def is_copy(self, path: Path, key: DevIno, st: os.stat_result) -> bool:
        """Whether the part at `path` starts with the lines of a log already read."""
        if self._others.get(key) == (st.st_mtime_ns, st.st_size):
            return False
        try:
            head = content_head(path)
        except OSError:
            return False
        if head and self.identities.copy_of(head, path) is not None:
            return True
        self._others[key] = (st.st_mtime_ns, st.st_size)
        return False

    def forget(self, seen: set[DevIno]) -> None:
        """Drop what is known of parts no longer there (their inodes may be reused)."""
        self._others = {key: mtime for key, mtime in self._others.items() if key in seen}
