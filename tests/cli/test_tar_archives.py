"""A tar archive of logs (``docker cp CONTAINER:/app/logs -``, a support bundle's
``.tar.gz``) is named for what it is and how to read it, not read as one garbled log."""

from __future__ import annotations

import io
import signal
import tarfile
import zipfile
from pathlib import Path

from ridtrace.forensics.reading.archives import TAR_ARCHIVE, ZIP_ARCHIVE
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary
from tests.support.follower import start_follower

SAMPLE = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"


def _archive(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz" if path.suffix in (".gz", ".tgz") else "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_a_tar_of_logs_is_unreadable_with_the_way_to_read_it(tmp_path: Path) -> None:
    # Read as lines, each member's first record was glued to its header (a bad line,
    # the record lost), the padding after it was "a run of NUL bytes where a crash lost
    # lines", and the members' lines were cited as the archive's.
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    logs = tmp_path / "bundle"
    logs.mkdir()
    for name in ("logs.tar", "logs.tar.gz"):
        _archive(logs / name, {"frontend.jsonl": b"".join(lines[:5]),
                               "worker.jsonl": b"".join(lines[5:])})
    for path in (logs, logs / "logs.tar", logs / "logs.tar.gz"):
        code, doc = analyze_json(str(path))
        summary = doc["summary"]
        assert (summary["lines"], summary["bad_lines"], summary["ignored_files"]) == (0, 0, [])
        reasons = {note["file"]: note["reason"] for note in summary["unreadable_files"]}
        expected = [logs / "logs.tar", logs / "logs.tar.gz"] if path == logs else [path]
        assert sorted(reasons) == [str(p) for p in expected]
        assert all("a tar archive" in r and "tar xf" in r for r in reasons.values())
        assert summary["incomplete"] is True and code == 3


def test_a_walked_tar_of_no_logs_is_still_ignored(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "app.jsonl").write_bytes(SAMPLE.read_bytes())
    _archive(logs / "config-backup.tar", {"frontend.yaml": b"port: 8000\n"})
    code, doc = analyze_json(str(logs))
    summary = doc["summary"]
    assert [n["file"] for n in summary["ignored_files"]] == [str(logs / "config-backup.tar")]
    assert summary["unreadable_files"] == [] and summary["incomplete"] is False
    assert code == 1  # the sample's Unlinked error


def test_a_zip_of_logs_is_unreadable_and_a_zip_of_others_still_ignored(tmp_path: Path) -> None:
    # A download of logs (a CI job's artifacts, a console's "download logs") was ignored
    # in a walk as "binary data": a walk of it alone said "No findings", exit 0.
    logs = tmp_path / "logs"
    logs.mkdir()
    with zipfile.ZipFile(logs / "logs.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("run-7/frontend.jsonl", SAMPLE.read_bytes())
    with zipfile.ZipFile(logs / "site.zip", "w") as archive:
        archive.writestr("index.html", "<html></html>")
    for path in (logs, logs / "logs.zip"):
        code, doc = analyze_json(str(path))
        summary = doc["summary"]
        [note] = summary["unreadable_files"]
        assert note["file"] == str(logs / "logs.zip") and "unzip" in note["reason"]
        assert summary["bad_lines"] == 0 and summary["incomplete"] is True and code == 3
    _, doc = analyze_json(str(logs))
    assert [n["file"] for n in doc["summary"]["ignored_files"]] == [str(logs / "site.zip")]


def test_a_followed_walk_names_an_archive_of_logs_too(tmp_path: Path) -> None:
    # Under --follow the tar was read as one garbled log ("a run of NUL bytes where a
    # crash lost lines") and the zip ignored as binary data, the summary complete.
    _archive(tmp_path / "logs.tar.gz", {"frontend.jsonl": SAMPLE.read_bytes()})
    with zipfile.ZipFile(tmp_path / "logs.zip", "w") as archive:
        archive.writestr("frontend.jsonl", SAMPLE.read_bytes())
    summary = followed_summary(tmp_path)
    reasons = {n["file"]: n["reason"] for n in summary["unreadable_files"]}
    assert sorted(reasons) == [str(tmp_path / "logs.tar.gz"), str(tmp_path / "logs.zip")]
    assert "tar xf" in reasons[str(tmp_path / "logs.tar.gz")]
    assert "unzip" in reasons[str(tmp_path / "logs.zip")]
    assert (summary["lines"], summary["bad_lines"], summary["incomplete"]) == (0, 0, True)


def test_a_followed_named_archive_is_named_at_start_and_the_run_incomplete(
        tmp_path: Path) -> None:
    # Named to `--follow`, a .tgz was taken for a compressed rotation read from its end
    # ("lines 0", complete, exit 0) and a zip of logs for one bad line of binary.
    tgz, zipped = tmp_path / "logs.tgz", tmp_path / "logs.zip"
    _archive(tgz, {"logs/frontend.jsonl": SAMPLE.read_bytes()})
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("frontend.jsonl", SAMPLE.read_bytes())
    follower = start_follower([str(tgz), str(zipped)], "--from-start")
    try:
        follower.wait_for(lambda: sum("cannot follow" in line for line in follower.stderr) == 2,
                          timeout=30, what="both archives named on stderr")
    finally:
        code = follower.stop(signal.SIGINT)
    assert f"ridtrace: cannot follow {tgz}: {TAR_ARCHIVE}" in follower.stderr
    assert f"ridtrace: cannot follow {zipped}: {ZIP_ARCHIVE}" in follower.stderr
    summary = follower.summary()
    assert {n["file"]: n["reason"] for n in summary["unreadable_files"]} == {
        str(tgz): TAR_ARCHIVE, str(zipped): ZIP_ARCHIVE}
    assert (summary["files"], summary["lines"], summary["bad_lines"]) == (0, 0, 0)
    # As `ridtrace analyze logs.tgz logs.zip` exits: read in part, nothing found.
    assert summary["incomplete"] is True and code == 3 == analyze_json(str(tgz), str(zipped))[0]
