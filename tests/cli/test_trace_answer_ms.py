"""`ridtrace trace`'s waterfall gives a caller's ms up to its answer, as its block does.

The legacy pump logs its Unlinked response under the caller's ids after the caller got
its 500: the block said `20.0 ms`, the waterfall's right column (`each span's ms`) said
80.0 for the same span. The bar still runs to that line (the id was held until then).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.forensics.helpers import rt, ts
from tests.support.inprocess_cli import run_in_process

SPAN = "a" * 16


def test_waterfall_ms_of_a_caller_ends_with_its_answer(tmp_path: Path) -> None:
    ctx = {"request_id": "r-late", "trace_id": f"{SPAN:0>32}", "span_id": SPAN}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        rt("request.start", time=ts(0.0), **ctx, path="/v1/chat/completions"),
        rt("request.end", time=ts(0.02), **ctx, status=500, outcome="error"),
        rt("response.unlinked", time=ts(0.08), **ctx),
    ]) + "\n")
    code, stdout, stderr = run_in_process(["trace", "r-late", str(tmp_path)],
                                          env={"COLUMNS": "120"})
    assert code == 0, stderr
    (bar,) = [line for line in stdout.splitlines() if line.startswith(" #1 frontend")]
    assert re.search(r"█ +20\.0$", bar), bar
    assert " 20.0 ms " in stdout  # the block's header
    assert "80.0 ms" in stdout  # the axis still spans the line logged after it
