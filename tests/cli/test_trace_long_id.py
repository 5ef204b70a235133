"""`ridtrace trace`'s text keeps what it names whole where it can: a long id cut in the
heading as in the blocks, an event beside a long file name.

docs/cli.md: a value over 1,000 characters is shown cut in `trace`'s text. The id in
the blocks was, but the heading printed the id given whole: 63 lines of one id at 80
columns before the first request.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request


def test_a_long_id_is_cut_in_the_heading_as_in_the_blocks(tmp_path: Path) -> None:
    ident = "L" * 5000
    (tmp_path / "frontend.jsonl").write_text(
        "\n".join(rt_request("a" * 16, "r-1", 0.1, 0.5, xrid=ident)) + "\n")
    result = CliRunner().invoke(main, ["trace", ident, str(tmp_path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "1 matching request(s)" in result.stdout
    assert "L" * 1001 not in "".join(result.stdout.split())  # nowhere whole, folded or not
    heading = " ".join(result.stdout.split("matching request(s)")[0].split())  # unfolded
    assert heading.count("… (4000 more characters: --format json has it whole)") == 1


def test_beside_a_long_file_name_an_event_stays_whole(tmp_path: Path) -> None:
    # 80 columns, a file name of 28 characters: file:line fit beside a 12-column event
    # column, and "response.unlinked" was cut to "response.unl…"; file:line goes below.
    from tests.forensics.helpers import rt, ts

    start, end = rt_request("a" * 16, "r-1", 0.1, 0.5)
    ids = {"request_id": "r-1", "trace_id": "a" * 16, "span_id": "a" * 16}
    unlinked = rt("response.unlinked", time=ts(0.4), level="ERROR", **ids)
    (tmp_path / f"{'f' * 22}.jsonl").write_text("\n".join([start, unlinked, end]) + "\n")
    result = CliRunner().invoke(main, ["trace", "r-1", str(tmp_path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "response.unlinked" in result.stdout and "…" not in result.stdout, result.stdout
