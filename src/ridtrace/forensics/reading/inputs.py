"""Turn the user's PATH arguments into readable log sources.

Accepts files, directories (walked recursively), glob patterns, gzip files (detected
by their magic bytes, whatever the name) and ``-`` for standard input.
"""

from __future__ import annotations

import glob
import gzip
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

STDIN_NAME = "<stdin>"
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 4096


class ForensicsInputError(ValueError):
    """An input path is missing, unreadable or matches nothing (the CLI exits 2)."""


@dataclass(frozen=True)
class Source:
    """One log input: a file on disk or standard input."""

    name: str
    path: Path | None
    size: int
    from_directory: bool = False


def _has_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        found.extend(Path(dirpath) / name for name in sorted(filenames))
    return found


def _file_source(path: Path, *, from_directory: bool) -> Source:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ForensicsInputError(f"cannot read {path}: {exc.strerror}") from exc
    if not os.access(path, os.R_OK):
        raise ForensicsInputError(f"cannot read {path}: permission denied")
    return Source(name=str(path), path=path, size=size, from_directory=from_directory)


def expand_inputs(inputs: Sequence[str]) -> list[Source]:
    """Resolve PATH arguments to sources, in the order given, each file once.

    Raises `ForensicsInputError` for a path that does not exist or a glob that matches
    nothing: a typo must not look like a clean bill of health.
    """
    if not inputs:
        raise ForensicsInputError("no input paths given")
    sources: list[Source] = []
    seen: set[str] = set()

    def add(src: Source) -> None:
        key = src.name if src.path is None else str(src.path.resolve())
        if key not in seen:
            seen.add(key)
            sources.append(src)

    for raw in inputs:
        if raw == "-":
            add(Source(name=STDIN_NAME, path=None, size=0))
            continue
        path = Path(raw)
        if path.is_dir():
            for child in _walk(path):
                if child.is_file():
                    add(_file_source(child, from_directory=True))
        elif path.exists():
            add(_file_source(path, from_directory=False))
        elif _has_glob(raw):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                raise ForensicsInputError(f"no files match {raw!r}")
            for match in matches:
                mpath = Path(match)
                if mpath.is_dir():
                    for child in _walk(mpath):
                        if child.is_file():
                            add(_file_source(child, from_directory=True))
                elif mpath.is_file():
                    add(_file_source(mpath, from_directory=False))
        else:
            raise ForensicsInputError(f"no such file or directory: {raw}")
    return sources


def open_source(src: Source) -> tuple[BinaryIO, BinaryIO]:
    """Open a source for reading; returns (decoded stream, raw stream for progress).

    Gzip is recognised by its magic bytes so ``.log.1`` rotated-and-compressed files
    and piped ``zcat``-less input work too.
    """
    raw: BinaryIO
    if src.path is None:
        stdin: Any = sys.stdin.buffer
        # peek() lets us sniff gzip without consuming bytes; wrap streams that lack it.
        raw = stdin if hasattr(stdin, "peek") else io.BufferedReader(stdin)
        head = raw.peek(2)[:2]
    else:
        try:
            raw = open(src.path, "rb")  # noqa: SIM115 - closed by the caller
        except OSError as exc:
            raise ForensicsInputError(f"cannot read {src.name}: {exc.strerror}") from exc
        head = raw.read(2)
        raw.seek(0)
    if head == _GZIP_MAGIC:
        return cast(BinaryIO, gzip.GzipFile(fileobj=raw, mode="rb")), raw
    return raw, raw


def looks_like_log(stream: BinaryIO) -> bool:
    """Cheap sniff used for files found by walking a directory: JSON lines or nothing.

    A directory of logs often also holds READMEs, images and core dumps; reading
    those line by line would only bury the report under bad-line counts.
    """
    peek = getattr(stream, "peek", None)
    head = peek(_SNIFF_BYTES)[:_SNIFF_BYTES] if peek is not None else b""
    if not head:
        return True
    if b"\x00" in head:
        return False
    return head.lstrip()[:1] in (b"{", b"")
