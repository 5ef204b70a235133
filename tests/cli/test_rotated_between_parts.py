"""A long line the container runtime cut into parts, with the log rotated between them.

containerd cuts a line longer than its buffer (an error with its payload) into ``P``
parts and a last ``F``; kubelet's rotation (or Docker's json-file ``max-size``) can fall
between them: ``0.log.20261129-100000`` ends with the first part, ``0.log`` starts with
the rest. Each was one bad line, far under the 1 % a read may have, so the Unlinked error
on that line was dropped and the read said nothing was missing."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary

STAMP = b"2026-11-29T10:00:00.000000001Z stdout "


def _cri(lines: list[bytes]) -> bytes:
    return b"".join(STAMP + b"F " + line + b"\n" for line in lines)


def _rotated_between_parts(plain: Path, logs: Path) -> Path:
    """`plain`'s logs as a node keeps them, the frontend's rotated inside its first
    Unlinked error line. Returns the rotated part."""
    logs.mkdir()
    for path in plain.iterdir():
        lines = path.read_bytes().splitlines()
        cut = next((n for n, line in enumerate(lines) if b"Unlinked" in line), None)
        if cut is None:
            (logs / path.name).write_bytes(_cri(lines))
            continue
        half = len(lines[cut]) // 2
        rotated = logs / "0.log.20261129-100000"
        rotated.write_bytes(_cri(lines[:cut]) + STAMP + b"P " + lines[cut][:half] + b"\n")
        (logs / "0.log").write_bytes(STAMP + b"F " + lines[cut][half:] + b"\n"
                                     + _cri(lines[cut + 1:]))
    return rotated


def test_a_record_a_rotation_cut_makes_the_read_incomplete(plain: Path, tmp_path: Path) -> None:
    rotated = _rotated_between_parts(plain, tmp_path / "logs")
    code, doc = analyze_json(str(tmp_path / "logs"))
    notes = doc["summary"]["unreadable_files"]
    assert [note["file"] for note in notes] == [str(rotated)], notes
    assert "a record whose last part is missing" in notes[0]["reason"]
    assert doc["summary"]["incomplete"] is True
    assert code == 1  # the other errors still found


def test_follow_names_a_record_a_rotation_cut(plain: Path, tmp_path: Path) -> None:
    rotated = _rotated_between_parts(plain, tmp_path / "logs")
    summary = followed_summary(tmp_path / "logs")
    assert [note["file"] for note in summary["unreadable_files"]] == [str(rotated)]
    assert summary["incomplete"] is True
