"""What a followed file or stream hands out per read: whole lines, numbered (`Chunk`)."""

from __future__ import annotations

from dataclasses import dataclass

from ridtrace.forensics.reading.lines import LineScan


@dataclass(frozen=True)
class Chunk:
    """Whole lines of one file: ``data`` holds ``scan.newlines`` lines from
    ``first_line`` on (`scan`: what the tail's one pass over them found)."""

    name: str
    first_line: int
    data: memoryview
    scan: LineScan
    # The content stream (`Identity.label`): a rotated copy's or a renamed file's lines
    # count with the lines read before, so a line torn by the rotation is not a file of
    # its own with no log record in it.
    stream: str

    @property
    def newlines(self) -> int:
        """How many lines ``data`` holds."""
        return self.scan.newlines
