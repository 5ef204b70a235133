"""Rotation in the middle of a followed run: no line lost, no line read twice.

A writer process replays synthetic logs (with known faults) into a directory at a
steady rate and rotates every file halfway; `ridtrace analyze --follow` runs as another
process. The follower must count exactly the lines written, and print exactly the
findings a one-shot read of the original files gives, each once.
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, SynthTruth, write_logs
from tests.cli.helpers import analyze_json
from tests.support.follower import start_follower
from tests.support.servers import child_pythonpath

Key = tuple[str, str, str]


def _key(item: dict[str, object]) -> Key:
    return (str(item["kind"]), str(item["span_id"]), str(item["request_id"]))


def _reference(src: Path) -> list[Key]:
    follower = Follower([str(src)], FollowSettings(from_start=True))
    try:
        found, more = follower.poll()
        assert not more
        found += follower.finish()  # what waited for the settle time
    finally:
        follower.close()
    return sorted(_key(f) for f in found)


# Polls 4x as often as start_follower's 0.2 s, with the writer 2.5x as fast and its
# split-line pauses as many polls long as before: the rotation and every split still fall
# between polls of a follower already following, in a third of the wall time.
POLL = ("--poll-interval", "0.05s")
RATE = "10000"


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthTruth, list[Key]]:
    """The synthetic logs every replay copies (read only) and their one-shot findings:
    the same for every test, so made and read once."""
    src = tmp_path_factory.mktemp("rotation") / "src"
    truth = write_logs(src, SynthSpec(requests=800, seed=3))
    return src, truth, _reference(src)


def _replay(src: Path, dst: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.log_writer", str(src), str(dst), *args],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": child_pythonpath()},  # from any directory
    )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr


def _follow_rotated(src: Path, dst: Path, mode: str, inputs: list[str]
                    ) -> tuple[int, dict[str, object], list[Key]]:
    """Follow `inputs` while `src` is replayed into `dst` with a rotation of `mode`: the
    exit code, the summary and the sorted finding keys."""
    follower = start_follower(inputs, *POLL)
    try:
        _replay(src, dst, "--rate", RATE, "--rotate", mode)
    finally:
        code = follower.stop()
    return code, follower.summary(), sorted(_key(p.json()) for p in follower.findings())


@pytest.mark.parametrize(
    "mode", ["rename", "copytruncate", "rename-gzip", "copytruncate-gzip"]
)
def test_rotation_mid_run_loses_no_line_and_reads_none_twice(
    tmp_path: Path, mode: str, logs: tuple[Path, SynthTruth, list[Key]]
) -> None:
    src, truth, expected = logs
    assert {k for k, _, _ in expected} == {"crossed_stream", "duplicate_in_flight", "unlinked"}
    dst = tmp_path / "dst"
    dst.mkdir()
    code, summary, got = _follow_rotated(src, dst, mode, [str(dst)])
    assert summary["lines"] == truth.lines, summary
    assert summary["bad_lines"] == 0, summary["bad_line_samples"]
    assert got == expected, (got, expected)
    assert code == 1
    rotated = sorted(p.name for p in dst.iterdir())
    assert any(".1" in name for name in rotated), rotated  # the rotation did happen
    # The files there are, as the batch read counts them: each copy of a log's content
    # made by the rotation counted again, the summary said 9 where batch says 6.
    assert summary["files"] == len(rotated), (summary["files"], rotated)


@pytest.mark.parametrize(
    "mode", ["rename", "copytruncate", "rename-gzip", "copytruncate-gzip"]
)
def test_named_logs_lose_no_line_to_a_rotation(
    tmp_path: Path, mode: str, logs: tuple[Path, SynthTruth, list[Key]]
) -> None:
    # The logs named one by one, as `ridtrace analyze frontend.jsonl worker-*.jsonl`
    # names them: no directory walk finds the renamed file or the copy, yet after a
    # copytruncate the lines written since the follower's last read are in the copy only.
    src, truth, expected = logs
    dst = tmp_path / "dst"
    dst.mkdir()
    named = [dst / p.name for p in truth.files]
    for path in named:
        path.touch()
    code, summary, got = _follow_rotated(src, dst, mode, [str(p) for p in named])
    assert summary["lines"] == truth.lines, summary
    assert got == expected
    assert code == 1


def test_line_written_in_two_pieces_is_read_once_whole(
    tmp_path: Path, logs: tuple[Path, SynthTruth, list[Key]]
) -> None:
    src, truth, expected = logs
    dst = tmp_path / "dst"
    dst.mkdir()
    follower = start_follower([str(dst)], *POLL)
    try:
        # Every 700th line is written half, then the rest after 0.15 s (three polls later).
        _replay(src, dst, "--rate", RATE, "--split-every", "700", "--pause", "0.15")
    finally:
        follower.stop()
    summary = follower.summary()
    assert summary["lines"] == truth.lines
    assert summary["bad_lines"] == 0, summary["bad_line_samples"]
    assert sorted(_key(p.json()) for p in follower.findings()) == expected


_COUNTS = ("lines", "bad_lines", "requests", "spans", "crossed_stream", "duplicate_in_flight",
           "unlinked", "errors", "incomplete", "incomplete_reasons")


@pytest.mark.parametrize("mode", ["none", "rename", "copytruncate-gzip"])
def test_followed_dynamo_logs_end_as_analyze_reads_the_final_files(
    tmp_path: Path, mode: str
) -> None:
    # Dynamo logs (banners, torn lines) with worker clocks off by -30, +40 and +15 ms,
    # written interleaved across files, lines split across writes, rotated halfway.
    # Once the writer is done, the follower's findings, counters and exit code are
    # those of `ridtrace analyze` on the files left behind. ("files" differs by design:
    # the follower counts the files it opened, a rotated file compressed and removed
    # among them.)
    src = tmp_path / "src"
    write_dynamo_logs(src, DynamoSpec(requests=300, worker_skew_us=(-30_000, 40_000, 15_000)))
    dst = tmp_path / "dst"
    dst.mkdir()
    follower = start_follower([str(dst)], *POLL)
    try:
        _replay(src, dst, "--rate", "7500", "--rotate", mode, "--split-every", "300",
                "--pause", "0.15")
    finally:
        code = follower.stop()
    # The batch read in-process (as tests/cli/helpers does for the batch tests): the
    # reference, not what is under test; its exit code is the CLI's all the same.
    batch_code, report = analyze_json(str(dst))
    expected = sorted(_key(f) for f in report["findings"] if f["severity"] == "error")
    assert sorted(_key(p.json()) for p in follower.findings()) == expected
    summary = follower.summary()
    assert {k: summary[k] for k in _COUNTS} == {k: report["summary"][k] for k in _COUNTS}
    assert code == batch_code == 1


def _logrotate(log: Path, mode: str) -> None:
    """One numbered rotation of `log` (logrotate with ``rotate 3``): ``.1`` → ``.2`` …,
    then `log` renamed to ``.1`` and created again, or copied to ``.1`` and truncated;
    ``rename-gzip``: ``.1`` compressed to ``.1.gz`` at once (``compress`` without
    ``delaycompress``)."""
    for k in (2, 1):
        for part in (log.with_name(f"{log.name}.{k}"), log.with_name(f"{log.name}.{k}.gz")):
            if part.exists():
                part.rename(log.with_name(part.name.replace(f".{k}", f".{k + 1}", 1)))
    rotated = log.with_name(log.name + ".1")
    if mode == "copytruncate":
        shutil.copyfile(log, rotated)
        os.truncate(log, 0)
        return
    log.rename(rotated)
    log.touch()
    if mode == "rename-gzip":
        rotated.with_name(rotated.name + ".gz").write_bytes(gzip.compress(rotated.read_bytes()))
        rotated.unlink()


@pytest.mark.parametrize("mode", ["rename", "copytruncate", "rename-gzip"])
def test_two_rotations_between_polls_lose_no_line_of_a_named_log(
        tmp_path: Path, mode: str) -> None:
    # app.jsonl → .1 → .2 while app.jsonl was created (or truncated) twice, all between
    # two polls: the lines of the log the first rotation made, at app.jsonl.1 by the next
    # poll, never under the followed name and no copy of anything read, were lost.
    src = tmp_path / "src"
    write_dynamo_logs(src, DynamoSpec(requests=40, duplicates=1, cancelled=0, bad_lines=0))
    lines = (src / "frontend.jsonl").read_bytes().splitlines(keepends=True)
    third = len(lines) // 3
    log = tmp_path / "logs" / "app.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"".join(lines[:5]))  # before the start: not read
    # A poll an hour away: every write and rotation below falls between the start's look
    # and the stop's, whenever the follower's first poll comes.
    follower = start_follower([str(log)], "--poll-interval", "1h")
    try:
        for piece in (lines[5:third], lines[third:2 * third]):
            with open(log, "ab") as fh:
                fh.write(b"".join(piece))
            _logrotate(log, mode)
        with open(log, "ab") as fh:
            fh.write(b"".join(lines[2 * third:]))
    finally:
        code = follower.stop(signal.SIGINT)
    summary = follower.summary()
    assert (summary["lines"], summary["bad_lines"]) == (len(lines) - 5, 0), summary
    assert summary["unreadable_files"] == [] and code in (0, 1), follower.stderr
