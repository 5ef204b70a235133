"""`ridtrace trace`'s worker names: ``worker-N`` per worker log, its rotated parts one."""

from __future__ import annotations

import pandas as pd

from ridtrace.contract import WORKER
from ridtrace.forensics.reading.rotation import rotation_place
from ridtrace.forensics.views.verdicts import text


def worker_sides(requests: pd.DataFrame) -> dict[tuple[str, str], str]:
    """``worker-N`` per (file, service) of worker spans, numbered in sorted order of
    their logs: the rotated parts of one log (``worker.jsonl``, ``worker.jsonl.1.gz``)
    are one worker, not one per part."""
    workers = requests.loc[(requests["side"] == WORKER).to_numpy(), ["file", "service"]]
    workers = workers.drop_duplicates()
    keys = {(str(f), text(s) or "") for f, s in zip(workers["file"], workers["service"],
                                                    strict=True)}
    logs = sorted({_log_of(key) for key in keys})
    number = {log: i for i, log in enumerate(logs)}
    return {key: f"worker-{number[_log_of(key)]}" for key in keys}


def _log_of(key: tuple[str, str]) -> tuple[str, str, str]:
    """The log a (file, service) pair is a part of: (directory, live name, service)."""
    (directory, live), _ = rotation_place(key[0])
    return directory, live, key[1]


def worker_names(sides: dict[tuple[str, str], str]) -> dict[str, str]:
    """``worker-N`` → its files (oldest part first, comma separated), with the service
    in parentheses when the logs name one."""
    parts: dict[str, list[tuple[str, str]]] = {}
    for key, label in sides.items():
        parts.setdefault(label, []).append(key)
    names = {}
    for label, keys in sorted(parts.items(), key=lambda item: int(item[0].split("-")[1])):
        files = ", ".join(f for f, _ in sorted(keys, key=lambda k: rotation_place(k[0])[1]))
        service = keys[0][1]
        names[label] = f"{files} ({service})" if service else files
    return names
