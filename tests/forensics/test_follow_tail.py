"""Following files in process: held partial lines, starting at the end, gzip, bad lines."""

from __future__ import annotations

import gzip
import os
import threading
from pathlib import Path

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.live.identity import Identities
from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, rt_request, watched_lines


def test_a_partial_last_line_is_held_until_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"")
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    line = rt("request.start", request_id="r1", span_id="s1", trace_id="t1").encode()
    with open(log, "ab") as fh:
        fh.write(line[:25])
    assert watched_lines(watch) == []
    with open(log, "ab") as fh:
        fh.write(line[25:] + b"\n" + line[:10])
    assert watched_lines(watch) == [("app.jsonl", 1, line)]
    with open(log, "ab") as fh:
        fh.write(line[10:] + b"\n")
    assert watched_lines(watch) == [("app.jsonl", 2, line)]
    assert watched_lines(watch) == []


def _follow_to_the_end(
    folder: Path, settings: FollowSettings
) -> tuple[Follower, list[dict[str, object]]]:
    """Follow `folder` until what is written is read, as a stop signal ends a follow."""
    follower = Follower([str(folder)], settings)
    follower.start()
    found: list[dict[str, object]] = []
    try:
        follower.run(lambda f: found.append(f) is None, stop=lambda: True)
    finally:
        follower.close()
    return follower, found


def test_a_last_line_without_newline_is_read_when_the_follow_ends(tmp_path: Path) -> None:
    # The Unlinked error is the file's last line, and no newline ever follows it (a
    # writer killed mid-line, a CR-only file): held for good, it was never reported.
    lines = [*rt_request("a", "7", 0, 2), rt("response.unlinked", request_id="7", span_id="a",
                                              trace_id=f"{'a':0>32}")]
    front, cr_only = tmp_path / "frontend.jsonl", tmp_path / "worker.jsonl"
    front.write_text("\n".join(lines))
    cr_only.write_bytes(b"\r".join(x.encode() for x in lines) + b"\r")
    # Walked, not named: a .jsonl file is followed before its first newline comes.
    follower, found = _follow_to_the_end(tmp_path, FollowSettings(from_start=True))
    assert [(f["kind"], f["evidence"]) for f in found] == [
        ("unlinked", [{"file": str(front), "line": 3}])]
    summary = follower.summary()
    assert summary["lines"] == 4 and summary["bad_lines"] == 1  # the CR-only file: one line
    assert summary["incomplete"]


def test_a_walked_file_with_no_newline_at_all_is_judged_when_the_follow_ends(
    tmp_path: Path,
) -> None:
    # Not named for JSON lines, a walked file waits for its first newline to be judged:
    # at the stop there is no later look, so a lone Unlinked error with none (a writer
    # killed mid-line) went unread, and binary data with none went unnamed, "complete".
    (tmp_path / "frontend.out").write_text(
        rt("response.unlinked", request_id="7", span_id="a", trace_id=f"{'a':0>32}"))
    (tmp_path / "core.bin").write_bytes(bytes(range(11, 256)))
    follower, found = _follow_to_the_end(tmp_path, FollowSettings(from_start=True))
    assert [(f["kind"], f["evidence"]) for f in found] == [
        ("unlinked", [{"file": str(tmp_path / "frontend.out"), "line": 1}])]
    summary = follower.summary()
    assert [Path(note["file"]).name for note in summary["ignored_files"]] == ["core.bin"]
    assert summary["lines"] == 1


