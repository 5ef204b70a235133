"""A file the user names is read as named even when a directory named with it holds it.

Named files are always read; a walk's files are judged first (a README is ignored). A
file reached both ways is read once, and the walk's entry came first when its directory
was named first: ``ridtrace analyze logs/ logs/frontend.out`` judged the named file by
the walk's rule and ignored it (a start-up banner longer than the 64 KiB a walk looks
at), so its requests were missing from a report that said complete. ``--follow`` did
the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A frontend log behind a 70 KiB banner, named ``.out``, beside a worker log."""
    banner = "".join(f"loading shard {i} of the model, please wait\n" for i in range(1700))
    assert len(banner) > 64 << 10
    requests = [*rt_request("a" * 16, "r1", 0, 2), *rt_request("b" * 16, "r1", 1, 3)]
    (tmp_path / "frontend.out").write_text(banner + "\n".join(requests) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(rt_request("c" * 16, "r2", 5, 6)) + "\n")
    return tmp_path


def test_a_walk_alone_reads_the_file_past_its_banner_and_a_follower_does_not(
    logs: Path,
) -> None:
    # A walk looks on past the 64 KiB it sniffs (`reading.read_on`); `--follow` does not.
    code, doc = analyze_json(str(logs))
    assert (code, doc["summary"]["ignored_files"], doc["summary"]["requests"]) == (1, [], 3)
    watch = Watch([str(logs)], ReadStats(), from_start=True)
    try:
        watch.discover()
        assert [Path(n.file).name for n in watch.stats.ignored_files] == ["frontend.out"]
    finally:
        watch.close()


@pytest.mark.parametrize("first", [True, False], ids=["directory-first", "file-first"])
def test_a_named_file_is_read_whatever_comes_first(logs: Path, first: bool) -> None:
    named = [str(logs), str(logs / "frontend.out")]
    code, doc = analyze_json(*(named if first else named[::-1]))
    assert code == 1, doc  # the duplicate in flight in the named file
    assert doc["summary"]["ignored_files"] == []
    assert doc["summary"]["requests"] == 3


@pytest.mark.parametrize("first", [True, False], ids=["directory-first", "file-first"])
def test_a_follower_follows_a_named_file_whatever_comes_first(logs: Path, first: bool) -> None:
    named = [str(logs), str(logs / "frontend.out")]
    watch = Watch(named if first else named[::-1], ReadStats(), from_start=True)
    try:
        watch.discover()
        assert sorted(Path(t.name).name for t in watch.tails.values()) == [
            "frontend.out", "worker.jsonl"]
        assert watch.stats.ignored_files == []
    finally:
        watch.close()


@pytest.mark.extra("dask")
def test_the_dask_engine_reads_a_named_file_as_named(logs: Path) -> None:
    from ridtrace.forensics.dask_engine.urls import expand_urls

    files = expand_urls([str(logs), str(logs / "frontend.out")])
    assert {Path(f.name).name: f.from_directory for f in files} == {
        "frontend.out": False, "worker.jsonl": True}
