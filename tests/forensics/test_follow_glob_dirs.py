"""A glob under --follow walks the directories it matches, as the batch read does.

``ridtrace analyze 'logs/*'`` walks a matched directory; ``--follow`` kept only the
matched files. With pod directories beside a file, their logs were never followed and
the summary said complete; with directories only ('/var/log/pods/*'), nothing was
followed and the glob was waited for as if it matched nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import rt_request


@pytest.fixture
def pods(tmp_path: Path) -> Path:
    for pod, span in (("pod-a", "a"), ("pod-b", "b")):
        (tmp_path / pod).mkdir()
        (tmp_path / pod / "0.log").write_text("\n".join(rt_request(span * 16, span, 0, 1)) + "\n")
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("c" * 16, "c", 0, 1)) + "\n")
    return tmp_path


@pytest.mark.parametrize(("pattern", "expected"), [
    ("*", ["pod-a/0.log", "pod-b/0.log", "frontend.jsonl"]),
    ("pod-*", ["pod-a/0.log", "pod-b/0.log"]),
])
def test_a_glob_follows_the_logs_in_the_directories_it_matches(
    pods: Path, pattern: str, expected: list[str],
) -> None:
    watch = Watch([str(pods / pattern)], ReadStats(), from_start=True)
    try:
        watch.discover()
        followed = {Path(t.name).relative_to(pods).as_posix() for t in watch.tails.values()}
        assert followed == set(expected)
        assert watch.missing == set()
    finally:
        watch.close()


def test_a_glob_lists_the_pipe_and_broken_link_it_matches(tmp_path: Path) -> None:
    """Left out, a followed `'logs/*.jsonl'` whose worker log is a link to an unmounted
    volume said complete; it says what a walk of the folder says."""
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("c" * 16, "c", 0, 1)) + "\n")
    (tmp_path / "worker.jsonl").symlink_to(tmp_path / "unmounted" / "worker.jsonl")
    os.mkfifo(tmp_path / "spool.jsonl")
    stats = ReadStats()
    watch = Watch([str(tmp_path / "*.jsonl")], stats, from_start=True)
    try:
        watch.discover()
        assert [Path(t.name).name for t in watch.tails.values()] == ["frontend.jsonl"]
        assert [(Path(n.file).name, n.reason) for n in stats.unreadable_files] == [
            ("worker.jsonl", "a broken symbolic link")]
        assert [Path(n.file).name for n in stats.ignored_files] == ["spool.jsonl"]
    finally:
        watch.close()
