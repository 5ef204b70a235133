"""Leave without tearing the interpreter down, once a command's output is out.

`ridtrace analyze` ends holding hundreds of MiB of Arrow, pandas and DuckDB state.
Freeing it object by object at interpreter exit took 0.13–0.15 s of a 1.5 s run on the
benchmark's incident, for nothing: the operating system takes the memory back whole.
A command whose output is written asks for a quick exit; only the console entry point
(`ridtrace.cli.main.run`) honours it, so in-process callers (tests, ``CliRunner``,
an embedding program) always get a normal return.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

_requested = [False]


def request() -> None:
    """Ask the entry point to end the process as soon as the command returns."""
    _requested[0] = True


def requested() -> bool:
    """Whether the command that just ran asked for a quick exit."""
    return _requested[0]


def leave(code: int) -> NoReturn:
    """Flush stdout and stderr, then end the process with `code` (no teardown)."""
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe (`| head`) or a closed stream has nothing left to flush.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
