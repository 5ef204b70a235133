"""`trace` lists a request's lifecycle lines and up to `--max-lines` of its others.

A request logging a line per token of a long generation (a million DEBUG lines under
its ids) took `trace` over a minute and 2.3 GB to list every one of them.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt, ts

_IDS = {"request_id": "R", "trace_id": "1" * 32, "span_id": "a" * 16}


def _log(folder: Path, tokens: int) -> Path:
    lines = [rt("request.start", time=ts(0), **_IDS)]
    lines += [json.dumps({"time": ts(0.001 + n / 10_000), "level": "DEBUG",
                          "message": f"token {n}", "logger": "app", "schema": "ridtrace/1",
                          "service": "frontend", "pid": 1, **_IDS}) for n in range(tokens)]
    lines.append(rt("request.end", time=ts(1), status=200, outcome="ok", duration_ms=1000.0,
                    **_IDS))
    (folder / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _trace(folder: Path, *args: str) -> dict:
    result = CliRunner().invoke(main, ["trace", "R", str(folder), "--format", "json", "-q",
                                       *args])
    assert result.exit_code == 0, result.output
    [request] = json.loads(result.stdout)["requests"]
    return request


def test_the_middle_of_a_long_request_is_counted_not_listed(tmp_path: Path) -> None:
    folder = _log(tmp_path, 3000)
    request = _trace(folder, "--max-lines", "100")
    events = [e["event"] for e in request["events"]]
    assert request["events_omitted"] == 2900
    assert events == ["request.start", *(f"token {n}" for n in range(50)),
                      *(f"token {n}" for n in range(2950, 3000)), "request.end"]
    text = CliRunner().invoke(main, ["trace", "R", str(folder), "-q", "--max-lines", "100"])
    shown = text.stdout.splitlines()
    marker = next(at for at, line in enumerate(shown) if "2900 more lines" in line)
    assert "token 49 " in shown[marker - 1] and "token 2950 " in shown[marker + 1]
    # By default up to 1000; with 0 every line.
    assert _trace(folder)["events_omitted"] == 2000
    everything = _trace(folder, "--max-lines", "0")
    assert ("events_omitted" not in everything, len(everything["events"])) == (True, 3002)
