"""Standard streams that write all they are given, or fail, under ``PYTHONUNBUFFERED``.

With ``PYTHONUNBUFFERED=1`` (or ``python -u``), common in Docker images and CI jobs,
Python's text stdout and stderr sit on an unbuffered file whose ``write`` may write
less than asked, and the text layer ignores the count: a reader that left mid-report
(``| head``) or a disk that filled part way left a report cut short, the rest dropped
without an error, and the run's exit code read as a whole report. A buffered writer
retries the rest and raises on its failure, as stdout does without the variable.
"""

from __future__ import annotations

import io
import sys
from typing import TextIO


class _WholeFileIO(io.FileIO):
    """A file whose ``write`` writes everything or raises, as a buffered writer does."""

    def write(self, data: object) -> int:
        view = memoryview(data).cast("B")  # type: ignore[arg-type]
        done = 0
        while done < len(view):
            written = super().write(view[done:])
            if written is None:  # a non-blocking descriptor would block: write what fits
                break
            done += written
        return done


def _whole(stream: TextIO | None) -> TextIO | None:
    """`stream` again, unbuffered still, but over a file that never drops a short write."""
    if not isinstance(stream, io.TextIOWrapper) or not isinstance(stream.buffer, io.FileIO):
        return stream  # buffered already (the default), or not a standard file at all
    stream.flush()
    raw = _WholeFileIO(stream.fileno(), "w", closefd=False)
    return io.TextIOWrapper(raw, encoding=stream.encoding, errors=stream.errors,
                            line_buffering=stream.line_buffering, write_through=True)


def write_whole_on_standard_streams() -> None:
    """Make sys.stdout and sys.stderr write whole or fail (see the module's docstring)."""
    sys.stdout = _whole(sys.stdout)
    sys.stderr = _whole(sys.stderr)
