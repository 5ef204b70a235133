"""Fetch a Dask run's results as they finish; give up on a cluster left with no worker.

Dask never fails a task for want of a worker: with every worker gone (never started,
killed by the OOM killer, lost with its node) the scheduler holds the tasks until one
joins, and a client waiting on them waits forever. A command must end, so while nothing
finishes the client looks at the cluster, and a cluster that had no worker for
`no_workers_timeout` seconds ends the run with `NoWorkersError`. The timeout is not a
deadline on the run: a worker that joins in time (an adaptive cluster scaling up from
none, a nanny restarting its worker) resets it.
"""

from __future__ import annotations

import queue
import time
from typing import Any

DEFAULT_NO_WORKERS_TIMEOUT = 60.0
# How long the client waits for a result before it looks at the cluster again: one
# small request to the scheduler a second while nothing finishes.
_LOOK_EVERY = 1.0


class NoWorkersError(RuntimeError):
    """The cluster had no worker for the timeout while the run still had work to do;
    `paused`: it had workers, every one paused (over its memory's pause threshold)."""

    def __init__(self, seconds: float, *, paused: int = 0) -> None:
        super().__init__(f"no worker for {seconds:g}s")
        self.seconds = seconds
        self.paused = paused


class _WorkerWatch:
    """When the cluster was last seen without a running worker, since it had none.

    A worker paused for memory (Dask's pause threshold, 80 % of its limit) runs no task
    and may never resume: counted as a worker, the run waited for ever on it."""

    def __init__(self, client: Any, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        self.none_since: float | None = None

    def check(self) -> None:
        try:
            workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        except OSError:  # the scheduler itself is gone: its futures say so, cancelled
            return
        statuses = [str(w.get("status", "running")) for w in workers.values()]
        now = time.monotonic()
        if any(status not in _NOT_RUNNING for status in statuses):
            self.none_since = None
        elif self.none_since is None:
            self.none_since = now
        elif now - self.none_since >= self.timeout:
            raise NoWorkersError(self.timeout, paused=statuses.count("paused"))


# Worker statuses under which a worker takes no task.
_NOT_RUNNING = frozenset({"paused", "closing", "closing_gracefully", "closed", "failed"})


def fetch_each(client: Any, futures: list[Any], *, no_workers_timeout: float) -> list[Any]:
    """The futures' results in order, each fetched as it finishes and released at once.

    A worker frees a result once no client holds its future. One `gather` of them all
    left every finished partition on the workers until the last one was done — the
    whole requests frame spread over them: per-worker memory grew with the input.
    Fetching in completion order and releasing each future at once bounds what waits
    on a worker to the few results finished but not fetched yet.

    `futures` is emptied: the caller's list must not keep the futures alive either.
    A failed task raises its error here (`KilledWorker`, `CancelledError`); a cluster
    with no worker for `no_workers_timeout` seconds raises `NoWorkersError`.
    """
    slot = {future.key: i for i, future in enumerate(futures)}
    finished: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for future in futures:  # the callback also fires for a cancelled or failed future
        future.add_done_callback(finished.put)
    futures.clear()
    watch = _WorkerWatch(client, no_workers_timeout)
    results: list[Any] = [None] * len(slot)
    for _ in range(len(slot)):
        while True:
            try:
                future = finished.get(timeout=_LOOK_EVERY)
                break
            except queue.Empty:
                watch.check()
        watch.none_since = None  # a result came: some worker was there
        results[slot[future.key]] = future.result()
        future.release()
        del future
    return results
