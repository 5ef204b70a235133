"""A request whose worker spans nest deeper than the callers' climb limit is one caller
live, as in batch: the follower printed a duplicate_in_flight for one request whose
chain of worker spans was 18 or more deep (each the parent of the next), and batch, in
both engines, counted such a chain 40 deep as 23 requests, and `trace` showed 23."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary, rt, ts
from tests.support.extras import installed_engines


@pytest.mark.parametrize("depth", [3, 18, 40])
def test_a_deep_chain_of_worker_spans_is_one_request(tmp_path: Path, depth: int) -> None:
    trace = "d" * 32
    front = {"request_id": "D", "trace_id": trace, "span_id": f"{1:016x}"}
    lines = [rt("request.start", time=ts(0), **front)]
    for level in range(2, depth + 1):
        work = {"request_id": "D", "trace_id": trace, "span_id": f"{level:016x}",
                "parent_span_id": f"{level - 1:016x}", "service": "worker"}
        lines += [rt("worker.start", time=ts(0.01 * level), **work),
                  rt("worker.end", time=ts(5 - 0.01 * level), outcome="ok", **work)]
    lines.append(rt("request.end", time=ts(5), status=200, outcome="ok", **front))
    (tmp_path / "app.jsonl").write_text("\n".join(lines) + "\n")
    for engine in installed_engines():
        code, doc = analyze_json(str(tmp_path), "--engine", engine)
        assert (code, doc["findings"], doc["summary"]["requests"]) == (0, [], 1), engine
    shown = CliRunner().invoke(main, ["trace", "D", str(tmp_path)]).stdout
    assert shown.startswith("D: 1 matching request(s)"), shown
    live = followed_summary(tmp_path)
    assert (live["duplicate_in_flight"], live["errors"]) == (0, 0), live
