"""Temporary copies the read makes (decoded archives, pipes, logs without a long line).

A decoded copy is as large as the log it comes from. A run interrupted with Ctrl-C
leaves at once (`ridtrace.cli.quick_exit`), before the reading threads reach their
cleanup, so the copies in flight are kept here and the interrupt removes them first.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_IN_FLIGHT: set[str] = set()
_LOCK = threading.Lock()


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
    """A temporary directory the caller removes with `release`."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    with _LOCK:
        _IN_FLIGHT.add(str(path))
    return path


def release(path: Path) -> None:
    """Remove `path` and forget it."""
    with _LOCK:
        _IN_FLIGHT.discard(str(path))
    shutil.rmtree(path, ignore_errors=True)


def remove_all() -> None:
    """Remove every copy still in flight: the run is ending without its cleanup."""
    with _LOCK:
        paths = list(_IN_FLIGHT)
        _IN_FLIGHT.clear()
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