def test_a_name_that_is_not_utf8_is_spelt_one_way_in_the_summary(tmp_path: Path) -> None:
    # The batch read cites such a name with its bytes as escapes (`h\xfe.jsonl`); the
    # follower's notes kept the file system's lone surrogates, so one summary spelt a file
    # two ways, and stderr a third.
    folder = os.fsencode(tmp_path)
    with open(os.path.join(folder, b"h\xfe.jsonl"), "wb") as garbage:
        garbage.write(b"garbage\n")
    os.symlink(b"nothere", os.path.join(folder, b"g\xff.jsonl"))
    follower, _ = _follow_to_the_end(tmp_path, FollowSettings(from_start=True))
    summary = follower.summary()
    said = [note["file"] for note in summary["unreadable_files"]]
    said += [sample["file"] for sample in summary["bad_line_samples"]]
    said += summary["incomplete_reasons"]
    assert all(text.isprintable() for text in said), said  # no lone surrogate
    assert sorted(Path(n).name for n in said[:2]) == ["g\\xff.jsonl", "h\\xfe.jsonl"]
    assert sum("\\x" in text for text in summary["incomplete_reasons"]) == 2


@pytest.mark.parametrize("exact", [False, True])
def test_a_compressed_files_last_line_without_newline_is_read(tmp_path: Path,
                                                             exact: bool) -> None:
    # A rotated log compressed after a writer died mid-line (or a copy taken mid-line):
    # the batch read reads its last line; the follower held it and dropped it with the
    # file, so an Unlinked error on it was never reported (exit 0).
    lines = [*rt_request("a", "7", 0, 2), rt("response.unlinked", request_id="7", span_id="a",
                                              trace_id=f"{'a':0>32}")]
    text = "\n".join(lines).encode()
    (tmp_path / "frontend.jsonl.1.gz").write_bytes(gzip.compress(text))
    # exact: the first read fills its buffer, the last line is held; the next one is empty.
    max_bytes = len(text) if exact else 1 << 20
    follower, found = _follow_to_the_end(
        tmp_path, FollowSettings(from_start=True, max_bytes=max_bytes))
    assert [(f["kind"], f["evidence"]) for f in found] == [
        ("unlinked", [{"file": str(tmp_path / "frontend.jsonl.1.gz"), "line": 3}])]
    assert follower.summary()["lines"] == 3


def test_a_removed_files_last_line_without_newline_is_handed_out(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"first\nlast, no newline")
    watch = Watch([str(tmp_path)], ReadStats(), from_start=True)
    assert watched_lines(watch) == [("app.jsonl", 1, b"first")]
    log.unlink()  # no newline can come now: the file is closed, its last line read
    # Cited so: no name leads to the file, and a new app.jsonl may come.
    assert watched_lines(watch) == [("app.jsonl (removed)", 2, b"last, no newline")]
    assert not watch.tails


def test_existing_lines_are_skipped_from_the_end_but_keep_their_numbers(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"old 1\nold 2\nold 3\npartial")
    watch = Watch([str(log)], ReadStats())
    assert watched_lines(watch) == []
    with open(log, "ab") as fh:
        fh.write(b" now whole\nnew 5\n")
    assert watched_lines(watch) == [("app.jsonl", 4, b"partial now whole"), ("app.jsonl", 5, b"new 5")]


def test_from_start_reads_existing_lines(tmp_path: Path) -> None:
    (tmp_path / "app.jsonl").write_bytes(b"a\nb\n")
    watch = Watch([str(tmp_path)], ReadStats(), from_start=True)
    assert [n for _, n, _ in watched_lines(watch)] == [1, 2]


def test_a_new_file_is_read_from_its_first_line_and_a_readme_is_ignored(tmp_path: Path) -> None:
    stats = ReadStats()
    watch = Watch([str(tmp_path)], stats)
    watch.discover()
    (tmp_path / "README.md").write_text("# notes\nnot a log\n")
    (tmp_path / "worker.jsonl").write_bytes(b'{"a": 1}\n')
    assert watched_lines(watch) == [("worker.jsonl", 1, b'{"a": 1}')]
    assert [Path(n.file).name for n in stats.ignored_files] == ["README.md"]


def _two_lines_read_and_a_third_written(tmp_path: Path) -> tuple[Watch, Path]:
    """A followed app.jsonl: two lines read, a third written after the last poll."""
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"")
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    log.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    assert len(watched_lines(watch)) == 2
    with open(log, "ab") as fh:
        fh.write(b'{"n": 3}\n')
    return watch, log


