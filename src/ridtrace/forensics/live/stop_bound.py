"""Where a followed file's read stops once the follow is asked to stop (Ctrl-C, SIGTERM):
at what was written then, a line cut there read to its newline; and what a follow
stopped at once (a second signal) left unread.

`StopBound` is a base of `live.tail.FileTail`, as `FileEnds` is of `live.watch.Watch`:
`FileTail` holds the state these methods read.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from ridtrace.forensics.live.line_ends import to_line_end


class StopBound:
    """The stop of a `FileTail`, which holds these attributes."""

    _fh: BinaryIO
    gzip: bool
    done: bool
    offset: int
    # Set when the follow is asked to stop: read no byte written after that.
    stop_at: int | None
    _tear_final: bool  # the follow is stopping: a tear seen now is for good

    def bound(self) -> None:
        """Read no further than what is written now (the follow was asked to stop).

        Without a bound, a writer faster than the follower kept a stopped follow reading
        for as long as it wrote: Ctrl-C did nothing, a container stop ran into its kill.
        """
        if self.gzip:
            self._tear_final = True
        else:
            self.stop_at = os.fstat(self._fh.fileno()).st_size

    def _bounded(self, size: int) -> int:
        """`size`, or less once the follow is stopping. A line the bound cuts is read
        to its newline: the rest was being written, a half line would be a bad line."""
        stop_at = self.stop_at
        if stop_at is None:
            return size
        stop_at = self.stop_at = to_line_end(self._fh.fileno(), stop_at, size)
        return min(size, stop_at)

    def left_unread(self) -> str | None:
        """Why a follow stopped at once left part of this file unread, or None when it
        was read to its end (to the stop's bound; a last line's held piece aside)."""
        if self.done:
            return None
        if self.gzip:
            return "stopped before its end (a compressed rotation being read)"
        left = self._bounded(os.fstat(self._fh.fileno()).st_size) - self.offset
        return f"stopped before its end: {left} bytes not read" if left > 0 else None
