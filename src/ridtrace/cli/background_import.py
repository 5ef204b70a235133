"""Modules imported on a thread of their own while the main thread reads the logs."""

from __future__ import annotations

import contextlib
import importlib
import threading

__all__ = ["import_beside"]


def import_beside(module: str) -> threading.Thread:
    """Import `module` on a thread of its own, started now.

    The rules' modules and pandas take most of a second to import, on one core, while
    the other core waits: imported beside the read, they cost no wall time.
    A failed import is left for the caller's own import to raise.
    """

    def work() -> None:
        with contextlib.suppress(Exception):
            importlib.import_module(module)

    thread = threading.Thread(target=work, name="ridtrace-import", daemon=True)
    thread.start()
    return thread
