"""`ridtrace trace` given an id of thousands of characters shows it cut in its heading.

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
