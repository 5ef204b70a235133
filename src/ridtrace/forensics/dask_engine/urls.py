"""PATH arguments for the Dask engine: local paths as the pandas engine reads them, or URLs.

Local paths go through `ridtrace.forensics.reading.inputs.expand_inputs` (same files, same
names in the evidence as the pandas engine). Anything with a ``scheme://`` is an fsspec
URL — ``file://``, ``s3://`` (with ``s3fs``), ``gs://``, ``memory://`` … — expanded with
the filesystem's own glob and directory walk, and read by the workers directly.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import fsspec

from ridtrace.forensics.dask_engine.blocks import LogFile
from ridtrace.forensics.reading.inputs import (
    ForensicsInputError,
    Source,
    expand_inputs,
    not_regular_reason,
)
from ridtrace.forensics.reading.rotation import absolute_path, oldest_first


def _is_url(raw: str) -> bool:
    return "://" in raw


def _has_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _url_files(raw: str) -> list[LogFile]:
    try:
        fs, path = fsspec.core.url_to_fs(raw)
    except (ImportError, ValueError) as exc:  # e.g. s3:// without s3fs installed
        raise ForensicsInputError(f"cannot read {raw}: {exc}") from exc
    try:
        if fs.isdir(path):
            found = [(p, True) for p in sorted(fs.find(path))]
        elif fs.isfile(path):
            found = [(path, False)]
        elif _has_glob(path):
            found = []
            for match in sorted(fs.glob(path)):
                if fs.isdir(match):
                    found += [(p, True) for p in sorted(fs.find(match))]
                else:
                    found.append((match, False))
            if not found:
                raise ForensicsInputError(f"no files match {raw!r}")
        else:
            raise ForensicsInputError(f"no such file or directory: {raw}")
        return [_log_file(fs, raw, p, from_dir) for p, from_dir in found]
    except OSError as exc:
        raise ForensicsInputError(f"cannot read {raw}: {exc}") from exc


def _log_file(fs: Any, raw: str, path: str, from_directory: bool) -> LogFile:
    url = fs.unstrip_protocol(path)
    # A URL given as-is keeps its spelling in the evidence; expanded ones are canonical.
    name = raw if not from_directory and not _has_glob(raw) else url
    return LogFile(name=name, url=url, size=int(fs.size(path)), from_directory=from_directory)


def _local_file(src: Source) -> LogFile:
    """A local source as the engine's file, with why it is not read when it is not
    (as the local engine's `read_source` decides)."""
    assert src.path is not None
    skip: tuple[str, bool] | None = None
    if src.unreadable is not None:
        skip = (src.unreadable, True)
    elif src.from_directory and not src.regular:
        skip = not_regular_reason(src.path)
    url = str(src.path.resolve()) if skip is None else os.path.abspath(src.path)
    return LogFile(src.name, url, src.size, src.from_directory, skip)


def expand_urls(inputs: Sequence[str]) -> list[LogFile]:
    """Resolve PATH arguments (paths or URLs) to files, in the order given, each once;
    the parts of a rotated log oldest first, as `expand_inputs` orders them.

    Raises `ForensicsInputError` for a missing path, an empty glob, or ``-`` (standard
    input cannot be split across workers).
    """
    if not inputs:
        raise ForensicsInputError("no input paths given")
    files: list[LogFile] = []
    seen: set[str] = set()
    for raw in inputs:
        if raw == "-":
            raise ForensicsInputError("--engine dask cannot read standard input; give paths")
        if _is_url(raw):
            found = _url_files(raw)
        else:
            found = [_local_file(s) for s in expand_inputs([raw]) if s.path is not None]
        for f in found:
            if f.url not in seen:
                seen.add(f.url)
                files.append(f)
    return oldest_first(files, _file_path)


def _file_path(f: LogFile) -> str:
    # By the name the evidence shows, as the local engine orders: a symbolic link named
    # like the live file is the live file, whatever it points at.
    return f.name if _is_url(f.name) else absolute_path(f.name)
