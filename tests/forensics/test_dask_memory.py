"""What keeps the Dask engine's worker memory bounded by the partition, not the input.

Two mechanisms, each checked where it can fail: the client fetches combined partitions
one by one and lets the workers free each at once, and the shuffle hands text back as
Arrow strings rather than as Python objects.
"""

# ruff: noqa: E402  (the imports after require_extra need the extra)
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

from tests.support.extras import require_extra

require_extra("dask")  # before the imports below, which need it

import dask.dataframe as dd
import distributed

from ridtrace.forensics.dask_engine.blocks import plan_blocks, read_block
from ridtrace.forensics.dask_engine.collect import fetch_each
from ridtrace.forensics.dask_engine.urls import expand_urls
from ridtrace.forensics.records.partials import KEY, combine_requests
from ridtrace.testing.synth import SynthSpec, write_logs

_GATE = "ridtrace-test-last-partition"


def _piece(i: int, gated: bool) -> pd.DataFrame:
    if gated:
        distributed.Event(_GATE).wait(30)
    return pd.DataFrame({"i": [i]})


def _held(client: Any, keys: list[Any]) -> list[Any]:
    def on_scheduler(dask_scheduler: Any) -> list[Any]:
        return [k for k in keys if k in dask_scheduler.tasks]

    held: list[Any] = client.run_on_scheduler(on_scheduler)
    return held


def test_fetched_partitions_are_freed_before_the_last_is_done(client: Any) -> None:
    # Partition 0 blocks one worker; 1–5 finish on the other, before the fetch starts.
    slow, fast = sorted(client.scheduler_info()["workers"])
    futures = [client.submit(_piece, 0, True, pure=False, workers=[slow])]
    futures += [client.submit(_piece, i, False, pure=False, workers=[fast]) for i in range(1, 6)]
    distributed.wait(futures[1:], timeout=20)
    keys = [f.key for f in futures]
    out: dict[str, pd.DataFrame] = {}
    fetch = threading.Thread(target=lambda: out.update(
        frame=pd.concat(fetch_each(client, futures, no_workers_timeout=60))))
    fetch.start()
    try:
        deadline = time.monotonic() + 10
        while _held(client, keys[1:]) and time.monotonic() < deadline:
            time.sleep(0.05)
        # Every finished partition is freed on the cluster while the first still runs.
        assert _held(client, keys[1:]) == []
        assert _held(client, keys[:1]) == keys[:1]
    finally:
        distributed.Event(_GATE).set()
        fetch.join(30)
    assert out["frame"]["i"].tolist() == list(range(6))  # in partition order
    assert futures == []  # the caller's list no longer pins them


def test_shuffle_hands_text_back_as_arrow_strings(client: Any, tmp_path: Path) -> None:
    write_logs(tmp_path, SynthSpec(requests=200, seed=5))
    files = expand_urls([str(tmp_path)])
    names = [f.name for f in files]
    partials = [read_block(b, names, lean=True).partial for b in plan_blocks(files, 1 << 20)]
    frame = dd.from_pandas(pd.concat(partials, ignore_index=True), npartitions=2)
    shuffled = frame.shuffle(KEY, npartitions=2)
    out = pd.concat(client.gather(client.compute(shuffled.to_delayed())))
    assert len(out) == sum(len(p) for p in partials)
    assert [c for c, t in out.dtypes.items() if pd.api.types.is_object_dtype(t)] == []
    assert combine_requests(out)["trace_id"].nunique() > 0
