"""A walked text file whose JSON lines begin past the 64 KiB a walk sniffs is read.

A copied `/var/log/syslog` (70 KiB of cron's lines, then a service's records behind
syslog's prefix) and `kubectl logs` saved as `.txt` after a model loader's start-up text
were passed over as text: the walk said a complete, clean read (exit 0) of the incident
the same files gave when named.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.contract import REQUEST_END, REQUEST_START
from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.read_on import LOOK_FURTHER_BYTES
from tests.forensics.helpers import rt, ts
from tests.support.extras import ENGINE_ARGS

_CRON = b"Dec  6 09:00:00 host CRON[%d]: (root) CMD (cd / && run-parts --report /etc/cron.hourly)\n"


def _duplicate_in_flight() -> list[str]:
    """Two requests holding id `dup` at once."""
    lines = []
    for n, (begin, end) in enumerate(((0.0, 0.5), (0.1, 0.6))):
        ids = {"request_id": "dup", "trace_id": f"{n + 1}" * 32, "span_id": f"{n + 1}" * 16}
        lines += [rt(REQUEST_START, time=ts(begin), **ids),
                  rt(REQUEST_END, time=ts(end), status=200, outcome="ok",
                     duration_ms=(end - begin) * 1000, **ids)]
    return lines


def _walk(folder: Path, engine: list[str]) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(main, ["analyze", str(folder), "--format", "json", "-q",
                                       "--allow-incomplete", *engine])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("engine", ENGINE_ARGS)
def test_records_after_more_text_than_the_sniff_are_read(tmp_path: Path,
                                                          engine: list[str]) -> None:
    syslog = tmp_path / "syslog-bundle"
    syslog.mkdir()
    records = [f"Dec  6 09:00:01 host gateway[42]: {line}\n".encode()
               for line in _duplicate_in_flight()]
    (syslog / "syslog").write_bytes(b"".join(_CRON % n for n in range(800)) + b"".join(records))
    kubectl = tmp_path / "kubectl"
    kubectl.mkdir()
    banner = b"".join(b"loading shard %05d of the model weights ... done\n" % n
                      for n in range(2000))
    (kubectl / "frontend.txt").write_bytes(banner + "\n".join(_duplicate_in_flight()).encode()
                                           + b"\n")
    for folder in (syslog, kubectl):
        assert (folder.iterdir().__next__()).stat().st_size > 64 << 10
        code, report = _walk(folder, engine)
        kinds = [f["kind"] for f in report["findings"]]  # type: ignore[union-attr]
        assert (code, kinds) == (1, ["duplicate_in_flight"]), report
        assert report["summary"]["ignored_files"] == []  # type: ignore[index]


@pytest.mark.parametrize("engine", ENGINE_ARGS)
def test_records_after_a_hole_of_nuls_are_read(tmp_path: Path, engine: list[str]) -> None:
    # `--log-file - > frontend.out` under logrotate's copytruncate: the writer goes on at
    # its offset, so the file starts with a hole. Its head all NULs, it was "binary
    # data", and the walk said a clean read (exit 0).
    records = "\n".join(_duplicate_in_flight()).encode() + b"\n"
    (tmp_path / "frontend.out").write_bytes(b"\x00" * (100 << 10) + records)
    code, report = _walk(tmp_path, engine)
    assert [f["kind"] for f in report["findings"]] == ["duplicate_in_flight"], report
    assert report["summary"]["ignored_files"] == [] and code == 1  # type: ignore[index]


def _behind_a_long_hole(folder: Path, hole: int) -> None:
    # Sparse, as copytruncate leaves it: the writer's next line lands at its old offset.
    with (folder / "nohup.out").open("wb") as out:
        out.truncate(hole)
        out.seek(hole)
        out.write("\n".join(_duplicate_in_flight()).encode() + b"\n")


@pytest.mark.parametrize("engine", ENGINE_ARGS)
def test_records_after_a_hole_longer_than_is_looked_at_are_read(
    tmp_path: Path, engine: list[str],
) -> None:
    # The hole is as long as all the writer wrote before the rotation. Past the 64 MiB a
    # walk reads on for a record, the file was "no JSON lines": a clean read, exit 0.
    _behind_a_long_hole(tmp_path, LOOK_FURTHER_BYTES + (1 << 20))
    code, report = _walk(tmp_path, engine)
    assert [f["kind"] for f in report["findings"]] == ["duplicate_in_flight"], report
    assert report["summary"]["ignored_files"] == [] and code == 1  # type: ignore[index]


def test_a_follower_reads_records_after_a_hole_longer_than_it_looks_at(
    tmp_path: Path,
) -> None:
    # The follow looks at a file's first 64 KiB: a hole longer than that was all it saw.
    _behind_a_long_hole(tmp_path, 1 << 20)
    found: list[str] = []
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    try:
        follower.run(lambda finding: found.append(finding["kind"]), stop=lambda: True)
    finally:
        follower.close()
    assert found == ["duplicate_in_flight"]
    assert follower.summary()["ignored_files"] == []


def test_a_file_with_no_log_record_is_still_passed_over(tmp_path: Path) -> None:
    text = b"a line of plain text, {not json}\n" * 5000
    (tmp_path / "notes.txt").write_bytes(text)
    # A training run's console: a printed dict, then stray JSON that is no log line.
    (tmp_path / "train.out").write_bytes(text + b"{'lr': 0.001, 'epochs': 3}\n{\"a\": 1}\n")
    (tmp_path / "core.bin").write_bytes(text + bytes(range(256)) * 64 + b'\n{"a": 1}\n')
    (tmp_path / "app.jsonl").write_text("\n".join(_duplicate_in_flight()[:2]) + "\n")
    code, report = _walk(tmp_path, [])
    ignored = report["summary"]["ignored_files"]  # type: ignore[index]
    assert sorted(Path(note["file"]).name for note in ignored) == [
        "core.bin", "notes.txt", "train.out"]
    assert code == 0 and report["summary"]["bad_lines"] == 0  # type: ignore[index]
