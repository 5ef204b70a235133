"""--since/--until take ISO 8601 times and nothing else (docs/cli.md): pandas, which
parses them, read an empty value (`--since "$UNSET"`), ``nan`` or ``NaT`` as "no time",
a window no request is in, so analyze said "No findings." and exited 0 on logs full of
crossed streams; ``2/12/2026`` was read as February the 12th."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    write_logs(out, SynthSpec(requests=60))
    return out


@pytest.mark.parametrize("option", ["--since", "--until"])
@pytest.mark.parametrize("value", ["", "nan", "NaT", "now", "2/12/2026", "Dec 2 2026",
                                   "10:00",
                                   # A time needs a whole date: pandas read "2026-12T10"
                                   # as 10 December and "2026T10" as 1 October.
                                   "2026-12T10", "2026T10", "2026-12 10:00", "202612T10"])
def test_a_time_that_is_not_iso_8601_is_bad_usage(logs: Path, option: str,
                                                   value: str) -> None:
    result = CliRunner().invoke(main, ["analyze", str(logs), option, value, "-q"])
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    assert f"not an ISO 8601 time: {value!r}" in result.stderr


@pytest.mark.parametrize("value", [
    "2026-11-29", "2026-11", "2026", "20261129", "2026-11-29T09:00", "2026-11-29 09:00",
    "2026-11-29t09:00:00z", "2026-11-29T09", "20261129T090000Z", "2026-11-29T10:00:00,5+01:00",
    "2026-11-29T09:00:00.000000001Z", "2026-11-29T04:00-0500", "0001-01-01",
])
def test_iso_8601_forms_are_taken(logs: Path, value: str) -> None:
    # The synthetic logs are at 2026-11-29T10:00Z: every one of these keeps them all.
    result = CliRunner().invoke(main, ["analyze", str(logs), "--since", value, "-q"])
    assert result.exit_code == 1, result.stderr  # the synthetic crossed stream is found
    assert "crossed_stream" in result.stdout


@pytest.mark.parametrize(("option", "value", "kept"), [
    ("--until", "2026-11-29T10:00:00.1000001", 1),  # after the start at .100000
    ("--until", "2026-11-29T10:00:00.1", 0),
    ("--since", "2026-11-29T10:00:00.2000001", 0),  # after the end at .200000
    ("--since", "2026-11-29T10:00:00.2", 1),
])
def test_a_bound_finer_than_a_microsecond_is_compared_exactly(
    tmp_path: Path, option: str, value: str, kept: int,
) -> None:
    # Log times are microseconds; the read floored a bound to them, so --until
    # 10:00:00.1000001 left out a request that started at 10:00:00.100000, before it.
    import json

    from tests.forensics.helpers import rt_request

    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a" * 16, "r1", 0.1, 0.2))
                                             + "\n")
    result = CliRunner().invoke(main, ["analyze", str(tmp_path), option, value,
                                       "--format", "json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["summary"]["requests"] == kept
