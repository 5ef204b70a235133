"""Temporary copies the read makes (decoded archives, pipes, logs without a long line).

A decoded copy is as large as the log it comes from. A run interrupted with Ctrl-C
leaves at once (`ridtrace.cli.quick_exit`), before the reading threads reach their
cleanup, so the copies in flight are kept here and the interrupt removes them first.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_IN_FLIGHT: set[str] = set()
_LOCK = threading.Lock()
# Set by `remove_all`: the run is ending, and a reading thread still making copies (a
# batch of small files makes dozens in a row) must not leave one behind after it.
_CLOSED: list[bool] = []


@contextlib.contextmanager
def staging_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory for one copy, removed when the block ends (or by
    `remove_all` if the run is interrupted first)."""
    path = make_dir(prefix)
    try:
        yield path
    finally:
        release(path)


def make_dir(prefix: str) -> Path:
    """A temporary directory the caller removes with `release`.

    Its name is in flight before the directory exists: made first (mkdtemp) and noted
    after, a stop that came in between (the interrupt raised there, or `remove_all` run
    from the main thread while a reading thread stood there) left a directory nobody
    knew of, as large as the log once the copy was written. The lock holds `remove_all`
    off until the directory it will find is made.
    """
    with _LOCK:
        if _CLOSED:
            raise OSError("the run is ending: no more temporary copies")
        while True:
            path = Path(tempfile.gettempdir(), prefix + secrets.token_hex(8))
            _IN_FLIGHT.add(str(path))
            try:
                path.mkdir(mode=0o700)  # mkdtemp's mode: the copy is the log's content
            except FileExistsError:
                _IN_FLIGHT.discard(str(path))
                continue
            return path


def release(path: Path) -> None:
    """Remove `path` and forget it (in that order: a stop mid-removal still finds it)."""
    shutil.rmtree(path, ignore_errors=True)
    with _LOCK:
        _IN_FLIGHT.discard(str(path))


def reopen() -> None:
    """Make copies again: a new command in this process (a test's, a library caller's
    after an interrupted one); `remove_all` closed the staging for the one it ended."""
    with _LOCK:
        _CLOSED.clear()


def remove_all() -> None:
    """Remove every copy still in flight, and make no more: the run is ending without
    its cleanup."""
    with _LOCK:
        _CLOSED.append(True)
        paths = list(_IN_FLIGHT)
        _IN_FLIGHT.clear()
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
