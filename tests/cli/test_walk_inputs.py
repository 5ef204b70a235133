"""What a directory walk reads, and what it says it could not: never a silent clean.

Each case hid an incident from `ridtrace analyze DIR` (exit 0) or crashed it: a linked
subdirectory, one it may not list, a file it may not open, broken links to one place,
a link loop, pretty-printed records in a .jsonl, bzip2/xz rotations, plain text named
.gz, and a compression this Python cannot decode.
"""

from __future__ import annotations

import bz2
import json
import lzma
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.dynamo import DynamoSpec, DynamoTruth, write_dynamo_logs
from tests.forensics.helpers import rt_request

DUPLICATES = 3


def run(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["analyze", *args, "--format", "json", "-q"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def duplicates(doc: dict[str, Any]) -> int:
    return sum(1 for f in doc["findings"] if f["kind"] == "duplicate_in_flight")


def notes(doc: dict[str, Any], kind: str) -> dict[str, str]:
    return {Path(n["file"]).name: n["reason"] for n in doc["summary"][kind]}


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, DynamoTruth]]:
    out = tmp_path_factory.mktemp("walk-incident")
    yield out, write_dynamo_logs(out, DynamoSpec(requests=300, duplicates=DUPLICATES))


def copy_logs(incident: tuple[Path, DynamoTruth], to: Path) -> Path:
    to.mkdir(parents=True, exist_ok=True)
    for path in incident[1].files:
        shutil.copy(path, to / path.name)
    return to


def run_with_packed_frontend(
    incident: tuple[Path, DynamoTruth], tmp_path: Path, suffix: str,
    pack: Callable[[bytes], bytes], damage: Callable[[bytearray], None] = lambda _: None,
) -> tuple[int, dict[str, Any], Path]:
    """`analyze` over the logs with the frontend's log rotated to
    ``frontend.jsonl.1<suffix>``, packed by `pack`, then damaged by `damage`."""
    logs = copy_logs(incident, tmp_path / "logs")
    front = logs / "frontend.jsonl"
    packed = bytearray(pack(front.read_bytes()))
    damage(packed)
    (logs / f"frontend.jsonl.1{suffix}").write_bytes(bytes(packed))
    front.unlink()
    code, doc = run(str(logs))
    return code, doc, logs


def _flip(start: int, stop: int) -> Callable[[bytearray], None]:
    def flip(data: bytearray) -> None:
        data[start:stop] = bytes(b ^ 0xFF for b in data[start:stop])

    return flip


def test_a_linked_subdirectory_is_walked(incident: tuple[Path, DynamoTruth], tmp_path: Path) -> None:
    real = copy_logs(incident, tmp_path / "volume")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "pods").symlink_to(real)
    (tmp_path / "logs" / "again").symlink_to(tmp_path / "logs")  # a loop back up the tree
    code, doc = run(str(tmp_path / "logs"))
    assert code == 1 and duplicates(doc) == DUPLICATES
    assert doc["summary"]["files"] == len(incident[1].files)


def test_a_hard_link_to_a_log_is_read_once(incident: tuple[Path, DynamoTruth],
                                           tmp_path: Path) -> None:
    # A second name for the same file (a hard link kept by a backup or a log shipper's
    # spool) was read under both names: its lines counted twice in the summary.
    logs = copy_logs(incident, tmp_path / "logs")
    code, alone = run(str(logs))
    (logs / "spool-frontend.jsonl").hardlink_to(logs / "frontend.jsonl")
    code_linked, linked = run(str(logs))
    assert (code_linked, linked["summary"]) == (code, alone["summary"])


@pytest.mark.extra("dask")
@pytest.mark.parametrize("second_name", ["hard link", "file URL"])
def test_dask_reads_a_file_named_twice_once(incident: tuple[Path, DynamoTruth], tmp_path: Path,
                                            second_name: str) -> None:
    # Named beside its directory under a second name, the Dask engine read it twice:
    # its lines, files and bad lines counted twice where the local engine reads it once.
    logs = copy_logs(incident, tmp_path / "logs")
    if second_name == "hard link":
        (tmp_path / "backup").mkdir()
        again = str(tmp_path / "backup" / "frontend.jsonl")
        os.link(logs / "frontend.jsonl", again)
    else:
        again = (logs / "frontend.jsonl").as_uri()
    _, local = run(str(logs))  # as the local engine reads it, named twice or not
    code, dask = run(str(logs), again, "--engine", "dask")
    assert (dask["summary"]["files"], dask["summary"]["lines"]) == (
        local["summary"]["files"], local["summary"]["lines"])
    assert code == 1 and duplicates(dask) == DUPLICATES


