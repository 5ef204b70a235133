"""`trace` and `export jaeger` take a request's status, outcome and error from its
lifecycle lines, never from an application's line that uses the same names.

A handler logging `status=404, outcome="cache_miss"` from a cache lookup, or
`error="redis timeout"`, made its request show (and export to Jaeger) as that, while its
`request.end` said 500 and error: the first value of a span's lines won.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.contract import REQUEST_END, REQUEST_START
from tests.forensics.helpers import rt, ts
from tests.support.extras import ENGINE_ARGS

_IDS = {"request_id": "r1", "x_request_id": "c1", "trace_id": "7" * 32, "span_id": "6" * 16}


def _log(tmp_path: Path, app_event: str | None = None) -> Path:
    path = tmp_path / "app.jsonl"
    path.write_text("\n".join([
        rt(REQUEST_START, time=ts(0.0), method="POST", path="/v1/x", client="10.0.0.1:5",
           **_IDS),
        # `event`: an application's own, on a line written before ridtrace kept it apart.
        rt(app_event, time=ts(0.01), message="inventory lookup", status=404,
           outcome="cache_miss", error="redis timeout", client="acme", method="GET",
           worker="cache-3", **_IDS),
        rt(REQUEST_END, time=ts(0.02), status=500, outcome="error", error="boom",
           duration_ms=20.0, route="/v1/x", method="POST", path="/v1/x", **_IDS),
    ]) + "\n")
    return path


@pytest.mark.parametrize("app_event", [None, "cache.lookup"])
def test_trace_shows_the_requests_own_end(tmp_path: Path, app_event: str | None) -> None:
    log = _log(tmp_path, app_event)
    result = CliRunner().invoke(main, ["trace", "r1", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    (request,) = json.loads(result.stdout)["requests"]
    assert (request["status"], request["outcome"]) == ("500", "error")
    assert [span["outcome"] for span in request["spans"]] == ["error"]


@pytest.mark.parametrize("app_event", [None, "cache.lookup"])
def test_jaeger_tags_the_requests_own_end(tmp_path: Path, app_event: str | None) -> None:
    out = tmp_path / "jaeger.json"
    log = _log(tmp_path, app_event)
    result = CliRunner().invoke(main, ["export", "jaeger", str(log), "-o", str(out)])
    assert result.exit_code == 0, result.output
    ((span,),) = [trace["spans"] for trace in json.loads(out.read_text())["data"]]
    tags = {tag["key"]: tag["value"] for tag in span["tags"]}
    assert (tags["status"], tags["outcome"], tags["error.message"], tags["error"]) == (
        500, "error", "boom", True)
    assert "worker" not in tags


def test_a_status_a_shipper_wrote_as_a_float_is_shown_as_the_status(tmp_path: Path) -> None:
    # Cloud Logging's jsonPayload holds every number as a float: trace said "500.0".
    path = tmp_path / "gcp.jsonl"
    path.write_text("\n".join([
        rt(REQUEST_START, time=ts(0.0), **_IDS),
        rt(REQUEST_END, time=ts(0.02), status=500.0, outcome="error", duration_ms=20.0, **_IDS),
    ]) + "\n")
    result = CliRunner().invoke(main, ["trace", "r1", str(path), "--format", "json"])
    (request,) = json.loads(result.stdout)["requests"]
    assert request["status"] == "500"


@pytest.mark.parametrize("engine", ENGINE_ARGS)
def test_an_old_logs_app_event_named_like_ridtraces_hides_no_crossed_stream(
    engine: list[str],
) -> None:
    # `data/app-event-in-family`: a real frontend log with a crossed caller, and inside it
    # one application line written before apps' event fields were kept apart:
    # event "worker.cache", outcome "miss". Taken as one of ridtrace's events, it made the
    # caller a worker's span with outcome "miss", and analyze said No findings (exit 0).
    logs = Path(__file__).parents[1] / "forensics" / "data" / "app-event-in-family"
    result = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json", "-q", *engine])
    kinds = sorted(f["kind"] for f in json.loads(result.stdout)["findings"]
                   if f["severity"] == "error")
    assert (result.exit_code, kinds) == (1, ["crossed_stream", "crossed_stream", "unlinked"])
