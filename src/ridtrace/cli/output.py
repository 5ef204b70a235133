"""Reports and exports written whole or not at all; the read's warnings on stderr; the
input error (exit 2) every forensic command raises.

A report written straight to its path was left cut short when the write failed (a full
disk) or the command was stopped (Ctrl-C, SIGTERM, a CI timeout) half way through a
streamed Jaeger export: the next step of a pipeline then read a truncated document as
if it were the answer. Here the text goes to a temporary file beside the target, which
replaces the target only once it is complete.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

import click

from ridtrace.forensics.printable import cited_at, visible  # file names are anyone's text

if TYPE_CHECKING:
    from ridtrace.forensics.reading.inputs import Source
    from ridtrace.forensics.reading.stats import ReadStats

__all__ = [
    "LOCAL_URL", "InputError", "ReportPath", "WouldOverwriteALog", "echo_out", "emit",
    "is_standard_output",
    "one_file", "overwritten_log", "refuse_to_overwrite", "warn_read_stats", "whole_binary_file",
    "whole_file",
]


class ReportPath(click.Path):
    """A file a command writes (``-o``, ``--plot``): click's checks, and a name no file
    can have refused before the read, which can take minutes, rather than after it."""

    def __init__(self) -> None:
        # Written, never read: click's default check that an existing one is readable
        # refused a write-only report and /dev/stdout on a pipe another user made
        # ("is not readable"), which `>` writes.
        super().__init__(dir_okay=False, readable=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value != "-":
            if value == "":  # pathlib reads it as ".": "cannot write .", after the read
                self.fail("an empty file name (an unset variable?)", param, ctx)
            refusal = _no_directory(value) or _unwritable(value)
            if refusal is not None:
                self.fail(f"cannot write {visible(value)}: {refusal}", param, ctx)
        return super().convert(value, param, ctx)


def _no_directory(value: str) -> str | None:
    """Why no file can be made at `value` for want of a directory to hold it: none
    there, or a file in its place; for a link, where the link leads too (the report
    replaces what it points to). None when there is one, or only the write can tell
    (a directory this user may not search)."""
    places = [value]
    if os.path.islink(value):
        try:
            os.stat(value)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link that leads back to itself: no file
                return os.strerror(errno.ELOOP)
        places.append(os.path.realpath(value))
    for place in places:
        directory = os.path.dirname(place) or "."
        try:
            mode = os.stat(directory).st_mode
        except FileNotFoundError:
            return f"no directory {visible(directory)}"
        except NotADirectoryError:
            return f"{visible(directory)} is not a directory"
        except OSError:
            return None  # not ours to judge: the write says
        if not stat.S_ISDIR(mode):
            return f"{visible(directory)} is not a directory"
    return None


def _unwritable(value: str) -> str | None:
    """Why the write of a report to `value` will be refused, as `_whole` finds it after
    the read (which can take minutes): a regular file its user may not write, or a new
    file in a directory that takes none. None when it can be written, or only the write
    can tell (a device, a pipe: written in place; a descriptor of this process's, such
    as ``/dev/stdout`` on a pipe, whose path leads to no file: written through it)."""
    if _inherited_descriptor(Path(value)) is not None:
        return None
    try:
        target, mode = _target(Path(value))
    except OSError:
        return None  # not ours to judge: the write says
    if mode is not None:
        # A writable file is written in place if the directory takes no rename.
        return _refusal(target) if _read_only(target, mode) else None
    directory = os.path.dirname(target) or "."
    if os.path.isdir(directory) and not os.access(directory, os.W_OK | os.X_OK):
        return f"{_refusal(directory)} (no new file can be made in {visible(directory)})"
    return None


def _refusal(path: Path | str) -> str:
    """Why `path` takes no write, as the shell's ``>`` says it: a read-only mount is
    "Read-only file system" (told "Permission denied", a user changes modes that cannot
    help); anything else "Permission denied"."""
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return os.strerror(errno.EROFS if read_only else errno.EACCES)


@contextlib.contextmanager
def whole_file(path: Path) -> Iterator[TextIO]:
    """A text handle whose content becomes `path` when the block ends without error.

    Anything but a regular file (``/dev/stdout``, a named pipe, a device) is written in
    place: it cannot be replaced, and a reader may be waiting on it. A name for one of
    this process's descriptors (``/dev/stdout``, ``/dev/fd/3``, a shell's ``>(…)``) is
    written through that descriptor, as the shell itself does.
    """
    with _whole(path, "w") as handle:
        yield handle


@contextlib.contextmanager
def whole_binary_file(path: Path) -> Iterator[BinaryIO]:
    """As `whole_file`, a binary handle (``audit --plot``'s image)."""
    with _whole(path, "wb") as handle:
        yield handle


@contextlib.contextmanager
def _whole(path: Path, how: str) -> Iterator[Any]:
    encoding = None if "b" in how else "utf-8"
    inherited = _inherited_descriptor(path)
    if inherited is not None:
        sys.stdout.flush()  # nothing written earlier comes after the report
        with os.fdopen(os.dup(inherited), how, encoding=encoding) as handle:
            yield handle
        return
    path, mode = _target(path)
    if mode is not None and not stat.S_ISREG(mode):
        with open(path, how, encoding=encoding) as handle:
            yield handle
        return
    if mode is not None and _read_only(path, mode):
        # A rename needs only the directory's permission: a report its user made
        # read-only (an incident's evidence) was replaced where `>` would refuse.
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    beside = True
    try:
        # Created as `open` creates a file (0666 less the umask), not mkstemp's 0600.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except PermissionError:
        if mode is None:  # no file to write and no room for one: `>` fails too
            raise
        # A report its user may write in a directory that takes no new file (a shared
        # reports folder): `>` writes it, so it is staged elsewhere and copied in.
        fd, name = tempfile.mkstemp(prefix=f"ridtrace-{path.name}.", suffix=".partial")
        temporary, beside = Path(name), False
    try:
        with os.fdopen(fd, how, encoding=encoding) as handle:
            yield handle
        if not beside:
            _copy_over(temporary, path)
            return
        if mode is not None:  # replacing a report: it keeps the mode it had
            os.chmod(temporary, stat.S_IMODE(mode))
        try:
            os.replace(temporary, path)
        except PermissionError:
            # Another user's report in a sticky directory (/tmp) may not be replaced,
            # only written, as `>` writes it.
            _copy_over(temporary, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _target(path: Path) -> tuple[Path, int | None]:
    """Where a report to `path` goes (what a link points to: it is replaced, not the
    link) and that file's mode, None when there is no file yet."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        return path, os.stat(path).st_mode
    except FileNotFoundError:
        return path, None


def _read_only(path: Path, mode: int) -> bool:
    """Whether the regular file `path` (of `mode`) is one its user may not write."""
    return stat.S_ISREG(mode) and not os.access(path, os.W_OK)


def _copy_over(complete: Path, path: Path) -> None:
    """Write the complete report `complete` over `path` in place, as the shell's ``>``
    does: a stop while the report was made left `path` as it was; only this copy can be
    cut short (a full disk), and it fails as a write does."""
    with open(complete, "rb") as source, open(path, "wb") as target:
        shutil.copyfileobj(source, target)


# Where /dev/stdout, /dev/fd/N and /proc/self/fd/N lead: this process's descriptors.
_DESCRIPTORS = re.compile(r"/proc/(\d+)/fd/(\d+)")


def _inherited_descriptor(path: Path) -> int | None:
    """The descriptor `path` names when it leads through ``/proc/self/fd`` (which
    ``/dev/stdout`` and ``/dev/fd`` are links to), else None.

    Followed to its end, such a link is a pipe's ``pipe:[N]``, a name no file has, or
    the file the shell opened: the report went to a temporary file beside a path that
    does not exist (``cannot write /dev/stdout``), or replaced a file opened for
    appending (``>> reports.txt``) instead of adding to it.
    """
    current = str(path)
    for _ in range(40):  # the kernel's own limit on links followed
        parent, name = os.path.split(os.path.abspath(current))
        found = _DESCRIPTORS.fullmatch(os.path.join(os.path.realpath(parent), name))
        if found is not None and int(found.group(1)) == os.getpid():
            return int(found.group(2))
        try:
            target = os.readlink(current)
        except OSError:  # not a link (or not there): a path of its own
            return None
        current = os.path.join(parent, target)
    return None


# How fsspec (the Dask engine's inputs) names a local file.
LOCAL_URL = "file://"


class WouldOverwriteALog(click.ClickException):
    """A file the command writes is one of the logs it read: exit 2, as a bad -o is."""

    exit_code = 2


def refuse_to_overwrite(
    writes: Sequence[Path | None], sources: Sequence[Source], stats: ReadStats
) -> None:
    """Raise `WouldOverwriteALog` when one of `writes` is one of the logs read: written
    whole after the read, the report replaced the evidence it was about. A walk's files
    judged not to be logs (an earlier report beside them) may be replaced."""
    # The Dask engine names a local file it walked by its URL (file:///logs/report.json).
    ignored = {note.file.removeprefix(LOCAL_URL) for note in stats.ignored_files}
    refuse_writing_over(writes, [s.path for s in sources if s.name not in ignored])


def refuse_writing_over(writes: Sequence[Path | None], read: Iterable[Path | None]) -> None:
    """Raise `WouldOverwriteALog` when one of `writes` is one of the logs `read`."""
    target = overwritten_log(writes, read)
    if target is not None:
        raise WouldOverwriteALog(f"will not write over {target}: it is one of the logs read")


def one_file(first: Path, second: Path) -> bool:
    """Whether two names lead to one file, there already or not."""
    with contextlib.suppress(OSError):
        return os.path.samefile(first, second)
    return os.path.realpath(first) == os.path.realpath(second)


def names_standard_output(path: Path) -> bool:
    """Whether `path` names the file standard output writes to (``/dev/stdout``,
    ``/dev/fd/1``, or the file stdout was redirected to)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    return False


def overwritten_log(targets: Iterable[Path | None], read: Iterable[Path | None]) -> Path | None:
    """The first of `targets` that is one of the logs `read` (the same file, by device
    and inode, whatever the path; None in `read` is standard input), else None.

    ``ridtrace analyze app.jsonl -o app.jsonl`` replaced the log, the incident's
    evidence, with the report about it.
    """
    written = {}
    for target in targets:
        if target is None or str(target) == "-":
            continue
        with contextlib.suppress(OSError):
            info = os.stat(target)
            if stat.S_ISREG(info.st_mode):
                written[(info.st_dev, info.st_ino)] = target
    if not written:
        return None
    for path in read:
        with contextlib.suppress(OSError):
            # None is standard input: `analyze - -o app.jsonl < app.jsonl` replaced the
            # log as the named path did, which is refused.
            info = os.fstat(0) if path is None else os.stat(path)
            if (info.st_dev, info.st_ino) in written:
                return written[(info.st_dev, info.st_ino)]
    return None


class InputError(click.ClickException):
    """Missing or unreadable input: exit code 2, like a usage error."""

    exit_code = 2


def warn_read_stats(stats: ReadStats) -> None:
    """Stderr lines about bad lines, ignored and unreadable files, with file:line samples.

    Not called under --quiet: then the exit code (3 for input read only in part) and the
    report's summary (``unreadable_files``, ``incomplete_reasons``) say it.
    """
    if stats.bad_lines:
        samples = ", ".join(f"{cited_at(s.file, s.line)} ({s.reason})" for s in stats.samples[:3])
        click.echo(visible(f"ridtrace: skipped {stats.bad_lines} bad line(s), e.g. {samples}"),
                   err=True)
    for note in stats.ignored_files:
        click.echo(visible(f"ridtrace: ignored {note.file}: {note.reason}"), err=True)
    for note in stats.unreadable_files:
        click.echo(visible(f"ridtrace: could not read all of {note.file}: {note.reason}"),
                   err=True)
    if stats.lines == 0 and not stats.unreadable_files:
        # An input that could not be read said so above: "found" none is no answer of it.
        click.echo("ridtrace: no log lines found", err=True)


def echo_out(text: str, *, nl: bool = True, what: str) -> None:
    """`text` on stdout, flushed; a full disk or a closed pipe is exit 2 with a message
    naming `what` could not be written, never a traceback."""
    try:
        click.echo(text, nl=nl)
        sys.stdout.flush()  # the failure shows here, not at exit
    except OSError as exc:
        # Nothing more can reach stdout: point it at /dev/null so the exit's flush
        # does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise InputError(f"cannot write {what} to standard output: "
                         f"{exc.strerror or exc}") from None


def is_standard_output(output: Path | None) -> bool:
    """Whether the report goes to stdout: no ``-o``, or ``-o -`` (as ``-`` is stdin for
    inputs), which a terminal then shows laid out and coloured for it."""
    return output is None or str(output) == "-"


def emit(text: str, output: Path | None) -> None:
    """Write the report to `output`, or to stdout; a report that cannot be written is an
    error (exit 2), never a traceback or an exit code that reads as findings."""
    if output is None or is_standard_output(output):  # (None, for the type checker)
        echo_out(text, nl=not text.endswith("\n"), what="the report")
        return
    try:
        with whole_file(output) as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        raise InputError(f"cannot write {visible(str(output))}: {exc.strerror}") from exc
