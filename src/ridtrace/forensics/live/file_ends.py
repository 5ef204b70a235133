"""How a watch ends its followed files: one that will give no more (a compressed file
read to its end, a file no name points to any more) is closed, its last line and any
record it cut short counted as the batch read counts them; at the end of the follow,
every file's last line that never got its newline is read as a line.

`FileEnds` is a base of `live.watch.Watch`, as `FileNotes` is: `Watch` holds the state
these methods read.
"""

from __future__ import annotations

from ridtrace.forensics.live.chunk import Chunk
from ridtrace.forensics.live.parts import DevIno
from ridtrace.forensics.live.stream import StreamTail
from ridtrace.forensics.live.tail import FileTail
from ridtrace.forensics.reading.stats import FileNote, ReadStats
from ridtrace.forensics.reading.unwrap_parts import CUT_SHORT_FILE

Tail = FileTail | StreamTail


class FileEnds:
    """The closing of the followed files of a `Watch`, which holds these attributes."""

    stats: ReadStats
    tails: dict[DevIno, Tail]
    settled: dict[DevIno, tuple[int, int] | None]

    def flush_held(self) -> list[Chunk]:
        """Every followed file's last line that never got its newline, as a line (the
        follow ends); a wrapped record still waiting for its last part is a bad line."""
        chunks = [chunk for tail in self.tails.values() if (chunk := tail.flush_held())]
        for tail in self.tails.values():
            self._count_unfinished(tail)
        return chunks

    def _count_unfinished(self, tail: Tail) -> None:
        """A record cut short, as the batch read counts it: held back for good, it was
        lost from the summary without a word."""
        unfinished = tail.unfinished()
        for line, reason in unfinished:
            self.stats.count_lines(tail.name, 1)  # its parts were blank lines
            self.stats.bad(tail.name, line, reason)
        if unfinished:  # a record is gone, however few the bad lines (as the batch read)
            self.stats.unreadable_files.append(FileNote(tail.name, CUT_SHORT_FILE))

    def _maybe_close(self, key: DevIno, tail: Tail, chunks: list[Chunk]) -> None:
        """Nothing new: close a finished gzip, or a file no name points to any more (its
        last line, if it never got a newline, goes into `chunks` first)."""
        if tail.done:
            if tail.unsupported is not None:
                self.stats.unreadable_files.append(FileNote(tail.name, tail.unsupported))
            if tail.tear is not None:
                where = f"after line {tail.line}"
                self.stats.unreadable_files.append(
                    FileNote(tail.name, f"{tail.tear} {where}; read up to the tear")
                )
                if tail.torn_tail().strip():
                    self.stats.count_lines(tail.name, 1)  # as the batch read counts it
                    self.stats.bad(tail.name, tail.line + 1, f"torn last line ({tail.tear})")
            self._count_unfinished(tail)
            self.settled[key] = tail.stamp() if isinstance(tail, FileTail) else None
            self._close(key, tail)
        elif isinstance(tail, FileTail) and (tail.deleted() or not self._named(tail, key)):
            last = tail.flush_held()
            if last is not None:
                chunks.append(last)
            self._count_unfinished(tail)
            self._close(key, tail)

    @staticmethod
    def _named(tail: FileTail, key: DevIno) -> bool:
        try:
            st = tail.path.stat()
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == key

    def _close(self, key: DevIno, tail: Tail) -> None:
        tail.close()
        del self.tails[key]

    def close(self) -> None:
        """Release every descriptor."""
        for tail in self.tails.values():
            tail.close()
        self.tails.clear()
