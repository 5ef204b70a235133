"""A directory walk over a file whose first line is nested deeper than Python's parser
goes (a logged request body an attacker nested 5,000 levels deep).

Named, such a line is one bad line or read, as docs/cli.md says. Walked, the look at
a file's first lines that tells logs from other files let the parser's RecursionError
out: a traceback and exit 4 (ridtrace failed), no report for any of the logs.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt, rt_request, ts

_DEEP = "[" * 5000 + "]" * 5000


def test_a_walk_reads_past_a_file_that_opens_with_a_deeply_nested_line(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    # Two callers holding one id at once: a duplicate_in_flight, exit 1.
    pair = rt_request("a" * 16, "r1", 0, 2) + rt_request("b" * 16, "r1", 1, 3)
    (logs / "frontend.jsonl").write_text("\n".join(pair) + "\n")
    nested = rt("request.start", time=ts(0.5), request_id="r2", trace_id="c" * 32,
                span_id="c" * 16)
    nested = nested[:-1] + f', "body": {_DEEP}}}'
    (logs / "other.jsonl").write_text(nested + "\n")
    (logs / "dump.json").write_text(_DEEP + "\n")  # one line: a document's sniff parses it
    done = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json"])
    assert not isinstance(done.exception, RecursionError), done.exception
    assert done.exit_code == 1, done.output
    summary = json.loads(done.stdout)["summary"]
    assert summary["duplicate_in_flight"] == 1
    assert summary["files"] == 3, summary
