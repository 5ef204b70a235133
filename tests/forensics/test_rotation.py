"""The parts of a rotated log are read oldest first, whatever order they were named in."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.reading.rotation import oldest_first, rotation_place
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.records.requests import LINE_FILES
from ridtrace.forensics.records.spans import build_requests, requests_from_partials
from tests.forensics.helpers import legacy_rotated


def _ordered(names: list[str]) -> list[str]:
    return oldest_first(names, lambda name: f"/logs/{name}")


@pytest.mark.parametrize("oldest_to_newest", [
    ["app.jsonl.3.gz", "app.jsonl.2.gz", "app.jsonl.1", "app.jsonl"],
    ["app.jsonl.3.xz", "app.jsonl.2.bz2", "app.jsonl.1", "app.jsonl"],
    ["app.jsonl-20261129", "app.jsonl-20261130.gz", "app.jsonl"],
    # logrotate's `dateformat -%Y-%m-%d`, and with its `extension` option
    ["app.jsonl-2026-11-29", "app.jsonl-2026-11-30.gz", "app.jsonl"],
    ["app-2026-11-29.jsonl.gz", "app-2026-11-30-14.jsonl", "app.jsonl"],
    ["app.jsonl.2026-11-29", "app.jsonl.2026-11-30_14", "app.jsonl.2026-11-30_15", "app.jsonl"],
    ["app.2.jsonl.gz", "app.1.jsonl", "app.jsonl"],  # logrotate's `extension`
    ["app.2026-11-30_14-05-07_123456.jsonl", "app.jsonl"],  # loguru
    # kubelet's container logs: the live 0.log, rotated parts compressed but the newest
    ["0.log.20261129-090000.gz", "0.log.20261129-100000", "0.log"],
])
def test_any_order_of_the_parts_reads_oldest_first(oldest_to_newest: list[str]) -> None:
    for given in itertools.permutations(oldest_to_newest):
        assert _ordered(list(given)) == oldest_to_newest


def test_other_files_keep_their_places() -> None:
    given = ["worker.jsonl", "app.jsonl", "README.md", "app.jsonl.1", "worker.jsonl.1"]
    assert _ordered(given) == ["worker.jsonl.1", "app.jsonl.1", "README.md", "app.jsonl",
                               "worker.jsonl"]


def test_one_log_is_one_directory_and_live_name() -> None:
    assert rotation_place("/a/app.jsonl.1")[0] == ("/a", "app.jsonl")
    assert rotation_place("s3://bucket/a/app.jsonl-20261130.gz")[0] == ("s3://bucket/a",
                                                                        "app.jsonl")
    assert rotation_place("/b/app.jsonl.1")[0] != rotation_place("/a/app.jsonl")[0]
    assert rotation_place("/a/worker-8101.jsonl")[0] == ("/a", "worker-8101.jsonl")


def test_walk_and_named_files_give_one_order(tmp_path: Path) -> None:
    names = ["frontend.jsonl", "frontend.jsonl.1", "frontend.jsonl.2.gz"]
    for name in names:
        (tmp_path / name).write_text("")
    want = [str(tmp_path / n) for n in reversed(names)]
    assert [s.name for s in expand_inputs([str(tmp_path)])] == want
    for given in itertools.permutations(names):
        assert [s.name for s in expand_inputs([str(tmp_path / n) for n in given])] == want


def test_a_span_across_a_rotation_keeps_each_line_with_its_file(tmp_path: Path) -> None:
    rotated, live = legacy_rotated(tmp_path)
    paths = [str(live), str(rotated)]
    from_events = build_requests(load_events(paths, lean=True).events)
    from_partials = requests_from_partials(*_partials(paths))
    # What the rules read; analyze's lean read leaves display fields out, and spells UTC
    # its own way.
    columns = ["span_id", "request_id", "start", "end", *LINE_FILES, *LINE_FILES.values()]
    pd.testing.assert_frame_equal(from_events[columns], from_partials[columns],
                                  check_dtype=False, check_categorical=False)
    span = from_partials.set_index("span_id").loc["a1"]
    assert span["request_id"] == "7"  # the id it ended with, in the live file
    assert (span["file"], span["first_line"]) == (str(rotated), 1)
    assert (span["last_file"], span["last_line"]) == (str(live), 3)


def _partials(paths: list[str]) -> tuple[list[pd.DataFrame], list[str]]:
    read = read_partials(expand_inputs(paths))
    return read.partials, read.files
