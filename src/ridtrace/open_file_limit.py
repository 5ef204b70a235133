"""Raising a process's soft limit on open files to its hard one.

Every connection a server holds and every file a follower tails is a descriptor, and
the soft limit is often 1024 (a login shell's) under a far higher hard one. Both
`ridtrace serve` and `ridtrace analyze --follow` raise it at start-up, as Go programs do.
"""

from __future__ import annotations

import contextlib
import os
import resource

__all__ = ["UNLIMITED_CEILING", "raise_open_file_limit", "spare_descriptors"]

# A ceiling for a soft limit raised to an unlimited hard one (the kernel's nr_open).
UNLIMITED_CEILING = 1 << 20


def raise_open_file_limit() -> None:
    """Raise this process's soft limit on open files to its hard limit, as far as allowed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = UNLIMITED_CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        # Above the kernel's nr_open the call fails: keep the limit there is.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def spare_descriptors() -> int:
    """How many more files this process may open now under its soft limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return UNLIMITED_CEILING
    try:
        in_use = len(os.listdir("/dev/fd"))  # Linux and the BSDs; one is listdir's own
    except OSError:
        in_use = 0
    return max(0, soft - in_use)
