"""Reaching a Dask cluster: a scheduler the user names, checked before a client is
built for it, or a local cluster sized to the machine (`dask_engine.engine` runs on it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dask
import distributed

__all__ = [
    "CONNECT_TIMEOUT", "LOCAL_CLUSTER_OPTIONS", "DaskClient", "DaskEngineError", "dask_client",
    "raise_open_file_limit", "shuffle_failure",
]

# What a local cluster gets on top of Dask's machine-sized defaults: quiet logs and a
# dashboard on a free port (8787 is often taken by another cluster on the machine).
# A local worker's own ERRORs (a task it computed failed) reach ridtrace as the task's
# exception, said in one line: on stderr too, a run that recovered from a lost worker
# printed a P2PConsistencyError traceback above a right report.
LOCAL_CLUSTER_OPTIONS: dict[str, Any] = {"dashboard_address": ":0",
                                         "silence_logs": logging.CRITICAL}
# Its workers ignore SIGINT (`worker_setup`): ridtrace, interrupted, stops them itself.
# Added to the preloads Dask's configuration names, which an explicit list replaced.
_WORKER_SETUP = "ridtrace.forensics.dask_engine.worker_setup"
# Seconds a scheduler has to accept the client and answer it, unless Dask's own
# `distributed.comm.timeouts.connect` was set (`connect_timeout`): Dask's default of 30 s
# is long to wait in an incident for a scheduler that is not there.
CONNECT_TIMEOUT = 10.0
_DASK_DEFAULT_CONNECT = "30s"
# distributed's annotations are partial; the engine talks to it through `Any`.
_dist: Any = distributed
DaskClient = Any


_LAST_PORT = 65535


class DaskEngineError(RuntimeError):
    """The cluster cannot be reached or created (the CLI exits 2)."""


@contextmanager
def dask_client(scheduler: str | None = None, **cluster_options: Any) -> Iterator[DaskClient]:
    """A client of the cluster at `scheduler`, or of a local cluster sized to the machine.

    A local cluster gets Dask's defaults (worker processes and threads from the CPU
    count, memory split evenly between workers) unless `cluster_options` say otherwise.
    """
    if scheduler is not None:
        timeout = connect_timeout()
        try:
            _check_address(scheduler)
            _check_answers(scheduler, timeout)
            client = _dist.Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise DaskEngineError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
        except (ValueError, TypeError, Warning) as exc:  # the user's, not ridtrace's crash
            said = " ".join(str(exc).split())  # one line (the ucx:// refusal spans four)
            raise DaskEngineError(
                f"not a usable Dask scheduler address {scheduler!r}: {said}"
                " (expected e.g. tcp://host:8786)"
            ) from exc
        with _client_logs_quiet(), client:  # quiet through its close too
            _check_ridtrace(client, scheduler)
            yield client
        return
    options = {**LOCAL_CLUSTER_OPTIONS, "preload": _local_preloads(), **cluster_options}
    connect_timeout()  # a bad Dask setting named (exit 2), as with --scheduler
    raise_open_file_limit()
    try:
        cluster = _dist.LocalCluster(**options)
    except (ValueError, KeyError, TypeError) as exc:  # another setting Dask refuses
        raise DaskEngineError(f"cannot start a local Dask cluster: {exc}") from exc
    except (RuntimeError, OSError) as exc:
        # The machine's, not ridtrace's: no usable temporary directory for the workers'
        # spill space, a read-only /dev/shm ("Cluster failed to start", "Nanny failed to
        # start"). It was 80 lines of traceback and "internal error" (exit 4).
        cause = exc.__cause__ or exc.__context__
        detail = f"{exc}" + (f" ({cause})" if cause is not None and str(cause) not in str(exc)
                             else "")
        raise DaskEngineError(f"cannot start a local Dask cluster: {detail}") from exc
    with _client_logs_quiet(), cluster, _dist.Client(cluster) as client:
        yield client


def _local_preloads() -> list[str]:
    """The worker preloads Dask's configuration names (one name or a list), then ours."""
    configured = dask.config.get("distributed.worker.preload", default=None) or []
    listed = [configured] if isinstance(configured, str) else list(configured)
    return [*listed, _WORKER_SETUP]


