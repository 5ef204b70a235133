"""What the inputs of `analyze --follow` held when the command started.

A follow starts from the end of what is written: but it looks at its inputs only once
its modules are loaded and its reader made, a second or more after the command began.
A service started beside it (`ridtrace analyze logs --follow & start-services`) had
created its logs and written its first incidents by then, and they were skipped as old:
the summary said 0 lines and the run exited 0. The sizes taken here, at once and with
modules that need the standard library only (`reading.globs`, `reading.tree`), say what
was old: a file is followed from its size then, and one created since from its first
line.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from glob import has_magic
from pathlib import Path

from ridtrace.forensics.reading.globs import glob_matches
from ridtrace.forensics.reading.tree import walk_files

DevIno = tuple[int, int]


def sizes_at_launch(inputs: Sequence[str]) -> dict[DevIno, int]:
    """Each regular file the inputs may name now (every file under a directory, beside
    a named file, or a glob matches), by inode: its size."""
    sizes: dict[DevIno, int] = {}
    for path in _paths(inputs):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            sizes[(st.st_dev, st.st_ino)] = st.st_size
    return sizes


def _paths(inputs: Sequence[str]) -> Iterator[Path]:
    for raw in inputs:
        if raw == "-":
            continue
        # Matched as the follow matches it (`reading.globs`: no hidden directory, no
        # link loop), walked as it walks (`reading.tree`).
        for path in map(Path, glob_matches(raw) if has_magic(raw) else [raw]):
            if os.path.isdir(path):  # False for any name it cannot stat, as before
                yield from walk_files(path)[0]
            else:  # a named log's rotated parts lie beside it
                yield from _beside(path.parent)


def _beside(directory: Path) -> Iterator[Path]:
    try:
        with os.scandir(directory) as entries:
            yield from (Path(entry.path) for entry in entries)
    except OSError:
        return
