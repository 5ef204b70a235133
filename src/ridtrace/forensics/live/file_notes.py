"""What a watch says about the files it cannot or will not read, and how it judges them.

A file that cannot be read is listed as unreadable once, however many polls see it, and
withdrawn once it is read from its first line; a file found by walking a directory is
judged as `ridtrace analyze` judges it (`ignore_reason`), and one plainly not a log is
listed as ignored once. `FileNotes` is a base of `live.watch.Watch` (through
`live.input_files.InputFiles`): `Watch` holds the state these methods read.
"""

from __future__ import annotations

import os
from pathlib import Path

from ridtrace.forensics.live.holes import past_hole
from ridtrace.forensics.live.identity import read_past_nuls
from ridtrace.forensics.live.parts import DevIno
from ridtrace.forensics.reading.archives import TAR_ARCHIVE, ZIP_ARCHIVE, is_tar, is_zip_of_logs
from ridtrace.forensics.reading.decoding import MAGIC_BYTES, DecodedStream
from ridtrace.forensics.reading.inputs import SNIFF_BYTES, display_name, not_regular_reason
from ridtrace.forensics.reading.log_names import (
    NO_JSON_LINES,
    ignore_reason,
    named_compressed,
    named_for_lines,
)
from ridtrace.forensics.reading.stats import FileNote, ReadStats
from ridtrace.forensics.reading.unwrap import unwrapped_head, wrapper_of


def _stamp(st: os.stat_result) -> tuple[int, int]:
    """What tells a file from another given its inode later: its mtime and size."""
    return st.st_mtime_ns, st.st_size


def _plain_lines_file(path: Path, plain: bool) -> bool:
    """A file named for JSON lines whose first bytes are known to start no compressed
    stream (`plain`): followed before its first newline. A compressed rotation being
    written (``gzip app.jsonl.1``) is empty or a bare header at first: opened then, it
    was read as plain text, its compressed bytes as bad lines."""
    return plain and named_for_lines(path.name) and not named_compressed(path.name)


