"""A cluster whose every worker is paused for memory is a cluster without a worker.

A worker over Dask's pause threshold runs no task and may never resume: counted as a
worker, `--engine dask` waited for ever on it, `--no-workers-timeout` never firing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.extras import require_extra

require_extra("dask")  # before the imports below, which need it

from ridtrace.forensics.dask_engine.collect import NoWorkersError, _WorkerWatch  # noqa: E402


class _Scheduler:
    def __init__(self, *statuses: str) -> None:
        self.statuses = statuses

    def scheduler_info(self, n_workers: int = -1, **kwargs: Any) -> dict[str, Any]:
        return {"workers": {f"tcp://127.0.0.1:{i}": {"status": status}
                            for i, status in enumerate(self.statuses)}}


def test_every_worker_paused_is_no_worker_once_the_timeout_passed() -> None:
    watch = _WorkerWatch(_Scheduler("paused", "paused"), timeout=0.0)
    watch.check()  # first seen without a running worker
    with pytest.raises(NoWorkersError) as raised:
        watch.check()
    assert raised.value.paused == 2


@pytest.mark.parametrize("statuses", [("paused", "running"), ("running",)])
def test_a_running_worker_keeps_the_run_waiting(statuses: tuple[str, ...]) -> None:
    watch = _WorkerWatch(_Scheduler(*statuses), timeout=0.0)
    for _ in range(3):
        watch.check()
    assert watch.none_since is None
