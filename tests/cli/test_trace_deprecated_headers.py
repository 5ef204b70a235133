"""`ridtrace trace` says which deprecated id headers a request sent.

The WARN line naming a header is written once per header per process, so only the
first request that sent it showed one in its events; a later request's use, listed on
its own `request.start` (`deprecated_headers`), and a pre-fix Dynamo request's (its
`http-request` span names the header's value as `x_dynamo_request_id`, and no WARN is
logged) were counted by `analyze`, `audit` and `export jaeger` but not shown here.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.cli.test_dynamo_sent_id_collision import _lines as dynamo_prefix_lines
from tests.forensics.helpers import rt

_FIRST = {"request_id": "r-1", "x_request_id": "c-1", "trace_id": "a1" * 16,
          "span_id": "a1" * 8}
_LATER = {"request_id": "r-2", "x_request_id": "c-2", "trace_id": "b2" * 16,
          "span_id": "b2" * 8}
_PLAIN = {"request_id": "r-3", "x_request_id": "c-3", "trace_id": "c3" * 16,
          "span_id": "c3" * 8}


def _at(ms: int) -> str:
    return f"2026-11-29T10:00:01.{ms:03d}000Z"


def _ridtrace_log(tmp_path: Path) -> Path:
    lines = [
        rt("request.start", time=_at(0), method="POST", path="/v1/completions",
           deprecated_headers="request-id", **_FIRST),
        rt("deprecated_header", time=_at(0), level="WARN", header="request-id", **_FIRST),
        rt("request.end", time=_at(10), route="/v1/completions", status=200,
           outcome="ok", duration_ms=10.0, deprecated_headers="request-id", **_FIRST),
        # No WARN for the second request: the process warned once already.
        rt("request.start", time=_at(20), method="POST", path="/v1/completions",
           deprecated_headers="X-Dynamo-Request-Id, request-id,request-id", **_LATER),
        rt("request.end", time=_at(30), route="/v1/completions", status=200,
           outcome="ok", duration_ms=10.0, **_LATER),
        rt("request.start", time=_at(40), method="POST", path="/v1/completions", **_PLAIN),
        rt("request.end", time=_at(50), route="/v1/completions", status=200,
           outcome="ok", duration_ms=10.0, **_PLAIN),
    ]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    return log


def _trace(*args: str, width: int = 100) -> str:
    got = CliRunner().invoke(main, ["trace", *args], env={"COLUMNS": str(width)})
    assert got.exit_code == 0, got.output
    return got.output


def _json(*args: str) -> dict:
    return json.loads(_trace(*args, "--format", "json"))


def test_a_later_request_without_its_own_warn_shows_the_headers_it_sent(
    tmp_path: Path,
) -> None:
    log = str(_ridtrace_log(tmp_path))

    out = _trace("r-2", log).splitlines()

    said = [line for line in out if "deprecated header" in line]
    assert said == ["sent deprecated headers x-dynamo-request-id, request-id"]
    assert out.index(said[0]) < next(i for i, line in enumerate(out) if "verdict:" in line)
    request = _json("r-2", log)["requests"][0]
    assert request["deprecated_headers"] == ["x-dynamo-request-id", "request-id"]


def test_the_first_request_names_its_header_beside_its_warn_line(tmp_path: Path) -> None:
    log = str(_ridtrace_log(tmp_path))

    out = _trace("r-1", log)

    assert "sent deprecated header request-id\n" in out
    assert _json("r-1", log)["requests"][0]["deprecated_headers"] == ["request-id"]


def test_a_request_that_sent_none_says_nothing_of_them(tmp_path: Path) -> None:
    log = str(_ridtrace_log(tmp_path))

    assert "deprecated header" not in _trace("r-3", log)
    assert _json("r-3", log)["requests"][0]["deprecated_headers"] == []


def test_a_pre_fix_dynamo_request_shows_the_header_its_span_names(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(dynamo_prefix_lines(
        second_sent="5c3d5e1a-0b7e-4b8f-9d2a-7f1e2d3c4b5a")) + "\n")

    out = _trace("9b2e4c1a-7d3f-4e8a-b1c2-5f6a7b8c9d0e", str(log))

    assert "sent deprecated header x-dynamo-request-id\n" in out
    doc = _json("5c3d5e1a-0b7e-4b8f-9d2a-7f1e2d3c4b5a", str(log))
    assert doc["requests"][0]["deprecated_headers"] == ["x-dynamo-request-id"]


def test_a_hostile_header_name_is_shown_escaped(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join([
        rt("request.start", time=_at(0), method="GET", path="/x",
           deprecated_headers="request-id\x1b[31m", **_FIRST),
        rt("request.end", time=_at(1), route="/x", status=200, outcome="ok",
           duration_ms=1.0, **_FIRST),
    ]) + "\n")

    out = _trace("r-1", str(log))

    assert "\x1b[31m" not in out
    assert "sent deprecated header request-id" in out
