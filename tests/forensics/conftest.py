"""Fixtures of the forensics tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Dask client of an in-process cluster of 2 workers (threads: no process start-up),
    one per test module."""
    from ridtrace.forensics.dask_engine.engine import dask_client

    with dask_client(n_workers=2, threads_per_worker=1, processes=False) as c:
        yield c
