"""Which files to follow: the named ones, everything under named directories, globs.

Every poll walks the inputs again, so files that appear are picked up, and checks each
followed file: a file renamed by a rotation is followed under its new name to its end;
a file whose name now holds another file (rename-and-create) is drained, then the new
one is read from its first line; a file that lost every name is drained and closed
(`live.file_ends`). Files found by walking a directory are judged like `ridtrace
analyze` judges them (`ignore_reason`): plainly not logs are listed as ignored once
(`live.file_notes`). The files the inputs name at each poll come from `live.input_files`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ridtrace.forensics.live.chunk import Chunk
from ridtrace.forensics.live.cited_copies import CitedCopies
from ridtrace.forensics.live.file_ends import FileEnds, Tail
from ridtrace.forensics.live.file_notes import _stamp
from ridtrace.forensics.live.identity import Identities
from ridtrace.forensics.live.input_files import STDIN, InputFiles
from ridtrace.forensics.live.open_files import tail_budget, too_many_open
from ridtrace.forensics.live.parts import Copies, compressed_copy, rotated_name
from ridtrace.forensics.live.stream import StreamTail
from ridtrace.forensics.live.tail import FileTail
from ridtrace.forensics.reading.inputs import A_SOCKET, NOT_REGULAR, STDIN_NAME, display_name
from ridtrace.forensics.reading.stats import FileNote, ReadStats

DevIno = tuple[int, int]


def _own_output_files() -> dict[DevIno, str]:
    """The files this process writes its findings and summary to, by inode (a pipe or a
    terminal is no file a walk finds)."""
    own: dict[DevIno, str] = {}
    for fd, name in ((2, "standard error"), (1, "standard output")):
        try:
            st = os.fstat(fd)
        except OSError:
            continue  # closed
        if stat.S_ISREG(st.st_mode):
            own[(st.st_dev, st.st_ino)] = name
    return own


def _why_unopened(path: Path, exc: OSError) -> str:
    """Why a named stream could not be opened: a socket said as the batch read says it,
    not as the open's ENXIO ("No such device or address")."""
    with contextlib.suppress(OSError):
        if exc.errno == errno.ENXIO and stat.S_ISSOCK(os.stat(path).st_mode):
            return A_SOCKET
    return str(exc.strerror or exc)