def test_gzip_copy_of_a_followed_file_is_not_read_again(tmp_path: Path) -> None:
    watch, log = _two_lines_read_and_a_third_written(tmp_path)
    # Rotated away: compressed to a copy, the log truncated.
    (tmp_path / "app.jsonl.1.gz").write_bytes(gzip.compress(log.read_bytes()))
    os.truncate(log, 0)
    # Only the line the follower had not read yet comes from the copy.
    assert watched_lines(watch) == [("app.jsonl.1.gz", 3, b'{"n": 3}')]
    with open(log, "ab") as fh:
        fh.write(b'{"n": 4}\n')
    assert watched_lines(watch) == [("app.jsonl", 1, b'{"n": 4}')]
    assert watched_lines(watch) == []


@pytest.mark.parametrize("written", [b"", gzip.compress(b"x")[:3]])
def test_a_compressed_rotation_seen_while_gzip_writes_it_is_read_as_gzip(
    tmp_path: Path, written: bytes
) -> None:
    # `gzip app.jsonl.1` creates app.jsonl.1.gz empty, then writes its header: a poll
    # that opened it then read its compressed bytes as plain text, bad lines (the
    # follower counted 241 of them in a rotation test under load).
    watch, log = _two_lines_read_and_a_third_written(tmp_path)
    packed = tmp_path / "app.jsonl.1.gz"
    packed.write_bytes(written)  # gzip has only begun
    os.truncate(log, 0)
    assert watched_lines(watch) == []
    packed.write_bytes(gzip.compress(b'{"n": 1}\n{"n": 2}\n{"n": 3}\n'))
    assert watched_lines(watch) == [("app.jsonl.1.gz", 3, b'{"n": 3}')]
    assert watch.stats.bad_lines == 0


def test_truncated_and_rewritten_past_the_old_size_between_polls(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"")
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    log.write_bytes(b'{"old": 1}\n')
    assert len(watched_lines(watch)) == 1
    # Truncated, then more written than was there before, all between two polls.
    log.write_bytes(b'{"new": 1}\n{"new": 2}\n')
    assert watched_lines(watch) == [("app.jsonl", 1, b'{"new": 1}'), ("app.jsonl", 2, b'{"new": 2}')]


def test_an_unrelated_gzip_is_read_once(tmp_path: Path) -> None:
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    (tmp_path / "other.jsonl.2.gz").write_bytes(gzip.compress(b'{"n": 1}\n{"n": 2}\n'))
    assert [n for _, n, _ in watched_lines(watch)] == [1, 2]
    assert watched_lines(watch) == []


def test_same_first_line_in_two_workers_logs_is_not_a_copy(tmp_path: Path) -> None:
    identities = Identities()
    banner = b"starting worker\n"
    first = identities.claim(banner, tmp_path / "worker-1.jsonl")
    second = identities.claim(banner, tmp_path / "worker-2.jsonl")
    assert first is not second
    assert identities.claim(banner + b"more\n", tmp_path / "worker-1.jsonl.1") is first


