"""``--engine pandas|dask`` and the Dask engine's options for analyze and audit.

The pandas engine is the default and needs nothing more. ``--engine dask`` imports
dask only then (the ``dask`` extra), runs the read and the per-request join on a Dask
cluster — the one at ``--scheduler``, or a local one sized to the machine — and hands
the requests frame to the same rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    import pandas as pd

    from ridtrace.forensics.dask_engine.engine import DaskLoad
    from ridtrace.forensics.rules.report import Report

F = TypeVar("F", bound=Callable[..., Any])
_EXTRA_HINT = "--engine dask needs the dask extra: pip install 'ridtrace[dask]'"


@dataclass(frozen=True)
class EngineChoice:
    """The engine options of one command line."""

    engine: str
    scheduler: str | None
    partition_size: str | None
    no_workers_timeout: float | None = None  # seconds; None: the engine's default

    @property
    def dask(self) -> bool:
        """True for ``--engine dask``."""
        return self.engine == "dask"


def engine_options(func: F) -> F:
    """Add ``--engine``, ``--scheduler``, ``--partition-size`` and ``--no-workers-timeout``."""
    options = [
        click.option(
            "--engine", type=click.Choice(["pandas", "dask"]), default="pandas",
            show_default=True,
            help="pandas: one process. dask: a Dask cluster (needs the `dask` extra); "
            "PATHs may then also be fsspec URLs (s3://, file://, …).",
        ),
        click.option(
            "--scheduler", metavar="ADDRESS",
            help="Dask scheduler to use (tcp://host:8786); default: a local cluster.",
        ),
        click.option(
            "--partition-size", metavar="SIZE",
            help="Bytes of log per Dask partition (default 64MiB).",
        ),
        click.option(
            "--no-workers-timeout", metavar="DURATION",
            help="How long the Dask cluster may have no worker before the run stops with "
            "exit 2 (default 60s).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def engine_choice(engine: str, scheduler: str | None, partition_size: str | None,
                  no_workers_timeout: str | None = None) -> EngineChoice:
    """Validate the combination: the Dask options mean nothing to the pandas engine."""
    if engine != "dask":
        for name, value in (("--scheduler", scheduler), ("--partition-size", partition_size),
                            ("--no-workers-timeout", no_workers_timeout)):
            if value is not None:
                raise click.UsageError(f"{name} needs --engine dask")
    seconds = None
    if no_workers_timeout is not None and engine == "dask":
        from ridtrace.cli.follow import parse_duration

        seconds = parse_duration(no_workers_timeout, "--no-workers-timeout")
    return EngineChoice(engine, scheduler, partition_size, seconds)


def _block_bytes(partition_size: str | None, default: int) -> int:
    if partition_size is None:
        return default
    from dask.utils import parse_bytes

    try:
        size = int(parse_bytes(partition_size))
    except (ValueError, TypeError) as exc:
        raise click.BadParameter(
            f"not a size: {partition_size!r}", param_hint="--partition-size"
        ) from exc
    if size < 1 << 20:
        raise click.BadParameter("at least 1MiB", param_hint="--partition-size")
    return size


def dask_load(
    choice: EngineChoice,
    paths: Sequence[str],
    *,
    lean: bool,
    quiet: bool,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
    writes: Sequence[Path | None] = (),
) -> DaskLoad:
    """Read `paths` on Dask into a requests frame; click errors for every user mistake.

    ``writes``: the files the command will write, refused when one is a log it read.
    """
    from ridtrace.cli.output import InputError, refuse_writing_over, warn_read_stats

    try:
        from ridtrace.forensics.dask_engine import engine as dask_engine
    except ImportError as exc:
        raise InputError(_EXTRA_HINT) from exc
    from ridtrace.forensics.reading.inputs import ForensicsInputError

    block_bytes = _block_bytes(choice.partition_size, dask_engine.DEFAULT_BLOCK_BYTES)
    from ridtrace.forensics.dask_engine.collect import DEFAULT_NO_WORKERS_TIMEOUT

    no_workers = choice.no_workers_timeout or DEFAULT_NO_WORKERS_TIMEOUT
    try:
        with dask_engine.dask_client(choice.scheduler) as client:
            load = dask_engine.load_requests(
                client, paths, lean=lean, block_bytes=block_bytes, since=since, until=until,
                no_workers_timeout=no_workers,
            )
    except (ForensicsInputError, dask_engine.DaskEngineError) as exc:
        raise InputError(str(exc)) from exc
    if any(w is not None for w in writes):  # the local inputs: object storage is no file here
        # Each file the workers read, as they opened it: a local file named as a URL
        # (file:///var/log/…, local://…, simplecache::file://…, a glob fsspec took into a
        # dot-folder) is a log read too; left out, -o replaced it with the report.
        ignored = {note.file for note in load.stats.ignored_files}
        read = [local for f in load.files
                if f.skip is None and f.name not in ignored
                and (local := local_path(f.url)) is not None]
        refuse_writing_over(writes, read)
    if not quiet:
        warn_read_stats(load.stats)
    return load


def dask_report(
    choice: EngineChoice,
    paths: Sequence[str],
    *,
    quiet: bool,
    since: pd.Timestamp | None,
    until: pd.Timestamp | None,
    writes: Sequence[Path | None] = (),
) -> Report:
    """``ridtrace analyze`` on Dask: the report the pandas engine gives for the same input."""
    load = dask_load(choice, paths, lean=True, quiet=quiet, since=since, until=until,
                     writes=writes)
    from ridtrace.forensics.dask_engine.engine import analyze_load  # importable: dask_load checked

    return analyze_load(load, since=since, until=until)


def local_path(url: str) -> Path | None:
    """The local file a worker opens for `url` (its last ``::`` link, ``file://`` or
    ``local://``, or a bare path), or None for another storage's."""
    last = url.rpartition("::")[2]
    for scheme in ("file://", "local://"):
        if last.startswith(scheme):
            return Path(last.removeprefix(scheme))
    return None if "://" in last else Path(last)
