"""`ridtrace trace ID` with an ID that is not valid UTF-8.

An id copied from a Latin-1 terminal, or a script's raw bytes, reaches Python as lone
surrogates (``$'\\xff'`` is ``"\\udcff"``), which Arrow's strings cannot hold: the match
was a UnicodeEncodeError traceback and exit 4. The reader spells a lone surrogate
escape in a client's id as its escape (``\\udcff``, `forensics.surrogates`), and the id
given is spelt the same way, so it matches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.forensics.helpers import rt_request
from tests.support.servers import child_pythonpath


def _trace(ident: bytes, logs: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"ridtrace", b"trace", ident, os.fsencode(logs),
         b"--format", b"json", b"-q"],
        capture_output=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": child_pythonpath()},
    )


def test_an_undecodable_id_matches_as_the_logs_were_read(tmp_path: Path) -> None:
    # Two callers of one client id the logs hold as a lone surrogate escape.
    lines = [*rt_request("a" * 16, "\udcff", 0, 2), *rt_request("b" * 16, "\udcff", 1, 3)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")  # json escapes it
    done = _trace(b"\xff", tmp_path)
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    assert view["matched"] == 2 and view["id"] == "\\udcff"


def test_an_undecodable_id_that_names_nothing_is_no_match(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    done = _trace(b"caf\xe9", tmp_path)
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr and b"no request" in done.stderr
