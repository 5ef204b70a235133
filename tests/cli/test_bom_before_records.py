"""A byte-order mark at a line's start before two records back to back.

`cat a.jsonl b.jsonl` where ``b.jsonl`` was written on Windows (its BOM first) and
``a.jsonl`` lacks its last newline leaves a BOM, then two records, on one line. Without
the BOM the two records are read; with it, the line was one bad line ("a JSON record
after a text prefix"), under the 1 %: a response.unlinked record on it was lost, exit 0.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, rt_request, ts

BOM = "\ufeff".encode()


def test_two_records_after_a_bom_are_both_read(tmp_path: Path) -> None:
    good = [line.encode() for n in range(75)
            for line in rt_request(f"{n + 1:016x}", f"r{n}", n * 0.01, n * 0.01 + 0.005)]
    app_line = rt(None, time=ts(0.9), logger="app.views", message="serving")
    unlinked = rt("response.unlinked", time=ts(1.0), request_id="victim", trace_id="e" * 32,
                  span_id="e" * 16, error="Unlinked response; response task was dropped")
    log = tmp_path / "app.jsonl"
    log.write_bytes(b"\n".join([*good, BOM + app_line.encode() + unlinked.encode()]) + b"\n")
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"]) == (len(good) + 2, 0)
    assert [(f["kind"], f["request_id"]) for f in doc["findings"]] == [("unlinked", "victim")]
    assert code == 1