@contextmanager
def _client_logs_quiet() -> Iterator[None]:
    """distributed's client logs nothing while ridtrace uses it: what goes wrong reaches
    ridtrace as an exception, which it says in one line (`DaskEngineError`, exit 2). A
    scheduler lost mid-run put two tracebacks of the client's failed reconnection above
    that line, under -q too, read as a crash; a worker lost and replaced, a WARN about
    rescheduled keys in a run whose report was right. So does its batched sender: an
    in-process cluster's close (`processes=False`, as docs/scale-out.md's library example
    makes) printed "Batched Comm Closed" and a CommClosedError traceback in 2 runs of 8."""
    loggers = [logging.getLogger(name) for name in _QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


_QUIET_LOGGERS = ("distributed.client", "distributed.batched")


def raise_open_file_limit() -> None:
    """Raise this process's soft limit on open files to its hard limit, which the local
    cluster's worker processes inherit.

    A Dask worker holds a few dozen descriptors of its own and more as the shuffle's
    partitions grow with the files read: with 1,500 small logs under a soft limit of
    64 (macOS gives 256) every worker failed with "Too many open files". Raising the
    soft limit up to the hard one is what an unprivileged process may always do.
    """
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):  # a sandbox that refuses it
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# How a task of Dask's disk-backed (p2p) shuffle reports that a worker failed it.
_SHUFFLE_FAILED = re.compile(r"P2P \w+ failed")


def shuffle_failure(exc: RuntimeError) -> DaskEngineError | None:
    """The error to exit 2 with when `exc` is Dask's shuffle failing on a worker, else None.

    The cause is the workers' machine's, not ridtrace's: the shuffle could not write
    (too many open files, a full or unwritable spill directory), and the worker's own
    error is in its log. It was a traceback and "internal error" (exit 4).
    """
    if not _SHUFFLE_FAILED.search(str(exc)):
        return None
    limit = _open_file_limit()
    here = f" (open files allowed here: {limit}, `ulimit -n`)" if limit is not None else ""
    return DaskEngineError(
        f"a Dask worker's shuffle failed, so no report was made: {exc}. The worker's own "
        f"error is logged above: too many open files{here}? a full or unwritable spill "
        "directory (Dask's temporary-directory)?")


def _open_file_limit() -> int | None:
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _check_address(scheduler: str) -> None:
    """Refuse an address distributed cannot use, before a client exists for it.

    A client that distributed refuses to build (no port, an unknown scheme, ``tls://``
    without Dask's TLS configuration) leaves its event loop behind, and the next client
    of the same process then fails to start.
    """
    with warnings.catch_warnings():
        # ucx:// warns, then raises the same FutureWarning: said once, as the refusal.
        warnings.simplefilter("ignore", FutureWarning)
        _dist.comm.resolve_address(scheduler)  # ValueError for the address, OSError for DNS
    scheme, _ = _dist.comm.parse_address(scheduler)
    port = 1
    with contextlib.suppress(ValueError):  # a scheme with no port (inproc://) has none
        _, port = _dist.comm.get_address_host_port(scheduler)
    if not 0 < port <= _LAST_PORT:
        # A connection to it fails only when the timeout ends (10 s), said as a
        # scheduler that did not answer: perhaps the dashboard's port.
        raise ValueError(f"port {port} is no TCP port (1 to {_LAST_PORT})")
    tls = _dist.Security().get_connection_args("client").get("ssl_context")
    if scheme in ("tls", "wss") and tls is None:
        raise ValueError(f"{scheme}:// needs Dask's TLS configuration "
                         "(distributed.comm.tls.* or DASK_DISTRIBUTED__COMM__TLS__*)")


def connect_timeout() -> float:
    """Seconds to wait for a named scheduler: Dask's `distributed.comm.timeouts.connect`
    when the user set it (``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s``, a Dask
    config file), else `CONNECT_TIMEOUT`."""
    import dask

    configured = dask.config.get("distributed.comm.timeouts.connect")
    if configured == _DASK_DEFAULT_CONNECT:
        return CONNECT_TIMEOUT
    try:
        seconds = dask.utils.parse_timedelta(configured, default="seconds")
    except (ValueError, TypeError, KeyError):
        seconds = None
    if not seconds or not 0 < seconds < float("inf"):
        raise DaskEngineError(f"Dask's distributed.comm.timeouts.connect is {configured!r}: "
                              "expected a time above zero, e.g. 10s")
    return float(seconds)


