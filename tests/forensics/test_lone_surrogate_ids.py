"""Ids that differ only by a lone surrogate escape stay different ids.

A client sends its own id; RFC 8259 lets it hold a lone surrogate (``"r\\udc80"``). The
reader kept each as U+FFFD, so ``r\\udc80`` and ``r\\udc81`` held at once were one id held
twice: a false `duplicate_in_flight` and exit 1, on both engines. They are now spelt as
their escape (`forensics.surrogates`), as `ridtrace trace` spells an id given in bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import engine_report, rt_request
from tests.support.extras import ENGINES


def _two_callers(directory: Path, first: str, second: str) -> None:
    """Two frontend requests in flight at once, holding `first` and `second`."""
    lines = [*rt_request("a" * 16, first, 0, 2), *rt_request("b" * 16, second, 1, 3)]
    # json.dumps writes a lone surrogate as its escape, as a service's JSON logger does.
    text = "\n".join(lines) + "\n"
    assert first.isascii() or "\\ud" in text
    (directory / "frontend.jsonl").write_text(text)


@pytest.mark.parametrize("engine", ENGINES)
def test_ids_differing_by_a_lone_surrogate_are_no_duplicate(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str
) -> None:
    _two_callers(tmp_path, "r\udc80", "r\udc81")
    doc = engine_report(request, engine, tmp_path)
    assert doc["summary"]["bad_lines"] == 0 and doc["summary"]["requests"] == 2
    assert doc["findings"] == []


@pytest.mark.parametrize("engine", ENGINES)
def test_one_id_with_a_lone_surrogate_held_twice_is_a_duplicate(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str
) -> None:
    _two_callers(tmp_path, "r\udc80", "r\udc80")
    doc = engine_report(request, engine, tmp_path)
    [finding] = doc["findings"]
    assert finding["kind"] == "duplicate_in_flight"
    # Named as the log wrote it, printable.
    assert finding["request_id"] == "r\\udc80"


def test_trace_finds_the_id_as_the_log_spells_it(tmp_path: Path) -> None:
    _two_callers(tmp_path, "r\udc80", "r\udc81")
    result = CliRunner().invoke(
        main, ["trace", "r\\udc81", str(tmp_path), "--format", "json", "-q"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    assert view["matched"] == 1