def test_a_directory_the_walk_cannot_list_makes_the_result_incomplete(
    incident: tuple[Path, DynamoTruth], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    copy_logs(incident, tmp_path / "logs")
    locked = tmp_path / "logs" / "locked"
    locked.mkdir()
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:  # root can list anything: refuse as a user is refused
        if not isinstance(path, int) and Path(path) == locked:  # an int: rmtree's descriptor
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, doc = run(str(tmp_path / "logs"))
    assert notes(doc, "unreadable_files") == {"locked": "cannot list it: Permission denied"}
    assert doc["summary"]["incomplete"] is True
    assert code == 1 and duplicates(doc) == DUPLICATES  # the rest is still read


def test_a_file_the_walk_may_not_open_is_listed_and_the_others_read(
    incident: tuple[Path, DynamoTruth], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    logs = copy_logs(incident, tmp_path / "logs")
    (logs / "other.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p).name != "other.jsonl"
                        and real_access(p, mode))
    code, doc = run(str(logs))
    assert notes(doc, "unreadable_files") == {"other.jsonl": "cannot read it: permission denied"}
    assert code == 1 and duplicates(doc) == DUPLICATES


def test_broken_links_and_link_loops_are_each_listed_not_merged_or_fatal(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    (tmp_path / "worker-0.jsonl").symlink_to("/gone/away.jsonl")
    (tmp_path / "worker-1.jsonl").symlink_to("/gone/away.jsonl")
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    code, doc = run(str(tmp_path))
    assert set(notes(doc, "unreadable_files")) == {
        "worker-0.jsonl", "worker-1.jsonl", "a.jsonl", "b.jsonl"}
    assert doc["summary"]["requests"] == 1 and code == 3


def test_pretty_printed_records_in_a_jsonl_are_bad_lines_not_a_skipped_file(
    tmp_path: Path,
) -> None:
    records = [json.loads(line) for line in rt_request("a", "1", 0, 1)]
    (tmp_path / "frontend.jsonl").write_text("".join(json.dumps(r, indent=2) + "\n" for r in records))
    (tmp_path / "report.json").write_text(json.dumps({"findings": []}, indent=2))
    code, doc = run(str(tmp_path))
    assert notes(doc, "ignored_files") == {"report.json": "a JSON document, not JSON lines"}
    assert doc["summary"]["files"] == 1 and doc["summary"]["bad_lines"] > 0
    assert code == 3


@pytest.mark.parametrize(("suffix", "pack"), [(".bz2", bz2.compress), (".xz", lzma.compress)])
def test_bzip2_and_xz_rotations_are_read_like_gzip(
    incident: tuple[Path, DynamoTruth], tmp_path: Path, suffix: str, pack: Any,
) -> None:
    code, doc, _ = run_with_packed_frontend(incident, tmp_path, suffix, pack)
    assert code == 1 and duplicates(doc) == DUPLICATES
    assert doc["summary"]["lines"] == incident[1].lines
    assert not doc["summary"]["unreadable_files"] and not doc["summary"]["ignored_files"]


def test_a_torn_xz_keeps_the_lines_before_the_tear(
    incident: tuple[Path, DynamoTruth], tmp_path: Path,
) -> None:
    def torn(data: bytes) -> bytes:
        packed = lzma.compress(data)
        return packed[: len(packed) * 9 // 10]

    code, doc, _ = run_with_packed_frontend(incident, tmp_path, ".xz", torn)
    assert "xz stream truncated" in notes(doc, "unreadable_files")["frontend.jsonl.1.xz"]
    assert code in (1, 3) and doc["summary"]["lines"] > incident[1].lines // 2


def test_plain_text_named_gz_is_read_as_text(
    incident: tuple[Path, DynamoTruth], tmp_path: Path,
) -> None:
    logs = copy_logs(incident, tmp_path / "logs")
    (logs / "frontend.jsonl").rename(logs / "frontend.jsonl.gz")
    code, doc = run(str(logs))
    assert code == 1 and duplicates(doc) == DUPLICATES
    assert doc["summary"]["lines"] == incident[1].lines


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Python 3.14 decodes zstd")
def test_a_compression_this_python_cannot_decode_is_named_unreadable(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    (tmp_path / "frontend.jsonl.1.zst").write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(64))
    code, doc = run(str(tmp_path))
    reason = notes(doc, "unreadable_files")["frontend.jsonl.1.zst"]
    assert "zstd-compressed" in reason
    assert "<(zstd -dc FILE)" in reason  # how to read it without another Python
    assert code == 3


@pytest.mark.parametrize("name", ["frontend.jsonl.1.lz4", "frontend.jsonl.1.packed"])
def test_an_lz4_rotation_is_named_unreadable(tmp_path: Path, name: str) -> None:
    # No decompressor in the standard library: a walk ignored it as binary data and the
    # result said complete and clean on a log it never read. Known by its frame's magic
    # whatever its name.
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    (tmp_path / name).write_bytes(b"\x04\x22\x4d\x18" + os.urandom(64))
    code, doc = run(str(tmp_path))
    reason = notes(doc, "unreadable_files")[name]
    assert reason.startswith("lz4-compressed, and this Python cannot decompress it:")
    assert reason.endswith("<(lz4 -dc FILE)")
    assert code == 3


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Python 3.14 decodes zstd")
def test_a_follower_names_a_small_zstd_rotation_it_cannot_decode(tmp_path: Path) -> None:
    # Under 64 KiB it gave no line to judge the file by, so the walk looked at it again
    # every poll, never read it nor named it: the summary said complete.
    from ridtrace.forensics.live.follow import Follower, FollowSettings

    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    (tmp_path / "frontend.jsonl.1.zst").write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(64))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    try:
        follower.start()
        follower.poll()
        follower.poll()
        summary = follower.summary()
    finally:
        follower.close()
    [note] = summary["unreadable_files"]
    assert note["file"].endswith("frontend.jsonl.1.zst")
    assert note["reason"].startswith("zstd-compressed, and this Python cannot decompress")
    assert note["reason"].endswith("<(zstd -dc FILE)")  # not "after line 0; read up to …"
    assert summary["incomplete"] is True


def test_a_file_where_no_line_is_a_log_record_makes_the_result_incomplete(
    incident: tuple[Path, DynamoTruth], tmp_path: Path,
) -> None:
    # A replica that logged Dynamo's readable text (DYN_LOGGING_JSONL unset): every line
    # is bad, and the other files keep the share of bad lines far under 1 %.
    logs = copy_logs(incident, tmp_path / "logs")
    text = "".join(f"2026-11-30T10:00:0{n}.770028Z  INFO main.init: worker {n} ready\n"
                   for n in range(8))
    (logs / "replica-2.log").write_text(text)
    code, doc = run(str(logs))
    summary = doc["summary"]
    assert summary["bad_lines"] < 0.01 * summary["lines"]
    assert any("replica-2.log: none of its 8 lines is a log record" in r
               for r in summary["incomplete_reasons"])
    assert summary["incomplete"] is True
    assert code == 1  # the duplicates found still say 1; without them it would be 3


def test_a_gzip_with_a_wrong_checksum_keeps_every_line(
    incident: tuple[Path, DynamoTruth], tmp_path: Path,
) -> None:
    import gzip

    # The trailer's CRC-32 is the last 8 bytes' first half.
    code, doc, _ = run_with_packed_frontend(incident, tmp_path, ".gz", gzip.compress,
                                            lambda data: _flip(len(data) - 8, len(data) - 4)(data))
    assert "incorrect data check" in notes(doc, "unreadable_files")["frontend.jsonl.1.gz"]
    assert doc["summary"]["lines"] == incident[1].lines  # every line decoded is read
    assert code == 1 and duplicates(doc) == DUPLICATES


def test_a_follower_walks_a_linked_subdirectory_too(
    incident: tuple[Path, DynamoTruth], tmp_path: Path,
) -> None:
    from ridtrace.forensics.live.follow import Follower, FollowSettings

    real = copy_logs(incident, tmp_path / "volume")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "pods").symlink_to(real)
    (tmp_path / "logs" / "again").symlink_to(tmp_path / "logs")
    follower = Follower([str(tmp_path / "logs")], FollowSettings(from_start=True))
    try:
        follower.start()
        follower.poll()
        assert follower.stats.files == len(incident[1].files)
    finally:
        follower.close()


def _deny_search(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Stat of anything under `denied` fails as for a directory without search (x)
    permission, which root never meets."""
    real_stat = Path.stat

    def stat(self: Path, *, follow_symlinks: bool = True) -> Any:
        if denied in self.parents:
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(Path, "stat", stat)


def _logs_with_a_locked_directory(
    incident: tuple[Path, DynamoTruth], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> tuple[Path, Path]:
    """The incident's logs and, under them, ``locked/worker-9.jsonl`` that may be listed
    but not searched."""
    logs = copy_logs(incident, tmp_path / "logs")
    locked = logs / "locked"
    locked.mkdir()
    (locked / "worker-9.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    _deny_search(monkeypatch, locked)
    return logs, locked


def test_a_directory_it_may_list_but_not_search_is_unreadable_not_a_crash(
    incident: tuple[Path, DynamoTruth], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    logs, locked = _logs_with_a_locked_directory(incident, tmp_path, monkeypatch)
    code, doc = run(str(logs))
    assert notes(doc, "unreadable_files") == {"worker-9.jsonl": "cannot read it: Permission denied"}
    assert code == 1 and duplicates(doc) == DUPLICATES
    named = CliRunner().invoke(main, ["analyze", str(locked / "worker-9.jsonl")])
    assert named.exit_code == 2 and "Permission denied" in named.stderr


def test_a_follower_names_what_it_may_not_search(
    incident: tuple[Path, DynamoTruth], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ridtrace.forensics.live.follow import Follower, FollowSettings

    logs, _ = _logs_with_a_locked_directory(incident, tmp_path, monkeypatch)
    follower = Follower([str(logs)], FollowSettings(from_start=True))
    try:
        follower.start()
        follower.poll()
        follower.poll()
        assert [Path(n.file).name for n in follower.stats.unreadable_files] == ["worker-9.jsonl"]
    finally:
        follower.close()


def test_corrupt_xz_keeps_the_lines_before_the_damage(
    incident: tuple[Path, DynamoTruth], tmp_path: Path,
) -> None:
    code, doc, logs = run_with_packed_frontend(
        incident, tmp_path, ".xz", lzma.compress,
        lambda data: _flip(len(data) // 2, len(data) // 2 + 20)(data))
    assert "corrupt xz data" in notes(doc, "unreadable_files")["frontend.jsonl.1.xz"]
    workers = sum(p.read_bytes().count(b"\n") for p in logs.glob("worker-*.jsonl"))
    # Lines before the damage are read (all were lost); how many depends on where the
    # decoder notices it, past the damaged bytes.
    assert doc["summary"]["lines"] - workers > 0.2 * (incident[1].lines - workers)
    assert code in (1, 3)


def test_a_tree_deeper_than_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    # Python 3.11's os.walk recursed per level: exit 4 and a RecursionError traceback.
    deep = tmp_path / "logs"
    levels = sys.getrecursionlimit() + 100
    chain = [deep]
    for _ in range(levels):
        chain.append(chain[-1] / "d")
    for directory in chain:  # Path.mkdir(parents=True) recurses per level too
        directory.mkdir()
    leaf = chain[-1] / "frontend.jsonl"
    leaf.write_text(
        "\n".join(rt_request("a" * 16, "dup", 0, 2) + rt_request("b" * 16, "dup", 1, 3)) + "\n")
    (deep / "worker.jsonl").write_text("\n".join(rt_request("c" * 16, "r1", 0, 1)) + "\n")
    try:
        code, doc = run(str(deep))
    finally:
        # shutil.rmtree recurses on 3.11 too: left behind, the tree failed pytest's own
        # clean-up of old temporary directories in every later session (exit 1).
        leaf.unlink()
        for directory in reversed(chain[1:]):
            directory.rmdir()
    assert code == 1 and duplicates(doc) == 1
    assert doc["summary"]["requests"] == 3 and doc["summary"]["unreadable_files"] == []


@pytest.mark.parametrize("line", [
    # (loguru's serialize=True is read now: tests/cli/test_loguru_serialized_logs.py)
    # one batch of an OpenTelemetry Collector file exporter
    {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "{}"}}]}]}]},
    # python-json-logger
    {"asctime": "2026-11-30 10:00:00,123", "levelname": "ERROR", "message": "Unlinked"},
])
def test_a_one_line_log_in_another_format_is_read_not_ignored_as_a_document(
    tmp_path: Path, line: dict[str, Any],
) -> None:
    # A log with a single line (a short-lived process, a fresh rotation) in a format
    # ridtrace does not read was passed over as "a JSON document, not JSON lines", and
    # the walk said complete and clean (exit 0); with two lines it said incomplete.
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    (tmp_path / "app.json").write_text(json.dumps(line) + "\n")
    (tmp_path / "report.json").write_text(json.dumps({"summary": {}, "findings": []}))
    code, doc = run(str(tmp_path))
    assert notes(doc, "ignored_files") == {"report.json": "a JSON document, not JSON lines"}
    assert any("app.json: none of its 1 lines is a log record" in reason
               for reason in doc["summary"]["incomplete_reasons"])
    assert code == 3


def _cloudwatch_events(lines: list[str]) -> dict[str, Any]:
    """`aws logs filter-log-events --output json`: one pretty document, each line a
    string in an event's `message`."""
    return {"events": [{"logStreamName": "frontend/1", "timestamp": 1790949600000 + i,
                        "message": line, "eventId": str(i)} for i, line in enumerate(lines)],
            "searchedLogStreams": []}


def _gcloud_entries(lines: list[str]) -> list[dict[str, Any]]:
    """`gcloud logging read --format=json`: one pretty array of LogEntries."""
    return [{"insertId": str(i), "jsonPayload": json.loads(line), "timestamp": "2026-11-30T10:00:00Z"}
            for i, line in enumerate(lines)]


@pytest.mark.parametrize("document", [_cloudwatch_events, _gcloud_entries])
def test_a_json_document_holding_log_records_is_read_not_ignored(
    tmp_path: Path, document: Callable[[list[str]], Any],
) -> None:
    # A log fetched with `aws logs filter-log-events` or `gcloud logging read` is one
    # pretty-printed JSON document. A walk passed it over like a report ("a JSON
    # document, not JSON lines") and said complete: with the frontend's log fetched
    # that way, the incident in it was never read and the walk exited 0.
    (tmp_path / "worker.jsonl").write_text("\n".join(rt_request("w", "1", 0, 1)) + "\n")
    frontend = rt_request("a", "7", 0, 1) + rt_request("b", "7", 0.5, 1.5)
    (tmp_path / "frontend.json").write_text(json.dumps(document(frontend), indent=4))
    (tmp_path / "report.json").write_text(json.dumps({"summary": {}, "findings": []}, indent=2))
    code, doc = run(str(tmp_path))
    assert notes(doc, "ignored_files") == {"report.json": "a JSON document, not JSON lines"}
    # The AWS CLI's document is read event by event, gcloud's entry by entry: the
    # incident in it is found.
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"]
    assert not doc["summary"]["incomplete"] and code == 1


def test_a_text_log_of_bracketed_times_is_no_json_document(tmp_path: Path) -> None:
    # gunicorn's error log (--error-logfile gunicorn.err) opens each line with "[":
    # a walk ignored it as "a JSON document, not JSON lines".
    (tmp_path / "frontend.jsonl").write_text(
        "\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    (tmp_path / "gunicorn.err").write_text(
        "[2026-12-03 18:12:37 +0000] [24702] [INFO] Starting gunicorn 27.0.1\n"
        "[2026-12-03 18:12:37 +0000] [24708] [INFO] Booting worker with pid: 24708\n")
    (tmp_path / "ids.json").write_text('[\n  "r1",\n  "r2"\n]\n')  # still a document
    _, doc = run(str(tmp_path))
    assert notes(doc, "ignored_files") == {
        "gunicorn.err": "no JSON lines in its first lines",
        "ids.json": "a JSON document, not JSON lines",
    }


def test_json_lines_after_a_long_text_start_in_a_walked_file_are_read(tmp_path: Path) -> None:
    # docs/cli.md: a walked file is read when any line of its first 64 KiB is a JSON
    # object. Only the first 200 lines were looked at: a service's .out file whose
    # records followed a start-up dump of 201 short lines was passed over, exit 0.
    logs = tmp_path / "logs"
    logs.mkdir()
    records = [*rt_request("a1", "same", 0.0, 1.0), *rt_request("b2", "same", 0.5, 1.5)]
    dump = "".join(f"pkg-{i}==1.0\n" for i in range(201))
    (logs / "service.out").write_text(dump + "\n".join(records) + "\n")
    code, doc = run(str(logs))
    assert duplicates(doc) == 1 and code == 1, doc["summary"]
    assert not doc["summary"]["ignored_files"]
    assert doc["summary"]["bad_lines"] == 201


def test_a_walk_that_read_nothing_but_ignored_files_is_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `kubectl logs pod > frontend.txt`: a model server's start-up text longer than the
    # walk looks at, then its JSON lines with a duplicate in flight. The walk ignored
    # it as no log, and "No findings: no log line was read." exited 0. (It looks 64 MiB
    # past the sniff now: here as little as the sniff, so the capture's text is longer.)
    from ridtrace.forensics.reading import read_on

    monkeypatch.setattr(read_on, "LOOK_FURTHER_BYTES", 1 << 10)
    logs = tmp_path / "logs"
    logs.mkdir()
    banner = "".join(f"INFO 10-02 13:59:{n % 60:02d} [loader.py:88] Loading checkpoint shards: "
                     f"{n}/900 [00:01<00:00, 3.2it/s]\n" for n in range(900))
    records = [*rt_request("a1", "dup", 0.0, 2.0), *rt_request("b2", "dup", 1.0, 3.0)]
    capture = logs / "frontend.txt"
    capture.write_text(banner + "\n".join(records) + "\n")
    code, doc = run(str(logs))
    assert doc["summary"]["ignored_files"] == [
        {"file": str(capture), "reason": "no JSON lines in its first lines"}]
    assert doc["summary"]["incomplete_reasons"] == [
        "no log line was read: the 1 file(s) found were ignored as no logs (see "
        "ignored_files; name one to read it)"]
    assert code == 3
    code, doc = run(str(capture))  # named, it is read whole
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"] and code == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    code, doc = run(str(empty))
    assert code == 0 and not doc["summary"]["incomplete"]  # nothing there: nothing missed
    # An empty log read (logrotate's `create` just made it) beside a README: the walk
    # did not read nothing, and an empty input is no incomplete one (it was exit 3).
    (empty / "app.jsonl").write_text("")
    (empty / "README.txt").write_text("how these logs are kept\n")
    code, doc = run(str(empty))
    assert doc["summary"]["files"] == 1 and len(doc["summary"]["ignored_files"]) == 1
    assert code == 0 and not doc["summary"]["incomplete"], doc["summary"]
    # But beside the capture, judged by a part of it, the empty log reads no line of the
    # folder's only log: incomplete still, not a confident "No findings".
    (logs / "frontend.jsonl").write_text("")
    code, doc = run(str(logs))
    assert doc["summary"]["files"] == 1 and code == 3, doc["summary"]
    assert doc["summary"]["incomplete_reasons"] == [
        "no log line was read: the 1 file(s) found were ignored as no logs (see "
        "ignored_files; name one to read it)"]


@pytest.mark.parametrize("name", ["otel-export", "service.out"])
def test_a_log_whose_first_record_is_longer_than_the_sniff_is_read(
    tmp_path: Path, name: str
) -> None:
    # The head held no whole line, so no line was a JSON object: the log (a collector's
    # file export of one big batch, a record carrying a big payload) was ignored as "no
    # JSON lines in its first lines", and beside a clean log the walk said clean.
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "clean.jsonl").write_text("\n".join(rt_request("c1", "ok-1", 0.0, 1.0)) + "\n")
    first, *rest = [*rt_request("a1", "dup", 0.0, 2.0), *rt_request("b2", "dup", 1.0, 3.0)]
    payload = json.loads(first)
    payload["prompt"] = "x" * 100_000
    (logs / name).write_text("\n".join([json.dumps(payload), *rest]) + "\n")
    code, doc = run(str(logs))
    assert not doc["summary"]["ignored_files"]
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"] and code == 1
