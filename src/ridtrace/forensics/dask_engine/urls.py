"""PATH arguments for the Dask engine: local paths as the pandas engine reads them, or URLs.

Local paths go through `ridtrace.forensics.reading.inputs.expand_inputs` (same files, same
names in the evidence as the pandas engine). Anything with a ``scheme://`` is an fsspec
URL — ``file://``, ``s3://`` (with ``s3fs``), ``gs://``, ``memory://`` … — expanded with
the filesystem's own glob and directory walk, and read by the workers directly.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from ridtrace.forensics.dask_engine.blocks import LogFile
from ridtrace.forensics.reading.inputs import (
    NOT_REGULAR,
    ForensicsInputError,
    Inputs,
    Source,
    expand_inputs,
    input_list,
    names_apart,
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
            return _walk(fs, raw, path)
        if fs.isfile(path):
            return [_log_file(fs, raw, path, from_directory=False)]
        if _has_glob(path):
            found: list[LogFile] = []
            for match in sorted(fs.glob(path)):
                if fs.isdir(match):
                    found += _walk(fs, raw, match)
                elif fs.isfile(match):
                    found.append(_log_file(fs, raw, match, from_directory=False))
                else:  # a pipe or a broken link: listed, as a local glob lists it
                    found.append(_not_read(fs, match))
            if not found:
                raise ForensicsInputError(f"no files match {raw!r}")
            return found
        raise ForensicsInputError(f"no such file or directory: {raw}")
    except OSError as exc:
        raise ForensicsInputError(f"cannot read {raw}: {exc}") from exc


def _walk(fs: Any, raw: str, root: str) -> list[LogFile]:
    """The files under `root`, in name order. An entry that is no regular file (a pipe,
    a broken link) is listed with why it is not read, as a local walk lists it, and never
    opened: a worker reading a pipe would wait for a writer forever.

    A local folder (``file://``) is walked as the local engine walks it, its files named
    by their URLs: fsspec's walk took a link for no file and followed no linked folder,
    so a folder of links (a Kubernetes node's ``/var/log/containers``) was "ignored", and
    a folder holding one an incident's log linked in said "No findings" (exit 0).
    """
    if isinstance(fs, LocalFileSystem):
        return [replace(_local_file(src), name=fs.unstrip_protocol(src.name))
                for src in expand_inputs([root]) if src.path is not None]
    found: list[LogFile] = []
    for path, info in sorted(fs.find(root, detail=True).items()):
        if info.get("type") == "file":
            found.append(_log_file(fs, raw, path, from_directory=True))
            continue
        found.append(_not_read(fs, path))
    return found


def _not_read(fs: Any, path: str) -> LogFile:
    """An entry that is no regular file, with why it is not read."""
    url = fs.unstrip_protocol(path)
    local = isinstance(fs, LocalFileSystem)
    skip = not_regular_reason(Path(path)) if local else (NOT_REGULAR, False)
    return LogFile(name=url, url=url, size=0, from_directory=True, skip=skip)


def _log_file(fs: Any, raw: str, path: str, from_directory: bool) -> LogFile:
    url = fs.unstrip_protocol(path)
    # A URL given as-is keeps its spelling in the evidence; expanded ones are canonical.
    name = raw if not from_directory and not _has_glob(raw) else url
    return LogFile(name=name, url=url, size=int(fs.size(path)), from_directory=from_directory)


def _local_file(src: Source) -> LogFile:
    """A local source as the engine's file, with why it is not read when it is not
    (as the local engine's `read_source` decides)."""
    assert src.path is not None
    if not src.from_directory and not src.regular and src.unreadable is None:
        # A pipe is read once, as a stream, by the process that opens it: the workers
        # open files by path in processes of their own (<(zcat …) names the caller's
        # /dev/fd/63), and a stream has no size to plan blocks by. Both crashed (exit 4).
        raise ForensicsInputError(
            f"--engine dask cannot read {src.name}: {NOT_REGULAR}; read it without "
            "--engine dask, or save it to a file first")
    skip: tuple[str, bool] | None = None
    if src.unreadable is not None:
        skip = (src.unreadable, True)
    elif src.from_directory and not src.regular:
        skip = not_regular_reason(src.path)
    url = str(src.path.resolve()) if skip is None else os.path.abspath(src.path)
    return LogFile(src.name, url, src.size, src.from_directory, skip)


def expand_urls(inputs: Inputs) -> list[LogFile]:
    """Resolve PATH arguments (paths or URLs) to files, in the order given, each once;
    the parts of a rotated log oldest first, as `expand_inputs` orders them.

    Raises `ForensicsInputError` for a missing path, an empty glob, ``-`` or a named pipe
    (a stream cannot be split across workers).
    """
    inputs = input_list(inputs)
    if not inputs:
        raise ForensicsInputError("no input paths given")
    files: list[LogFile] = []
    seen: dict[object, int] = {}
    for raw in inputs:
        if raw == "-":
            raise ForensicsInputError("--engine dask cannot read standard input; give paths")
        if _is_url(raw):
            found = _url_files(raw)
        else:
            found = [_local_file(s) for s in expand_inputs([raw]) if s.path is not None]
        for f in found:
            key = _identity(f)
            at = seen.get(key)
            if at is None:
                seen[key] = len(files)
                files.append(f)
            elif files[at].from_directory and not f.from_directory:
                files[at] = f  # walked first, named too: read as named (`expand_inputs`)
    files = oldest_first(files, _file_path)
    # Named apart across the arguments, as `expand_inputs` names them: two files shown
    # under one name (`w\xe9.jsonl` spelt with a backslash beside one holding the byte
    # 0xE9) stopped the read (exit 4, "categories must be unique").
    names = names_apart([(f.name, None if _is_url(f.name) else not os.path.isabs(f.name))
                         for f in files])
    return [f if name == f.name else replace(f, name=name)
            for f, name in zip(files, names, strict=True)]


def _identity(f: LogFile) -> object:
    """What tells one file from another: a local file's device and inode (a hard link,
    or a ``file://`` URL, names one read already: its lines were read twice, `files`
    and `lines` counted them twice, as `expand_inputs` does not), else its URL."""
    local = f.url.removeprefix("file://") if f.url.startswith("file://") else f.url
    if _is_url(local):
        return f.url
    if f.skip is not None:
        # A walk names an entry it does not read by its path, a glob by its URL: one
        # entry named both ways (a folder and a glob over it, a `**` matching the folder
        # itself) was listed twice under one name, and the run ended in a traceback.
        return ("not read", os.path.abspath(local))
    try:
        st = os.stat(local)
    except OSError:
        return f.url
    return (st.st_dev, st.st_ino)


def _file_path(f: LogFile) -> str:
    # By the name the evidence shows, as the local engine orders: a symbolic link named
    # like the live file is the live file, whatever it points at.
    return f.name if _is_url(f.name) else absolute_path(f.name)
