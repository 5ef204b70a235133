"""A worker span that logged no trace_id but names its caller (``parent_span_id``, the
caller in the logs), as a worker without trace context writes it.

It was taken for a caller of its own whose frontend logs are absent when no frontend
span lacked a trace id, and for its caller's when one did ("missing matches missing"):
one request reported as a duplicate in flight with itself, or not, depending on an
unrelated request; `trace` showed it as a second caller, ``(trace <NA>)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt
from tests.support.extras import ENGINES


def _at(ms: int) -> str:
    return f"2026-11-30T12:00:00.{ms * 1000:06d}Z"


def _logs(folder: Path, *, unrelated_traceless: bool) -> Path:
    caller = {"request_id": "t2", "x_request_id": "nt2", "span_id": "00000000000000b1"}
    front = [
        rt("request.start", time=_at(100), trace_id="b" * 32, **caller),
        rt("request.end", time=_at(150), trace_id="b" * 32, status=200, outcome="ok",
           duration_ms=50.0, fp_in="f_in", fp_out="f_out", **caller),
    ]
    if unrelated_traceless:
        other = {"request_id": "t1", "x_request_id": "nt1", "span_id": "00000000000000a1"}
        front = [rt("request.start", time=_at(0), **other),
                 rt("request.end", time=_at(50), status=200, outcome="ok", duration_ms=50.0,
                    **other), *front]
    work = {"request_id": "t2", "x_request_id": "nt2", "span_id": "00000000000000b2",
            "parent_span_id": "00000000000000b1", "service": "worker-1"}
    (folder / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (folder / "worker-1.jsonl").write_text("\n".join([
        rt("worker.start", time=_at(105), fp_in="f_in", **work),
        rt("worker.end", time=_at(145), outcome="ok", duration_ms=40.0, fp_out="f_out", **work),
    ]) + "\n")
    return folder


def _follow(folder: Path) -> list[Any]:
    found: list[Any] = []
    follower = Follower([str(folder)], FollowSettings(from_start=True))
    follower.start()
    try:
        follower.run(found.append, stop=lambda: True)
    finally:
        follower.close()
    return found


@pytest.mark.parametrize("unrelated_traceless", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_traceless_worker_span_works_for_the_caller_it_names(
    tmp_path: Path, engine: str, unrelated_traceless: bool
) -> None:
    logs = _logs(tmp_path, unrelated_traceless=unrelated_traceless)
    code, doc = analyze_json(str(logs), "--engine", engine)
    assert (code, [f["kind"] for f in doc["findings"]]) == (0, [])
    assert _follow(logs) == []
    result = CliRunner().invoke(main, ["trace", "nt2", str(logs), "--format", "json", "-q"])
    assert result.exit_code == 0, result.stderr
    [request] = json.loads(result.stdout)["requests"]
    assert request["findings"] == []
    assert len(request["spans"]) == 2
