"""Compressed copies that lines read from a removed log are cited under, kept track of.

logrotate's ``compress`` renames the log to ``app.jsonl.1``, compresses it to
``app.jsonl.1.gz`` and removes ``app.jsonl.1``: the lines read from it are cited under
the compressed copy (`parts.compressed_copy`), which no tail follows. The next rotation
renames that copy to ``app.jsonl.2.gz`` and makes a new ``app.jsonl.1.gz``: cited under
the old name, a finding printed after it pointed at another request's line in another
file, and the summary's bad-line samples named ``.1.gz`` for lines of ``.21.gz``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ridtrace.forensics.live.parts import rotated_name
from ridtrace.forensics.reading.inputs import display_name

DevIno = tuple[int, int]

MAX_CITED_COPIES = 256
"""Copies kept track of at most, the latest: logrotate's ``rotate`` keeps far fewer."""


@dataclass
class CitedCopies:
    """The compressed copies lines are cited under, by inode, each at its last known path.

    A tail that follows one (its unread lines) leaves its renames to `moves`."""

    _paths: dict[DevIno, Path] = field(default_factory=dict)

    def __contains__(self, key: object) -> bool:
        return key in self._paths

    def add(self, copy: Path) -> None:
        """Keep track of `copy`, under whose name lines are cited from now on."""
        try:
            st = copy.stat()
        except OSError:
            return  # gone already: nothing can move it
        key = (st.st_dev, st.st_ino)
        self._paths.pop(key, None)
        self._paths[key] = copy
        while len(self._paths) > MAX_CITED_COPIES:
            del self._paths[next(iter(self._paths))]

    def moves(self) -> list[tuple[str, str]]:
        """(old name, new name) of each copy a rotation renamed since the last call,
        oldest first; a copy removed is no longer kept track of."""
        moved: list[tuple[str, str]] = []
        for key, path in list(self._paths.items()):
            try:
                st = path.stat()
                if (st.st_dev, st.st_ino) == key:
                    continue
            except OSError:
                pass
            now = rotated_name(path, key)
            if now is None:
                del self._paths[key]
                continue
            moved.append((display_name(str(path)), display_name(str(now))))
            self._paths[key] = now
        return moved
