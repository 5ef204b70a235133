"""`ridtrace trace LOGS ID`, the arguments swapped, says the ID comes first: it ended "no
request with ... 'LOGS'", exit 1, as if the logs held no such request (ID a path too),
or "no such file or directory: ID", exit 2, as if a log were missing."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request


def test_a_path_given_as_the_id_is_named(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "frontend.jsonl").write_text("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    swapped = CliRunner().invoke(main, ["trace", str(logs), str(logs / "frontend.jsonl")])
    assert swapped.exit_code == 1
    assert "the ID comes first, ridtrace trace ID PATH..." in swapped.stderr
    swapped = CliRunner().invoke(main, ["trace", str(logs), "r1"])
    assert swapped.exit_code == 2
    assert "no such file or directory: r1" in swapped.stderr
    assert "the ID comes first, ridtrace trace ID PATH..." in swapped.stderr
    # An id that names no path gets no such hint; the usual order still finds r1.
    missing = CliRunner().invoke(main, ["trace", "r2", str(logs)])
    assert missing.exit_code == 1 and "comes first" not in missing.stderr
    assert CliRunner().invoke(main, ["trace", "r1", str(logs)]).exit_code == 0


def test_a_huge_id_that_matches_nothing_is_said_cut(tmp_path: Path) -> None:
    # A pasted log line of 120 KB as the ID was said whole on stderr, where every text
    # view cuts a value at 1,000 characters.
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    missing = CliRunner().invoke(main, ["trace", "R" * 120_000, str(log)])
    assert missing.exit_code == 1
    assert len(missing.stderr) < 1_300, len(missing.stderr)
    assert f"span_id {'R' * 1000!r}… (119000 more characters)" in missing.stderr
    # A short one is said whole, quoted.
    assert "span_id 'r2'" in CliRunner().invoke(main, ["trace", "r2", str(log)]).stderr
