"""Follow one log file by its open descriptor: whole new lines, each handed out once.

A tail reads what was appended since its last read and hands out only complete lines;
an incomplete last line is held until its newline arrives, so a line written in two
pieces is read once, whole. It follows the file itself (its inode), not its name: a
file renamed by a rotation is read to its end under its new name.

Content is recognised by its first bytes (`Identity`), so a copy of a file already
read — a copy-and-truncate rotation's ``app.jsonl.1``, or its gzip — continues after
the lines already read instead of reading them again. That is also what makes a
copy-and-truncate lose nothing: lines written between the last poll and the copy are
read from the copy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from ridtrace.forensics.live.chunk import Chunk
from ridtrace.forensics.live.compressing import still_compressing
from ridtrace.forensics.live.descriptor_reader import from_first_byte
from ridtrace.forensics.live.holes import past_hole
from ridtrace.forensics.live.identity import (
    Identities,
    Identity,
    decoded_head,
    first_lines,
    plain_head,
    same_start,
)
from ridtrace.forensics.live.line_ends import lines_before_last_newline
from ridtrace.forensics.live.stop_bound import StopBound
from ridtrace.forensics.reading.crash_holes import HOLE_KEPT_BYTES
from ridtrace.forensics.reading.decoding import MAGIC_BYTES, DecodedStream, compression_of
from ridtrace.forensics.reading.docker_local import DOCKER_LOCAL_BYTES, is_docker_local
from ridtrace.forensics.reading.inputs import display_name
from ridtrace.forensics.reading.lines import LineScan, scan_lines
from ridtrace.forensics.reading.overlong import held_piece
from ridtrace.forensics.reading.rotation import is_live_name
from ridtrace.forensics.reading.unwrap import Unwrapper, cut_short, wrapper_of


class FileTail(StopBound):
    """A followed file: reads appended whole lines from its descriptor (and stops where
    `StopBound` says once the follow is asked to stop)."""

    def __init__(self, path: Path, identities: Identities, *, from_end: bool,
                 end_at: int | None = None) -> None:
        self.path = path
        self._named_at_first = path  # a rename moves `path` to the rotated part's name
        self.name = display_name(str(path))
        # The file a link named leads to (a "current" link, Kubernetes' container log
        # link): the name its lines are cited under once the link leads elsewhere.
        real = Path(os.path.realpath(path))
        self.link_target = None if real == Path(os.path.abspath(path)) else (
            real if path.is_absolute() else Path(os.path.relpath(real)))
        self.removed = False  # cited as removed: no name leads to it any more
        self._fh: BinaryIO = open(path, "rb")  # noqa: SIM115 (held across polls)
        st = os.fstat(self._fh.fileno())
        self.dev_ino = (st.st_dev, st.st_ino)
        self._identities = identities
        self.identity: Identity | None = None
        self.offset = 0  # bytes of the file consumed (the held tail included)
        self.line = 0  # complete lines consumed
        self._held = b""
        # The NULs opening the file, skipped (`_read_plain`) and not yet known to be a
        # copy-and-truncate's hole before a record or a line of their own.
        self._opening_hole = 0
        # Compressed (gzip, bzip2, xz, zstd): a rotated file, read once to its end. So is
        # Docker's local driver's binary file: its decoder names it unreadable at once.
        head = self._fh.read(max(MAGIC_BYTES, DOCKER_LOCAL_BYTES))
        self.gzip = compression_of(head) is not None or is_docker_local(head)
        self._fh.seek(0)
        self.done = False
        self.at_eof = False  # the last read reached the end of what is written
        # Bytes written were left for a later read (a poll reads at most max_bytes); a
        # held piece of a line is not that: its newline has not been written.
        self.behind = False
        self._decoded: DecodedStream | None = None
        self._gzip_size = -1
        self._tear_final = False  # `StopBound`
        self.tear: str | None = None
        self.unsupported: str | None = None  # a compression this Python cannot decode
        self.stop_at: int | None = None  # `StopBound`
        # A container runtime's or journal's wrapping, known from the first lines, and
        # how many lines of the file came before the first it was fed.
        self._unwrap: Unwrapper | None = None
        self._unwrap_from: int | None = None
        # Set when a copy-and-truncate was seen: the copy, where the lines read from
        # this file so far are now (`Watch.renamed`).
        self.moved_to: Path | None = None
        # Set when a copy-and-truncate was seen before its copy was found: the content
        # read so far, whose copy `Watch.read` looks for (its unread lines come first,
        # and the lines read so far are cited under its name).
        self.restarted: Identity | None = None
        self._claim_head()
        if from_end:  # `end_at`: where the file ended when the follow began
            self._skip_to_end(st.st_size if end_at is None else min(end_at, st.st_size))
        self.skipped_lines = self.line  # lines before where the follow began reading

    def gone_unread(self) -> bool:
        """Removed before the follow read a line of it: no file of the logs it read."""
        return self.removed and self.line <= self.skipped_lines

    def _claim_head(self) -> None:
        """Recognise the content by its first whole lines, once there are some."""
        if self.identity is not None:
            return
        head = self.head_now()
        if head:
            self.identity = self._identities.claim(head, self.path)
            self._unwrap, self._unwrap_from = wrapper_of(head), None

    def head_now(self) -> bytes:
        """The first whole lines the file holds now (decompressed), b"" until it has one.

        Read from the descriptor, not by the name: a rotation may have renamed or removed
        the file since it was opened, or given its name to another file.
        """
        fd = self._fh.fileno()
        if self.gzip:
            return decoded_head(DecodedStream(from_first_byte(fd)))
        start = past_hole(fd, 0, os.fstat(fd).st_size)
        return plain_head(fd, start)

    def _skip_to_end(self, size: int) -> None:
        """Start after the last whole line: count the lines before it, read none."""
        if self.gzip:
            self.done = True
            return
        lines, last_newline = lines_before_last_newline(self._fh.fileno(), size)
        self.offset, self.line = last_newline, lines
        if self.identity is not None:
            self.identity.lines = max(self.identity.lines, lines)

    @property
    def stream(self) -> str:
        """The content stream the lines read now belong to (`Chunk.stream`)."""
        return self.identity.label if self.identity is not None else self.name

    @property
    def more_to_read(self) -> bool:
        """The last read stopped at its size limit with bytes written after it."""
        return self.behind

    @property
    def piece_left(self) -> tuple[int, int] | None:
        """Where the file stands when all of it is read but a last line whose newline is
        not written (its offset and the piece's size); None otherwise."""
        return None if self.behind or not self._held else (self.offset, len(self._held))

    @property
    def rotated_away(self) -> bool:
        """Whether the file is no longer its log's live file: renamed by a rotation since
        it was first followed, named as a rotated part (`app.jsonl.1`), or removed."""
        return (self.removed or self.path != self._named_at_first
                or not is_live_name(str(self.path)))

    def stamp(self) -> tuple[int, int]:
        """The file's mtime and size: what tells it from a later file given its inode."""
        st = os.fstat(self._fh.fileno())
        return st.st_mtime_ns, st.st_size

    def deleted(self) -> bool:
        """True when the file has no name left (removed, or its inode reused)."""
        return os.fstat(self._fh.fileno()).st_nlink == 0

    def read(self, max_bytes: int) -> Chunk | None:
        """The whole lines appended since the last read (at most about `max_bytes`)."""
        if self.done:
            return None
        data: bytes | bytearray
        if self.gzip:
            data = self._read_gzip(max_bytes)
            if self._held and (data or self.done):
                data = self._held + data
            if self.done and self.tear is None and self.unsupported is None:
                # Read whole: a last line without its newline is a line, as the batch
                # read reads it (an Unlinked error on it was dropped, exit 0).
                last = data[data.rfind(b"\n") + 1 :]
                if last.strip():
                    data += b"\n"
        else:
            data = self._read_plain(max_bytes)
        if not data:
            return None
        cut = data.rfind(b"\n") + 1
        # The chunk is a view of the read buffer: slicing a copy of tens of MiB per
        # chunk (and joining the held piece to it) cost twice the read itself.
        whole, self._held = memoryview(data)[:cut], held_piece(data, cut)
        # A held piece of a line is more to come, at a time not known yet.
        self.at_eof = self.at_eof and not self._held
        if not whole:
            return None
        first = self.line + 1
        self._claim_head()
        whole = self._unwrapped(whole)
        scan = scan_lines(whole)
        self.line += scan.newlines
        return self._unread(first, whole, scan)

    def _unwrapped(self, whole: memoryview) -> memoryview:
        """The plain lines of a wrapped file's whole lines, as many (`reading.unwrap`)."""
        if self._unwrap is None:
            return whole
        if self._unwrap_from is None:
            self._unwrap_from = self.line  # a follow from the end feeds it from there
        return memoryview(self._unwrap.feed(whole.tobytes()))

    def unfinished(self) -> list[tuple[int, str]]:
        """(line, reason) of each wrapped record whose last part has not come (yet)."""
        if self._unwrap is None or self._unwrap_from is None:
            return []
        reason = cut_short(self._unwrap)
        return [(self._unwrap_from + line, reason) for line in self._unwrap.unfinished()]

    def _unread(self, first: int, whole: memoryview, scan: LineScan) -> Chunk | None:
        """Drop the lines a copy of this content already handed out."""
        ident = self.identity
        if ident is None:
            return Chunk(self.name, first, whole, scan, self.stream)
        skip = ident.lines - first + 1
        ident.lines = max(ident.lines, self.line)
        if skip <= 0:
            return Chunk(self.name, first, whole, scan, self.stream)
        text, pos = whole.tobytes(), 0
        for _ in range(skip):
            pos = text.find(b"\n", pos) + 1
            if pos == 0:
                return None
        rest = whole[pos:]  # a view: no copy
        # Fewer lines; "may be blank" stays as the whole chunk's (a superset).
        left = LineScan(scan.newlines - skip, scan.maybe_blank)
        return Chunk(self.name, first + skip, rest, left, ident.label) if rest else None

    def _read_plain(self, max_bytes: int) -> bytearray:
        """The held piece of a line, then what was appended after it (up to `max_bytes`),
        read into one buffer."""
        size = os.fstat(self._fh.fileno()).st_size
        if size < self.offset or self._replaced():  # copy-and-truncate: content starts over
            if self.identity is not None and self.identity.copy is not None:
                self.moved_to = self.identity.copy
            elif self.identity is not None:
                self.restarted = self.identity
            self.offset, self.line, self._held, self.identity = 0, 0, b"", None
            self.skipped_lines = 0  # the new content is read from its first line
            self._unwrap, self._unwrap_from = None, None
            self._claim_head()
        size = self._bounded(size)
        if size > self.offset == 0:
            # A hole opening the file is a copy-and-truncate's (as the batch read judges
            # it), no line: held as one, the first line after every such rotation was a
            # bad line (its record lost), and a big hole was held whole in memory. NULs
            # anywhere else are a crash's lost lines, read as the batch read reads them:
            # skipped at a poll's start, they went uncounted and the follow complete.
            self.offset = self._opening_hole = past_hole(self._fh.fileno(), self.offset, size)
        if size <= self.offset:
            self.at_eof, self.behind = not self._held, False
            return bytearray()
        held = len(self._held)
        buf = bytearray(held + min(max_bytes, size - self.offset))
        buf[:held] = self._held
        got = os.preadv(self._fh.fileno(), [memoryview(buf)[held:]], self.offset)
        del buf[held + got :]  # the file shrank while being read: a copy-and-truncate
        if self._opening_hole and got:
            if bytes(buf[:1]) in (b"\n", b"\r"):  # the NULs were a line: lost lines, no hole
                buf[0:0] = self.opening_nuls()
            self._opening_hole = 0
        self.offset += got
        self.at_eof = self.offset >= size
        self.behind = not self.at_eof
        return buf

    def _replaced(self) -> bool:
        """The first lines are no longer those the content was recognised by: truncated,
        then written past the old size before this poll (a busy copy-and-truncate)."""
        ident = self.identity
        if ident is None or self.offset == 0:
            return False
        fd = self._fh.fileno()
        now = os.pread(fd, len(ident.head), past_hole(fd, 0, self.offset))
        return not same_start(ident.head, now)

    def _read_gzip(self, max_bytes: int) -> bytes:
        """A rotated, compressed file is read once: to its end, then it is done."""
        if self._decoded is None:
            status = os.fstat(self._fh.fileno())
            if not self._tear_final and still_compressing(status, self._gzip_size, grown=False):
                self.at_eof, self.behind = True, False
                return b""  # as it was when its tear was seen: not read again yet
            self._fh.seek(0)
            self._decoded = DecodedStream(self._fh)
        data = self._decoded.read(max_bytes)
        self.at_eof = len(data) < max_bytes
        self.behind = not self.at_eof
        if not self.at_eof:
            return data
        status = os.fstat(self._fh.fileno())
        if self._decoded.tear is not None and not self._tear_final and still_compressing(
                status, self._gzip_size, grown=True):
            # Still being compressed: read it again from the top once it has grown; the
            # lines handed out already are skipped by the identity.
            self._gzip_size, self._decoded = status.st_size, None
            self.line, self._held = 0, b""
            # Parts held from the first read would join the first record read again.
            head = self.identity.head if self.identity is not None else b""
            self._unwrap, self._unwrap_from = wrapper_of(head), None
            return b""
        self.done = True
        self.tear, self.unsupported = self._decoded.tear, self._decoded.unsupported
        return data

    def cut_line(self) -> bool:
        """Whether a line is held without its newline (being written, or never ended)."""
        return bool(self._held) and not self.done

    def flush_held(self) -> Chunk | None:
        """The held piece of a last line as a line of its own: the follow ends (or the
        file lost its name), so no newline will come, and the batch read reads such a
        last line too. None when nothing but blanks is held."""
        held, self._held = self._held, b""
        self.at_eof = True
        if self._opening_hole and not held and not self.gzip:
            # A file of nothing but NULs (a log preallocated and never written): no
            # record came after them, so they are a line, bad as the batch read counts
            # it. Waited for as a copy-and-truncate's hole, the follow said complete.
            held, self._opening_hole = self.opening_nuls(), 0
        if self.done or not held.strip():
            return None
        if self.identity is None and self._unwrap is None:
            # No whole line came, so no head was looked at: a file of one line without
            # its newline (a Loki answer curl saved, an OTLP batch) is judged by that
            # line, as the batch read judges it; read unwrapped, it was one bad line.
            self._unwrap, self._unwrap_from = wrapper_of(first_lines(held + b"\n")), None
        data = self._unwrapped(memoryview(held + b"\n"))
        scan = scan_lines(data)
        first = self.line + 1
        self.line += scan.newlines
        return self._unread(first, data, scan)

    def opening_nuls(self) -> bytes:
        """The NULs that opened the file, as its first line holds them (kept to
        `HOLE_KEPT_BYTES`, as the batch read keeps a line's)."""
        return bytes(min(self._opening_hole, HOLE_KEPT_BYTES))

    def torn_tail(self) -> bytes:
        """The held bytes of a finished file (a last line that never got its newline)."""
        return self._held if self.done else b""

    def close(self) -> None:
        """Release the descriptor."""
        self._fh.close()
