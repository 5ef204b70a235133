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
read. Two rotations between polls leave the log the first one made (or the lines the
first copy left) in ``app.jsonl.1``, never seen under the log's name: a part that comes
in a poll that finds its log rotated, and is neither a copy nor an earlier rotation, is
followed from its first line. Other parts (yesterday's rotation) are not inputs and
are not read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ridtrace.forensics.live.holes import past_hole
from ridtrace.forensics.live.identity import (
    Identities,
    decoded_head,
    plain_head,
    same_start,
)
from ridtrace.forensics.live.tail import FileTail
from ridtrace.forensics.reading.decoding import DecodedStream
from ridtrace.forensics.reading.rotation import rotation_place

DevIno = tuple[int, int]
Place = tuple[str, str]  # a log, whatever rotation names its parts (`rotation_place`)
OLD_HEADS = 4096
"""First lines of earlier rotations kept (at most 4 KiB each): every part a glob's
hundreds of logs have, with room for the rotations of a long follow."""


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


def rotated_name(path: Path, key: DevIno, link_target: Path | None = None) -> Path | None:
    """The name a rotation gave the file that was at `path` (``app.jsonl.1``), when
    `path` now holds another file or none and no input names the file any more; or the
    file the link `path` led to (`link_target`), once the link leads elsewhere.

    A named file (or a glob's match) renamed by logrotate's ``create`` is still written
    until the service reopens its log (``postrotate``): closed at once, those lines were
    lost.
    """
    with contextlib.suppress(OSError):
        st = path.stat()
        if (st.st_dev, st.st_ino) == key:
            return None
    for part in [*([link_target] if link_target else []), *parts_beside(path)]:
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
        return plain_head(fd, start)


@dataclass
class Copies:
    """Which parts beside named logs to follow: copies of what was read, and logs
    written since the last poll that a rotation already moved aside."""

    identities: Identities
    tails: Mapping[DevIno, object]  # the watch's followed files, by inode
    # Parts not followed, by their mtime and size then: not looked at again unless
    # written since (a copy being made may not hold a whole line yet).
    _others: dict[DevIno, tuple[int, int]] = field(default_factory=dict)
    # The first lines of parts that are no log of this follow (there when their log was
    # first listed: an earlier rotation, never read): known by them, not by inode, as
    # their compressed form made later is a new file, and a new log may get a removed
    # part's inode number.
    _old_heads: list[bytes] = field(default_factory=list)
    # The named logs the last poll listed, by the place of their parts: the path and the
    # file it held then. The new parts of no other log can be new logs.
    _named: dict[Place, tuple[Path, DevIno]] = field(default_factory=dict)
    # New parts seen in a poll that found their log rotated, too short yet to be told
    # from an earlier rotation (a compressed one being written): judged as of then.
    _pending: set[DevIno] = field(default_factory=set)
    _started: bool = False  # a poll was made: what is there at the first is no copy

    def follows(self, path: Path, key: DevIno, st: os.stat_result) -> bool:
        """Whether to follow the part at `path`: a copy of lines already read (only its
        unread lines are read), or a log written since the last poll and rotated aside
        before it (read from its first line).

        Two rotations between polls (``app.jsonl`` → ``.1`` → ``.2`` while ``app.jsonl``
        is created twice, or copied and truncated twice) leave what was written between
        them in ``app.jsonl.1``: never under the followed name at a poll and no copy of
        anything read, its lines were lost without a word for a named log (a followed
        directory read them).
        """
        if self._others.get(key) == (st.st_mtime_ns, st.st_size):
            return False
        try:
            head = content_head(path)
        except OSError:
            return False
        place = rotation_place(str(path))[0]
        if head and self._started and self.identities.copy_of(head, path) is not None:
            return True
        if place in self._named and (key in self._pending or self._rotated(place)):
            if head and not self._is_old(head):
                return True
            self._pending.add(key)
        elif head:
            # There before its log was listed, or come while its log was not rotated:
            # none of this follow's lines are in it.
            self._old_heads.append(head)
            del self._old_heads[:-OLD_HEADS]
        self._others[key] = (st.st_mtime_ns, st.st_size)
        return False

    def _is_old(self, head: bytes) -> bool:
        """Whether `head` is an earlier rotation's (``delaycompress`` compressing
        yesterday's ``app.jsonl.1`` to a new file, ``app.jsonl.2.gz``), or is yet too
        short to tell (a compressed copy being written)."""
        return any(same_start(head, old) for old in self._old_heads)

    def _rotated(self, place: Place) -> bool:
        """Whether the named log whose parts are at `place` was rotated since the last
        poll: its name holds another file (rename and create) or none yet, or its file
        was truncated (copy and truncate), then maybe written past its old size."""
        path, key = self._named[place]
        try:
            st = path.stat()
        except OSError:
            return True
        tail = self.tails.get(key)
        if (st.st_dev, st.st_ino) != key:
            return True
        if not isinstance(tail, FileTail) or tail.gzip:
            return False
        if st.st_size < tail.offset:
            return True
        ident = tail.identity
        if ident is None or tail.offset == 0:
            return False
        # The file's own first lines, from the tail's descriptor: by the name, a log
        # removed since its stat raised out of the poll, one replaced was another file.
        now = tail.head_now()
        return not same_start(ident.head, now)

    def forget(self, seen: set[DevIno], named: set[Path]) -> None:
        """Drop what is known of parts no longer there (their inodes may be reused), and
        note the named logs this poll listed the parts of (`named`)."""
        self._others = {key: mtime for key, mtime in self._others.items() if key in seen}
        self._pending &= seen
        self._started = True
        # A log between its rename and its creation (no file under its name) keeps the
        # file it held: the poll that finds it again finds it rotated.
        was, self._named = self._named, {}
        for place, (path, key) in was.items():
            if not os.path.lexists(path):
                self._named[place] = (path, key)
        for path in named:
            with contextlib.suppress(OSError):
                st = path.stat()
                self._named[rotation_place(str(path))[0]] = (path, (st.st_dev, st.st_ino))


def compressed_copy(path: Path, head: bytes) -> Path | None:
    """A compressed part beside `path` whose content starts as the removed log whose
    first lines were `head` did: logrotate without ``delaycompress`` renames the log to
    ``app.jsonl.1``, compresses it to ``app.jsonl.1.gz`` and removes ``app.jsonl.1``,
    all between two polls, and the lines read from it are in that copy."""
    if not head:
        return None
    for part in sorted(parts_beside(path)):
        with contextlib.suppress(OSError, EOFError, ValueError):
            with open(part, "rb") as raw:
                if DecodedStream(raw).compression is None:
                    continue
            copied = content_head(part)
            if copied and same_start(copied, head):
                return part
    return None
