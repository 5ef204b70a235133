"""A value of megabytes in a log is shown cut in `analyze`'s table, whole in its JSON."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.printable import MAX_SHOWN_CHARS as MAX_CELL_CHARS
from tests.forensics.helpers import rt_request


def test_a_request_id_longer_than_a_cell_holds_is_cut_in_the_table(tmp_path: Path) -> None:
    # rich folds a cell in time that grows faster than its length: two requests
    # sharing a 2 MiB id took 60 s to print, a 15 MiB one more than 11 minutes.
    long_id = "r" * (20 * MAX_CELL_CHARS)
    lines = [*rt_request("a", long_id, 0, 5), *rt_request("b", long_id, 1, 6)]
    lines.sort(key=lambda line: json.loads(line)["time"])
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    table = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q"])
    assert table.exit_code == 1, table.output
    # The id's column and the detail quoting it, each cut with a note (folded in the cell).
    assert table.output.count("--format json has") == 2
    assert table.output.count("r") < 3 * MAX_CELL_CHARS
    whole = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q", "--format", "json"])
    found = json.loads(whole.output)["findings"]
    assert [f["request_id"] for f in found if f["kind"] == "duplicate_in_flight"] == [long_id]


def test_traces_text_cuts_a_long_id_too(tmp_path: Path) -> None:
    # `trace` printed a 2 MiB id whole: 20,000 lines of it.
    long_id = "r" * (20 * MAX_CELL_CHARS)
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a1", long_id, 0, 5)) + "\n")
    shown = CliRunner().invoke(main, ["trace", "a1", str(tmp_path), "-q"])
    assert shown.exit_code == 0, shown.output
    assert "--format json has" in shown.output and shown.output.count("r") < 3 * MAX_CELL_CHARS
