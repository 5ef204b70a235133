"""structlog's JSON lines beside ridtrace's are read, not bad lines ("missing time").

docs/tracing.md has an application put a request's ids on its structlog lines
(`add_request_ids` before `JSONRenderer`). structlog writes the message in `event` and
its TimeStamper's time in `timestamp`, so each such line in a ridtrace log was a bad
line, "missing time": a service logging one line of its own per request had a third of
its lines bad, the read "incomplete" and exit 3 over a clean log.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt, ts


def _structlog(event: str, at: str | float, **ids: str) -> str:
    # As structlog's JSONRenderer writes it: event first, bound values, level, timestamp.
    return json.dumps({"event": event, **ids, "level": "info", "timestamp": at})


def _log(path: Path, *, epoch: bool = False) -> Path:
    lines = []
    for i in range(5):
        ids = {"request_id": f"r{i}", "trace_id": f"{i + 1:032x}", "span_id": f"{i + 1:016x}"}
        lines.append(rt("request.start", time=ts(i), **ids))
        lines.append(_structlog("charging card", 1.5 + i if epoch else ts(i + 0.2), **ids))
        lines.append(rt("request.end", time=ts(i + 0.5), status=200, outcome="ok", **ids))
    path.write_text("\n".join(lines) + "\n")
    return path


def _analyze(path: Path) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


def test_structlog_lines_beside_ridtraces_are_read(tmp_path: Path) -> None:
    code, doc = _analyze(_log(tmp_path / "app.jsonl"))
    summary = doc["summary"]
    assert (code, summary["lines"], summary["bad_lines"], summary["requests"]) == (0, 15, 0, 5)
    assert not summary["incomplete"]
    # A request's structlog line is one of its lines, at its time.
    result = CliRunner().invoke(main, ["trace", "r2", str(tmp_path), "--format", "json", "-q"])
    assert result.exit_code == 0, result.stderr
    [request] = json.loads(result.stdout)["requests"]
    assert [(e["ms"], e["line"]) for e in request["events"]] == [(0.0, 7), (200.0, 8),
                                                                 (500.0, 9)]


def test_an_epoch_structlog_time_is_still_a_bad_line(tmp_path: Path) -> None:
    # TimeStamper() without fmt writes seconds since the epoch: no unit a number states.
    code, doc = _analyze(_log(tmp_path / "app.jsonl", epoch=True))
    assert (code, doc["summary"]["bad_lines"]) == (3, 5)
    assert doc["summary"]["bad_line_samples"][0]["reason"].startswith("invalid time (an epoch")


def test_a_structlog_line_is_no_evidence(tmp_path: Path) -> None:
    # An application's own line quoting an Unlinked error it saw is no Unlinked response
    # (ridtrace logs response.unlinked itself; an unknown line was a bad line, never one).
    ids = {"request_id": "r1", "trace_id": "1" * 32, "span_id": "1" * 16}
    (tmp_path / "app.jsonl").write_text("\n".join((
        rt("request.start", time=ts(0), **ids),
        json.dumps({"event": "upstream failed", "error": "Unlinked response; caller gone",
                    "message": "Unlinked response", **ids, "level": "error",
                    "timestamp": ts(0.2)}),
        rt("request.end", time=ts(0.5), status=502, outcome="error", **ids))) + "\n")
    code, doc = _analyze(tmp_path / "app.jsonl")
    assert (code, doc["findings"], doc["summary"]["bad_lines"]) == (0, [], 0)
    result = CliRunner().invoke(main, ["trace", "r1", str(tmp_path), "--format", "json", "-q"])
    assert result.exit_code == 0, result.stderr
    [request] = json.loads(result.stdout)["requests"]
    assert (request["findings"], len(request["events"])) == ([], 3)
