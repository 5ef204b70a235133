"""How many files a follower may hold open at once.

A followed file is held open for as long as it is followed (it is tracked by its inode
through renames), so a directory of more files than the process's soft limit on open
files (1024 by default on Linux) used every descriptor, and the next file the poll
itself opened (the staged chunk, DuckDB's) stopped the follow with a traceback, exit 4.
"""

from __future__ import annotations

import resource

from ridtrace.open_file_limit import UNLIMITED_CEILING

__all__ = ["RESERVE", "tail_budget", "too_many_open"]

# Descriptors kept for what a poll opens besides the followed files: the staged chunk,
# DuckDB's files, a compressed rotation read a second time, the terminal.
RESERVE = 64


def tail_budget() -> int:
    """How many followed files may be open at once under the current soft limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return UNLIMITED_CEILING
    return max(soft - RESERVE, 16)


def too_many_open(budget: int) -> str:
    """Why a file is not followed (yet): the follower holds as many files as it may."""
    return (
        f"not followed: {budget} files are open, as many as the open-file limit leaves "
        "room for (raise it: ulimit -n); followed once another file is closed"
    )