@dataclass
class Watch(InputFiles, FileEnds):
    """The followed files of one `ridtrace analyze --follow` run."""

    inputs: Sequence[str]
    stats: ReadStats
    from_start: bool = False
    tails: dict[DevIno, Tail] = field(default_factory=dict)
    identities: Identities = field(default_factory=Identities)
    # Files judged not to be logs, and gzip files read to their end: never read again,
    # while their inode holds what it held then (mtime and size when settled; None: a
    # stream).
    settled: dict[DevIno, tuple[int, int] | None] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    appeared: set[str] = field(default_factory=set)  # inputs found at least once
    unlisted: set[str] = field(default_factory=set)  # inputs noted as unreadable
    # Files that cannot be read now (no permission, a broken link named like a log):
    # listed as unreadable, tried again every poll, withdrawn once read from line 1.
    blocked: dict[str, FileNote] = field(default_factory=dict)
    # Folders a walk could not list, each listed unreadable while it cannot be.
    unlisted_dirs: set[str] = field(default_factory=set)
    _dangling: set[str] = field(default_factory=set)  # broken links listed as ignored
    _followed: set[str] = field(default_factory=set)  # every name a file was opened by
    _streams: int = 0  # streams opened (standard input, named pipes)
    # Every file and stream opened, for `files_read`.
    _opened: list[Tail] = field(default_factory=list)
    # How many files may be open at once (`open_files`): one more is listed, not opened.
    max_tails: int = field(default_factory=tail_budget)
    # The files' sizes when the command began (`live.launch`); None: taken at the first
    # look, as a library caller's follow does.
    launch_sizes: dict[DevIno, int] | None = None
    _started: bool = False
    _bounded: bool = False
    # The stop's last look (`bound`): a walked file is judged as it is then, whole.
    _ending: bool = False
    # Empty files the last walk found and does not follow yet (`files_read` counts them).
    _empty_walked: set[DevIno] = field(default_factory=set)
    # (old name, new name) of files whose lines read so far are under another name now
    # (renamed by a rotation, or copied before a truncation): spans read from them cite
    # the new name (`take_renamed`), or findings printed later named another file's line.
    renamed: list[tuple[str, str]] = field(default_factory=list)
    copies: Copies = field(init=False)
    # Compressed copies lines are cited under that no tail follows: renamed by a later
    # rotation, their citations move with them.
    cited_copies: CitedCopies = field(default_factory=CitedCopies)
    # This process's stdout and stderr when they are files: never followed (`_own_output`).
    own_output: dict[DevIno, str] = field(default_factory=_own_output_files)

    def __post_init__(self) -> None:
        self.copies = Copies(self.identities, self.tails)

    def discover(self) -> None:
        """Start following every file that appeared since the last poll."""
        seen: dict[DevIno, Path] = {}
        empty: set[DevIno] = set()  # walked files with nothing to judge yet
        candidates = list(self._candidates())
        named_paths = {path for path, how in candidates if how == "named" and path != STDIN}
        named = _keys(named_paths)
        for path, how in candidates:
            try:
                st = os.fstat(0) if path == STDIN else path.stat()
            except OSError as exc:
                if how == "copy":  # a part beside a named log is no input: nothing to list
                    continue
                if isinstance(exc, PermissionError):  # its directory may not be searched
                    self._note_unreadable(str(path), f"cannot read it: {exc.strerror}")
                elif path.is_symlink():  # else gone between the walk and the stat
                    self._dangling_link(path)
                continue
            key = (st.st_dev, st.st_ino)
            seen[key] = path
            if key in self.own_output and path != STDIN:
                # `… --follow > logs/findings.jsonl`: read back, each finding it printed was
                # a bad line of its own input and the run incomplete.
                self._ignore(path, f"this run's own output ({self.own_output[key]})")
                continue
            if how == "walked" and key in named:  # named too: read whatever it holds
                how = "named"
            if self.settled.get(key) not in (None, _stamp(st)):
                # Another file under a settled file's inode number: ext4 gives a removed
                # file's number to the next file created, as when logrotate removes one
                # log's oldest .gz and then creates the next log's fresh file within one
                # poll. Taken for the settled file, that log went unread for good.
                del self.settled[key]
            if key in self.tails or key in self.settled or self._bounded:
                continue
            if how == "copy" and not (stat.S_ISREG(st.st_mode)
                                      and self.copies.follows(path, key, st)):
                continue
            if how == "named" and (path == STDIN or not stat.S_ISREG(st.st_mode)):
                self._open_stream(path, key)
                continue
            if not stat.S_ISREG(st.st_mode):
                # A pipe has no end to start from and no rotation to follow; opening one
                # with no writer would block every poll.
                self._ignore(path, NOT_REGULAR)
                self.settled[key] = _stamp(st)
                continue
            if how == "walked" and not self._looks_like_log(path, key, st):
                if st.st_size == 0:
                    empty.add(key)
                continue
            if how == "named" and self._named_archive(path, key, st):
                continue
            if len(self.tails) >= self.max_tails:
                self._block(str(path), too_many_open(self.max_tails))
                continue
            from_end = not self._started and not self.from_start
            end_at = None
            if from_end and self.launch_sizes is not None:
                end_at = self.launch_sizes.get(key)
                from_end = end_at is not None  # else created since the command began
            try:
                tail = FileTail(path, self.identities, from_end=from_end, end_at=end_at)
            except FileNotFoundError:
                continue  # removed since the walk found it: nothing of it can be missed
            except OSError as exc:
                self._block(str(path), f"cannot read it: {exc.strerror or exc}")
                continue
            if tail.line == 0:  # read from its first line: nothing of it is missing
                self._unblock(str(path))
            self._followed.add(str(path))
            self.tails[key] = tail
            self._opened.append(tail)
        self._started = True
        # Before this poll's own citations: a new copy may take a moved one's name.
        self.renamed.extend(self.cited_copies.moves())
        for key, followed in self.tails.items():
            if isinstance(followed, StreamTail):
                continue
            moved = seen.get(key) or (None if followed.done else rotated_name(
                followed.path, key, followed.link_target))
            if moved is not None and moved != followed.path:  # renamed: evidence names it
                followed.path = moved
                if key in self.cited_copies:  # its citations moved with it (above)
                    followed.name = display_name(str(moved))
                else:
                    self._cite_under(followed, display_name(str(moved)))
            elif moved is None and not followed.removed and followed.deleted():
                # Removed (a file moved over its name, a rotation keeping no copy): its
                # lines under the old name were cited at the next file's lines there.
                followed.removed = True
                gone_as = self.cited_copies.take_gone(key)
                if gone_as is not None:
                    # Its citations were renamed (above, or in an earlier poll); again
                    # here, after a copy that took its name (`.1` renamed `.2` as `.2`
                    # is removed), they took that copy's lines with them.
                    followed.name = gone_as
                    continue
                head = followed.identity.head if followed.identity is not None else b""
                copy = compressed_copy(followed.path, head)
                self._cite_under(followed, display_name(str(copy)) if copy is not None
                                 else f"{followed.name} (removed)")
                if copy is not None:
                    self.cited_copies.add(copy)
        # Read by a batch read as files of no lines (an idle log, its empty rotated copy).
        # Once bounded, a walk judges no file (none found later is read): kept as the
        # stop found them, or the summary's `files` left them out.
        if not self._bounded:
            self._empty_walked = empty
        self.stats.files = self.files_read()
        # A settled file that disappeared frees its inode number for a new file.
        self.settled = {key: mtime for key, mtime in self.settled.items() if key in seen}
        self.copies.forget(set(seen), named_paths)

    def _open_stream(self, path: Path, key: DevIno) -> None:
        """Follow standard input or a pipe the user named, as it comes, to its end."""
        try:
            fd = 0 if path == STDIN else os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            self._block(str(path), f"cannot read it: {_why_unopened(path, exc)}")
            return
        self._unblock(str(path))
        stream = StreamTail(fd, STDIN_NAME if path == STDIN else str(path), path)
        self.tails[key] = stream
        self._opened.append(stream)
        self._streams += 1

    def files_read(self) -> int:
        """How many files the batch read would count: each content once, whatever names
        and copies it was followed under, and the empty files the walk found. Counted
        per file opened, a log rotated with a compressed copy was two files, then three
        (9 against the batch's 6); an idle log rotated with its empty copies, fewer. A file
        removed before a line of it was read is none (a demo run again over the folder
        followed from its end)."""
        return len({id(tail.identity) if tail.identity is not None else id(tail)
                    for tail in self._opened
                    if not (isinstance(tail, FileTail) and tail.gone_unread())}
                   ) + len(self._empty_walked)

    def finished(self) -> bool:
        """Every input is a stream, and every one was read to its end: nothing can
        come any more (``kubectl logs -f … | ridtrace analyze - --follow`` whose
        ``kubectl`` exited)."""
        return (self._streams == len(set(self.inputs))
                and not any(isinstance(t, StreamTail) for t in self.tails.values()))

    def bound(self) -> None:
        """Stop at what is written now: every file found by now is read up to its
        present size (a line cut there to its newline), no file found later is read."""
        if self._bounded:
            return
        self._ending = True
        self.discover()
        self._bounded = True
        for tail in self.tails.values():
            tail.bound()

    def cut_lines(self) -> bool:
        """Whether a followed file holds a line that has no newline yet."""
        return any(isinstance(tail, FileTail) and tail.cut_line() for tail in self.tails.values())

    def abandon(self) -> None:
        """Stop now (a second signal): a file with lines left unread is listed as read
        in part, so the summary says incidents may be missing."""
        for key, tail in list(self.tails.items()):
            reason = tail.left_unread()
            if reason is not None:
                self.stats.unreadable_files.append(FileNote(tail.name, reason))
                self._close(key, tail)

    def read(self, max_bytes: int) -> tuple[list[Chunk], bool]:
        """New whole lines of every followed file; True when some file had more to give.

        A file truncated between this poll's look and its read (a copy-and-truncate)
        has its copy, not found yet, looked for and read in the same poll: it holds the
        lines written before the truncation. Read at the next poll, after the lines
        written since, a request's start and first Unlinked line (written just before
        the rotation) came after its end, and the finding printed named another line
        and time than `analyze`'s.
        """
        chunks, restarted, more = self._read_tails(list(self.tails.items()), max_bytes)
        if restarted:
            before = set(self.tails)
            self.discover()
            found = [(key, tail) for key, tail in self.tails.items() if key not in before]
            # A file just opened was truncated under no read of it: it restarts nothing.
            copied, _, more_copied = self._read_tails(found, max_bytes)
            chunks += copied + [chunk for _, chunk in restarted if chunk is not None]
            more = more or more_copied
            for tail, _ in restarted:  # the lines read before the truncation are the copy's
                content, tail.restarted = tail.restarted, None
                if content is not None and content.copy is not None:
                    self.renamed.append((tail.name, display_name(str(content.copy))))
                    self.cited_copies.add(content.copy)
        return chunks, more

    def _read_tails(self, tails: list[tuple[DevIno, Tail]], max_bytes: int
                    ) -> tuple[list[Chunk], list[tuple[FileTail, Chunk | None]], bool]:
        """Each tail's new lines: those of files read anew after a copy-and-truncate whose
        copy is not followed yet apart, and whether some file had more to give."""
        chunks: list[Chunk] = []
        restarted: list[tuple[FileTail, Chunk | None]] = []
        more = False
        for key, tail in tails:
            try:
                chunk = tail.read(max_bytes)
                if isinstance(tail, FileTail) and tail.restarted is not None:
                    restarted.append((tail, chunk))  # nothing written since, perhaps
                    more = more or tail.more_to_read or (
                        chunk is not None and len(chunk.data) >= max_bytes // 2)
                    continue
                self._note_truncated(tail)
                # A read that was all one long line hands out no line, yet more is written:
                # taken for "nothing left", a follow stopped by a signal while reading a
                # line over 16 MiB left every line after it unread.
                more = more or tail.more_to_read
                if chunk is None:
                    self._maybe_close(key, tail, chunks)
                    continue
            except OSError as exc:
                self.stats.unreadable_files.append(FileNote(tail.name, f"read failed: {exc}"))
                self._close(key, tail)
                continue
            chunks.append(chunk)
            more = more or len(chunk.data) >= max_bytes // 2
        return chunks, restarted, more

    def _cite_under(self, tail: FileTail, name: str) -> None:
        """Cite the lines read from `tail` so far, and those read from now on, as `name`."""
        self.renamed.append((tail.name, name))
        tail.name = name

    def _note_truncated(self, tail: Tail) -> None:
        """A copy-and-truncate: the lines read from `tail` before it are in the copy."""
        if isinstance(tail, FileTail) and tail.moved_to is not None:
            self.renamed.append((tail.name, display_name(str(tail.moved_to))))
            self.cited_copies.add(tail.moved_to)
            tail.moved_to = None

    def take_renamed(self) -> list[tuple[str, str]]:
        """The renames noted since the last call (`renamed`), oldest first."""
        renamed, self.renamed = self.renamed, []
        return renamed


def _keys(paths: set[Path]) -> set[DevIno]:
    """The files `paths` lead to now (those that exist)."""
    return {(st.st_dev, st.st_ino) for st in map(_stat_or_none, paths) if st is not None}


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
