"""Glob patterns expanded as ``glob.glob(pattern, recursive=True)`` does, but for loops.

A ``**`` descends into linked directories, and Python's glob follows a link back up the
tree (``logs/current -> .``) round and round: with two such links the paths it lists
grow without end. Here a ``**`` never descends into a directory its path already passed
through, so a pattern matches what it matched before, less the loops.
"""

from __future__ import annotations

import glob
import os

__all__ = ["glob_matches"]


def glob_matches(pattern: str) -> list[str]:
    """The paths `pattern` matches, sorted; a ``**`` matches zero or more directories,
    none of them hidden, and never one its path already passed through."""
    parts = pattern.split("/")
    if "**" not in parts:
        return sorted(glob.glob(pattern, recursive=True))
    at = parts.index("**")
    head, rest = "/".join(parts[:at]), parts[at + 1:]
    if at == 1 and parts[0] == "":
        head = "/"  # an absolute pattern starting with '/**'
    bases = sorted(glob.glob(head)) if glob.has_magic(head) else [head]
    found: set[str] = set()
    for base in bases:
        if not os.path.isdir(base or "."):
            continue
        for directory in _directories_once(base):
            if not any(rest):  # 'logs/**': every directory and file below
                found.add(directory)
                found.update(_visible(directory, dirs=False))
                continue
            found.update(glob_matches(os.path.join(glob.escape(directory), *rest)))
    return sorted(p for p in found if p)


def _directories_once(base: str) -> list[str]:
    """`base` and the visible directories below it, links followed, but never into a
    directory (by device and inode) the path already passed through: a loop."""
    out: list[str] = []
    stack: list[tuple[str, frozenset[tuple[int, int]]]] = [(base, frozenset())]
    while stack:
        directory, above = stack.pop()
        try:
            stat = os.stat(directory or ".")
        except OSError:
            continue
        key = (stat.st_dev, stat.st_ino)
        if key in above:
            continue
        out.append(directory)
        stack.extend((child, above | {key})
                     for child in reversed(_visible(directory, dirs=True)))
    return out


def _visible(directory: str, *, dirs: bool) -> list[str]:
    """The paths of `directory`'s entries not named with a leading dot: its directories
    (links to one too) when `dirs`, its other entries otherwise."""
    try:
        entries = sorted(os.scandir(directory or "."), key=lambda entry: entry.name)
    except OSError:
        return []
    paths = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir == dirs:
            paths.append(os.path.join(directory, entry.name))
    return paths
