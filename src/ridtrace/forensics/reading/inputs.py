"""Turn the user's PATH arguments into log sources (decoding their bytes: `reading.decoding`).

Accepts files, directories (walked recursively), glob patterns, gzip (by its magic
bytes, whatever the name) and ``-`` for standard input. A file the user names is
always read. A file found by walking a directory is read when it is named like a log
or its first lines hold a JSON object; the others (READMEs, images, JSON documents)
are ignored with a reason that the report lists (`reading.log_names`).
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from ridtrace.forensics.reading.globs import glob_matches
from ridtrace.forensics.reading.log_names import named_like_log
from ridtrace.forensics.reading.rotation import absolute_path, oldest_first
from ridtrace.forensics.reading.tree import walk_files

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(raw: str) -> bool:
    """Whether a PATH is an fsspec URL (``s3://bucket/…``, ``file:///…``), which only
    the Dask engine opens."""
    return _URL.match(raw) is not None

STDIN_NAME = "<stdin>"
A_SOCKET = "a socket, not a file"  # why one cannot be read (opening it says ENXIO)
SNIFF_BYTES = 64 << 10


class ForensicsInputError(ValueError):
    """An input path is missing, unreadable or matches nothing (the CLI exits 2)."""


@dataclass(frozen=True)
class Source:
    """One log input: a file on disk or standard input."""

    name: str
    path: Path | None
    size: int
    from_directory: bool = False
    # False for a pipe (``<(zcat app.log.gz)``), a device, or a walk's broken link: such
    # a path can be read once only, as a stream, or not at all.
    regular: bool = True
    # Why a walk's entry cannot be read at all (a directory it cannot list, a file it may
    # not open): listed as unreadable, which makes the result incomplete.
    unreadable: str | None = None
    # The file (device, inode) the path led to when it was listed, to notice a rotation
    # that gave the name to another file before or while it was read.
    inode: tuple[int, int] | None = None


def _has_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def walk_tree(root: Path) -> tuple[list[Path], list[Source]]:
    """Files under `root` in name order (`tree.walk_files`), and the directories that
    could not be listed, as sources that say why."""
    found, unlisted = walk_files(root)
    return found, [Source(name=str(where), path=where, size=0, from_directory=True,
                          regular=False, unreadable=why) for where, why in unlisted]


def _file_source(path: Path, *, from_directory: bool) -> Source:
    """A file as a source; one the user named and cannot be read stops the run (exit 2),
    one a walk found is listed as unreadable and the others are read."""
    problem: str | None = None
    size, regular, inode = 0, True, None
    try:
        info = path.stat()
        size, regular = info.st_size, stat.S_ISREG(info.st_mode)
        inode = (info.st_dev, info.st_ino) if info.st_ino else None
        if stat.S_ISSOCK(info.st_mode):
            # No file can open it (ENXIO): named, it was an unreadable input (exit 3)
            # where a file the user names that cannot be read is a usage error.
            problem = A_SOCKET
        elif not os.access(path, os.R_OK):
            problem = "permission denied"
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem is not None and not from_directory:
        raise ForensicsInputError(f"cannot read {path}: {problem}")
    return Source(name=str(path), path=path, size=size, from_directory=from_directory,
                  regular=regular,
                  unreadable=None if problem is None else f"cannot read it: {problem}",
                  inode=inode)


def _kind(path: Path) -> str:
    """``dir``, ``file``, ``other`` (a pipe, socket or device) or ``missing`` (a broken
    link or a link loop too). PermissionError propagates: unlike ``Path.is_dir``, which
    raises it on Python 3.11 from inside a walk, the callers decide what it means."""
    try:
        info = path.stat()
    except PermissionError:
        raise
    except (OSError, ValueError):
        return "missing"
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    return "file" if stat.S_ISREG(info.st_mode) else "other"


def _identity(src: Source) -> str:
    """What makes two sources the same input: the file a path leads to, when it leads
    to one (two broken links, or a link loop, are each their own input). A file is its
    inode: a hard link to a log read under both names counted its lines twice.
    Standard input is the file or pipe behind it: also named as ``/dev/stdin`` (or
    redirected from a log also named), two readers of one pipe each took part of its
    lines, torn into bad lines and false findings."""
    try:
        info = os.fstat(0) if src.path is None else src.path.stat()
        if info.st_ino:  # 0 where a file system has no inode numbers
            return f"inode {info.st_dev}:{info.st_ino}"
        return src.name if src.path is None else str(src.path.resolve(strict=True))
    except (OSError, RuntimeError):  # broken link, link loop
        return src.name if src.path is None else os.path.abspath(src.path)


def _walked_entry(path: Path) -> Source:
    """A directory walk's entry that is no regular file: `read_source` says why it is
    not read (`not_regular_reason`)."""
    return Source(name=str(path), path=path, size=0, from_directory=True, regular=False)


# Why a pipe, socket or device is not read where it was only found, not named.
NOT_REGULAR = "not a regular file (a pipe, socket or device)"


def not_regular_reason(path: Path) -> tuple[str, bool]:
    """Why a walk's entry that is no regular file is not read, and whether a log may be
    lost with it (a broken link named like a log: the result is then incomplete).

    A pipe found by walking is left alone: reading it would wait for a writer forever.
    """
    if path.is_symlink() and not path.exists():
        return broken_link_reason(path), named_like_log(path.name)
    return NOT_REGULAR, False


def link_state(raw: str) -> str:
    """`` (a symbolic link loop)`` or `` (a broken symbolic link)`` for a named input that
    is a link leading to no file, as the batch read says why it cannot read it; ``""``
    for a path with nothing there (a follow waits for either to appear)."""
    path = Path(raw)
    return f" ({broken_link_reason(path)})" if path.is_symlink() and not path.exists() else ""


def broken_link_reason(path: Path) -> str:
    """Why a symbolic link leads to no file: its target is missing, or it is a loop
    (a link to itself, or links that name each other), which `ls -L` tells apart."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
    return "a broken symbolic link"


# What the library's readers take as their inputs: one path (text or `pathlib.Path`), or
# a sequence of them.
Inputs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def input_list(inputs: Inputs) -> list[str]:
    """`inputs` as a list of path texts. One path is one input: ``load_events("logs")``
    was taken letter by letter ("no such file or directory: l") and a `Path` was a bare
    ``TypeError``."""
    if isinstance(inputs, (str, os.PathLike)):
        return [os.fspath(inputs)]
    return [os.fspath(one) for one in inputs]


def expand_inputs(inputs: Inputs) -> list[Source]:
    """Resolve PATH arguments to sources, in the order given, each file once; the parts
    of a rotated log oldest first, wherever they came from (`reading.rotation`).

    Raises `ForensicsInputError` for a path that does not exist or a glob that matches
    nothing: a typo must not look like a clean bill of health.
    """
    inputs = input_list(inputs)
    if not inputs:
        raise ForensicsInputError("no input paths given")
    sources: list[Source] = []
    seen: dict[str, int] = {}

    def add(src: Source) -> None:
        key = _identity(src)
        at = seen.get(key)
        if at is None:
            seen[key] = len(sources)
            sources.append(src)
        elif sources[at].from_directory and not src.from_directory:
            # Walked first, named too: a file the user names is always read, as named
            # (by the walk's rule a long banner had it ignored, its requests missing).
            sources[at] = src

    def add_tree(root: Path) -> None:
        files, unlisted = walk_tree(root)
        for child in files:
            try:
                kind = _kind(child)
            except PermissionError:  # listed, but its directory may not be searched:
                kind = "file"  # `_file_source` lists it as unreadable, with the reason
            add(_file_source(child, from_directory=True) if kind == "file"
                else _walked_entry(child))
        for entry in unlisted:
            add(entry)

    def named_kind(path: Path, *, pattern: bool = False) -> str:
        try:
            return _kind(path)
        except PermissionError as exc:
            if pattern:
                # No file of that name can be looked at (`sub/*.jsonl` under a folder
                # that may not be searched): read as the pattern it is, whose walk
                # lists that folder as unreadable and reads the rest. Refused whole,
                # the other inputs went unread.
                return "missing"
            raise ForensicsInputError(f"cannot read {path}: {exc.strerror}") from None

    for raw in inputs:
        if raw == "-":
            if stdin_closed():
                raise ForensicsInputError(CLOSED_STDIN)
            add(Source(name=STDIN_NAME, path=None, size=0))
            continue
        if raw in _STDIN_NAMES and stdin_closed():
            # Its link leads nowhere, or to whatever file the process opened first into
            # the free descriptor 0: "a broken symbolic link", or a file "deleted since
            # it was listed" (exit 3), named no cause.
            raise ForensicsInputError(CLOSED_STDIN.replace("'-'", raw))
        path = Path(raw)
        kind = named_kind(path, pattern=_has_glob(raw))
        if kind == "dir":
            add_tree(path)
        elif kind != "missing":
            add(_file_source(path, from_directory=False))
        elif _has_glob(raw):
            unlisted: dict[str, str] = {}
            matches = glob_matches(raw, unlisted)
            for where, why in unlisted.items():  # as a walk lists a folder it cannot
                add(Source(name=where, path=Path(where), size=0, from_directory=True,
                           regular=False, unreadable=why))
            if not matches and not unlisted:
                raise ForensicsInputError(f"no files match {raw!r}")
            for match in matches:
                mpath = Path(match)
                found = named_kind(mpath)
                if found == "dir":
                    add_tree(mpath)
                elif found == "file":
                    add(_file_source(mpath, from_directory=False))
                else:
                    # A pipe, socket, device or broken link the pattern matched is listed
                    # as a walk lists it: left out without a word, a log behind a broken
                    # link was missing from a report that said it read everything.
                    add(_walked_entry(mpath))
        else:
            # `ls` shows a dangling or looping link: "no such file" sent users looking
            # for a typo that was not there.
            try:
                why = (broken_link_reason(path) if path.is_symlink()
                       else "no such file or directory")
            except OSError as exc:  # a name too long for the file system: no file has it
                why = exc.strerror or "cannot be read"
            # An s3:// or file:// URL (docs/scale-out.md) is no typo: say who reads it.
            where = (" (a URL: only `analyze` and `audit` with --engine dask read those)"
                     if is_url(raw) else "")
            raise ForensicsInputError(f"{why}: {raw}{where}")
    return _unique_names([replace(src, name=display_name(src.name)) if src.path is not None
                          else src for src in oldest_first(sources, _source_path)])


def _unique_names(sources: list[Source]) -> list[Source]:
    """Each source under a name of its own: a file named ``<stdin>`` beside standard
    input, or ``w\\xe9.jsonl`` beside a file whose name holds the byte 0xE9 (shown as that
    escape), were two inputs of one name: every command stopped (exit 4, "categories must
    be unique"), and evidence could not say which file it cited. Standard input keeps its
    name; a file of a relative path is spelt ``./PATH``, else ``NAME (#2)``, ``(#3)``…"""
    names = names_apart([(src.name, None if src.path is None else not src.path.is_absolute())
                         for src in sources])
    return [src if name == src.name else replace(src, name=name)
            for src, name in zip(sources, names, strict=True)]


def names_apart(named: Sequence[tuple[str, bool | None]]) -> list[str]:
    """`_unique_names`' names, for each ``(name, relative)`` in order (`relative` None:
    standard input, which keeps its name); the Dask engine names its files so too."""
    taken = {name for name, relative in named if relative is None}
    out = []
    for given, relative in named:
        if relative is None:
            out.append(given)
            continue
        name, number = given, 2
        if name in taken and relative and not name.startswith("./"):
            name = f"./{name}"
        while name in taken:
            name, number = f"{given} (#{number})", number + 1
        taken.add(name)
        out.append(name)
    return out


CLOSED_STDIN = "standard input is closed: '-' has nothing to read"
_STDIN_NAMES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


def stdin_closed() -> bool:
    """Whether the run was started with no standard input (``<&-``, some daemons): '-'
    then stopped the read with an AttributeError (exit 4), and a follow waited forever."""
    try:
        os.fstat(0)
    except OSError:
        return True
    return sys.stdin is None


def display_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (a Latin-1 name copied from another
    system) as ``\\xff`` escapes. Kept as the file system gave them (lone surrogates),
    they stopped the run (exit 4) where the name became a column or the report."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _source_path(src: Source) -> str | None:
    return None if src.path is None else absolute_path(src.path)


def open_raw(src: Source) -> BinaryIO:
    """The source's bytes as stored (the caller closes a file).

    Raises OSError: the paths were checked when they were listed, so a file that cannot
    be opened now was deleted or changed since (logrotate removing its oldest part),
    which the caller notes as unreadable; a usage error here stopped the run, exit 4.
    """
    if src.path is None:
        stdin: Any = sys.stdin.buffer
        if on_a_terminal(stdin):
            return _terminal_input(stdin)
        return stdin if hasattr(stdin, "peek") else io.BufferedReader(stdin)
    raw = open(src.path, "rb")  # noqa: SIM115 - the caller closes it
    if raw.isatty():  # the terminal named as a path (/dev/stdin, /dev/tty): typed in, as `-`
        return io.BufferedReader(_EndsOnce(raw, owned=True))
    return raw


class _EndsOnce(io.RawIOBase):
    """Standard input on a terminal that stays ended once it ended. There each Ctrl-D
    ends one read only, and the read asks again after its end (its sniff, its decoder,
    its line reader): the user pressed Ctrl-D three times before the report came."""

    def __init__(self, terminal: Any, *, owned: bool = False) -> None:
        super().__init__()
        self._terminal = terminal
        self._owned = owned  # opened by its path for this read, not standard input
        self._ended = False

    def fileno(self) -> int:
        return int(self._terminal.fileno())

    def close(self) -> None:
        if self._owned and not self.closed:
            self._terminal.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._ended:
            return 0
        # One read of the terminal at most (a line, or the end): filling the whole
        # buffer would wait past the first Ctrl-D for more lines.
        got = self._terminal.read1(len(buffer))
        buffer[: len(got)] = got
        self._ended = not got
        return len(got)


_terminal_inputs: dict[int, BinaryIO] = {}


def _terminal_input(stdin: Any) -> BinaryIO:
    """One reader per run for a terminal's standard input, whoever opens it again."""
    if id(stdin) not in _terminal_inputs:
        _terminal_inputs[id(stdin)] = io.BufferedReader(_EndsOnce(stdin))
    return _terminal_inputs[id(stdin)]


def on_a_terminal(stream: Any) -> bool:
    """Whether `stream` (standard input, or its buffer) is a terminal; a closed or
    missing one is not."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