def test_bad_lines_are_counted_with_their_line_in_the_file(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_bytes(b"")
    follower = Follower([str(tmp_path)], FollowSettings())
    try:
        follower.poll()
        good = rt_request("s1", "r1", 0.0, 1.0, fp_in="a", fp_out="b")
        log.write_text("\n".join([*good, "{not json", *good]) + "\n")
        follower.poll()
        with open(log, "a") as fh:
            fh.write('{"time": "x"}\n')
        follower.poll()
    finally:
        follower.close()
    samples = [(s.line, s.reason) for s in follower.stats.samples]
    assert [line for line, _ in samples] == [3, 6]
    assert follower.stats.lines == 6 and follower.stats.bad_lines == 2


def test_a_pipe_in_a_followed_directory_is_set_aside_not_opened(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    os.mkfifo(tmp_path / "stream.jsonl")  # nobody writes: opening it would wait forever
    stats = ReadStats()
    watch = Watch([str(tmp_path)], stats, from_start=True)
    # On a thread: a watch that opens the pipe blocks for good, and fails here.
    looked = threading.Thread(target=lambda: (watch.discover(), watch.discover()), daemon=True)
    looked.start()
    looked.join(timeout=30)
    assert not looked.is_alive()
    assert [t.name for t in watch.tails.values()] == [str(tmp_path / "frontend.jsonl")]
    assert [(Path(n.file).name, n.reason) for n in stats.ignored_files] == [
        ("stream.jsonl", "not a regular file (a pipe, socket or device)")
    ]  # named once, though looked at twice


def test_a_named_file_renamed_by_a_rotation_is_read_while_its_writer_still_writes(
    tmp_path: Path,
) -> None:
    # logrotate's `create`: the log is renamed and a new one created, and the service
    # writes to the renamed file until its postrotate signal makes it reopen. A followed
    # file named on the command line was closed at the first poll that found nothing
    # new in it, so the lines written in between were lost, and evidence named the new
    # file for lines of the renamed one.
    log = tmp_path / "frontend.jsonl"
    unlinked = rt("response.unlinked", request_id="7", span_id="b", trace_id="b" * 32)
    with open(log, "a") as old:
        old.write("\n".join(rt_request("a", "1", 0, 1)) + "\n")
        old.flush()
        follower = Follower([str(log)], FollowSettings(from_start=True))
        follower.start()
        found: list[dict[str, object]] = []
        try:
            found += follower.poll()[0]
            os.rename(log, tmp_path / "frontend.jsonl.1")
            log.touch()
            found += follower.poll()[0]  # nothing new anywhere
            old.write(unlinked + "\n")  # before the service reopens its log
            old.flush()
            found += follower.poll()[0]
            found += follower.finish()
            summary = follower.summary()
        finally:
            follower.close()
    assert [(f["kind"], f["evidence"]) for f in found] == [
        ("unlinked", [{"file": str(tmp_path / "frontend.jsonl.1"), "line": 3}])]
    assert summary["lines"] == 3


@pytest.mark.parametrize("rotate", ["copytruncate", "rename"])
def test_a_line_torn_by_a_rotation_is_a_bad_line_not_a_file_of_no_records(
    tmp_path: Path, rotate: str
) -> None:
    # The writer had written half a line when the log rotated; the rest went to the
    # new file. The batch read sees app.jsonl.1 with 301 lines, its last one torn (2
    # bad lines in 602: whole). The follower had read the 300 under app.jsonl, so the
    # torn piece was all it counted under app.jsonl.1: "none of its 1 lines is a log
    # record", incomplete, exit 3.
    log = tmp_path / "app.jsonl"

    def requests(first: int, last: int) -> str:
        return "".join(line + "\n" for k in range(first, last)
                       for line in rt_request(f"s{k}", f"r{k}", k, k + 0.5))

    torn = rt_request("x", "rx", 400, 401)[0]
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    writer = open(log, "a")  # noqa: SIM115 (reopened by the rotation)
    try:
        writer.write(requests(0, 150))
        writer.flush()
        follower.start()
        follower.poll()
        writer.write(torn[:40])
        writer.flush()
        follower.poll()
        if rotate == "copytruncate":
            (tmp_path / "app.jsonl.1").write_bytes(log.read_bytes())
            os.truncate(log, 0)
        else:
            writer.close()
            os.rename(log, tmp_path / "app.jsonl.1")
            writer = open(log, "a")  # noqa: SIM115
        writer.write(torn[40:] + "\n" + requests(150, 300))
        writer.flush()
        follower.run(lambda f: True, stop=lambda: True)
        summary = follower.summary()
    finally:
        writer.close()
        follower.close()
    assert (summary["lines"], summary["bad_lines"]) == (602, 2)
    assert summary["incomplete_reasons"] == []


def test_a_valid_line_duckdb_rejects_in_one_file_does_not_stop_the_follow(
    tmp_path: Path,
) -> None:
    # A lone surrogate in a client's field is valid JSON DuckDB's reader rejects: the
    # line is read in Python and its file's spans rebuilt, in another column order than
    # the other file's; joining the two stopped --follow with exit 4.
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "7", 0, 2)) + "\n")
    odd = rt("request.start", request_id="8", span_id="b", trace_id="b" * 32)
    odd = odd[:-1] + ', "user_agent": "\\udc80"}'
    (tmp_path / "worker.jsonl").write_text(odd + "\n")
    follower, _ = _follow_to_the_end(tmp_path, FollowSettings(from_start=True))
    summary = follower.summary()
    assert (summary["lines"], summary["bad_lines"]) == (3, 0)