def _check_answers(scheduler: str, timeout: float) -> None:
    """Fail unless a Dask scheduler answers at `scheduler` within `timeout` seconds.

    distributed bounds a client's TCP connect, not the handshake after it: a server that
    accepts and never answers as a scheduler (the dashboard's HTTP port, a tunnel with
    nothing behind it) kept `Client(...)` waiting forever. On its own loop in a thread,
    so a caller's running loop (a notebook) is no obstacle.
    """
    args = _dist.Security().get_connection_args("client")
    failed: list[BaseException] = []

    async def handshake() -> str | None:
        connect = _dist.comm.connect(scheduler, timeout=timeout, **args)
        try:  # (a connect that finds no listener fails on its own, with an OSError)
            comm = await asyncio.wait_for(connect, timeout)
            try:
                await comm.write({"op": "identity", "reply": True})
                answer = await asyncio.wait_for(comm.read(), timeout)
            finally:
                await comm.close()
            return answer.get("type") if isinstance(answer, dict) else None
        except TimeoutError as exc:
            raise TimeoutError(
                f"no Dask scheduler answered there within {timeout:g}s (the "
                "dashboard's port? a scheduler listens on 8786 unless told otherwise)") from exc
        except (OSError, asyncio.CancelledError):
            raise
        except Exception as exc:
            # Something that speaks first answered (sshd's banner, an HTTP error page):
            # distributed read its bytes as a message's length and failed however that
            # went (2.8 EiB asked of numpy), a traceback and exit 4.
            raise ConnectionError(
                f"something other than a Dask scheduler answered there ({type(exc).__name__}; "
                "a scheduler listens on 8786 unless told otherwise)") from exc

    def run() -> None:
        try:
            kind = asyncio.run(handshake())
        except BaseException as exc:  # raised again in the caller's thread
            failed.append(exc)
            return
        if kind != "Scheduler":
            # A worker's or a nanny's port speaks Dask too: the client's own handshake
            # then failed on its call's arguments, "not a usable address" with a
            # TypeError of distributed's, and a dangling-stream WARNING.
            failed.append(ConnectionError(
                f"a Dask {kind or 'server'} answered there, not a scheduler (a scheduler "
                "listens on 8786 unless told otherwise; `dask scheduler` prints its address)"))

    thread = threading.Thread(target=run, name="ridtrace-dask-handshake", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


# Run by the scheduler and each worker: the ridtrace version it imports.
_VERSION_THERE = "__import__('ridtrace').__version__"


def _check_ridtrace(client: DaskClient, scheduler: str) -> None:
    """Fail unless the scheduler and every worker import the ridtrace version running
    here. The scheduler unpickles the task graph and the workers run its tasks, which
    are ridtrace functions: a scheduler without ridtrace ended the command in its
    deserialization traceback (exit 4), a worker without it died on its first task,
    and the command waited for a worker that would never come."""
    from ridtrace import __version__ as ours

    try:
        theirs = {"the scheduler": _version_of(client.run_on_scheduler(eval, _VERSION_THERE, {}))}
    except ImportError:
        theirs = {"the scheduler": None}
    except Exception:  # a cluster that runs no code sent to it: left unchecked
        return
    answers = client.run(eval, _VERSION_THERE, {}, on_error="return")
    for worker, got in sorted(answers.items()):
        if isinstance(got, (ImportError, str)):
            theirs[f"worker {worker}"] = _version_of(got)
    missing = [where for where, version in theirs.items() if version is None]
    if missing:
        raise DaskEngineError(
            f"ridtrace is not installed on {_listed(missing)} of the Dask cluster at "
            f"{scheduler}: the tasks are ridtrace functions, so the scheduler and every "
            f"worker need ridtrace[dask]=={ours} installed from its source (docs/scale-out.md)")
    other = {where: version for where, version in theirs.items() if version != ours}
    if other:
        said = ", ".join(f"{version} on {where}" for where, version in other.items())
        raise DaskEngineError(
            f"the Dask cluster at {scheduler} runs another ridtrace ({said}; {ours} here): "
            f"install ridtrace[dask]=={ours} from its source on the scheduler and every worker "
            "(docs/scale-out.md)")


def _version_of(answer: object) -> str | None:
    return answer if isinstance(answer, str) else None


def _listed(places: list[str]) -> str:
    return places[0] if len(places) == 1 else ", ".join(places[:-1]) + " and " + places[-1]
