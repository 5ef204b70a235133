"""A docs example's ``ridtrace`` command run in this process, through click's CliRunner.

Each example run as ``bash -c COMMAND`` started an interpreter that imported pandas,
DuckDB and the CLI again (~1-1.5 CPU-s) to print a report this process can print in a
fraction of that. Only a command with nothing a process of its own would change runs
here: `ridtrace` and plain words, no variables set for it, nothing a shell expands
(globs, pipes, quotes, ``$``), no server, no demo, no Dask cluster, no ``--follow``.
Every other example still runs through bash, as a reader types it.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner

__all__ = ["plain_ridtrace_args", "run_in_process"]

_SHELL_SYNTAX = re.compile(r"""[*?\[\]{}|&;<>$`'"\\~()]""")
_IN_PROCESS = frozenset({"analyze", "audit", "export", "trace"})


def plain_ridtrace_args(command: str) -> list[str] | None:
    """``command``'s arguments after ``ridtrace`` if it may run in-process, else None."""
    if _SHELL_SYNTAX.search(command):
        return None
    words = shlex.split(command)
    if len(words) < 2 or words[0] != "ridtrace" or words[1] not in _IN_PROCESS:
        return None
    if {"--engine", "--follow"} & {word.split("=")[0] for word in words}:
        return None
    return words[1:]


def run_in_process(
    args: list[str], cwd: Path | None = None, env: Mapping[str, str] | None = None,
) -> tuple[int, str, str]:
    """``ridtrace ARGS`` run in ``cwd`` (this one if None), with ``env`` set for the
    run: exit code, stdout, stderr. A Python exception (the console script's "internal
    error", exit 4) is raised, with its traceback."""
    from ridtrace.cli.main import main

    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        result = CliRunner().invoke(main, args, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr
