"""Arrow's memory pool for a batch read: the C library's allocator, not mimalloc."""

from __future__ import annotations

import os

__all__ = ["use_system_allocator"]


def use_system_allocator() -> None:
    """Make Arrow allocate from the C library's ``malloc`` for the rest of this process,
    unless ``ARROW_DEFAULT_MEMORY_POOL`` names a pool (the user's choice stands).

    pyarrow's default pool, mimalloc, gives freed pages back to the kernel at once and
    faults fresh, zeroed ones in for the next allocation: the read's Arrow results, the
    takes and casts after it and the requests frame's text columns. On the 0.93M-line
    Dynamo incidents of `benchmarks/bench_forensics.py`, `analyze` spent a fifth to a
    third of its CPU in the kernel, much of it zeroing pages; with ``malloc`` it ran in
    0.92–0.98× the wall time and peaked 37–49 MiB lower (medians of 8 runs each;
    docs/performance.md, *Thirty-first session*).

    For the commands that read a batch and end (``analyze``, ``trace``, ``export``,
    ``audit``): the follower (``--follow``) runs for hours, where mimalloc's prompt
    return of memory is what keeps it flat, and a caller of the Python API keeps the
    pool it chose.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