class FileNotes:
    """The unreadable and ignored files of a `Watch`, which holds these attributes."""

    stats: ReadStats
    settled: dict[DevIno, tuple[int, int] | None]
    unlisted: set[str]
    blocked: dict[str, FileNote]
    unlisted_dirs: set[str]
    _dangling: set[str]
    _followed: set[str]
    _ending: bool

    def _note_unreadable(self, name: str, reason: str) -> None:
        """List `name` as unreadable, once however many polls see it."""
        if name not in self.unlisted:
            self.unlisted.add(name)
            self.stats.unreadable_files.append(FileNote(display_name(name), reason))

    def _block(self, name: str, reason: str) -> None:
        """List `name` as unreadable while it cannot be read (once, however many polls).

        A walked file the follower may not open was skipped without a word: the summary
        said complete and clean on logs it never read.
        """
        if name not in self.blocked:
            self.blocked[name] = note = FileNote(display_name(name), reason)
            self.stats.unreadable_files.append(note)

    def _unblock(self, name: str) -> None:
        """`name` is read from its first line after all: no longer unreadable."""
        note = self.blocked.pop(name, None)
        if note is not None:
            self.stats.unreadable_files.remove(note)

    def _dangling_link(self, path: Path) -> None:
        """A walked link to nothing: unreadable when named like a log (as the batch read
        lists it), else ignored; followed once its target appears."""
        if str(path) in self._followed:
            return  # the file it led to was followed, then removed: nothing is lost
        reason, lost = not_regular_reason(path)
        if lost:
            self._block(str(path), reason)
        elif str(path) not in self._dangling:
            self._dangling.add(str(path))
            self.stats.ignored_files.append(FileNote(display_name(str(path)), reason))

    def _ignore(self, path: Path, reason: str, *, unsure: bool = False) -> None:
        """List `path` as ignored, once: a file changed since is judged again. `unsure`:
        judged by its start only (`FileNote`)."""
        note = FileNote(display_name(str(path)), reason, unsure=unsure)
        if note not in self.stats.ignored_files:
            self.stats.ignored_files.append(note)

    def _sniffed(self, path: Path) -> tuple[DecodedStream, bytes] | None:
        """A file's decoder and first (decoded) bytes; None when it cannot be read (listed
        unreadable) or is gone: a file created and removed between two polls (a test's
        scratch file, a log rotated away at once) is no file that could not be read."""
        try:
            with open(path, "rb") as raw:
                decoded = DecodedStream(raw)
                # A compressed copy of a log with a hole at its start (`read_past_nuls`)
                # is judged by its lines: its NULs alone were nothing to judge, for good.
                if decoded.compression is not None:
                    return decoded, read_past_nuls(decoded, SNIFF_BYTES)
                head = decoded.read(SNIFF_BYTES)
                if len(head) == SNIFF_BYTES and not head.strip(b"\0"):
                    # So is a plain log behind a hole longer than what is looked at (no
                    # text is all NULs, UTF-16's neither): `nohup.out` after a
                    # copytruncate was ignored as "no JSON lines", its lines never read.
                    fd = raw.fileno()
                    raw.seek(past_hole(fd, SNIFF_BYTES, os.fstat(fd).st_size))
                    decoded = DecodedStream(raw)
                    head = decoded.read(SNIFF_BYTES)
                return decoded, head
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._block(str(path), f"cannot read it: {exc.strerror or exc}")
            return None

    def _archive(self, path: Path, key: DevIno, st: os.stat_result, reason: str) -> None:
        """Named unreadable as the batch read names it, not read as one garbled log, and
        not looked at again while it holds what it holds now."""
        self._block(str(path), reason)
        self.settled[key] = _stamp(st)

    def _named_archive(self, path: Path, key: DevIno, st: os.stat_result) -> bool:
        """Whether a file named on the command line is a tar or zip of logs (listed
        unreadable, never followed), as the batch read judges a named file. Followed,
        ``--follow logs.tgz`` skipped it as a compressed file read from its end and
        said "lines 0", complete; a zip was one bad line of binary."""
        sniffed = self._sniffed(path) if st.st_size else None
        if sniffed is None:
            return False  # opening it to follow it says why it cannot be read
        head = sniffed[1]
        if is_zip_of_logs(head) or is_tar(head):
            self._archive(path, key, st, ZIP_ARCHIVE if is_zip_of_logs(head) else TAR_ARCHIVE)
            return True
        return False

    def _looks_like_log(self, path: Path, key: DevIno, st: os.stat_result) -> bool:
        """Judge a walked file once it has a whole line (an empty file may become a log)."""
        size = st.st_size
        sniffed = self._sniffed(path)
        if sniffed is None:
            return False
        decoded, head = sniffed
        if decoded.unsupported is not None:
            # Nothing of it can be judged: followed, it is listed unreadable as the batch
            # read lists it. A small zstd rotation was looked at again every poll, never
            # read nor named, and the summary said complete.
            return True
        if not head and decoded.compression is not None:
            # Whole, and nothing but NULs: read, a bad line as the batch read counts it.
            # Or torn (cut, or corrupt) before its first line: read, its tear is said
            # when the follow stops, as the batch read says it. Looked at again every
            # poll, a small one was never read nor named, and the summary said complete.
            return True
        if is_zip_of_logs(head) or (is_tar(head) and ignore_reason(
                path.name, head, whole=len(head) < SNIFF_BYTES) is None):
            self._archive(path, key, st, ZIP_ARCHIVE if is_zip_of_logs(head) else TAR_ARCHIVE)
            return False
        plain = size >= MAGIC_BYTES and decoded.compression is None
        if (b"\n" not in head and size < SNIFF_BYTES and not _plain_lines_file(path, plain)
                and not self._ending):
            # Nothing to judge yet: look again next poll. A plain file named for JSON
            # lines is read whatever it holds, its lines held until their newline comes.
            # At the stop there is no next poll: judged as it is, a record with no
            # newline is read (the batch read reads it) and anything else named.
            return False
        # A container's log is judged by what the service wrote, whatever its name.
        reason = ignore_reason(path.name, unwrapped_head(head), whole=len(head) < SNIFF_BYTES,
                               wrapped=wrapper_of(head) is not None)
        if reason is not None:
            # The follow looks at a file's first 64 KiB only (the batch read reads on).
            self._ignore(path, reason, unsure=reason == NO_JSON_LINES and size > len(head))
            self.settled[key] = _stamp(st)
            return False
        return True
