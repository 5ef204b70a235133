"""A file given the inode number of a file the follower had finished with is read.

ext4 hands a removed file's inode number to the next file created. logrotate removing
one log's oldest ``.gz`` and then creating another log's fresh file, within one poll,
gives that fresh log the number of a compressed rotation the follower had read to its
end: taken for that finished file, the log was never read.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import rt_request
from tests.support.follower import start_follower


def _names_and_lines(watch: Watch) -> list[tuple[str, int]]:
    watch.discover()
    chunks, _ = watch.read(1 << 20)
    return [(Path(c.name).name, c.first_line + k) for c in chunks for k in range(c.newlines)]


def _take_inode_of(old: Path, new: Path, text: str) -> None:
    """Write `text` as `new` on the inode `old` had: what a removed file's number given
    to the next file created looks like, on any file system."""
    old.write_text(text)  # same inode, new content (its mtime now)
    os.rename(old, new)


def test_a_log_on_the_inode_of_a_finished_compressed_rotation_is_read(tmp_path: Path) -> None:
    rotated = tmp_path / "frontend.jsonl.2.gz"
    rotated.write_bytes(gzip.compress("\n".join(rt_request("a", "1", 0, 1)).encode() + b"\n"))
    watch = Watch([str(tmp_path)], ReadStats(), from_start=True)
    assert _names_and_lines(watch) == [("frontend.jsonl.2.gz", 1), ("frontend.jsonl.2.gz", 2)]
    assert _names_and_lines(watch) == []  # read to its end: closed, not looked at again
    fresh = tmp_path / "worker.jsonl"
    _take_inode_of(rotated, fresh, "\n".join(rt_request("b", "2", 0, 1)) + "\n")
    assert _names_and_lines(watch) == [("worker.jsonl", 1), ("worker.jsonl", 2)]


def test_a_log_on_the_inode_of_an_ignored_file_is_read(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# logs of the frontend\n")
    stats = ReadStats()
    watch = Watch([str(tmp_path)], stats)
    watch.discover()
    assert [(Path(n.file).name) for n in stats.ignored_files] == ["README.md"]
    _take_inode_of(readme, tmp_path / "frontend.jsonl",
                   "\n".join(rt_request("a", "1", 0, 1)) + "\n")
    assert _names_and_lines(watch) == [("frontend.jsonl", 1), ("frontend.jsonl", 2)]
    watch.close()


def test_a_file_set_aside_before_its_records_came_is_judged_again(tmp_path: Path) -> None:
    # Judged on a banner alone, then written within the same clock tick (ext4 stamps
    # with a coarse clock): its mtime is the same, its size is not.
    out = tmp_path / "service.out"
    out.write_text("starting service\n")
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    stamp = out.stat().st_mtime_ns
    with open(out, "a") as fh:
        fh.write("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    os.utime(out, ns=(stamp, stamp))
    assert _names_and_lines(watch) == [("service.out", 1), ("service.out", 2),
                                       ("service.out", 3)]
    watch.close()


def test_a_readme_changed_while_followed_is_listed_once(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# logs\n")
    stats = ReadStats()
    watch = Watch([str(tmp_path)], stats)
    watch.discover()
    with open(readme, "a") as fh:
        fh.write("more notes\n")
    os.utime(readme, ns=(0, 10**9))  # surely another mtime than the first look saw
    watch.discover()
    assert [(Path(n.file).name) for n in stats.ignored_files] == ["README.md"]
    watch.close()


def test_the_follower_reads_a_log_created_on_a_removed_rotations_inode(tmp_path: Path) -> None:
    # The real command: a compressed rotation is read to its end and closed, then its
    # inode is what the next log created gets; that log's duplicate must be printed.
    rotated = tmp_path / "frontend.jsonl.1.gz"
    old_lines = sorted([*rt_request("a", "old", 0, 5), *rt_request("b", "old", 1, 6)],
                       key=lambda line: json.loads(line)["time"])
    rotated.write_bytes(gzip.compress("\n".join(old_lines).encode() + b"\n"))
    follower = start_follower([str(tmp_path)], "--from-start")
    try:
        # Its finding says it was read; only then does "no descriptor on it" say closed
        # (before the follower's first poll there is none either).
        follower.wait_for(lambda: bool(follower.findings()), timeout=30,
                          what="the rotation's duplicate")
        follower.wait_for(lambda: not follower.holds_open(rotated), timeout=30,
                          what="the rotation read to its end and closed")
        starts_and_ends = zip(rt_request("s1", "dup", 0, 5), rt_request("s2", "dup", 1, 6),
                              strict=True)
        (first_start, first_end), (second_start, second_end) = starts_and_ends
        _take_inode_of(rotated, tmp_path / "worker.jsonl",
                       "\n".join([first_start, second_start, first_end, second_end]) + "\n")
        follower.wait_for(lambda: len(follower.findings()) == 2, timeout=30,
                          what="the duplicate in the new log")
    finally:
        code = follower.stop()
    found = [(p.json()["kind"], p.json()["request_id"]) for p in follower.findings()]
    assert found == [("duplicate_in_flight", "old"), ("duplicate_in_flight", "dup")]
    assert code == 1