@pytest.mark.parametrize("hole", [b"\x00" * 4096, b"\x00\x00\n"])
def test_nuls_at_a_polls_first_byte_are_read_as_the_batch_read_reads_them(
    tmp_path: Path, hole: bytes
) -> None:
    # A crash's hole (or a short run of NULs) that begins where a poll begins was skipped
    # as a copy-and-truncate's: no bad line, and the follow said it read everything.
    log = tmp_path / "frontend.jsonl"
    log.write_bytes(b"")
    follower = Follower([str(log)], FollowSettings())
    try:
        follower.poll()
        with open(log, "a") as fh:
            fh.write("\n".join(rt_request("s1", "r1", 0.0, 1.0)) + "\n")
        follower.poll()
        with open(log, "ab") as fh:
            fh.write(hole + ("\n".join(rt_request("s2", "r2", 2.0, 3.0)) + "\n").encode())
        follower.poll()
    finally:
        follower.close()
    code, doc = analyze_json(str(log))
    assert code == 3
    want = [(s["line"], s["reason"]) for s in doc["summary"]["bad_line_samples"]]
    assert [(s.line, s.reason) for s in follower.stats.samples] == want != []
    assert follower.stats.lines == doc["summary"]["lines"]
    assert bool(follower.stats.unreadable_files) == bool(doc["summary"]["unreadable_files"])


@pytest.mark.parametrize("ending", [b"\n", b""])
def test_a_log_of_nothing_but_nuls_is_a_bad_line_as_in_the_batch_read(
    tmp_path: Path, ending: bytes
) -> None:
    # A log preallocated and never written: skipped as a copy-and-truncate's hole
    # waiting for its record, it was no line at all, and the follow said complete.
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "7", 0, 2)) + "\n")
    (tmp_path / "prealloc.jsonl").write_bytes(b"\x00" * 100_000 + ending)
    follower, _ = _follow_to_the_end(tmp_path, FollowSettings(from_start=True))
    code, doc = analyze_json(str(tmp_path))
    assert code == 3
    want = [(s["line"], s["reason"]) for s in doc["summary"]["bad_line_samples"]]
    assert want == [(1, "100000 NUL bytes (lines lost in a crash?)")]
    assert [(s.line, s.reason) for s in follower.stats.samples] == want
    assert follower.stats.lines == doc["summary"]["lines"]
    assert bool(follower.stats.unreadable_files) == bool(doc["summary"]["unreadable_files"])


def test_a_copy_and_truncate_hole_before_a_record_is_still_no_bad_line(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_bytes(b"\x00" * 100_000 + ("\n".join(rt_request("a", "7", 0, 2)) + "\n").encode())
    follower, _ = _follow_to_the_end(tmp_path, FollowSettings(from_start=True))
    code, doc = analyze_json(str(tmp_path))
    assert code == 0 and doc["summary"]["bad_lines"] == 0
    assert (follower.stats.lines, follower.stats.samples) == (doc["summary"]["lines"], [])
