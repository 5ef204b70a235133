"""A file name holding a citation's separators is quoted where the text views cite it.

`real.jsonl:9 other.jsonl` cited at line 1 printed `real.jsonl:9 other.jsonl:1`, two
citations to the eye (line 9 of one file, line 1 of another), and `b.jsonl:7 (not
JSON), c.jsonl` read as two bad lines in two files. JSON and CSV keep names whole.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.printable import cited_at
from tests.forensics.helpers import rt_request


def test_a_name_with_a_separator_is_quoted_and_a_plain_one_is_not() -> None:
    assert cited_at("logs/frontend.jsonl", 3) == "logs/frontend.jsonl:3"
    assert cited_at("real.jsonl:9 other.jsonl", 1) == "'real.jsonl:9 other.jsonl':1"
    assert cited_at("b.jsonl:7 (not JSON), c.jsonl", 2) == "'b.jsonl:7 (not JSON), c.jsonl':2"
    assert cited_at("it's.jsonl", 4) == "'it\\'s.jsonl':4"
    # A URL's scheme is no separator; a separator after it still is.
    assert cited_at("s3://logs/app.jsonl", 5) == "s3://logs/app.jsonl:5"
    assert cited_at("file:///a b.jsonl", 6) == "'file:///a b.jsonl':6"


def test_the_batch_reads_stderr_and_table_quote_such_a_name(tmp_path: Path) -> None:
    odd = tmp_path / "real.jsonl:9 other.jsonl"
    held = [*rt_request("00000000000000a1", "dup", 0, 2), *rt_request("00000000000000b2", "dup", 1, 3)]
    odd.write_text("a banner line\n" + "\n".join(held) + "\n")
    result = CliRunner().invoke(main, ["analyze", str(odd), "--allow-incomplete"],
                                env={"COLUMNS": "1000"})
    assert result.exit_code == 1, result.output
    assert f"'{odd}':1 (not JSON" in result.stderr
    # The evidence cell, under the folder it names once.
    assert f"evidence in files under {tmp_path}/" in result.stdout
    assert f"'{odd.name}':2, '{odd.name}':3" in result.stdout
    as_json = CliRunner().invoke(main, ["analyze", str(odd), "--format", "json", "-q"])
    cited = {e["file"] for f in json.loads(as_json.stdout)["findings"] for e in f["evidence"]}
    assert cited == {str(odd)}  # whole, unquoted
