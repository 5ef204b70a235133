"""A ridtrace request's route is the template its end line names, not its start's path.

``request.start`` logs the raw path (``/users/alice``), ``request.end`` the route template
the router matched (``/users/{user_id}``). Taken from the first line, the audit's
``--by route`` had a row per URL (and a row per kind when a start line had rotated
away), and Jaeger's operations a name per URL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt, ts
from tests.support.extras import ENGINES


def _log(tmp_path: Path, *, rotated_start: bool = False) -> Path:
    starts, ends = [], []
    for i, user in enumerate(["alice", "bob", "carol"]):
        ids = {"request_id": f"r{i}", "trace_id": f"{i + 1:032x}", "span_id": f"{i + 1:016x}",
               "method": "GET", "path": f"/users/{user}", "deprecated_headers": "request-id"}
        if not (rotated_start and i == 0):
            starts.append(rt("request.start", time=ts(i), client="10.0.0.1:5000", **ids))
        ends.append(rt("request.end", time=ts(i + 5), route="/users/{user_id}", status=200,
                       outcome="ok", duration_ms=5000.0, **ids))
    # 1.5 MiB of other lines between the starts and the ends: Dask's smallest partition
    # (1 MiB) cuts each request's start from its end.
    filler = [rt(None, time=ts(4), n=k, blob="x" * 300) for k in range(4500)]
    lines = [*starts, *filler, *ends]
    # No route matched: its path is all there is.
    ids = {"request_id": "r9", "trace_id": "9" * 32, "span_id": "9" * 16, "method": "GET",
           "path": "/nowhere", "deprecated_headers": "request-id"}
    lines += [rt("request.start", time=ts(9), **ids),
              rt("request.end", time=ts(9.1), status=404, outcome="ok", **ids)]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    return log


@pytest.mark.parametrize("rotated_start", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_audit_by_route_counts_a_template_once(
    tmp_path: Path, engine: str, rotated_start: bool
) -> None:
    log = _log(tmp_path, rotated_start=rotated_start)
    split = ["--partition-size", "1MiB"] if engine == "dask" else []
    result = CliRunner().invoke(main, ["audit", str(log), "--by", "route", "--format", "json",
                                       "-q", "--engine", engine, *split])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert sorted((r["route"], r["requests"]) for r in rows) == [
        ("/nowhere", 1), ("/users/{user_id}", 3)]


def test_jaeger_names_each_request_after_its_template(tmp_path: Path) -> None:
    out = tmp_path / "jaeger.json"
    result = CliRunner().invoke(main, ["export", "jaeger", str(_log(tmp_path)), "-o", str(out),
                                       "-q"])
    assert result.exit_code == 0, result.output
    names = {s["operationName"] for t in json.loads(out.read_text())["data"] for s in t["spans"]}
    assert names == {"GET /users/{user_id}", "GET /nowhere"}
