"""What the inputs of `analyze --follow` held when the command started.

A follow starts from the end of what is written: but it looks at its inputs only once
its modules are loaded and its reader made, a second or more after the command began.
A service started beside it (`ridtrace analyze logs --follow & start-services`) had
created its logs and written its first incidents by then, and they were skipped as old:
the summary said 0 lines and the run exited 0. The sizes taken here, at once and with
the standard library only, say what was old: a file is followed from its size then,
and one created since from its first line.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterator, Sequence

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


def _paths(inputs: Sequence[str]) -> Iterator[str]:
    for raw in inputs:
        if raw == "-":
            continue
        matches = glob.glob(raw, recursive=True) if glob.has_magic(raw) else [raw]
        for path in matches:
            if os.path.isdir(path):
                yield from _under(path)
            else:  # a named log's rotated parts lie beside it
                yield from _under(os.path.dirname(path) or ".", depth=0)


def _under(top: str, depth: int = -1) -> Iterator[str]:
    """Files under `top` (linked directories too, each once); `depth` 0: only its own."""
    seen: set[DevIno] = set()
    for root, dirs, files in os.walk(top, followlinks=True):
        try:
            st = os.stat(root)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs.clear()
            continue
        seen.add((st.st_dev, st.st_ino))
        yield from (os.path.join(root, name) for name in files)
        if depth == 0:
            dirs.clear()
