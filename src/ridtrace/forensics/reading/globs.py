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


def glob_matches(pattern: str, unlisted: dict[str, str] | None = None) -> list[str]:
    """The paths `pattern` matches, sorted; a ``**`` matches zero or more directories,
    none of them hidden, and never one its path already passed through.

    `unlisted` gets each directory a ``**`` could not look into (path → why): passed
    over without a word, a log folder the user may not read made `'logs/**/*.jsonl'`
    a complete read (exit 0) where `logs` said "cannot list it" (exit 3)."""
    parts = pattern.split("/")
    if "**" not in parts:
        if unlisted is not None and len(parts) > 1 and glob.has_magic(parts[-1]):
            _note_unlistable("/".join(parts[:-1]), unlisted)
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
        for directory in _directories_once(base, unlisted):
            if not any(rest):  # 'logs/**': every directory and file below
                found.add(directory)
                found.update(_visible(directory, dirs=False))
                continue
            found.update(glob_matches(os.path.join(glob.escape(directory), *rest), unlisted))
    return sorted(p for p in found if p)


def _directories_once(base: str, unlisted: dict[str, str] | None = None) -> list[str]:
    """`base` and the visible directories below it, links followed, but never into a
    directory (by device and inode) the path already passed through: a loop."""
    out: list[str] = []
    stack: list[tuple[str, frozenset[tuple[int, int]]]] = [(base, frozenset())]
    while stack:
        directory, above = stack.pop()
        try:
            stat = os.stat(directory or ".")
        except OSError as exc:
            _note(unlisted, directory, exc)
            continue
        key = (stat.st_dev, stat.st_ino)
        if key in above:
            continue
        out.append(directory)
        stack.extend((child, above | {key})
                     for child in reversed(_visible(directory, dirs=True, unlisted=unlisted)))
    return out


def _note_unlistable(head: str, unlisted: dict[str, str]) -> None:
    """Note each directory `head` matches whose entries the last part of a pattern
    cannot be matched against (``glob.glob`` passes over it without a word)."""
    for directory in glob.glob(head or "/"):
        if not os.path.isdir(directory):
            continue
        try:
            with os.scandir(directory):
                pass
        except OSError as exc:
            _note(unlisted, directory, exc)


def _note(unlisted: dict[str, str] | None, directory: str, exc: OSError) -> None:
    # Gone since its parent was listed: nothing left in it to read.
    if unlisted is not None and not isinstance(exc, FileNotFoundError):
        unlisted.setdefault(directory or ".", f"cannot list it: {exc.strerror or exc}")


def _visible(directory: str, *, dirs: bool, unlisted: dict[str, str] | None = None
             ) -> list[str]:
    """The paths of `directory`'s entries not named with a leading dot: its directories
    (links to one too) when `dirs`, its other entries otherwise."""
    try:
        entries = sorted(os.scandir(directory or "."), key=lambda entry: entry.name)
    except OSError as exc:
        _note(unlisted, directory, exc)
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
