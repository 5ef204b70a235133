"""The parts of one rotated log, oldest first, whatever order they were named in.

A request that was in flight when its log rotated has its first lines in the rotated
part (``app.jsonl.1``) and its last ones in the live file (``app.jsonl``). Combining
a span's lines takes "first" and "last" values in input order
(`ridtrace.forensics.records.partials`), so that order must be the log's own: a
directory walk sorts ``app.jsonl`` before ``app.jsonl.1``, and a shell glob or the
user's typing can give any order.

A rotated part is named after its live file plus a mark (the live file, unmarked, is
the newest):

- ``NAME.N`` / ``NAME.N.gz`` (or ``.bz2``, ``.xz``, ``.zst``; logrotate, Python's
  `RotatingFileHandler`): a higher N is older;
- ``NAME-YYYYMMDD…`` (logrotate's ``dateext``; ``NAME-YYYY-MM-DD…`` with its
  ``dateformat -%Y-%m-%d``), ``NAME.YYYY-MM-DD…`` (Python's
  `TimedRotatingFileHandler`, loguru) and ``NAME.YYYYMMDD-HHMMSS`` (kubelet's
  ``0.log.20261129-100000.gz``): an earlier date is older;
- the mark before the extension (``app.1.jsonl``, ``app-20261130.jsonl.gz``: logrotate's
  ``extension``, loguru's ``app.2026-11-30_14-05-07_123456.jsonl``) names the same log.

Only files of one log (same directory, same name without the mark) change places, and
only among the places they already held, so other files keep the order given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

_MARK = re.compile(
    r"^(?P<stem>.+?)"
    r"(?:\.(?P<number>\d+)"
    r"|(?P<date>-\d{8}[\d_-]*|[-.]\d{4}-\d{2}-\d{2}[\d_-]*|\.\d{8}-\d{6}))"
    r"(?P<ext>\.(?:jsonl|ndjson|json|log|txt))?"
    r"(?:\.(?:gz|bz2|xz|zst))?$"
)
# Sort classes within one log: dated parts, then numbered ones, then the live file.
_DATED, _NUMBERED, _LIVE = 0, 1, 2


def rotation_place(path: str) -> tuple[tuple[str, str], tuple[int, int, str]]:
    """The log `path` belongs to (directory, live name) and its age key (older sorts first).

    `path` is a local path or a URL; the directory is everything before the last ``/``.
    """
    directory, _, name = path.rpartition("/")
    found = _MARK.match(name)
    if found is None:
        return (directory, name), (_LIVE, 0, name)
    live = found["stem"] + (found["ext"] or "")
    if found["number"] is not None:
        return (directory, live), (_NUMBERED, -int(found["number"]), name)
    digits = re.sub(r"\D", "", found["date"])
    return (directory, live), (_DATED, 0, digits + "\0" + name)


def is_live_name(path: str) -> bool:
    """Whether `path` names a log's live file, not one of its rotated parts."""
    return rotation_place(path)[1][0] == _LIVE


def oldest_first(items: Sequence[T], path_of: Callable[[T], str | None]) -> list[T]:
    """`items` with the parts of each rotated log in age order, oldest first.

    `path_of` gives an item's absolute path or URL (None: not a file, left in place).
    The parts of one log take the places its parts held, so the result does not depend
    on the order they were given in; ties in age go by name.
    """
    places: dict[tuple[str, str], list[int]] = {}
    ages: dict[int, tuple[int, int, str]] = {}
    for i, item in enumerate(items):
        path = path_of(item)
        if path is None:
            continue
        log, age = rotation_place(path)
        places.setdefault(log, []).append(i)
        ages[i] = age
    out = list(items)
    for held in places.values():
        if len(held) > 1:
            for place, i in zip(held, sorted(held, key=ages.__getitem__), strict=True):
                out[place] = items[i]
    return out


def absolute_path(path: os.PathLike[str] | str) -> str:
    """`path` made absolute without touching the file system, in ``/`` form."""
    return os.path.abspath(path).replace(os.sep, "/")
