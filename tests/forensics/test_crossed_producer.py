"""Whose output a crossed caller got, when several workers produced it.

Identical prompts give identical replies: a caller delivered its concurrent id-twin's
output was said to hold the output of the *first* worker span in read order that made
it, a bystander request that had finished seconds before, or the twin, depending on
the order the files were named in (a real legacy run with identical prompts did it).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.rules.producers import reaching_producers
from tests.support.lagged_replay import follow_copies

_OUT, _OTHER_OUT = "0000000000000abc", "0000000000000def"
_P, _Q = "1111111111111111", "2222222222222222"
_END = {"method": "POST", "path": "/v1/chat/completions", "route": "/v1/chat/completions",
        "status": 200, "outcome": "ok"}


def _line(second: str, event: str, service: str, client_id: str, trace: int, span: str,
          parent: str | None = None, **more: Any) -> dict[str, Any]:
    line = {"time": f"2026-12-01T10:00:{second}Z", "level": "INFO", "message": event,
            "schema": "ridtrace/1", "service": service, "event": event,
            "request_id": client_id, "x_request_id": client_id,
            "trace_id": f"{trace:032x}", "span_id": span, **more}
    if parent:
        line["parent_span_id"] = parent
    return line


def _logs(folder: Path) -> Path:
    """An early request for prompt P on worker 1; two seconds later two callers holding
    id X at once (the legacy policy), the second delivered the first's output."""
    front = [
        _line("01.000000", "request.start", "frontend", "early", 1, "a1"),
        _line("01.100000", "request.end", "frontend", "early", 1, "a1", fp_in=_P,
              fp_out=_OUT, duration_ms=100.0, **_END),
        _line("03.000000", "request.start", "frontend", "X", 2, "a2"),
        _line("03.001000", "request.start", "frontend", "X", 3, "a3"),
        _line("03.100000", "request.end", "frontend", "X", 2, "a2", fp_in=_P,
              fp_out=_OTHER_OUT, duration_ms=100.0, **_END),
        _line("03.101000", "request.end", "frontend", "X", 3, "a3", fp_in=_Q,
              fp_out=_OUT, duration_ms=100.0, **_END),
    ]
    early = [
        _line("01.010000", "worker.start", "worker-1", "early", 1, "b1", "a1", fp_in=_P),
        _line("01.090000", "worker.end", "worker-1", "early", 1, "b1", "a1", outcome="ok",
              fp_out=_OUT, duration_ms=80.0),
    ]
    twins = [
        _line("03.010000", "worker.start", "worker-2", "X", 2, "b2", "a2", fp_in=_P),
        _line("03.011000", "worker.start", "worker-2", "X", 3, "b3", "a3", fp_in=_Q),
        _line("03.090000", "worker.end", "worker-2", "X", 2, "b2", "a2", outcome="ok",
              fp_out=_OUT, duration_ms=80.0),
        _line("03.091000", "worker.end", "worker-2", "X", 3, "b3", "a3", outcome="ok",
              fp_out=_OTHER_OUT, duration_ms=80.0),
    ]
    folder.mkdir()
    for name, lines in (("frontend.jsonl", front), ("worker-1.jsonl", early),
                        ("worker-2.jsonl", twins)):
        (folder / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


@pytest.mark.parametrize("order", [
    ("frontend.jsonl", "worker-1.jsonl", "worker-2.jsonl"),
    ("worker-2.jsonl", "worker-1.jsonl", "frontend.jsonl"),
])
def test_the_producer_named_is_the_one_in_flight_whatever_the_file_order(
    tmp_path: Path, order: tuple[str, ...]
) -> None:
    logs = _logs(tmp_path / "logs")
    files = [str(logs / name) for name in order]
    runner = CliRunner()
    result = runner.invoke(main, ["analyze", *files, "--format", "json", "-q"])
    assert result.exit_code == 1, result.output
    (crossed,) = [f for f in json.loads(result.stdout)["findings"]
                  if f["kind"] == "crossed_stream" and f["span_id"] == "a3"]
    assert "produced by worker span b2 " in crossed["detail"], crossed["detail"]
    shown = runner.invoke(main, ["trace", "X", *files, "--format", "json", "-q"])
    (caller,) = [r for r in json.loads(shown.stdout)["requests"] if r["span_id"] == "a3"]
    assert caller["got_output_of"]["worker_span_id"] == "b2"
    assert caller["got_output_of"]["span_id"] == "a2"


def test_the_last_to_start_before_the_caller_ended_else_the_first() -> None:
    # Output 7 made by three spans starting at 10, 30 and 50 (listed out of order), output
    # 8 by one: a caller ending at 40 got the one started at 30; one ending at 5 (a clock
    # that disagrees) the first to start; an output nobody made, none. Ties at one
    # start: by span id, not by the order rows were read in.
    out = np.array([7, 7, 8, 7, 7])
    start = np.array([50, 10, 20, 30, 30])
    names = ["e", "a", "c", "z", "b"]
    picked = reaching_producers(out, start, names, np.array([7, 7, 8, 9, 7]),
                                np.array([40, 5, 100, 100, 1000]))
    assert picked.tolist() == [3, 1, 2, -1, 0]
    swapped = reaching_producers(out[[0, 1, 2, 4, 3]], start[[0, 1, 2, 4, 3]],
                                 [names[i] for i in (0, 1, 2, 4, 3)],
                                 np.array([7]), np.array([40]))
    assert swapped.tolist() == [4]  # still span "z"


@pytest.mark.parametrize("order", [
    ["worker-1.jsonl", "worker-2.jsonl", "frontend.jsonl"],
    ["worker-2.jsonl", "worker-1.jsonl", "frontend.jsonl"],
])
def test_follow_names_the_producer_batch_names(tmp_path: Path, order: list[str]) -> None:
    # Live, the first worker span read with the output was named: the bystander when its
    # file came in first.
    logs = _logs(tmp_path / "logs")
    live_dir = tmp_path / "live"
    live_dir.mkdir()
    last = datetime.fromisoformat("2026-12-01T10:00:04+00:00").timestamp()
    found = follow_copies(live_dir, logs, order, last)
    (crossed,) = [f for f in found if f["kind"] == "crossed_stream" and f["span_id"] == "a3"]
    assert "produced by worker span b2 " in crossed["detail"], crossed["detail"]
