"""Whether a compressed file that ends in a tear may still be being compressed.

`gzip app.jsonl.1` (logrotate's ``compress``, or a shipper copying a part in) writes the
file in bursts, pausing between them to compress or when short of CPU. Taken as final at
the first poll that found it the same size, such a file was a torn one (a bad line, the
run incomplete, exit 3 on clean logs), then read again once whole, its lines twice.
"""

from __future__ import annotations

import os
import time

GZIP_QUIET_S = 5.0
"""How long a torn compressed file must go unwritten before its tear is taken as final."""


def still_compressing(status: os.stat_result, size_at_tear: int, *, grown: bool) -> bool:
    """Whether to wait for more of a torn compressed file: written to within
    `GZIP_QUIET_S` and the size its tear was seen at, or (`grown`) grown since."""
    if status.st_size != size_at_tear:
        return grown
    return time.time() - status.st_mtime < GZIP_QUIET_S
