"""Copies that lines read from a removed or truncated log are cited under, kept track of.

logrotate's ``compress`` renames the log to ``app.jsonl.1``, compresses it to
``app.jsonl.1.gz`` and removes ``app.jsonl.1``: the lines read from it are cited under
the compressed copy (`parts.compressed_copy`), which no tail follows. The next rotation
renames that copy to ``app.jsonl.2.gz`` and makes a new ``app.jsonl.1.gz``, or (``rotate
1``) removes it first: cited under the old name, a finding printed after it pointed at
another request's line in another file, and the summary's bad-line samples named
``.1.gz`` for lines of ``.21.gz``. A copy-and-truncate's plain copy (``app.jsonl.1``)
is kept track of too: compressed after a poll saw it (a compress of a big copy takes
seconds), its lines were cited as ``app.jsonl.1 (removed)`` beside the ``.1.gz`` that
holds them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ridtrace.forensics.live.file_notes import _stamp
from ridtrace.forensics.live.identity import same_start
from ridtrace.forensics.live.parts import compressed_copy, content_head, rotated_name
from ridtrace.forensics.reading.inputs import display_name

DevIno = tuple[int, int]

MAX_CITED_COPIES = 256
"""Copies kept track of at most, the latest: logrotate's ``rotate`` keeps far fewer."""


@dataclass
class _Copy:
    path: Path
    stamp: tuple[int, int]  # mtime (ns) and size when last seen
    head: bytes  # its first lines, decompressed: another file under its inode number differs


@dataclass
class CitedCopies:
    """The compressed copies lines are cited under, by inode, each at its last known path.

    A tail that follows one (its unread lines) leaves its renames to `moves`."""

    _copies: dict[DevIno, _Copy] = field(default_factory=dict)
    # What `moves` named each copy it found gone (``NAME (removed)``, or the compressed
    # copy that holds its lines), until a tail still reading it takes that name
    # (`take_gone`): that tail must not rename the citations again.
    _gone: dict[DevIno, str] = field(default_factory=dict)

    def __contains__(self, key: object) -> bool:
        return key in self._copies

    def add(self, copy: Path) -> None:
        """Keep track of `copy`, under whose name lines are cited from now on."""
        try:
            st = copy.stat()
            head = content_head(copy)
        except OSError:
            return  # gone already: `moves` could say nothing of it
        key = (st.st_dev, st.st_ino)
        self._copies.pop(key, None)
        self._copies[key] = _Copy(copy, _stamp(st), head)
        _keep_latest(self._copies)

    def moves(self) -> list[tuple[str, str]]:
        """(old name, new name) of each copy a rotation renamed or removed since the last
        call, oldest first: a removed one's lines are cited as ``NAME (removed)``, as a
        followed file's are once no name leads to it."""
        moved: list[tuple[str, str]] = []
        for key, copy in list(self._copies.items()):
            old = display_name(str(copy.path))
            if self._still_at(key, copy):
                continue
            now = rotated_name(copy.path, key)
            if now is None or not _holds(now, copy.head):  # its number given to a new file
                del self._copies[key]
                # A plain copy (copy-and-truncate's ``.1``) compressed since: gzip wrote
                # ``.1.gz`` beside it, a file of its own, and removed it.
                packed = compressed_copy(copy.path, copy.head)
                if packed is not None:
                    self.add(packed)
                now_named = (display_name(str(packed)) if packed is not None
                             else f"{old} (removed)")
                self._gone[key] = now_named
                _keep_latest(self._gone)
                moved.append((old, now_named))
                continue
            moved.append((old, display_name(str(now))))
            copy.path = now
        return moved

    def take_gone(self, key: DevIno) -> str | None:
        """The name `moves` cited a copy's lines under when it found it gone (None if it
        did not): a tail of that file takes it, without renaming the citations again."""
        return self._gone.pop(key, None)

    @staticmethod
    def _still_at(key: DevIno, copy: _Copy) -> bool:
        """Whether `copy` is still at its path: its inode there, and (once written since)
        its content (ext4 gives a removed file's inode number to the next file made: the
        next ``.1.gz`` of a ``rotate 1``, or the new log beside it)."""
        try:
            st = copy.path.stat()
        except OSError:
            return False
        if (st.st_dev, st.st_ino) != key:
            return False
        if _stamp(st) == copy.stamp:
            return True
        if _holds(copy.path, copy.head):
            copy.stamp = _stamp(st)
            return True
        return False


def _keep_latest(kept: dict[DevIno, Any]) -> None:
    """Drop the oldest entries of `kept` beyond `MAX_CITED_COPIES`."""
    while len(kept) > MAX_CITED_COPIES:
        del kept[next(iter(kept))]


def _holds(path: Path, head: bytes) -> bool:
    """Whether `path` starts as a copy whose first lines were `head` did."""
    now = b""
    with contextlib.suppress(OSError):
        now = content_head(path)
    if head and not now:  # an empty file under its number: a new log, not the copy
        return False
    return same_start(now, head)
