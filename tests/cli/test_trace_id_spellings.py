"""`ridtrace trace` and `audit` link a worker to its caller whatever spelling each log gave
their trace and span ids, as `analyze` does (tests/forensics/test_id_spellings.py).

The views read ids as logged: a frontend logging them upper case (or a 64-bit trace id
as 32 digits with a zero high half) and a worker logging them otherwise made `trace`
list the worker span as a caller of its own, in a false duplicate_in_flight with its
real caller, and `audit` count it as a request, while `analyze` found nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.trace_export import trace_document
from ridtrace.forensics.views.trace_model import build_trace
from ridtrace.forensics.views.trace_text import trace_lines
from tests.forensics.test_id_spellings import _dynamo_upper_worker, _every_spelling, _write


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "-q"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_trace_and_audit_link_a_worker_spelling_ids_otherwise(tmp_path: Path) -> None:
    _write(tmp_path, _every_spelling())
    _dynamo_upper_worker(tmp_path)
    # Requests r0..r5: an upper-case caller, an upper-case worker, a padded 64-bit caller
    # trace id, a padded upper-case worker one, a worker's ids as Python's hex() prints
    # them, a caller's short, upper case and 0X. Each is one caller with its worker.
    events = load_events([str(tmp_path)]).events
    requests = build_requests(events)
    views = [build_trace(events, requests, f"r{i}") for i in range(6)]
    for i, view in enumerate(views):
        [request] = trace_document(view)["requests"]
        assert (view.matched, request["findings"], request["verdict"]) == (
            1, [], "own output"), i
        assert [s["side"] for s in request["spans"]] == ["frontend", "worker-1"], i
    # Shown as logged: r0's caller logged its ids upper case, r2's its padded trace id.
    r0 = trace_document(views[0])["requests"][0]
    assert (r0["span_id"], r0["trace_id"]) == ("A1B2C3D4E5F60700",
                                               "4BF92F3577B34DA6A3CE929D0E0E4700")
    assert {e["span_id"] for e in r0["events"]} == {"A1B2C3D4E5F60700", "b000000000000000"}
    assert any("span A1B2C3D4E5F60700" in line.plain for line in trace_lines(views[0]))
    assert trace_document(views[2])["requests"][0]["trace_id"] == "0" * 16 + "a3ce929d0e0e4702"
    # audit counts callers as analyze does: six ridtrace requests and a Dynamo one.
    summary = json.loads(_run("audit", str(tmp_path), "--format", "json"))["summary"]
    assert summary["requests"] == 7
