"""Logs piped in with no PATH: the refusal says how to read standard input (`-`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LINE = b'{"timestamp": "2026-11-29T10:00:00Z", "event": "request.start"}\n'


def _run(args: list[str], stdin: int | None, data: bytes | None = None) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "ridtrace", *args], input=data,
                          stdin=stdin, capture_output=True, timeout=60)
    return done.returncode, done.stderr.decode()


@pytest.mark.parametrize(("args", "call"), [
    (["analyze"], "ridtrace analyze -"),
    (["audit"], "ridtrace audit -"),
    (["export", "jaeger"], "ridtrace export jaeger -"),
    (["trace", "rid 1"], "ridtrace trace 'rid 1' -"),
])
def test_piped_logs_without_a_path_are_told_to_name_stdin(
    args: list[str], call: str, tmp_path: Path,
) -> None:
    code, err = _run(args, None, LINE)
    assert code == 2
    assert "Missing argument 'PATH...'" in err
    assert "name it '-' to read it (" in err and f"{call})" in err, err
    log = tmp_path / "app.jsonl"
    log.write_bytes(LINE)
    with log.open("rb") as redirected:  # `ridtrace analyze < app.jsonl`
        code, err = _run(args, redirected.fileno())
    assert code == 2 and f"{call})" in err, err


def test_no_hint_without_logs_on_standard_input() -> None:
    code, err = _run(["analyze"], subprocess.DEVNULL)
    assert code == 2 and "Missing argument 'PATH...'" in err
    assert "Standard input" not in err
    code, err = _run(["trace", "rid-1"], subprocess.DEVNULL)
    assert code == 2 and "'rid-1' was taken as the ID" in err, err
