"""A directory's files, walked as the reads walk a log folder; the standard library only,
so `analyze --follow` can look at its inputs before anything heavier is loaded
(`live.launch`)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["walk_files"]


def walk_files(root: Path | str) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Files under `root` in name order (a directory's own before its subdirectories'),
    and the directories that could not be listed, with why.

    Linked directories are walked like the others (logs are often a link to a volume),
    each directory once: a link back up the tree ends there.
    """
    found: list[Path] = []
    unlisted: list[tuple[Path, str]] = []
    visited: set[tuple[int, int]] = set()
    # Depth first, in name order, as os.walk goes, but with a stack of its own: Python
    # 3.11's os.walk recursed once per level, so a tree a thousand directories deep (a
    # hostile archive) stopped the run with a RecursionError.
    stack = [os.fspath(root)]
    while stack:
        dirpath = stack.pop()
        try:
            info = os.stat(dirpath)
            if (info.st_dev, info.st_ino) in visited:
                continue
            visited.add((info.st_dev, info.st_ino))
            with os.scandir(dirpath) as entries:
                listed = sorted((entry.name, _is_dir(entry)) for entry in entries)
        except OSError as exc:
            where = Path(exc.filename) if exc.filename else Path(root)
            unlisted.append((where, f"cannot list it: {exc.strerror}"))
            continue
        found.extend(Path(dirpath) / name for name, is_dir in listed if not is_dir)
        stack.extend(os.path.join(dirpath, name) for name, is_dir in reversed(listed) if is_dir)
    return found, unlisted


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """A directory, or a link to one (walked like the others); False when unknowable."""
    try:
        return entry.is_dir()
    except OSError:
        return False
